"""Results per speaker group (e.g. sex: the VoicePrivacy f/m split), with per-group speaker-bootstrap intervals.

The rule
--------
A trial belongs to the group of its **enrollment** speaker (the model's speaker; in vpeval protocols and in
VoicePrivacy / Kaldi trial lists the enrollment key is a speaker id). Target trials therefore fall in the group
of their speaker; a non-target trial of a female model against a male probe falls in the female group. This
differs from the VoicePrivacy trial lists, which hold same-gender trials only: there the cross-group
non-targets do not exist. Every trial of a group is kept; nothing is dropped.

Inside a group, the interval is the speaker-level percentile bootstrap of :func:`vpeval.stats.bootstrap`
(resampling unit: the probe speaker when the probe speakers are known, as in an audit; the enrolled speaker
for score files, whose test keys are utterance ids), with the same seed and replicate count as the
uncertainty section. The 1-to-N ALID of a group is the mean LID (bits) of the probes whose *true* speaker is in
the group (the same probes' target trials), with the calibration fitted on all probes (not refitted per group)
and the probe speakers resampled.

A speaker without a group is an error naming the speaker: a breakdown that silently drops speakers would not
add up to the pooled result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..errors import VpevalError
from ..io.trials import Trials
from ..keys import sorted_codes
from ..stats import ALID, TRIAL_METRICS, BootstrapResult, StatsError, bootstrap, bootstrap_one_to_n, trial_speakers

__all__ = ["GroupsError", "GroupResult", "speaker_groups", "trial_groups", "group_breakdown", "pooled_result",
           "clipped_speaker_mean_eer", "pooled_eers", "DEFAULT_GROUP_BY"]

#: The metadata column trials are grouped by when none is named (the VoicePrivacy f/m split).
DEFAULT_GROUP_BY = "sex"


class GroupsError(VpevalError):
    """A speaker has no group, or the group map is inconsistent."""


@dataclass(frozen=True)
class GroupResult:
    """Metrics of one group of trials (one attacker, one trial type, one group).

    Attributes
    ----------
    group : str
        The group label as given by the metadata or the map (e.g. ``F``, ``m``).
    n_enroll_speakers, n_probe_speakers : int
        Distinct enrolled speakers of the group and distinct probe speakers among its trials (0 when unknown).
    n_tar, n_non : int
    metrics : dict key -> BootstrapResult
        ``eer_rocch``, ``eer_interp`` (fractions), ``min_cllr``, ``d_ece`` (bits), ``eps_max`` (nats), each with
        its value and speaker-bootstrap interval; empty when ``note`` says why they could not be computed.
    alid : BootstrapResult or None
        ALID (bits) of the group's probes with its interval, when the 1-to-N analysis was given.
    resampled : str
        The bootstrap unit (``"speaker"`` = probe speaker, ``"enroll"`` = enrolled speaker).
    note : str or None
        Why the metrics are missing (e.g. a group without target trials).
    clipped_eer : float
        Clipped per-speaker mean EER of the group (:func:`clipped_speaker_mean_eer`, fraction); NaN when no
        enrolled speaker of the group has both target and non-target trials.
    clipped_eer_speakers : int
        The enrolled speakers it averages over.
    closest_eer : float
        Closest-point EER of the group's trials (:func:`vpeval.metrics.closest_eer`, the VoicePrivacy scripts'
        estimator; fraction, no interval); NaN without target or non-target trials.
    """

    group: str
    n_enroll_speakers: int
    n_probe_speakers: int
    n_tar: int
    n_non: int
    metrics: dict = field(default_factory=dict)
    alid: BootstrapResult | None = None
    resampled: str = "speaker"
    note: str | None = None
    clipped_eer: float = float("nan")
    clipped_eer_speakers: int = 0
    closest_eer: float = float("nan")

    def to_dict(self) -> dict:
        """JSON-ready: counts, and per metric ``{value, ci_low, ci_high, ...}`` (units in the keys' docs)."""
        return {
            "group": self.group, "n_enroll_speakers": self.n_enroll_speakers,
            "n_probe_speakers": self.n_probe_speakers, "n_tar": self.n_tar, "n_non": self.n_non,
            "resampled": self.resampled, "note": self.note,
            "metrics": {k: b.to_dict() for k, b in self.metrics.items()},
            "alid": None if self.alid is None else self.alid.to_dict(),
            "clipped_speaker_mean_eer": None if self.clipped_eer != self.clipped_eer else self.clipped_eer,
            "clipped_speaker_mean_eer_speakers": self.clipped_eer_speakers,
            "closest_eer": None if self.closest_eer != self.closest_eer else self.closest_eer,
        }


def clipped_speaker_mean_eer(trials: Trials, *, clip: float = 0.5) -> tuple[float, int]:
    """Clipped per-speaker mean EER: each enrolled speaker's EER, clipped at ``clip``, averaged over speakers.

    For every enrollment speaker ``s`` (the enrollment key of the trials), the interpolated step-curve EER
    (:func:`vpeval.metrics.interp_eer`, the table's "EER interp (%)") of the trials enrolled on ``s``: its target
    trials against the non-target trials scored against its model. That EER is clipped,
    ``min(EER_s, clip)``, and the clipped values are averaged with equal weight per speaker. Clipping keeps a
    few speakers whose EER lies far above chance (content-driven outliers) from dominating the mean: at
    ``clip = 0.5`` a speaker counts at most as "not recognisable".

    Parameters
    ----------
    trials : Trials
        With enrollment keys (speaker ids).
    clip : float, default 0.5
        Upper bound of each speaker's EER (fraction).

    Returns
    -------
    (float, int)
        The mean (fraction; NaN when no speaker qualifies) and the number of speakers averaged: speakers with
        no target or no non-target trial have no EER and are left out. The result does not depend on the order
        of the trials (speakers are taken in sorted order, each EER is order-free).

    Raises
    ------
    GroupsError
        Trials without enrollment keys.
    """
    from ..metrics import interp_eer

    try:
        enroll = trial_speakers(trials, side="enroll")
    except StatsError as exc:
        raise GroupsError(str(exc)) from None
    names, inv = sorted_codes(enroll)
    order = np.argsort(inv, kind="stable")
    bounds = np.searchsorted(inv[order], np.arange(names.size + 1))
    vals = []
    for k in range(names.size):
        rows = order[bounds[k]:bounds[k + 1]]
        tar = trials.scores[rows][trials.is_target[rows]]
        non = trials.scores[rows][~trials.is_target[rows]]
        if tar.size and non.size:
            vals.append(min(float(interp_eer(tar, non)), float(clip)))
    return (float(np.mean(vals)) if vals else float("nan")), len(vals)


def speaker_groups(metadata, column: str = DEFAULT_GROUP_BY, *, source: str = "metadata") -> dict[str, str]:
    """One group per speaker from utterance metadata (``speaker_id`` and ``column``).

    Parameters
    ----------
    metadata : pandas.DataFrame
        Read with ``dtype=str``; one row per utterance.
    column : str
        The attribute (default ``sex``).
    source : str
        Named in errors (the file).

    Returns
    -------
    dict speaker id -> group (empty values are left out: those speakers have no group)

    Raises
    ------
    GroupsError
        The column is missing, or one speaker has two different values.
    """
    for c in ("speaker_id", column):
        if c not in metadata.columns:
            raise GroupsError(f"{source}: no {c!r} column to group speakers by")
    out: dict[str, str] = {}
    for spk, val in zip(metadata["speaker_id"].astype(str), metadata[column].astype(str)):
        val = val.strip()
        if not val or val.lower() == "nan":
            continue
        if out.setdefault(spk, val) != val:
            raise GroupsError(f"{source}: speaker {spk!r} has {column} {out[spk]!r} and {val!r}")
    return out


def trial_groups(trials: Trials, groups: Mapping[str, str], *, source: str = "the group map") -> np.ndarray:
    """The group of every trial: that of its enrollment speaker (see the module docstring).

    Raises
    ------
    GroupsError
        An enrollment speaker has no group (named, with the trials' source and ``source``).
    """
    try:
        enroll = trial_speakers(trials, side="enroll")
    except StatsError as exc:
        raise GroupsError(str(exc)) from None
    names, inv = sorted_codes(enroll)
    missing = [n for n in names.tolist() if n not in groups]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise GroupsError(f"{trials.source}: enrollment speaker {missing[0]!r}{more} has no group in {source}; "
                          "every enrolled speaker needs one")
    return np.asarray([groups[n] for n in names.tolist()], dtype=str)[inv]


def group_breakdown(trials: Trials, groups: Mapping[str, str], *, probe_speakers=None, one_to_n=None, lid=None,
                    n_boot: int = 200, seed: int = 0, level: float = 0.95,
                    source: str = "the group map") -> list[GroupResult]:
    """Every metric of ``trials`` per group of the enrollment speaker, with speaker-bootstrap intervals.

    Parameters
    ----------
    trials : Trials
        With enrollment keys (speaker ids).
    groups : mapping speaker id -> group
    probe_speakers : array_like of str, shape (n_trials,), optional
        The probe speaker of every trial (:func:`vpeval.stats.trial_speakers`): the bootstrap unit. Without it
        the enrolled speakers are resampled.
    one_to_n : vpeval.pipeline.OneToN, optional
        The same attacker's 1-to-N matrix of the same condition, with ``lid`` its per-probe LIDs (bits, row
        order of the matrix): adds the group's ALID.
    n_boot, seed, level
        As in :func:`vpeval.stats.bootstrap`.
    source : str
        Where ``groups`` came from (named in errors).

    Returns
    -------
    list of GroupResult, one per group present, sorted by group label.
    """
    g = trial_groups(trials, groups, source=source)
    enroll = trial_speakers(trials, side="enroll")
    probe = None if probe_speakers is None else np.asarray(probe_speakers, dtype=str)
    if probe is not None and probe.shape != g.shape:
        raise GroupsError(f"probe_speakers: expected shape {g.shape}, got {probe.shape}")
    codes = (sorted_codes(enroll)[1], None if probe is None else sorted_codes(probe)[1])  # once for every group
    return [_one_group(label, trials, g == label, enroll, probe, groups, one_to_n, lid, n_boot, seed, level, codes)
            for label in sorted(set(g.tolist()))]


def pooled_result(trials: Trials, *, probe_speakers=None, one_to_n=None, lid=None, n_boot: int = 200,
                  seed: int = 0, level: float = 0.95, label: str = "all") -> GroupResult:
    """The same numbers as :func:`group_breakdown` over every trial (one group named ``label``)."""
    enroll = trial_speakers(trials, side="enroll")
    probe = None if probe_speakers is None else np.asarray(probe_speakers, dtype=str)
    everyone = {s: label for s in sorted_codes(enroll)[0].tolist()}
    if one_to_n is not None:
        everyone.update({s: label for s in np.asarray(one_to_n.probe_speaker, dtype=str).tolist()})
    return _one_group(label, trials, np.ones(len(trials), bool), enroll, probe, everyone, one_to_n, lid, n_boot,
                      seed, level)


def pooled_eers(trials: Trials) -> tuple[float, float]:
    """The two EERs of the per-group table's row over every trial: (clipped per-speaker mean EER
    (:func:`clipped_speaker_mean_eer`; NaN without enrollment keys), closest-point EER
    (:func:`vpeval.metrics.closest_eer`; NaN without target or non-target trials)), fractions."""
    from ..metrics import closest_eer

    clipped = clipped_speaker_mean_eer(trials)[0] if trials.enroll is not None else float("nan")
    closest = closest_eer(trials.tar, trials.non) if trials.tar.size and trials.non.size else float("nan")
    return clipped, closest


def _n_distinct(values: np.ndarray, mask: np.ndarray, codes: np.ndarray | None = None) -> int:
    # distinct keys among values[mask], from the keys' codes (``codes``: sorted_codes(values)[1], when the caller has
    # them for several masks) rather than a string sort
    codes = (sorted_codes(values)[1] if codes is None else codes)[mask]
    return int(np.count_nonzero(np.bincount(codes))) if codes.size else 0


def _one_group(label, trials, mask, enroll, probe, groups, one_to_n, lid, n_boot, seed, level,
               codes=(None, None)) -> GroupResult:
    sub = Trials(trials.scores[mask], trials.is_target[mask],
                 None if trials.enroll is None else trials.enroll[mask],
                 None if trials.test is None else trials.test[mask], trials.source, dict(trials.meta))
    n_tar = int(sub.is_target.sum())
    n_non = int(mask.sum()) - n_tar
    unit = "speaker" if probe is not None else "enroll"
    metrics, note = {}, None
    if n_tar == 0 or n_non == 0:
        note = f"group {label!r} has {n_tar} target and {n_non} non-target trials: no metric is defined"
    else:
        try:
            metrics = bootstrap(sub, TRIAL_METRICS, groups=None if probe is None else probe[mask], unit=unit,
                                n_boot=n_boot, seed=seed, level=level)
        except StatsError as exc:
            note = f"group {label!r}: {exc}"
    alid = None
    if one_to_n is not None and lid is not None:
        lid_v = np.asarray(getattr(lid, "lid", lid), dtype=np.float64)
        rows = np.asarray([groups.get(s) == label for s in np.asarray(one_to_n.probe_speaker, dtype=str)])
        if rows.any():
            alid = bootstrap_one_to_n(one_to_n.select(rows), lid_v[rows], metrics=[ALID], n_boot=n_boot,
                                      seed=seed, level=level)[ALID.key]
    from ..metrics import closest_eer

    clipped, n_clipped = clipped_speaker_mean_eer(sub) if sub.enroll is not None else (float("nan"), 0)
    closest = float(closest_eer(sub.tar, sub.non)) if n_tar and n_non else float("nan")
    n_probe = 0 if probe is None else _n_distinct(probe, mask, codes[1])
    return GroupResult(label, _n_distinct(enroll, mask, codes[0]), n_probe, n_tar, n_non, metrics, alid, unit, note,
                       clipped, n_clipped, closest)
