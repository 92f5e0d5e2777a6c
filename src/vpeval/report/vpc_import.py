"""vpeval's numbers beside the VoicePrivacy toolkit's own, from the files the toolkit wrote.

The challenge's table (:func:`vpeval.io.vpc_results.read_result_for_rank`) comes first, unchanged; each of its
ASV rows is matched to the score file of the same condition (:func:`vpeval.io.vpc_results.find_vpc_score_files`:
same ASV model, dataset, split, gender, enrollment and trial condition) and the data folder's ``trials`` key,
and vpeval adds, from those very scores:

* the closest-point EER (:func:`vpeval.metrics.closest_eer`, the estimator of the challenge's scripts; it can
  differ from the printed EER in the last digits, which are rounded, and on tied scores);
* the interpolated and the ROCCH EER with 95 % percentile bootstrap intervals over the *enrolled speakers*
  (a score file does not name the test utterance's speaker), eps_max (bits) with its interval;
* the clipped per-speaker mean EER (:func:`vpeval.pipeline.groups.clipped_speaker_mean_eer`);
* the target and non-target trial counts.

Score files without a table row (e.g. conditions the table does not print) follow as rows with an empty
challenge EER. The **worst case** over the attack rows (anonymized test side) is the row with the largest
eps_max, and the one with the lowest closest-point EER.

The **verdict** of every attack row (anonymized test side, with a score file) is the one rule of
:mod:`vpeval.analysis.verdict`, the attacker being the scores as given
(:func:`vpeval.analysis.families.score_verdict`, the ``verdicts`` object of ``vpeval verify`` and ``report``):
the score file's enroll keys name the enrolled speakers and each test utterance's speaker is the model it is a
target of (:func:`vpeval.analysis.speakers_from_keys`), so speakers are relabelled when every probe is scored
against every model of its list (the toolkit's per-gender trials), else each speaker's probes together among
the models all of them met (the ``speaker-row`` relabelling).
Each row is its own family: the rows' evaluation speakers differ (gender, dataset, split).
"""

from __future__ import annotations

import math
from pathlib import Path

__all__ = ["IMPORT_COLUMNS", "NOT_DEFINED", "import_vpc_outputs", "import_csv_text", "row_name"]

_LN2 = math.log(2.0)

#: Columns of ``vpc_import.csv``: the challenge's first (as printed), then vpeval's (units in the names).
IMPORT_COLUMNS = [
    "block", "dataset", "split", "gender", "enrollment", "trial", "EER (%)", "EER-ci_lower", "EER-ci_upper",
    "vpeval closest-point EER (%)", "vpeval EER interp (%)", "EER interp 95% low (%)", "EER interp 95% high (%)",
    "ROCCH-EER (%)", "ROCCH-EER 95% low (%)", "ROCCH-EER 95% high (%)", "eps_max (bits)", "eps_max 95% low (bits)",
    "eps_max 95% high (bits)", "clipped per-speaker mean EER (%)", "target trials", "non-target trials",
    "score file", "verdict",
]


#: The challenge table's columns whose cells may be "not defined" (NaN), as named in :data:`IMPORT_COLUMNS`.
_TABLE_COLUMN = {"EER": "EER (%)", "EER-ci_lower": "EER-ci_lower", "EER-ci_upper": "EER-ci_upper"}
#: How a cell the challenge's table prints as NaN is shown (CSV, terminal); null in the JSON.
NOT_DEFINED = "not defined"


def row_name(row: dict) -> str:
    """The name of a row in the ``verdicts`` object: ``"<block> <dataset> <split> <gender> <enrollment>-<trial>"``
    (e.g. ``"ASV_eval^anon libri dev f anon-anon"``)."""
    return " ".join([row["block"], row["dataset"], row["split"], row["gender"],
                     f"{row['enrollment']}-{row['trial']}"])


