"""Issue 48 (4): lengths have a lower bound. `vpeval segment --seconds` refuses less than one 32 ms analysis frame
(1e-6 s never finished), an extractor refuses an utterance shorter than its frame naming itself, its minimum and the
file (a 1 ms file or a 0.1 ms segment got an "embedding"), and a segment shorter than one sample is said to hold no
sample, not to lie outside its recording."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

pytest.importorskip("soundfile")
pytest.importorskip("librosa")

from vpeval.audio.embed import MfccStatsExtractor  # noqa: E402
from vpeval.audio.embed.base import embed_folder  # noqa: E402
from vpeval.audio.io import read_item_audio, scan_audio_folder, write_audio  # noqa: E402
from vpeval.cli.main import app  # noqa: E402
from vpeval.errors import InputFileError, VpevalError  # noqa: E402
from vpeval.io.kaldi_data import read_kaldi_data_folder  # noqa: E402
from vpeval.io.kaldi_segments import MIN_SEGMENT_SECONDS, fixed_length_segments  # noqa: E402

SR = 16000


def _tone(seconds):
    return 0.3 * np.sin(2 * np.pi * 150 * np.arange(int(round(SR * seconds))) / SR)


def _data(tmp_path, segments):
    d = tmp_path / "data"
    (d / "audio").mkdir(parents=True)
    write_audio(d / "audio" / "r1.wav", _tone(1.0))
    (d / "wav.scp").write_text("r1 audio/r1.wav\n")
    (d / "segments").write_text(segments)
    (d / "utt2spk").write_text("".join(f"{ln.split()[0]} A\n" for ln in segments.splitlines()))
    return d


def test_lengths_below_one_frame_are_refused_and_named(tmp_path):
    # segment: below 32 ms refused at once, in one line, exit 2 (1e-6 s grew by 85 MB/s; 1e-4 s wrote 437,746 files)
    d = _data(tmp_path, "A-1 r1 0.0 1.0\n")
    for bad in ("1e-6", "0.0001", "0.0319"):
        r = CliRunner().invoke(app, ["segment", str(d), "-o", str(tmp_path / f"seg{bad}"), "--seconds", bad])
        assert r.exit_code == 2, r.output
        assert "expected a finite number of seconds >= 0.032 (32 ms, one analysis frame" in r.output
        assert not (tmp_path / f"seg{bad}").exists()
    with pytest.raises(VpevalError, match="one analysis frame"):
        fixed_length_segments(read_kaldi_data_folder(d), 0.01)
    assert len(fixed_length_segments(read_kaldi_data_folder(d), MIN_SEGMENT_SECONDS)["segments"]) == 31  # accepted

    # embed: a 1 ms file is an error naming the file, the extractor and its minimum (not a vector of padding)
    short = tmp_path / "short"
    write_audio(short / "A-long.wav", _tone(0.5))
    write_audio(short / "A-tiny.wav", _tone(0.001))
    with pytest.raises(InputFileError) as e:
        embed_folder(short, MfccStatsExtractor(), quiet=True)
    assert str(e.value).startswith(f"{short / 'A-tiny.wav'}: mfcc-stats: the utterance lasts 16 samples (1 ms at "
                                   "16 kHz); this extractor needs at least 512 samples (32 ms: one 512-sample STFT "
                                   "frame (n_fft))")
    ext = MfccStatsExtractor()
    ext.embed(_tone(0.032))  # exactly one frame is enough
    with pytest.raises(VpevalError, match="511 samples"):
        ext.embed(_tone(0.032)[:-1])

    # a 0.1 ms segment of a Kaldi data folder: the error names the audio file and the utterance
    d2 = _data(tmp_path / "two", "A-1 r1 0.0 0.5\nA-2 r1 0.5 0.5001\n")
    with pytest.raises(InputFileError, match=r"r1\.wav \(utterance A-2\): mfcc-stats: the utterance lasts 2 samples"):
        embed_folder(d2, ext, quiet=True)

    # a 1e-9 s segment inside the recording holds no sample: it does not lie "outside" the recording
    d3 = _data(tmp_path / "three", "A-1 r1 0.5 0.500000001\n")
    (item,) = scan_audio_folder(d3)
    with pytest.raises(InputFileError) as e:
        read_item_audio(item)
    msg = str(e.value)
    assert msg.startswith(f"{d3 / 'segments'}:1: segment 0.5-0.500000001 s of utterance 'A-1' holds no sample")
    assert "outside" not in msg
    # and one ending 1e-9 s beyond Kaldi's 0.5 s overshoot is shown with its digits, not rounded to '1.5 s'
    (d3 / "segments").write_text("A-1 r1 0.5 1.500000001\n")
    with pytest.raises(InputFileError, match=r"segment 0\.5-1\.500000001 s lies outside recording 'r1': it ends "
                                             r"after the recording's end \(1\.0 s\) by more than the 0\.5 s"):
        read_kaldi_data_folder(d3)
