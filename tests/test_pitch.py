"""rho_F0 (pitch correlation): hand cases, degenerate input, properties, F0 of synthetic sweeps."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpeval.errors import UndefinedPitchCorrelationWarning, VpevalError
from vpeval.metrics.utility import pitch_correlation, pitch_correlations

pytest.importorskip("pyworld")
from vpeval.audio.pitch import f0_contour  # noqa: E402


def test_hand_value():
    # x = 1, 2, 3 and y = 1, 4, 9: deviations (-1, 0, 1) and (-11/3, -2/3, 13/3); cov sum 8;
    # r = 8 / (sqrt(2) sqrt(294) / 3) = 24 / sqrt(588)
    assert pitch_correlation([1, 2, 3], [1, 4, 9]) == pytest.approx(24 / math.sqrt(588), abs=1e-15)
    # unvoiced frames (0 on either side) are left out: only frames 0, 2, 4 count
    assert pitch_correlation([1, 5, 2, 0, 3], [1, 0, 4, 7, 9]) == pytest.approx(24 / math.sqrt(588), abs=1e-15)
    # one trailing frame more on one side is allowed (compared over the common length)
    assert pitch_correlation([1, 2, 3, 4], [1, 4, 9]) == pytest.approx(24 / math.sqrt(588), abs=1e-15)


def test_degenerate_is_nan_with_our_warning():
    with pytest.warns(UndefinedPitchCorrelationWarning, match="1 frame"):
        assert math.isnan(pitch_correlation([100, 0], [90, 0]))
    with pytest.warns(UndefinedPitchCorrelationWarning, match="constant"):
        assert math.isnan(pitch_correlation([100, 100, 100], [90, 95, 99]))
    with pytest.raises(VpevalError, match="differ"):
        pitch_correlation([1, 2, 3, 4, 5], [1, 2])
    with pytest.raises(VpevalError):
        pitch_correlation([1, -2, 3], [1, 2, 3])
    with pytest.raises(VpevalError):
        pitch_correlation([1, np.nan], [1, 2])


def test_mean_over_utterances_skips_undefined():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedPitchCorrelationWarning)
        r = pitch_correlations({"u2": [1, 2, 3], "u1": [1, 2, 3], "u3": [5, 0, 0]},
                               {"u1": [1, 4, 9], "u2": [3, 2, 1], "u3": [5, 5, 5]})
    assert list(r.utterances) == ["u1", "u2", "u3"] and r.n_undefined == 1
    assert r.mean == pytest.approx((24 / math.sqrt(588) - 1) / 2, abs=1e-15)
    assert r.to_dict()["utterances"]["u3"] is None
    with pytest.raises(VpevalError, match="different utterances"):
        pitch_correlations({"a": [1, 2]}, {"b": [1, 2]})


contour = st.lists(st.integers(0, 400).map(float), min_size=3, max_size=30)


@settings(max_examples=200, deadline=None)
@given(contour, st.floats(0.25, 4.0), st.floats(0, 50), st.randoms(use_true_random=False))
def test_properties(f0, scale, shift, rnd):
    f0 = np.array(f0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedPitchCorrelationWarning)
        r = pitch_correlation(f0, f0)
        other = np.array([rnd.choice([0.0, rnd.uniform(60, 300)]) for _ in f0])
        r2 = pitch_correlation(f0, other)
        # a pitch shift by a constant factor (and an offset on voiced frames) keeps the correlation
        moved = np.where(f0 > 0, f0 * scale + shift, 0.0)
        r3 = pitch_correlation(f0, moved)
        # symmetric, and invariant to permuting the frame pairs
        perm = np.array(rnd.sample(range(f0.size), f0.size))
        r4 = pitch_correlation(other[perm], f0[perm])
    if not math.isnan(r):
        assert r == pytest.approx(1.0, abs=1e-12) and r3 == pytest.approx(1.0, abs=1e-9)
    assert (math.isnan(r2) and math.isnan(r4)) or r2 == pytest.approx(r4, abs=1e-12)
    assert math.isnan(r2) or -1.0 <= r2 <= 1.0


def _sweep(f_of_t, seconds=1.0, sr=16000):
    t = np.arange(int(seconds * sr)) / sr
    phase = 2 * np.pi * np.cumsum(f_of_t(t)) / sr
    return 0.5 * np.sin(phase)


def test_utterance_against_itself_is_one():
    x = _sweep(lambda t: 100 + 100 * t)
    f0 = f0_contour(x)
    assert (f0 > 0).sum() > 80
    assert pitch_correlation(f0, f0_contour(x.copy())) == 1.0


def test_pitch_shifted_sweep():
    """A linear sweep 100 -> 200 Hz against the same sweep shifted by 1.5 (150 -> 300 Hz): the true contours
    are proportional, so rho_F0 = 1; against a quadratic sweep 100 + 100 t^2 the true value is the Pearson
    correlation of t and t^2 over the frames voiced in both (sqrt(15)/4 = 0.968 for a uniform grid on [0, 1])."""
    lin = f0_contour(_sweep(lambda t: 100 + 100 * t))
    shifted = f0_contour(_sweep(lambda t: 1.5 * (100 + 100 * t)))
    assert pitch_correlation(lin, shifted) == pytest.approx(1.0, abs=2e-3)
    quad = f0_contour(_sweep(lambda t: 100 + 100 * t ** 2))
    both = (lin > 0) & (quad > 0)
    t = np.arange(lin.size)[both] * 0.010  # frame times (10 ms grid)
    expected = np.corrcoef(t, t ** 2)[0, 1]
    assert abs(expected - math.sqrt(15) / 4) < 0.01
    assert pitch_correlation(lin, quad) == pytest.approx(expected, abs=5e-3)


def test_utility_cli_pitch_on_folders_and_kaldi_reference(tmp_path):
    import json

    from typer.testing import CliRunner

    from vpeval.cli.main import app
    from vpeval.cli.utility import _references
    from vpeval.audio.io import write_audio

    for name, scale in (("orig", 1.0), ("anon", 1.5)):
        write_audio(tmp_path / name / "u1.wav", _sweep(lambda t: scale * (100 + 100 * t)))
        write_audio(tmp_path / name / "u2.wav", _sweep(lambda t: scale * (200 - 80 * t)))
    r = CliRunner().invoke(app, ["utility", "--audio", str(tmp_path / "orig"), "--anonymized", str(tmp_path / "anon"),
                                 "--pitch", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)["pitch_correlation"]
    assert d["n_utterances"] == 2 and d["n_undefined"] == 0
    assert d["mean"] == pytest.approx(1.0, abs=3e-3) and set(d["utterances"]) == {"u1", "u2"}
    r = CliRunner().invoke(app, ["utility", "--audio", str(tmp_path / "orig"), "--pitch"])
    assert r.exit_code == 2 and "--anonymized" in r.output
    # a Kaldi data folder's text is the default reference
    k = tmp_path / "kaldi"
    k.mkdir()
    (k / "wav.scp").write_text(f"u1 {tmp_path / 'orig' / 'u1.wav'}\n")
    (k / "utt2spk").write_text("u1 s\n")
    (k / "text").write_text("u1 HELLO WORLD\n")
    assert _references(None, k, None) == (str(k / "text"), {"u1": "HELLO WORLD"})
    assert _references(None, tmp_path / "orig", None) == (None, None)


def test_pitch_table_round_trip_and_errors(tmp_path):
    from vpeval.errors import InputFileError
    from vpeval.io.pitch_table import read_pitch_table, write_pitch_table
    from vpeval.metrics.utility import PitchCorrelationResult

    r = PitchCorrelationResult({"a": 0.1, "b": float("nan"), "c": -0.30000000000000004}, (0.1 - 0.30000000000000004) / 2, 1)
    write_pitch_table(tmp_path / "p.csv", r)
    back = read_pitch_table(tmp_path / "p.csv")
    assert back.utterances["a"] == 0.1 and math.isnan(back.utterances["b"]) and back.n_undefined == 1
    assert back.mean == r.mean
    (tmp_path / "q.csv").write_text("utterance_id,rho_f0\na,0.5\nb,1.5\n")
    with pytest.raises(InputFileError, match="q.csv:3"):
        read_pitch_table(tmp_path / "q.csv")


def test_audit_adds_the_pitch_section(tmp_path):
    import json
    import shutil
    from pathlib import Path

    from typer.testing import CliRunner

    from vpeval.cli.main import app

    example = Path(__file__).resolve().parents[1] / "examples" / "librispeech-mini"
    if not (example / "embeddings_mfcc.npz").is_file():
        pytest.skip("bundled example missing")
    for name, scale in (("orig", 1.0), ("anon", 1.25)):
        write = __import__("vpeval.audio.io", fromlist=["write_audio"]).write_audio
        write(tmp_path / name / "u1.wav", _sweep(lambda t: scale * (100 + 100 * t)))
    sysdir = tmp_path / "sys"
    sysdir.mkdir()
    shutil.copy(example / "embeddings_mfcc.npz", sysdir)
    r = CliRunner().invoke(app, ["utility", "--audio", str(tmp_path / "orig"), "--anonymized", str(tmp_path / "anon"),
                                 "--pitch", "--save-pitch", str(sysdir / "pitch_correlation.csv"), "-q"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["audit", str(sysdir), "-o", str(tmp_path / "rep"), "-q", "--backend", "cosine"])
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "rep" / "report.json").read_text())
    sec = next(s for s in doc["sections"] if s["id"] == "pitch")
    assert sec["data"]["n_utterances"] == 1 and sec["data"]["mean"] == pytest.approx(1.0, abs=3e-3)
    assert "pitch correlation" in (tmp_path / "rep" / "report.html").read_text()