def import_vpc_outputs(table, scores_root, data_dir, *, n_boot: int = 200, seed: int = 0,
                       verdict: dict | None = None) -> dict:
    """Read the toolkit's outputs and compute vpeval's numbers beside the challenge's (module docstring).

    Parameters
    ----------
    table : path
        ``result_for_rank*`` (or ``results_*.txt``) of the toolkit.
    scores_root : path
        Folder searched for ``<enroll set>-<test set>/scores`` (the toolkit's ``exp``).
    data_dir : path
        The toolkit's data folder: ``<dataset>_<split>_trials_<gender>/trials`` keys the score files.
    n_boot, seed : int
        Bootstrap replicates (at least 39, :func:`vpeval.stats.results.min_replicates` of the 95 % intervals) and
        seed (of the verdict's test too).
    verdict : dict, optional
        ``budget_bits``, ``n_perm`` (None: :func:`vpeval.analysis.families.default_n_perm`) and ``alpha`` of the
        verdicts; None skips them.

    Returns
    -------
    dict
        ``rows`` (dicts keyed by :data:`IMPORT_COLUMNS`, numbers as floats, None where absent),
        ``worst_case`` (``eps_max`` and ``eer``: the attack row's index in ``rows`` and its value, or None),
        ``n_boot``, ``seed``, ``resampled`` (``"enroll"``), ``unmatched_table_rows`` (table rows with no score
        file: their lines), ``not_defined`` (the challenge's cells printed as NaN, None in ``rows``: dicts
        ``row``, ``column``, ``line``); with ``verdict``: ``verdicts`` (:func:`row_name` -> :meth:`Verdict.to_dict
        <vpeval.analysis.verdict.Verdict.to_dict>` plus ``row``, its index in ``rows``; each row's ``verdict`` cell
        holds the word) and ``verdicts_not_decided`` (name -> why, e.g. fewer than 2 speakers).

    Raises
    ------
    InputFileError
        Every error of the readers; two score files for one table row (named); a score file whose ``trials``
        key is missing.
    vpeval.stats.StatsError
        ``n_boot`` below 39.
    """
    from ..errors import InputFileError
    from ..io.readers import read_trials_scores
    from ..io.vpc_results import find_vpc_score_files, read_result_for_rank
    from ..metrics import closest_eer
    from ..pipeline.groups import clipped_speaker_mean_eer
    from ..stats import TRIAL_METRICS, bootstrap

    from ..stats.results import check_replicates

    check_replicates(n_boot, 0.95)  # the columns are 95 % intervals
    challenge = read_result_for_rank(table)
    files = find_vpc_score_files(scores_root)
    data_dir = Path(data_dir)

    def key(model, r):
        return (model, r["dataset"], r["split"], r["gender"], r["enrollment"], r["trial"])

    by_key: dict[tuple, list] = {}
    for f in files:
        by_key.setdefault((f.model, f.dataset, f.split, f.gender, f.enrollment, f.trial), []).append(f)

    loaded: dict = {}

    def numbers(f) -> dict:
        k = data_dir / f.test_set / "trials"
        if not k.is_file():
            raise InputFileError(k, None, f"trials key of {f.path} does not exist (give the toolkit's data folder)")
        t = read_trials_scores(k, f.path)
        loaded[str(f.path)] = t
        b = bootstrap(t, TRIAL_METRICS, unit="enroll", n_boot=n_boot, seed=seed)
        clipped, _ = clipped_speaker_mean_eer(t)
        ei, er, ep = b["eer_interp"], b["eer_rocch"], b["eps_max"]
        return {"vpeval closest-point EER (%)": 100 * closest_eer(t.tar, t.non),
                "vpeval EER interp (%)": 100 * ei.value, "EER interp 95% low (%)": 100 * ei.low,
                "EER interp 95% high (%)": 100 * ei.high, "ROCCH-EER (%)": 100 * er.value,
                "ROCCH-EER 95% low (%)": 100 * er.low, "ROCCH-EER 95% high (%)": 100 * er.high,
                "eps_max (bits)": ep.value / _LN2, "eps_max 95% low (bits)": ep.low / _LN2,
                "eps_max 95% high (bits)": ep.high / _LN2, "clipped per-speaker mean EER (%)": 100 * clipped,
                "target trials": int(t.is_target.sum()), "non-target trials": int((~t.is_target).sum()),
                "score file": str(f.path)}

    rows, used, unmatched, not_defined = [], set(), [], []
    for r in challenge:
        model = "anon" if "^anon" in r["block"] else "orig"
        cands = by_key.get(key(model, r), [])
        if len(cands) > 1:
            raise InputFileError(cands[1].path, None, f"a second score file for {table}:{r['line']} (the first is "
                                 f"{cands[0].path}); give a --scores folder holding one run")
        row = {c: None for c in IMPORT_COLUMNS}
        row.update({"block": r["block"], "dataset": r["dataset"], "split": r["split"], "gender": r["gender"],
                    "enrollment": r["enrollment"], "trial": r["trial"], "EER (%)": r["eer"],
                    "EER-ci_lower": r["eer_ci_lower"], "EER-ci_upper": r["eer_ci_upper"]})
        not_defined += [{"row": len(rows), "column": _TABLE_COLUMN[c], "line": r["line"]} for c in r["not_defined"]]
        if cands:
            used.add(cands[0].path)
            row.update(numbers(cands[0]))
        else:
            unmatched.append(r["line"])
        rows.append(row)
    for f in files:
        if f.path in used:
            continue
        row = {c: None for c in IMPORT_COLUMNS}
        row.update({"block": f"scores ({f.model} model)", "dataset": f.dataset, "split": f.split, "gender": f.gender,
                    "enrollment": f.enrollment, "trial": f.trial})
        row.update(numbers(f))
        rows.append(row)
    attacks = [i for i, r in enumerate(rows) if r["trial"] == "anon" and r["eps_max (bits)"] is not None]
    worst = {"eps_max": None, "eer": None}
    if attacks:
        i = max(attacks, key=lambda j: (rows[j]["eps_max (bits)"], -j))
        worst["eps_max"] = {"row": i, "bits": rows[i]["eps_max (bits)"]}
        i = min(attacks, key=lambda j: (rows[j]["vpeval closest-point EER (%)"], j))
        worst["eer"] = {"row": i, "percent": rows[i]["vpeval closest-point EER (%)"]}
    out = {"rows": rows, "worst_case": worst, "n_boot": n_boot, "seed": seed, "resampled": "enroll",
           "unmatched_table_rows": unmatched, "not_defined": not_defined}
    if verdict is not None:
        from ..analysis.families import score_verdict
        from ..errors import VpevalError

        verdicts, undecided = {}, {}
        for i in attacks:
            name = row_name(rows[i])
            try:
                v = score_verdict(loaded[rows[i]["score file"]], name, n_boot=n_boot, seed=seed, **verdict).to_dict()
            except VpevalError as exc:  # e.g. one speaker: the numbers stay, the row says why there is no verdict
                undecided[name] = str(exc)
                continue
            verdicts[name] = dict(v, row=i)
            rows[i]["verdict"] = v["verdict"]
        out["verdicts"] = verdicts
        if undecided:
            out["verdicts_not_decided"] = undecided
    return out


def cell_text(rows: list[dict], not_defined=(), number: str = ".6g"):
    """``text(i, column)``: the cell of ``rows[i]`` as shown (CSV, terminal): :data:`NOT_DEFINED` for the
    challenge's cells listed in ``not_defined`` (:func:`import_vpc_outputs`' ``not_defined``), empty when absent,
    floats formatted with ``number``."""
    undefined = {(d["row"], d["column"]) for d in not_defined}

    def text(i: int, c: str) -> str:
        v = rows[i][c]
        if v is None:
            return NOT_DEFINED if (i, c) in undefined else ""
        return format(v, number) if isinstance(v, float) else str(v)

    return text


def import_csv_text(rows: list[dict], not_defined=()) -> str:
    """The rows of :func:`import_vpc_outputs` as CSV (header :data:`IMPORT_COLUMNS`; empty cell = absent,
    :data:`NOT_DEFINED` = a challenge cell printed as NaN, listed in ``not_defined``)."""
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(IMPORT_COLUMNS)
    text = cell_text(rows, not_defined)
    for i in range(len(rows)):
        w.writerow([text(i, c) for c in IMPORT_COLUMNS])
    return buf.getvalue()
