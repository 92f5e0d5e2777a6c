"""The vtln (WORLD F0 ratio + bilinear envelope warping) and resample anonymizers."""

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

pytest.importorskip("pyworld")
pytest.importorskip("librosa")

from vpeval.audio.anonymize import anonymize_folder, bilinear_warp, resample_shift, vtln  # noqa: E402
from vpeval.audio.anonymize.folder import _world_parameters  # noqa: E402
from vpeval.audio.io import read_audio, write_audio  # noqa: E402
from vpeval.audio.pitch import f0_contour  # noqa: E402
from vpeval.errors import VpevalError  # noqa: E402


def _vowel(f0=140.0, formant=700.0, seconds=1.0, sr=16000):
    """A harmonic tone at f0 whose harmonics are weighted by a resonance at ``formant`` Hz."""
    t = np.arange(int(seconds * sr)) / sr
    x = np.zeros_like(t)
    for k in range(1, int(4000 // f0)):
        f = k * f0
        x += np.sin(2 * np.pi * f * t) / (1 + ((f - formant) / 120) ** 2)
    return 0.5 * x / np.max(np.abs(x))


def _median_f0(x):
    f = f0_contour(x)
    return float(np.median(f[f > 0]))


def test_bilinear_warp_hand_values():
    # phi_a(pi/2) = pi/2 + 2 atan(a): a = 0.2 -> pi/2 + 0.3947911197
    assert float(bilinear_warp(np.pi / 2, 0.2)) == pytest.approx(np.pi / 2 + 2 * np.arctan(0.2), abs=1e-15)
    assert float(bilinear_warp(0.0, 0.5)) == 0.0 and float(bilinear_warp(np.pi, -0.5)) == pytest.approx(np.pi)
    w = np.linspace(0, np.pi, 50)
    assert np.all(np.diff(bilinear_warp(w, 0.3)) > 0) and np.all(bilinear_warp(w[1:-1], 0.3) > w[1:-1])


def test_vtln_scales_f0_and_moves_the_formant():
    x = _vowel()
    y = vtln(x, 0.0, 1.25)
    assert y.shape == x.shape and np.max(np.abs(y)) <= 32767 / 32768
    assert _median_f0(y) / _median_f0(x) == pytest.approx(1.25, rel=0.03)
    # warp > 0 moves the resonance up: spectral centroid rises
    def centroid(z):
        p = np.abs(np.fft.rfft(z)) ** 2
        f = np.fft.rfftfreq(z.size, 1 / 16000)
        return float((p * f).sum() / p.sum())
    up, down = vtln(x, 0.2, 1.0), vtln(x, -0.2, 1.0)
    assert centroid(down) < centroid(vtln(x, 0.0, 1.0)) < centroid(up)
    assert np.sqrt(np.mean(up ** 2)) == pytest.approx(np.sqrt(np.mean(x ** 2)), rel=1e-6)
    with pytest.raises(VpevalError):
        vtln(x, 1.0, 1.0)
    with pytest.raises(VpevalError):
        vtln(x, 0.1, 0.0)


def test_resample_scales_f0_keeps_length():
    x = _vowel(f0=150.0)
    y = resample_shift(x, 1.2)
    assert y.shape == x.shape
    assert _median_f0(y) / _median_f0(x) == pytest.approx(1.2, rel=0.03)
    with pytest.raises(VpevalError):
        resample_shift(x, -1.0)


def test_drawn_parameters_stable_and_in_range():
    for key in ("1688", "367", "u-1"):
        p = _world_parameters("vtln", 3, key)
        assert p == _world_parameters("vtln", 3, key) and 0.08 <= abs(p["warp"]) <= 0.2
        assert 0.7 <= p["f0_ratio"] <= 1.4
        r = _world_parameters("resample", 3, key)["ratio"]
        assert 0.8 <= r <= 1.25 and not (1 / 1.07 < r < 1.07)
    assert _world_parameters("vtln", 3, "1688") != _world_parameters("vtln", 4, "1688")


@pytest.mark.parametrize("method, cols", [("vtln", ["warp", "f0_ratio"]), ("resample", ["ratio"])])
def test_folder_and_cli(tmp_path, method, cols):
    from vpeval.cli.main import app

    for u, f0 in (("a-1", 120.0), ("a-2", 130.0), ("b-1", 210.0)):
        write_audio(tmp_path / "in" / f"{u}.wav", _vowel(f0=f0, seconds=0.5))
    df = anonymize_folder(tmp_path / "in", tmp_path / "out", alpha="speaker", seed=5, method=method, quiet=True)
    assert list(df.columns) == ["utterance_id", "speaker_id", *cols, "duration_s", "output",
                                  "input_rate_hz", "output_rate_hz"]
    # per speaker: a-1 and a-2 share their parameters
    assert df.loc[0, cols].tolist() == df.loc[1, cols].tolist() != df.loc[2, cols].tolist()
    table = pd.read_csv(tmp_path / "out" / "anonymization.csv")
    np.testing.assert_allclose(table[cols].to_numpy(), df[cols].to_numpy(), rtol=1e-9)
    assert read_audio(tmp_path / "out" / "a-1.flac").size == 8000
    with pytest.raises(VpevalError, match="draws its parameters"):
        anonymize_folder(tmp_path / "in", tmp_path / "o2", alpha=0.8, method=method)
    r = CliRunner().invoke(app, ["anonymize", str(tmp_path / "in"), str(tmp_path / "o3"), "--method", method,
                                 "--alpha", "utterance", "--seed", "1", "-q", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["method"] == method and (tmp_path / "o3" / "b-1.flac").is_file()
