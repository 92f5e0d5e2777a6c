"""Prosody statistics (vpeval.audio.prosody): hand-made signals, determinism, order invariance of the attacker."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyworld")

from vpeval.audio.prosody import FEATURES, prosody_features, prosody_matrix  # noqa: E402
from vpeval.errors import VpevalError  # noqa: E402

SR = 16000


def _tone(f0: float, seconds: float, amp: float = 0.3) -> np.ndarray:
    t = np.arange(int(seconds * SR)) / SR
    return amp * (np.sin(2 * np.pi * f0 * t) + 0.5 * np.sin(2 * np.pi * 2 * f0 * t))


def _silence(seconds: float) -> np.ndarray:
    return 1e-5 * np.random.default_rng(0).normal(size=int(seconds * SR))


def test_tone_pause_tone_hand_computed():
    """1 s of a 150 Hz tone, 0.5 s of silence, 1 s of tone: ln F0 = ln 150 with no spread, one pause of 0.5 s in a
    2.5 s span (rate 0.4/s, ratio 0.2), all speech frames voiced."""
    x = np.concatenate([_tone(150, 1.0), _silence(0.5), _tone(150, 1.0)])
    v = dict(zip(FEATURES, prosody_features(x)))
    assert v["logf0_median"] == pytest.approx(np.log(150), abs=0.01)
    assert v["logf0_iqr"] < 0.01 and v["logf0_delta"] < 0.01
    assert v["voiced_ratio"] > 0.9
    assert v["pause_rate"] == pytest.approx(1 / 2.5, rel=0.05)
    assert v["pause_ratio"] == pytest.approx(0.2, abs=0.03)
    assert v["log_pause_mean"] == pytest.approx(np.log(0.5), abs=0.1)
    assert v["log_run_mean"] == pytest.approx(np.log(1.0), abs=0.1)


def test_syllable_rate_counts_energy_bursts():
    """Four 150 ms voiced bursts per second (amplitude-modulated tone, no silence between): 4 nuclei per second."""
    t = np.arange(2 * SR) / SR
    env = 0.55 + 0.45 * np.cos(2 * np.pi * 4 * t)
    x = env * _tone(150, 2.0)
    v = dict(zip(FEATURES, prosody_features(x)))
    assert v["syllable_rate"] == pytest.approx(4.0, abs=0.6)
    assert v["pause_rate"] == 0.0 and v["log_pause_mean"] == pytest.approx(np.log(0.01))


def test_pitch_and_gain_invariance():
    """Doubling F0 moves the ln-F0 statistics by ln 2 and leaves the rest; a gain changes nothing but rounding."""
    a, b = _tone(120, 1.5), _tone(240, 1.5)
    va, vb = prosody_features(a), prosody_features(b)
    i = FEATURES.index("logf0_median")
    assert vb[i] - va[i] == pytest.approx(np.log(2), abs=0.02)
    np.testing.assert_allclose(prosody_features(0.25 * a), va, atol=1e-6)


def test_deterministic_and_order_invariant():
    rng = np.random.default_rng(1)
    xs = [np.concatenate([_tone(f, d), _silence(0.3), _tone(f * 1.1, d)]) * g
          for f, d, g in zip(rng.uniform(90, 250, 4), rng.uniform(0.4, 1.0, 4), rng.uniform(0.1, 0.9, 4))]
    m = prosody_matrix(xs)
    np.testing.assert_array_equal(m, prosody_matrix(xs))
    np.testing.assert_array_equal(prosody_matrix(xs[::-1]), m[::-1])
    assert np.isfinite(m).all() and m.shape == (4, len(FEATURES))


def test_prosody_attacker_does_not_depend_on_row_order():
    """The prosody attacker (standardised features, LDA trained on the training speakers) scores the same trials
    identically whatever the order of the utterances it is given."""
    from vpeval.pipeline import make_attackers
    from vpeval.pipeline.channels import feature_sets

    rng = np.random.default_rng(2)
    spk = lambda u: u.split("-")[0]  # noqa: E731

    def table(prefix, n_spk, n_utt):
        out = {}
        for c in ("original", "anonymized"):
            out[c] = {f"{prefix}{s}-1-{k}": rng.normal(size=len(FEATURES)) + s for s in range(n_spk)
                      for k in range(n_utt)}
        return out

    ev, tr = table("e", 5, 4), table("t", 8, 3)
    scores = []
    for order in (1, -1):
        e = {c: dict(list(d.items())[::order]) for c, d in ev.items()}
        t = {c: dict(list(d.items())[::order]) for c, d in tr.items()}
        es, ts = feature_sets(e, t, spk)
        perm = np.random.default_rng(order + 5).permutation(len(ts))
        ts = ts.select(perm)
        att = [a for a in make_attackers({es.extractor: es}, {ts.extractor: ts}, backends=["lda"])
               if a.trained_on == "anonymized"][0]
        scores.append(att.build_trials(["oa", "aa"]))
    for k in ("oa", "aa"):
        np.testing.assert_allclose(scores[0][k].scores, scores[1][k].scores, rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(scores[0][k].enroll, scores[1][k].enroll)


def test_errors():
    with pytest.raises(VpevalError):
        prosody_features(np.zeros(100))
    with pytest.raises(VpevalError):
        prosody_features(_tone(100, 1.0), sr=8000)
