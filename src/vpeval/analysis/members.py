"""The members of a perfect-secrecy test's family: one attacker's verification trials of one trial type
(:class:`TrialInput`) or its 1-to-N score matrix of one condition (:class:`OneToNInput`), and the speakers of
Kaldi-style trials read from their keys."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..io.trials import Trials

__all__ = ["TrialInput", "OneToNInput", "speakers_from_keys"]


@dataclass(frozen=True)
class TrialInput:
    """One attacker's verification trials of one trial type, with the speakers behind them.

    Attributes
    ----------
    attacker, trial_type : str
    trials : Trials
        Scores and target labels; ``enroll``/``test`` keys when known.
    model_speaker, probe_speaker : ndarray of str, shape (n_trials,), or None
        Speaker of each trial's enrolled model and of its probe (target iff equal); None when unknown.
    """

    attacker: str
    trial_type: str
    trials: Trials
    model_speaker: np.ndarray | None = None
    probe_speaker: np.ndarray | None = None


@dataclass(frozen=True)
class OneToNInput:
    """One attacker's 1-to-N score matrix of one condition: a :class:`vpeval.pipeline.OneToN` or a
    :class:`vpeval.io.matrix.ScoreMatrix` (``scores``, ``probe_id``, ``probe_speaker`` and the enrolled speakers
    as ``enrolled_speaker`` or ``speaker_ids``)."""

    attacker: str
    trial_type: str
    matrix: object


def speakers_from_keys(trials: Trials) -> tuple[np.ndarray, np.ndarray] | None:
    """Model and probe speakers of Kaldi-style trials from their keys alone, or None when they cannot be known.

    The model's speaker is its enroll key (VoicePrivacy and Kaldi models are speakers); a probe's speaker is the
    model it is a target of. A probe with no target trial gets the empty string (a speaker outside the
    enrolled set); a probe that is a target of two models makes the speakers unknowable (None).
    """
    if trials.enroll is None or trials.test is None:
        return None
    t = trials.is_target
    keys, inv = np.unique(trials.test, return_inverse=True)
    inv = inv.reshape(-1)
    n_t = np.bincount(inv[t], minlength=keys.size)
    if (n_t > 1).any():
        return None
    spk = np.full(keys.size, "", dtype=object)
    spk[inv[t]] = trials.enroll[t]
    return np.asarray(trials.enroll, dtype=str), np.asarray(spk[inv], dtype=str)
