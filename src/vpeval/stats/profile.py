"""Per-speaker privacy profile: which enrolled speakers are most exposed, and subgroup summaries.

Per evaluation speaker (an enrolled speaker with probes):

* ``worst_abs_llr_nats``: the largest ``|LLR|`` over the speaker's **target** trials, where the LLRs are
  Laplace-smoothed PAV LLRs (privacy-ZEBRA convention, :func:`vpeval.pav_llr` with ``laplace=True``) fitted
  on **all** trials of the set (every speaker's targets and non-targets). It is the speaker's share of the
  privacy-ZEBRA worst case eps_max (Nautsch et al., Interspeech 2020, Eq. 9): eps_max is the maximum of
  ``|LLR|`` over all trials, so the largest ``worst_abs_llr_nats`` never exceeds it. Also in bits, and the
  signed largest LLR (``max_llr_nats``: positive = the attacker is pointed at the speaker).
* ``lid_mean_bits`` / ``lid_max_bits``: mean and max LID (Sterns et al.; bits) over the speaker's probes.
* ``rank1_rate``: share of the speaker's probes whose true speaker scores highest among the N enrolled
  (fractional tie rule: a tie with ``e`` others at the top counts ``1/(e+1)``); chance is ``1/N``.

The target trial's speaker is its enrolled model's id (``trials.enroll``; for target trials it is also the
probe's speaker). By default rows are sorted so the most exposed speakers lead: by ``worst_abs_llr_nats``, then
``lid_max_bits``, then ``rank1_rate`` (all descending), then speaker id, so ties never depend on input order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..calibration.pav import pav_llr
from ..io.trials import Trials
from .metrics import StatsError
from .one_to_n import _lid_values, _rank1_credit

__all__ = ["SpeakerProfile", "speaker_profile", "DEFAULT_ATTRIBUTES"]

#: Metadata columns summarised when present (in this order).
DEFAULT_ATTRIBUTES = ("sex", "gender", "age", "age_group", "accent", "dialect", "language")

_SORT = ("worst_abs_llr_nats", "lid_max_bits", "rank1_rate")
_NUMERIC = ("n_target_trials", "worst_abs_llr_nats", "worst_abs_llr_bits", "max_llr_nats", "n_probes",
            "lid_mean_bits", "lid_max_bits", "rank1_rate")


@dataclass(frozen=True)
class SpeakerProfile:
    """Per-speaker exposure table and subgroup summaries.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per speaker, most exposed first. Columns: ``speaker_id``, then (when the inputs allow)
        ``n_target_trials``, ``worst_abs_llr_nats``, ``worst_abs_llr_bits``, ``max_llr_nats``,
        ``n_probes``, ``lid_mean_bits``, ``lid_max_bits``, ``rank1_rate``, then the metadata attributes.
    subgroups : dict attribute -> pandas.DataFrame
        Per value of each attribute: ``n_speakers`` and the mean (and, for the worst cases, the max) of the
        numeric columns over its speakers.
    n_enrolled : int or None
        N of the 1-to-N search (chance rank-1 rate is ``1/N``).
    eps_max_nats : float or None
        eps_max of the whole trial set (the upper bound of ``worst_abs_llr_nats``).
    """

    table: object
    subgroups: dict = field(default_factory=dict)
    n_enrolled: int | None = None
    eps_max_nats: float | None = None

    def to_dict(self) -> dict:
        def records(df):
            out = []
            for rec in df.to_dict(orient="records"):
                out.append({k: (None if isinstance(v, float) and math.isnan(v) else
                                (v.item() if hasattr(v, "item") else v)) for k, v in rec.items()})
            return out

        return {
            "speakers": records(self.table),
            "subgroups": {k: records(v) for k, v in self.subgroups.items()},
            "n_enrolled": self.n_enrolled,
            "eps_max_nats": self.eps_max_nats,
        }


def _metadata_table(metadata, attributes, speakers):
    import pandas as pd

    if "speaker_id" not in metadata.columns:
        raise StatsError("metadata: needs a speaker_id column")
    cols = [c for c in (attributes if attributes is not None else DEFAULT_ATTRIBUTES) if c in metadata.columns]
    if attributes is not None:
        missing = [c for c in attributes if c not in metadata.columns]
        if missing:
            raise StatsError(f"metadata: no column(s) {missing}")
    md = metadata[["speaker_id"] + cols].copy()
    md["speaker_id"] = md["speaker_id"].astype(str)
    rows = {}
    for c in cols:
        sub = md[["speaker_id", c]].dropna().drop_duplicates()
        dup = sub["speaker_id"].duplicated(keep=False)
        if dup.any():
            spk = sub.loc[dup, "speaker_id"].iloc[0]
            vals = sorted(map(str, sub.loc[sub["speaker_id"] == spk, c].tolist()))
            raise StatsError(f"metadata: speaker {spk!r} has conflicting {c} values {vals}")
        rows[c] = dict(zip(sub["speaker_id"], sub[c]))
    out = pd.DataFrame({"speaker_id": speakers})
    for c in cols:
        out[c] = [rows[c].get(s) for s in speakers]
    return out, cols


def speaker_profile(
    trials: Trials | None = None,
    *,
    one_to_n=None,
    lid=None,
    metadata=None,
    attributes=None,
    sort_by=_SORT,
) -> SpeakerProfile:
    """Per-speaker privacy profile, most exposed speakers first, with subgroup summaries.

    Parameters
    ----------
    trials : Trials, optional
        Verification trials of one attack (e.g. ``oa``) with ``enroll`` keys = speaker ids (as
        :func:`vpeval.pipeline.build_trials` makes them). Gives the worst ``|LLR|`` columns.
    one_to_n : vpeval.pipeline.OneToN, optional
        The 1-to-N matrix of the same attack. Gives ``n_probes`` and ``rank1_rate``.
    lid : array_like of shape (n_probes,) or LIDPipelineResult, optional
        Per-probe LIDs (bits) in the row order of ``one_to_n``; gives the LID columns.
    metadata : pandas.DataFrame, optional
        With a ``speaker_id`` column and attribute columns (utterance-level rows are fine: each speaker
        must have one value per attribute).
    attributes : sequence of str, optional
        Attribute columns to summarise; default those of :data:`DEFAULT_ATTRIBUTES` that are present.
    sort_by : sequence of str
        Columns sorted descending, in priority order (absent ones are skipped), then ``speaker_id``
        ascending. Default ``("worst_abs_llr_nats", "lid_max_bits", "rank1_rate")``; use
        ``("max_llr_nats", ...)`` to rank by evidence *for* the speaker only (a large negative LLR on a
        target trial is also disclosure in the privacy-ZEBRA sense, but points away from the speaker).

    Returns
    -------
    SpeakerProfile

    Raises
    ------
    StatsError
        Nothing to profile, trials without enroll keys or targets, ``lid`` without ``one_to_n``, a metadata column missing or a speaker with conflicting values.

    Examples
    --------
    >>> from vpeval.io.trials import Trials
    >>> t = Trials([3.0, 0.1, 0.2, 0.5], [True, False, True, False], ["a", "a", "b", "b"], ["x", "y", "z", "w"])
    >>> p = speaker_profile(t)
    >>> p.table["speaker_id"].tolist()
    ['a', 'b']
    """
    import pandas as pd

    if trials is None and one_to_n is None:
        raise StatsError("speaker_profile needs trials and/or one_to_n")
    parts = []
    eps = None
    if trials is not None:
        if trials.enroll is None:
            raise StatsError(f"{trials.source}: trials need enroll keys (speaker ids)")
        if not trials.is_target.any() or trials.is_target.all():
            raise StatsError(f"{trials.source}: needs target and non-target trials")
        tar_llr, non_llr = pav_llr(trials.tar, trials.non, laplace=True)
        eps = float(max(np.abs(tar_llr).max(), np.abs(non_llr).max()))
        df = pd.DataFrame({"speaker_id": trials.enroll[trials.is_target], "llr": tar_llr})
        df["abs"] = df["llr"].abs()
        g = df.groupby("speaker_id", sort=True)
        part = pd.DataFrame({
            "n_target_trials": g.size(),
            "worst_abs_llr_nats": g["abs"].max(),
            "max_llr_nats": g["llr"].max(),
        })
        part.insert(2, "worst_abs_llr_bits", part["worst_abs_llr_nats"] / math.log(2.0))
        parts.append(part)
    n_enrolled = None
    if one_to_n is not None:
        n_enrolled = int(one_to_n.n_enrolled)
        spk = np.asarray(one_to_n.probe_speaker, dtype=str)
        d = {"speaker_id": spk, "rank1": _rank1_credit(one_to_n)}
        lid_v = _lid_values(lid, one_to_n.n_probes)
        if lid_v is not None:
            d["lid"] = lid_v
        df = pd.DataFrame(d)
        g = df.groupby("speaker_id", sort=True)
        part = pd.DataFrame({"n_probes": g.size()})
        if lid_v is not None:
            part["lid_mean_bits"] = g["lid"].mean()
            part["lid_max_bits"] = g["lid"].max()
        part["rank1_rate"] = g["rank1"].mean()
        parts.append(part)
    elif lid is not None:
        raise StatsError("lid needs one_to_n (the probe rows it belongs to)")
    table = parts[0] if len(parts) == 1 else parts[0].join(parts[1], how="outer")
    table.index.name = "speaker_id"
    table = table.reset_index()
    table["speaker_id"] = table["speaker_id"].astype(str)
    unknown = [c for c in sort_by if c not in _NUMERIC]
    if unknown:
        raise StatsError(f"sort_by: unknown column(s) {unknown}; expected some of {list(_NUMERIC)}")
    keys = [c for c in sort_by if c in table.columns]
    table = table.sort_values(keys + ["speaker_id"], ascending=[False] * len(keys) + [True],
                              na_position="last", kind="mergesort").reset_index(drop=True)
    subgroups = {}
    if metadata is not None:
        md, cols = _metadata_table(metadata, attributes, table["speaker_id"].tolist())
        for c in cols:
            table[c] = md[c].to_numpy()
        numeric = [c for c in table.columns if c not in ["speaker_id", *cols] and not c.startswith("n_")]
        for c in cols:
            g = table.dropna(subset=[c]).groupby(c, sort=True)
            summ = pd.DataFrame({"n_speakers": g.size()})
            for col in numeric:
                summ[f"mean_{col}"] = g[col].mean()
                if col in ("worst_abs_llr_nats", "lid_max_bits"):
                    summ[f"max_{col}"] = g[col].max()
            summ.index = summ.index.map(str)
            summ.index.name = c
            subgroups[c] = summ.reset_index()
    return SpeakerProfile(table, subgroups, n_enrolled, eps)
