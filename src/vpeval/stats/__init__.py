r"""Uncertainty and exposure: speaker-level bootstrap intervals, permutation chance floors with verdicts,
and per-speaker privacy profiles.

Modules: :mod:`~vpeval.stats.trial_bootstrap` (bootstrap of trial metrics), :mod:`~vpeval.stats.chance`
(permutation chance floors of trial metrics), :mod:`~vpeval.stats.one_to_n` (both for 1-to-N results),
:mod:`~vpeval.stats.results` (result types), :mod:`~vpeval.stats.metrics` (the metrics they resample) and
:mod:`~vpeval.stats.profile` (the per-speaker profile). The definitions follow.

Bootstrap (:func:`bootstrap`, :func:`bootstrap_ci`)
----------------------------------------------------
Trials are not independent: every trial of a speaker shares that speaker's voice, so resampling trials
gives intervals that are far too narrow. The resampling **unit** is the speaker (Efron & Tibshirani, "An
Introduction to the Bootstrap", 1993, Ch. 6 and 13; the "subsets bootstrap" of Bolle, Ratha & Pankanti,
"Error analysis of pattern recognition systems: the subsets bootstrap", CVIU 93, 2004): draw as many
speakers as there are, with replacement, uniformly; every trial of a drawn speaker enters the replicate
once per draw (with multiplicity); the metric is recomputed on the replicate. The interval is the
**percentile interval** of the replicates with order statistics: for ``R`` replicates sorted ascending and
``a = (1 - level) / 2`` it is ``[x_(ceil(R a)), x_(ceil(R (1 - a)))]`` (1-based; Hyndman & Fan type 1,
NumPy ``method="inverted_cdf"``), which never interpolates between infinite values.

**Which speaker a trial belongs to** (``unit="speaker"``): the speaker of the *test* side, i.e. of the
probe utterance. This is the speaker whose privacy the trial attacks; for a target trial it is also the
model's speaker. Non-target trials of a probe go with the probe, so the enrolled models (including a
never-probed cohort) are held fixed: intervals are conditional on the attacker's gallery. Get the
per-trial speakers with :func:`trial_speakers`. ``unit="enroll"`` resamples enrolled models instead,
``unit="test"`` probe utterances (test keys) and ``unit="trial"`` single trials (for comparison only).

A replicate that lacks target or non-target trials is redrawn (its count is reported as ``n_redrawn``), so
every replicate has both classes. For 1-to-N data (:class:`~vpeval.pipeline.OneToN`) the probe rows are
resampled by their speaker (``probe_speaker``); the LID calibration is not refitted (its uncertainty is not
in the interval).

**Worst-case metrics** (eps_max, LID_max) are extremes, and the bootstrap of an extreme is known to be
unreliable (Bickel & Freedman, Ann. Statist. 9, 1981, Sec. 6): a replicate can only reuse the observed
probes, so the upper end of a LID_max interval never exceeds the observed LID_max. Read those intervals as
the spread over speaker subsets, not as coverage guarantees; the chance floor is the sounder evidence there.

Chance floor (:func:`chance_floor`)
-----------------------------------
The distribution of the metric under **perfect secrecy** at the same sample sizes and trial structure,
by a permutation test (Good, "Permutation, Parametric and Bootstrap Tests of Hypotheses", 2005, Ch. 3):
under perfect secrecy a probe's score against its true model is exchangeable with its scores against
the other models, so the labels are permuted **within each test key** (each probe utterance keeps its
number of targets: with one true model per probe the target is a uniformly random model of that probe's
row). ``within="all"`` permutes the labels over all trials keeping the total counts (scores swapped
across the target / non-target split); ``within="enroll"`` within each model; ``within="auto"`` (default)
is ``"test"`` when every target trial shares its test key with at least one non-target, else ``"all"``
(e.g. trials whose test keys are one class each). The result says which was used.

Reported: the null quantiles, the **chance floor** = the one-sided 95 % critical value in the direction of
leakage (95th percentile for metrics where higher leaks, 5th percentile where lower leaks, such as the EER
of an attack), the permutation **p-value** ``(1 + #{null at least as extreme as observed}) / (1 + n_perm)``
(Phipson & Smyth, Stat. Appl. Genet. Mol. Biol. 9, 2010) where "at least as extreme" is ``>=`` for
``leak="higher"``, ``<=`` for ``"lower"`` and ``|null - median| >= |observed - median|`` for
``"two-sided"``, and the verdict ``"beats chance"`` when ``p <= alpha`` (default 0.05), else
``"indistinguishable from chance"``.

For 1-to-N data the true speaker of each probe row is drawn uniformly among the N enrolled speakers.
Rank-1 credit is then evaluated on the raw scores. LID is recomputed with a logistic calibration
**refitted to each permuted labelling** (same objective as :class:`~vpeval.calibration.LogisticCalibrator`:
unweighted maximum likelihood on the row-z-normalised scores, with the ridge of
:data:`~vpeval.metrics.linkage.DEFAULT_REGULARIZATION` only if a permuted labelling is separable), fitted
in-sample on all rows, not cross-fitted. An in-sample fit overfits towards the drawn labels, so the floor
is slightly higher than a cross-fitted one: the verdict "beats chance" is conservative.

Every result depends on the input only as a set (trial order does not matter) and on ``seed``.
"""

from .._lazy import lazy_module_attributes

# imported on first use (vpeval._lazy): the verdict of a score file reads the result types alone, and the
# 1-to-N modules bring in SciPy's statistics
_SOURCES = {
    "metrics": ("ALID", "D_ECE", "EER_INTERP", "EER_ROCCH", "EPS_MAX", "LEAK_DIRECTIONS", "LID_MAX", "MIN_CLLR",
                "PROBE_METRICS", "RANK1", "TRIAL_METRICS", "ProbeMetric", "StatMetric", "StatsError",
                "as_stat_metric", "leak_for_trial_type"),
    "profile": ("SpeakerProfile", "speaker_profile"),
    "chance": ("assess_trials", "chance_floor"),
    "one_to_n": ("assess_one_to_n", "bootstrap_one_to_n", "chance_floor_one_to_n"),
    "results": ("VERDICT_CHANCE", "VERDICT_LEAKS", "Assessment", "BootstrapResult", "ChanceResult", "SpeakerDraws",
                "draw_speakers"),
    "trial_bootstrap": ("bootstrap", "bootstrap_ci", "trial_speakers"),
}
__getattr__, __dir__ = lazy_module_attributes(__name__, _SOURCES, globals())

__all__ = [
    "StatsError", "StatMetric", "ProbeMetric", "as_stat_metric", "LEAK_DIRECTIONS",
    "EER_ROCCH", "EER_INTERP", "MIN_CLLR", "D_ECE", "EPS_MAX", "RANK1", "ALID", "LID_MAX",
    "TRIAL_METRICS", "PROBE_METRICS", "leak_for_trial_type",
    "BootstrapResult", "ChanceResult", "Assessment", "VERDICT_LEAKS", "VERDICT_CHANCE",
    "trial_speakers", "SpeakerDraws", "draw_speakers", "bootstrap", "bootstrap_ci", "chance_floor", "assess_trials",
    "bootstrap_one_to_n", "chance_floor_one_to_n", "assess_one_to_n",
    "SpeakerProfile", "speaker_profile",
]
