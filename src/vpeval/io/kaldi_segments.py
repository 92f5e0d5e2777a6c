"""Kaldi ``segments`` files: utterances as time ranges of the recordings of ``wav.scp`` (read, checked, written).

Rules (module docstring of :mod:`vpeval.io.kaldi_data`): ``<utt> <recording> <start> <end>`` in seconds,
``end = -1`` to the end of the recording, ``0 <= start < end``, no two segments of one recording overlap, every
recording of ``wav.scp`` has a segment, and (when the audio is checked) a segment lies inside its recording.
Errors name the file and line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import InputFileError, VpevalError
from .kaldi_rules import _check_id, _check_sorted_unique, _lines
from .numbers import NumberSyntaxError, parse_number

__all__ = ["KaldiSegment", "fixed_length_segments", "MIN_SEGMENT_SECONDS", "MAX_OVERSHOOT_SECONDS"]

#: A segment may end this much after its recording (seconds): it is read to the recording's end, with a
#: :class:`~vpeval.errors.SegmentOvershootWarning`, as Kaldi's ``extract-segments`` does by default
#: (``--max-overshoot=0.5``); a segment ending later is refused.
MAX_OVERSHOOT_SECONDS = 0.5

#: The shortest segment :func:`fixed_length_segments` cuts: 32 ms, one analysis frame of 512 samples at 16 kHz (the
#: FFT frame of the ``mfcc`` and ``voicefilter-dvector`` features, the largest minimum of vpeval's built-in
#: extractors, :attr:`vpeval.audio.embed.Extractor.min_samples`), so that every segment written can be embedded
#: by any of them. Below, a segment holds no whole frame to analyse; and the count grows as 1 / length (1e-6 s: a
#: million segments per second of audio, which never finished).
MIN_SEGMENT_SECONDS = 0.032


@dataclass(frozen=True)
class KaldiSegment:
    """One line of a ``segments`` file: an utterance as a time range of a recording.

    Attributes
    ----------
    recording : str
        Recording id (a key of ``wav.scp``).
    start : float
        Start time in seconds (>= 0).
    end : float or None
        End time in seconds (> ``start``), or None for ``-1`` (to the end of the recording).
    source : str
        The ``segments`` file, and ``line`` its line, for error messages of later steps.
    line : int
    """

    recording: str
    start: float
    end: float | None
    source: str
    line: int


def _seconds(path: Path, i: int, text: str, what: str) -> float:
    """A time in seconds: a finite number under the rule of :mod:`vpeval.io.numbers`."""
    try:
        return parse_number(text)
    except NumberSyntaxError as exc:
        raise InputFileError(path, i, f"{what} time {exc.text!r} {exc.reason}: a number of seconds is "
                                      "expected") from None


def _read_segments(path: Path, wav: dict, wav_line: dict, scp: Path, check_files: bool) -> dict:
    """Read and check ``segments`` (module docstring); utterance id -> KaldiSegment in file order."""
    out: dict[str, KaldiSegment] = {}
    where: dict[str, int] = {}
    for i, line in _lines(path):
        f = line.split()
        if len(f) != 4:
            raise InputFileError(path, i, f"expected '<utterance> <recording> <start> <end>', got {line.strip()[:80]!r}")
        utt, rec = f[0], f[1]
        if utt in out:
            raise InputFileError(path, i, f"utterance {utt!r} is listed again (first on line {where[utt]})")
        if rec not in wav:
            raise InputFileError(path, i, f"recording {rec!r} of utterance {utt!r} is not in {scp}")
        start = _seconds(path, i, f[2], "start")
        end = _seconds(path, i, f[3], "end")
        if start < 0:
            raise InputFileError(path, i, f"segment {utt!r} starts at {f[2]} s, before the recording")
        if end == -1:
            end = None
        elif not end > start:
            raise InputFileError(path, i, f"segment {utt!r} ends at {f[3]} s, not after its start {f[2]} s "
                                 "(end -1 means to the end of the recording)")
        out[utt] = KaldiSegment(rec, start, end, str(path), i)
        where[utt] = i
    if not out:
        raise InputFileError(path, None, "lists no segment")
    _check_sorted_unique(path, where, "utterance")
    used = {sg.recording for sg in out.values()}
    for rec, line in wav_line.items():
        if rec not in used:
            raise InputFileError(scp, line, f"recording {rec!r} has no segment in {path}: Kaldi requires the "
                                 "recordings of segments and wav.scp to be the same (validate_data_dir.sh)")
    by_rec: dict[str, list[KaldiSegment]] = {}
    for sg in out.values():
        by_rec.setdefault(sg.recording, []).append(sg)
    for rec, segs in by_rec.items():
        segs.sort(key=lambda g: (g.start, g.line))
        for a, b in zip(segs, segs[1:]):
            if a.end is None or a.end > b.start:
                raise InputFileError(path, max(a.line, b.line), f"segments on lines {a.line} and {b.line} of "
                                     f"recording {rec!r} overlap ({a.start:g}-{'end' if a.end is None else f'{a.end:g}'}"
                                     f" s and {b.start:g}-{'end' if b.end is None else f'{b.end:g}'} s)")
        if check_files:
            seconds = _duration(wav[rec], scp, wav_line[rec])
            for sg in segs:
                if sg.start >= seconds or (sg.end is not None and sg.end > seconds + MAX_OVERSHOOT_SECONDS):
                    # times as written (repr), not rounded to 6 digits: a segment ending 1e-9 s after the
                    # recording read '3-3 s lies outside ... 3 s'
                    raise InputFileError(path, sg.line, f"segment {sg.start!r}-"
                                         f"{'end' if sg.end is None else repr(sg.end)} s lies outside recording "
                                         f"{rec!r}: it {'starts at or after' if sg.start >= seconds else 'ends after'}"
                                         f" the recording's end ({seconds!r} s)"
                                         + ("" if sg.start >= seconds else f" by more than the {MAX_OVERSHOOT_SECONDS:g}"
                                            " s Kaldi's extract-segments truncates (--max-overshoot)"))
    return out


def _duration(audio: Path, scp: Path, line: int) -> float:
    """Length in seconds of an audio file (from its header, nothing decoded)."""
    try:
        import soundfile as sf
    except ImportError as exc:  # the audio extra; reading the audio needs it anyway
        raise ImportError(f"checking segments against their recordings needs soundfile: pip install "
                          f"'vpeval[audio]' ({exc})") from None
    try:
        info = sf.info(str(audio))
    except (RuntimeError, OSError, ValueError, TypeError) as exc:
        raise InputFileError(scp, line, f"audio file {audio} cannot be read ({exc})") from None
    return info.frames / info.samplerate


#: Decimals of the times written to a ``segments`` file: a microsecond, below one sample at any audio rate up
#: to 1 MHz, so the written times are the intended ones without binary noise (``0.30000000000000004`` for
#: ``0.1 + 0.2``).
TIME_DECIMALS = 6


def time_text(seconds: float) -> str:
    """A time as written to a ``segments`` file: rounded to :data:`TIME_DECIMALS` decimals, then the shortest
    text that reads back to that value (``0.3``, ``3.0``, ``12.345679``).

    >>> time_text(0.1 + 0.2), time_text(3.0), time_text(2.9999999999)
    ('0.3', '3.0', '3.0')
    """
    return repr(round(float(seconds), TIME_DECIMALS) + 0.0)  # + 0.0: no '-0.0'


def _segment_lines(folder: Path, wav: dict, utt2spk: dict, segments: dict) -> list[str]:
    """Lines of a ``segments`` file, checked as the reader checks them (no overlap, 0 <= start < end), times
    written by :func:`time_text` (rounding to the microsecond keeps the order of times, so adds no overlap)."""
    if set(segments) != set(utt2spk):
        raise InputFileError(folder / "segments", None, "segments and utt2spk must list the same utterances")
    lines, by_rec = [], {}
    for utt in sorted(segments):
        sg = segments[utt]
        rec, start, end = (sg.recording, sg.start, sg.end) if isinstance(sg, KaldiSegment) else sg
        rec = _check_id("recording", rec)
        if rec not in wav:
            raise InputFileError(folder / "segments", None, f"recording {rec!r} of utterance {utt!r} has no audio")
        start = float(start)
        end = None if end is None or float(end) == -1 else float(end)
        if not (start >= 0 and start < float("inf")) or (end is not None and not (start < end < float("inf"))):
            raise InputFileError(folder / "segments", None, f"segment {utt!r} has times {start!r}, {end!r}; "
                                 "expected 0 <= start < end (or end None / -1)")
        start, end = round(start, TIME_DECIMALS), None if end is None else round(end, TIME_DECIMALS)
        if end is not None and not start < end:
            raise InputFileError(folder / "segments", None, f"segment {utt!r} is shorter than a microsecond (times "
                                 f"are written to {TIME_DECIMALS} decimals)")
        by_rec.setdefault(rec, []).append((start, end, utt))
        lines.append(f"{utt} {rec} {time_text(start)} {'-1' if end is None else time_text(end)}\n")
    for rec, segs in by_rec.items():
        segs.sort(key=lambda g: (g[0], g[2]))
        for a, b in zip(segs, segs[1:]):
            if a[1] is None or a[1] > b[0]:
                raise InputFileError(folder / "segments", None, f"segments {a[2]!r} and {b[2]!r} of recording "
                                     f"{rec!r} overlap")
    unused = sorted(set(wav) - set(by_rec))
    if unused:
        raise InputFileError(folder / "wav.scp", None, f"recording {unused[0]!r} has no segment")
    return lines


def fixed_length_segments(data, seconds: float, *, min_segments: int = 2) -> dict:
    """Cut every utterance of a data folder into consecutive segments of ``seconds`` (for attacker training).

    Parameters
    ----------
    data : KaldiDataFolder
        Read with :func:`vpeval.io.kaldi_data.read_kaldi_data_folder` (its own ``segments`` are honoured: an
        utterance's range is cut, not its whole recording).
    seconds : float
        Segment length, at least :data:`MIN_SEGMENT_SECONDS` (32 ms, one analysis frame). Segment ``k`` of an
        utterance covering ``[s, e)`` is ``[s + k L, s + (k+1) L)`` for every ``k`` with ``s + (k+1) L <= e``,
        the times rounded to the microsecond (:func:`time_text`: as written, so ``0.3``, not
        ``0.30000000000000004``, and 1 s holds ten 0.1 s segments); the remainder shorter than ``L`` is left out,
        and so is an utterance shorter than ``L``.
    min_segments : int
        Speakers with fewer segments are reported (kept: the caller decides).

    Returns
    -------
    dict
        ``wav`` (recording id -> absolute audio path), ``utt2spk`` and ``segments`` (new id
        ``<utterance>-<k:04d>`` -> speaker, and -> (recording, start, end), times rounded to the microsecond as
        they are written, :func:`time_text`) ready for
        :func:`vpeval.io.kaldi_data.write_kaldi_data_folder`; ``per_speaker`` (speaker -> segments, every
        speaker of the input, 0 included), ``few`` (sorted speakers with fewer than ``min_segments``),
        ``too_short`` (utterances shorter than ``seconds``).

    Raises
    ------
    VpevalError
        ``seconds`` below :data:`MIN_SEGMENT_SECONDS` (or not a finite number).
    InputFileError
        An unreadable audio header (named by file and line).
    """
    import os

    if not (seconds >= MIN_SEGMENT_SECONDS and seconds < float("inf")):
        raise VpevalError(f"segment length {seconds!r} s: expected a finite number of seconds >= "
                          f"{MIN_SEGMENT_SECONDS:g} (32 ms, one analysis frame of 512 samples at 16 kHz, so "
                          "that every built-in extractor can embed each segment)")
    wav, utt2spk, segs, too_short = {}, {}, {}, []
    per_speaker = {s: 0 for s in sorted(set(data.utt2spk.values()))}
    durations: dict[str, float] = {}
    for utt, path in data.wav.items():
        sg = (data.segments or {}).get(utt)
        rec = utt if sg is None else sg.recording
        if rec not in durations:
            durations[rec] = _duration(path, data.folder / "wav.scp", data.wav_line.get(utt, 0))
        start = 0.0 if sg is None else sg.start
        end = durations[rec] if sg is None or sg.end is None else min(sg.end, durations[rec])
        # the most segments whose last one, as written (to the microsecond), ends inside the range: one more than
        # the floor first (1.0 // 0.1 is 9.0, 0.1 being above 1/10 in float64), then down while it ends outside
        n = int((end - start) // seconds) + 1
        while n > 0 and round(start + n * seconds, TIME_DECIMALS) > end:
            n -= 1
        if n == 0:
            too_short.append(utt)
            continue
        wav[rec] = Path(os.path.abspath(path))
        for k in range(n):
            new = f"{utt}-{k:04d}"
            utt2spk[new] = data.utt2spk[utt]
            segs[new] = (rec, round(start + k * seconds, TIME_DECIMALS), round(start + (k + 1) * seconds,
                                                                                TIME_DECIMALS))
        per_speaker[data.utt2spk[utt]] += n
    few = [s for s, n in per_speaker.items() if n < min_segments]
    return {"wav": wav, "utt2spk": utt2spk, "segments": segs, "per_speaker": per_speaker, "few": few,
            "too_short": too_short}
