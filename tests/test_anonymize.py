"""McAdams anonymization: pole-angle map, identity at alpha=1, formant shift, scaling, determinism, folders, CLI."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import soundfile as sf
import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.signal import lfilter, welch
from typer.testing import CliRunner

from vpeval.audio.anonymize import anonymize_folder, draw_alpha, mcadams, mcadams_pole_angles, profile_seed
from vpeval.audio.anonymize.mcadams_coefficient import _poly_from_roots
from vpeval.audio.io import read_audio
from vpeval.cli.audio import register
from vpeval.errors import InputFileError, VpevalError

PCM_MAX = 32767 / 32768


def harmonic(n=8000, f0=140.0, seed=0, amp=0.1):
    t = np.arange(n) / 16000
    x = sum(amp / k * np.sin(2 * np.pi * f0 * k * t + k) for k in range(1, 12))
    return x + 0.002 * np.random.default_rng(seed).standard_normal(n)


def ar2(phi, r=0.97, n=32000, seed=0):
    """Noise through one resonance: poles r exp(+-i phi)."""
    e = np.random.default_rng(seed).standard_normal(n)
    a = [1.0, -2 * r * np.cos(phi), r * r]
    x = lfilter([1.0], a, e)
    return 0.1 * x / np.max(np.abs(x))


# --- pole-angle map ------------------------------------------------------------------------------------


def test_pole_angle_map_hand_values():
    p = np.array([0.9 * np.exp(0.25j), 0.9 * np.exp(-0.25j), 0.8 * np.exp(2.25j), -0.5 + 0j, 0.7 + 0j, 0j])
    q = mcadams_pole_angles(p, 0.5)
    np.testing.assert_allclose(np.angle(q[:3]), [0.5, -0.5, 1.5], atol=1e-12)
    np.testing.assert_allclose(np.abs(q), np.abs(p), atol=1e-12)
    # real poles (angle 0 or pi) unchanged, even though pi**0.5 != pi
    assert q[3] == -0.5 and q[4] == 0.7 and q[5] == 0
    # alpha 0.25: 0.0625 -> 0.5, 2.25 -> 2.25**0.25
    q = mcadams_pole_angles(np.exp(np.array([0.0625j, 2.25j])), 0.25)
    np.testing.assert_allclose(np.angle(q), [0.5, 2.25**0.25], atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0.01, 0.999), st.floats(-3.14, 3.14)), min_size=1, max_size=10),
    st.floats(0.05, 1.0),
)
def test_pole_angle_map_properties(polar, alpha):
    p = np.array([r * np.exp(1j * f) for r, f in polar])
    q = mcadams_pole_angles(p, alpha)
    # conjugate pairs stay conjugate, radii kept, sign of the angle kept, alpha=1 identity
    np.testing.assert_allclose(mcadams_pole_angles(np.conj(p), alpha), np.conj(q), atol=1e-12)
    np.testing.assert_allclose(np.abs(q), np.abs(p), rtol=1e-12)
    assert np.all(np.sign(np.angle(q)) == np.sign(np.angle(p)))
    np.testing.assert_allclose(mcadams_pole_angles(p, 1.0), p, atol=1e-12)


def test_pole_angle_map_rejects_bad_alpha():
    for a in (0, -0.5, 1.01, np.nan, "x"):
        with pytest.raises(VpevalError):
            mcadams_pole_angles(np.array([0.5j]), a)


def test_poly_from_roots_matches_numpy_poly():
    rng = np.random.default_rng(3)
    roots = rng.standard_normal((5, 7)) + 1j * rng.standard_normal((5, 7))
    got = _poly_from_roots(roots)
    for i in range(5):
        np.testing.assert_allclose(got[i], np.poly(roots[i]), atol=1e-10)


# --- mcadams on signals ----------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 7, 159, 160, 161, 320, 4321, 16000])
def test_same_length_any_size(n):
    x = harmonic(n)
    for alpha in (0.5, 0.8, 1.0):
        y = mcadams(x, alpha)
        assert y.shape == (n,) and y.dtype == np.float64 and np.isfinite(y).all()


def test_alpha_one_is_identity_within_tolerance():
    # documented: 1e-6 of full scale (round-off of roots -> polynomial and IIR filtering)
    for seed in range(3):
        x = harmonic(12345, seed=seed, amp=0.3)
        assert np.max(np.abs(mcadams(x, 1.0) - x)) < 1e-6


def test_alpha_below_one_changes_the_signal_but_keeps_rms():
    x = harmonic(16000)
    y = mcadams(x, 0.7)
    assert np.max(np.abs(y - x)) > 0.01
    np.testing.assert_allclose(np.sqrt(np.mean(y**2)), np.sqrt(np.mean(x**2)), rtol=1e-9)


def test_deterministic():
    x = harmonic(9000, seed=5)
    np.testing.assert_array_equal(mcadams(x, 0.63), mcadams(x.copy(), 0.63))


@pytest.mark.parametrize("phi,alpha", [(0.5, 0.6), (0.3, 0.8), (1.6, 0.7)])
def test_resonance_moves_to_phi_power_alpha(phi, alpha):
    """A single resonance at angle phi must reappear at phi**alpha (the McAdams map)."""
    x = ar2(phi)
    y = mcadams(x, alpha)
    f, pxx = welch(x, fs=16000, nperseg=1024)
    _, pyy = welch(y, fs=16000, nperseg=1024)
    hz = lambda a: a * 16000 / (2 * np.pi)  # noqa: E731
    assert abs(f[np.argmax(pxx)] - hz(phi)) < 40
    assert abs(f[np.argmax(pyy)] - hz(phi**alpha)) < 80


def test_peak_limited_without_clipping():
    x = harmonic(16000, amp=0.6)  # loud: RMS scaling alone would exceed full scale at small alpha
    y = mcadams(x, 0.5)
    assert np.max(np.abs(y)) <= PCM_MAX + 1e-15
    assert np.max(np.abs(y)) > 0.5


def test_silence_stays_silent():
    np.testing.assert_array_equal(mcadams(np.zeros(5000), 0.7), np.zeros(5000))
    x = np.zeros(5000)
    x[2000:3000] = harmonic(1000)
    y = mcadams(x, 0.7)
    assert np.all(y[:1500] == 0) and np.all(y[3500:] == 0)  # frames touching only zeros stay zero


def test_mcadams_input_errors():
    with pytest.raises(VpevalError):
        mcadams(np.zeros((2, 100)), 0.8)
    with pytest.raises(VpevalError):
        mcadams(np.array([]), 0.8)
    with pytest.raises(VpevalError):
        mcadams(np.array([0.1, np.nan]), 0.8)
    with pytest.raises(VpevalError, match="even length"):
        mcadams(harmonic(100), 0.8, sr=16050)


# --- alpha draws -------------------------------------------------------------------------------------------


def test_draw_alpha_deterministic_in_range_and_spread():
    vals = np.array([draw_alpha(7, f"spk{i}") for i in range(2000)])
    assert vals.min() >= 0.5 and vals.max() < 0.9
    assert abs(vals.mean() - 0.7) < 0.01  # uniform: sd of the mean 0.115/sqrt(2000) = 0.0026
    assert draw_alpha(7, "spk3") == vals[3]
    assert draw_alpha(8, "spk3") != vals[3]
    assert draw_alpha(7, "x", 0.2, 0.2) == 0.2
    with pytest.raises(VpevalError):
        draw_alpha(7, "x", 0.9, 0.5)
    with pytest.raises(VpevalError):
        draw_alpha(-1, "x")


# --- folders ---------------------------------------------------------------------------------------------------


def make_folder(root, spec):
    """spec: {utterance_id: seed}; writes 16 kHz FLAC files."""
    root.mkdir(parents=True, exist_ok=True)
    for utt, seed in spec.items():
        sf.write(str(root / f"{utt}.flac"), harmonic(4000 + 100 * seed, f0=120 + 10 * seed, seed=seed), 16000)
    return root


SPEC = {"11-1-0000": 1, "11-1-0001": 2, "22-5-0000": 3, "22-5-0001": 4, "33-9-0000": 5}


def test_folder_per_speaker_alpha_independent_of_which_files_exist(tmp_path):
    full = make_folder(tmp_path / "full", SPEC)
    part = make_folder(tmp_path / "part", {k: v for k, v in SPEC.items() if not k.startswith("11")})
    df = anonymize_folder(full, tmp_path / "o1", alpha="speaker", seed=2024, quiet=True)
    dp = anonymize_folder(part, tmp_path / "o2", alpha="speaker", seed=2024, quiet=True)
    assert list(df.utterance_id) == sorted(SPEC)
    per_spk = df.groupby("speaker_id")["alpha"].nunique()
    assert (per_spk == 1).all()
    for spk, a in df.groupby("speaker_id")["alpha"].first().items():
        assert a == draw_alpha(2024, spk)
    merged = dp.merge(df, on="utterance_id")
    np.testing.assert_array_equal(merged.alpha_x, merged.alpha_y)
    # same seed -> identical audio
    for utt in dp.utterance_id:
        np.testing.assert_array_equal(read_audio(tmp_path / "o1" / f"{utt}.flac"), read_audio(tmp_path / "o2" / f"{utt}.flac"))
    # manifest
    man = pd.read_csv(tmp_path / "o1" / "anonymization.csv", dtype={"speaker_id": str})
    assert list(man.columns) == ["utterance_id", "speaker_id", "alpha", "duration_s", "output",
                                "input_rate_hz", "output_rate_hz"]
    np.testing.assert_allclose(man.alpha, df.alpha, rtol=1e-9)


def test_folder_outputs_same_length_16k_and_per_utterance_draws(tmp_path):
    src = make_folder(tmp_path / "in", SPEC)
    df = anonymize_folder(src, tmp_path / "out", alpha="utterance", seed=1, audio_format="wav", quiet=True)
    for utt in SPEC:
        a = read_audio(src / f"{utt}.flac")
        b = read_audio(tmp_path / "out" / f"{utt}.wav")
        assert a.shape == b.shape
    assert df.set_index("utterance_id").alpha.to_dict() == {u: draw_alpha(1, u) for u in SPEC}
    fixed = anonymize_folder(src, tmp_path / "fx", alpha=0.8, quiet=True)
    assert (fixed.alpha == 0.8).all()


def test_folder_errors(tmp_path):
    src = make_folder(tmp_path / "in", SPEC)
    with pytest.raises(VpevalError, match="needs a seed"):
        anonymize_folder(src, tmp_path / "o", alpha="speaker")
    with pytest.raises(VpevalError, match="must not be the input folder"):
        anonymize_folder(src, src / "sub", alpha=0.8, quiet=True)
    with pytest.raises(VpevalError, match="alpha"):
        anonymize_folder(src, tmp_path / "o", alpha="speakers", quiet=True)
    with pytest.raises(VpevalError, match="flac"):
        anonymize_folder(src, tmp_path / "o", alpha=0.8, audio_format="mp3", quiet=True)
    (src / "44-1-0000.flac").write_bytes(b"garbage" * 20)
    with pytest.raises(InputFileError, match="44-1-0000.flac"):
        anonymize_folder(src, tmp_path / "o", alpha=0.8, quiet=True)


# --- CLI ----------------------------------------------------------------------------------------------------


@pytest.fixture
def app():
    a = typer.Typer()
    register(a)
    return a


def test_cli_anonymize(tmp_path, app):
    src = make_folder(tmp_path / "in", SPEC)
    res = CliRunner().invoke(app, ["anonymize", str(src), str(tmp_path / "out"), "--alpha", "speaker",
                                   "--seed", "3", "--quiet", "--json"])
    assert res.exit_code == 0, res.output
    assert '"utterances": 5' in res.output and '"speakers": 3' in res.output
    assert sorted(p.stem for p in (tmp_path / "out").glob("*.flac")) == sorted(SPEC)


def test_cli_anonymize_errors_exit_2_without_traceback(tmp_path, app):
    src = make_folder(tmp_path / "in", SPEC)
    sf.write(str(src / "55-1-0000.flac"), harmonic(), 8000)
    r = CliRunner().invoke(app, ["anonymize", str(src), str(tmp_path / "out"), "--quiet", "--strict-rate"])
    assert r.exit_code == 2 and "55-1-0000.flac" in r.output and "8000 Hz" in r.output
    assert "Traceback" not in r.output
    r = CliRunner().invoke(app, ["anonymize", str(src), str(tmp_path / "out"), "--alpha", "big"])
    assert r.exit_code == 2 and "--alpha must be" in r.output


@pytest.mark.parametrize("f", [220.0, 1000.0, 3000.0])
def test_pure_tones_stay_finite_and_bounded(f):
    """Burg's LPC breaks down on pure tones (rank-2 frames); the stable fallback must keep output sane."""
    x = 0.3 * np.sin(2 * np.pi * f * np.arange(8000) / 16000)
    with np.errstate(all="raise"):
        for alpha in (1.0, 0.7):
            y = mcadams(x, alpha)
            assert np.isfinite(y).all() and np.max(np.abs(y)) <= PCM_MAX
    # poles within 1e-3 of the unit circle make roots -> polynomial ill-conditioned: documented 1e-5 here
    assert np.max(np.abs(mcadams(x, 1.0) - x)) < 1e-5


