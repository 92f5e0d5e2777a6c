"""Uncertainty and exposure: speaker-level bootstrap intervals, permutation chance floors with verdicts,
and per-speaker privacy profiles.

See :mod:`vpeval.stats.resampling` for the definitions (resampling unit, interval, permutation scheme,
p-value, verdict) and :mod:`vpeval.stats.profile` for the per-speaker profile.
"""

from .metrics import (
    ALID,
    D_ECE,
    EER_INTERP,
    EER_ROCCH,
    EPS_MAX,
    LEAK_DIRECTIONS,
    LID_MAX,
    MIN_CLLR,
    PROBE_METRICS,
    RANK1,
    TRIAL_METRICS,
    ProbeMetric,
    StatMetric,
    StatsError,
    as_stat_metric,
    leak_for_trial_type,
)
from .profile import SpeakerProfile, speaker_profile
from .resampling import (
    VERDICT_CHANCE,
    VERDICT_LEAKS,
    Assessment,
    BootstrapResult,
    ChanceResult,
    SpeakerDraws,
    assess_one_to_n,
    assess_trials,
    bootstrap,
    bootstrap_ci,
    bootstrap_one_to_n,
    chance_floor,
    chance_floor_one_to_n,
    draw_speakers,
    trial_speakers,
)

__all__ = [
    "StatsError", "StatMetric", "ProbeMetric", "as_stat_metric", "LEAK_DIRECTIONS",
    "EER_ROCCH", "EER_INTERP", "MIN_CLLR", "D_ECE", "EPS_MAX", "RANK1", "ALID", "LID_MAX",
    "TRIAL_METRICS", "PROBE_METRICS", "leak_for_trial_type",
    "BootstrapResult", "ChanceResult", "Assessment", "VERDICT_LEAKS", "VERDICT_CHANCE",
    "trial_speakers", "SpeakerDraws", "draw_speakers", "bootstrap", "bootstrap_ci", "chance_floor", "assess_trials",
    "bootstrap_one_to_n", "chance_floor_one_to_n", "assess_one_to_n",
    "SpeakerProfile", "speaker_profile",
]