def test_stable_lpc_fallback_keeps_all_poles_inside():
    from vpeval.audio.anonymize.mcadams_coefficient import _stable_lpc

    t = np.arange(320) / 16000
    frames = np.stack([np.sin(2 * np.pi * 220 * t + p) for p in np.linspace(0, 3, 12)]) * np.hanning(321)[:-1]
    a, roots = _stable_lpc(frames, 20)
    assert np.abs(roots).max() < 1 and np.allclose(a[:, 0], 1)


# --- pseudo-identity profiles (Beyond-EER) ---------------------------------------------------------------------


@pytest.mark.parametrize("method", ["mcadams", "resample"])
def test_profile_key_maps_each_speaker_to_one_pseudo_voice_and_renews(tmp_path, method):
    """The same key gives bit-identical audio in another run (and folder); per speaker one parameter set on every
    utterance; another key draws other parameters (a renewed pseudo-identity)."""
    src = make_folder(tmp_path / "in", SPEC)
    a = anonymize_folder(src, tmp_path / "a", profile="p1", method=method, quiet=True)
    again = anonymize_folder(src, tmp_path / "again", profile="p1", method=method, quiet=True)
    other = anonymize_folder(src, tmp_path / "other", profile="p2", method=method, quiet=True)
    for utt in SPEC:
        f = f"{utt}.flac"
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "again" / f).read_bytes()
        assert not np.array_equal(read_audio(tmp_path / "a" / f), read_audio(tmp_path / "other" / f))
    col = "alpha" if method == "mcadams" else "ratio"
    assert (a.groupby("speaker_id")[col].nunique() == 1).all()
    assert (a.set_index("utterance_id")[col] != other.set_index("utterance_id")[col]).all()
    assert set(a["profile"]) == {"p1"} and set(other["profile"]) == {"p2"}
    man = pd.read_csv(tmp_path / "a" / "anonymization.csv", dtype={"speaker_id": str})
    assert list(man.columns)[-1] == "profile" and set(man["profile"]) == {"p1"}
    # the key is the seed of per-speaker draws, nothing else
    seeded = anonymize_folder(src, tmp_path / "seeded", alpha="speaker", seed=profile_seed("p1"), method=method,
                              quiet=True)
    np.testing.assert_array_equal(seeded[col], a[col])


def test_profile_key_errors(tmp_path, app):
    src = make_folder(tmp_path / "in", SPEC)
    with pytest.raises(VpevalError, match="not both"):
        anonymize_folder(src, tmp_path / "o", profile="p1", seed=3, quiet=True)
    with pytest.raises(VpevalError, match="per speaker"):
        anonymize_folder(src, tmp_path / "o", profile="p1", alpha="utterance", quiet=True)
    for bad in ("", "a b", "x\ty"):
        with pytest.raises(VpevalError, match="profile key"):
            anonymize_folder(src, tmp_path / "o", profile=bad, quiet=True)
    r = CliRunner().invoke(app, ["anonymize", str(src), str(tmp_path / "cli"), "--profile", "k1", "--quiet",
                                 "--json"])
    assert r.exit_code == 0, r.output
    assert '"profile": "k1"' in r.output and '"alpha": "speaker"' in r.output
    r = CliRunner().invoke(app, ["anonymize", str(src), str(tmp_path / "cli2"), "--profile", "k1", "--seed", "2"])
    assert r.exit_code == 2 and "not both" in r.output
