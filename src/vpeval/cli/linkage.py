"""``vpeval linkage``: 1-to-N linkage (LID), closed-set identification (CMC) and closed-set linkability."""

from __future__ import annotations

import contextlib
import math
import re
from pathlib import Path
from typing import Optional

import numpy as np
import typer
from rich.markup import escape

from ..errors import VpevalError
from .common import (
    N_PERM_EXTENDED, SchedulerOpt, VerdictOptions, WorkersOpt, echo_json, execution, handle_errors, print_verdicts,
    verdict_option_group, verdict_or_reason,
)

__all__ = ["register"]

#: the verdict's --n-perm of a 1-to-N table: each relabelling recomputes every probe's LID
LinkagePermOpt = typer.Option(
    999, "--n-perm", min=19, max=100_000, help="Relabellings of the verdict's perfect-secrecy test (each recomputes every "
    "probe's LID: about n_perm passes over the matrix; lower it or use --no-verdict for large tables)." + N_PERM_EXTENDED)

_HELP = """\
1-to-N linkage of probes to N enrolled speakers: LID (bits), rank-k identification, closed-set linkability.

TABLE is a long CSV or Parquet table with columns enroll_spk,trial_spk,trial_id,score (every probe
scored against every enrolled speaker), or, with --key, a Kaldi score file 'enroll_spk trial_id score'
whose key 'enroll_spk trial_id target|nontarget' marks each probe's speaker. --dev (with --dev-key for
Kaldi) gives a separate development matrix for the LID calibration; without it, speaker-grouped
cross-fitting is used and the output says so.

The verdict tests perfect secrecy on LID_max, ALID and the speaker LID (each speaker's probes alone, so a
leak confined to one speaker is found and other speakers are not named with it); an exposed speaker whose
own model ranks first for enough of its probes to exceed the budget makes it 'leaks' (docs/report.md).
"""


def _read(path: Path, key: Optional[Path], drop_unenrolled: bool):
    from ..io.matrix import read_kaldi_score_matrix, read_score_matrix, require_finite_scores

    if key is not None:
        sm = read_kaldi_score_matrix(key, path, drop_unenrolled=drop_unenrolled)
    else:
        sm = read_score_matrix(path, drop_unenrolled=drop_unenrolled)
    require_finite_scores(sm, path, key, "LID (z-normalised rows)")
    return sm


def _check_dev_apart(sm, dsm, table: Path, dev: Path) -> None:
    """Refuse a development table that holds evaluation probes (an identical row of scores over the same
    enrolled speakers, e.g. the evaluation table itself): a calibration fitted on the evaluation probes makes
    the LID in-sample, which --dev is meant to avoid. Probe ids shared with different scores only warn
    (:class:`~vpeval.errors.DegenerateInputWarning`): the same names may denote other recordings."""
    import warnings

    from ..errors import DegenerateInputWarning

    if np.array_equal(sm.speaker_ids, dsm.speaker_ids):
        def keys(a):
            a = np.ascontiguousarray(a + 0.0)
            return a.view(np.dtype((np.void, a.dtype.itemsize * a.shape[1]))).ravel()

        same = np.isin(keys(dsm.scores), keys(sm.scores))
        if same.any():
            i = int(np.flatnonzero(same)[0])
            raise VpevalError(
                f"--dev {dev}: {int(same.sum())} of its {dsm.n_probes} probes have exactly the scores of an "
                f"evaluation probe of {table} (first: development probe {str(dsm.probe_id[i])!r}): the development "
                "table holds evaluation probes (the evaluation table itself?); the LID calibration must be fitted "
                "on other probes (or omit --dev for speaker-grouped cross-fitting on the evaluation table)")
    shared = np.intersect1d(sm.probe_id, dsm.probe_id)
    if shared.size:
        warnings.warn(f"--dev {dev}: the development table shares {shared.size} probe id(s) with the evaluation "
                      f"table {table} (first: {str(shared[0])!r}), with other scores; make sure they are other "
                      "recordings", DegenerateInputWarning, stacklevel=2)


@contextlib.contextmanager
def _named_inputs(table: Path, sm, dev: Optional[Path], dsm):
    """Errors of the library name its arguments (``eval_scores: probe row 3 ...``): shown with the files and
    the probe's trial id instead."""
    try:
        yield
    except VpevalError as exc:
        text = str(exc)
        for arg, path, m in (("eval_scores", table, sm), ("dev_scores", dev, dsm)):
            if path is not None and text.startswith(f"{arg}:"):
                rest = text[len(arg) + 1:]
                rest = re.sub(r"\brow (\d+)\b", lambda g: _row(m, int(g.group(1))), rest, count=1)
                cls = type(exc) if type(exc).__init__ is VpevalError.__init__ else VpevalError
                raise cls(f"{path}:{rest}") from None
        if dev is None and not text.startswith(str(table)):  # one input: the error is about it (a breaker's find)
            cls = type(exc) if type(exc).__init__ is VpevalError.__init__ else VpevalError
            raise cls(f"{table}: {text}") from None
        raise


def _row(m, i: int) -> str:
    if 0 <= i < len(m.probe_id):
        return f"row {i} (trial {m.probe_id[i]})"
    return f"row {i}"


def _fmt(v, digits=4) -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and math.isinf(v):
        return "-inf" if v < 0 else "inf"
    return f"{v:.{digits}f}"


def register(app: typer.Typer) -> None:
    """Add the ``linkage`` command to ``app``."""

    @app.command("linkage", help=_HELP)
    @handle_errors
    @verdict_option_group(n_perm=LinkagePermOpt)
    def linkage(
        table: Path = typer.Argument(..., help="1-to-N score table (.csv/.parquet) or Kaldi score file."),
        dev: Optional[Path] = typer.Option(None, "--dev", help="Development table for the LID calibration."),
        key: Optional[Path] = typer.Option(None, "--key", help="Kaldi key for TABLE (TABLE is then Kaldi scores)."),
        dev_key: Optional[Path] = typer.Option(None, "--dev-key", help="Kaldi key for --dev."),
        ties: str = typer.Option("fractional", help="Tie rule for ranks: fractional, optimistic or pessimistic."),
        folds: int = typer.Option(5, help="Cross-fitting folds (grouped by speaker) when no --dev is given."),
        strict_znorm: bool = typer.Option(
            False, "--strict-znorm",
            help="Cross-fitting: z-normalise training rows over the training folds' speakers only (by default "
                 "the held-out fold's columns enter each training row's z-norm mean and std)."),
        separable: str = typer.Option(
            "error", help="Separable calibration data: 'error' (default) or 'regularize' (named ridge penalty)."
        ),
        regularization: float = typer.Option(1e-3, help="Penalty weight used by --separable regularize."),
        drop_unenrolled: bool = typer.Option(
            False, "--drop-unenrolled", help="Drop probes whose speaker is not enrolled (count is reported)."
        ),
        calibration: str = typer.Option(
            "logistic", "--calibration", help="LID sensitivity (needs --dev): calibrate the z-scores by 'logistic' "
            "(the LID chain), 'pav' (Laplace-smoothed PAV: monotone, non-parametric) or 'student_t' (one Student-t "
            "density per class: a non-affine LLR); reported beside the default chain."),
        no_znorm: bool = typer.Option(False, "--no-znorm", help="LID sensitivity (needs --dev): calibrate the raw "
                                      "scores, without the per-probe row z-norm."),
        prior: Optional[float] = typer.Option(
            None, "--prior", help="LID sensitivity (needs --dev): target prior of the logistic fit's weighting "
            "(default: the training proportion 1/N). The intercept cancels in the softmax; the weighting moves the "
            "slope."),
        misid_threshold: float = typer.Option(
            0.5, "--misid-threshold", help="Confident misidentification: share of probes whose most probable wrong "
            "speaker has a posterior above this (and that posterior's mean log-odds, bits)."),
        population: Optional[str] = typer.Option(
            None, "--population", help="Population sizes N' (comma-separated, e.g. 1000,100000): rank-1 "
            "identification, ALID and LID_max against N', measured up to the enrolled N and extrapolated beyond "
            "it, with speaker-bootstrap intervals (docs/beyond.md)."),
        combine: Optional[int] = typer.Option(
            None, "--combine", min=1, help="Repeated recordings: LID, rank-1 and eps(delta) of k = 1..K probes of one "
            "speaker combined (sum, mean and max of the LLRs, mean posterior), with speaker-bootstrap intervals."),
        json_out: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
        scheduler: Optional[str] = SchedulerOpt,
        workers: Optional[int] = WorkersOpt,
        verdict_args: VerdictOptions = VerdictOptions(),
        seed: int = typer.Option(0, "--seed", min=0, help="Seed of the verdict's relabellings and bootstrap."),
    ) -> None:
        from ..metrics.linkage import linkage_analysis

        vopts = verdict_args.checked()  # checked even with --no-verdict (see its help)
        budget, delta = vopts["budget_bits"], vopts["delta"]
        sizes = _population_sizes(population)
        if verdict_args.no_verdict:
            vopts = None

        if dev_key is not None and dev is None:
            raise VpevalError("--dev-key needs --dev")
        variant = calibration != "logistic" or no_znorm or prior is not None
        if variant and dev is None:
            raise VpevalError("--calibration, --no-znorm and --prior need --dev (a development matrix): the "
                              "cross-fitted chain supports the default logistic calibration of z-scores only")
        if not 0.0 < misid_threshold < 1.0:
            raise VpevalError(f"--misid-threshold must be in (0, 1), got {misid_threshold}")
        on_cluster = execution(scheduler, workers)  # options checked before reading
        sm = _read(table, key, drop_unenrolled)
        if combine is not None and combine > (most := int(np.bincount(sm.true_index).max())):
            # before the analysis: a table of 6,000 x 2,000 took 22 s and 4 GB to be told so
            raise VpevalError(f"--combine {combine}: no speaker of {table} has more than {most} probe"
                              + ("s" if most != 1 else ""))
        dsm = _read(dev, dev_key, drop_unenrolled) if dev is not None else None
        if dsm is not None:
            _check_dev_apart(sm, dsm, table, dev)
        with on_cluster as client, _named_inputs(table, sm, dev, dsm):
            res = linkage_analysis(
                sm.scores,
                sm.true_index,
                None if dsm is None else dsm.scores,
                None if dsm is None else dsm.true_index,
                ties=ties,
                n_folds=folds,
                speaker_ids=sm.speaker_ids,
                separable=separable,
                regularization=regularization,
                strict_znorm=strict_znorm,
                client=client,
            )
            curves = None
            if sizes is not None:  # on the cluster too: the matrix's rows are scanned where they are
                from ..metrics.linkage import default_population_sizes, population_curves

                curves = population_curves(sm.scores, sm.true_index, default_population_sizes(sm.n_speakers, sizes),
                                           slope=res.lid.probe_slopes(sm.n_probes), speaker=sm.true_index,
                                           znorm=True, budget_bits=budget, seed=seed, client=client)

        from ..metrics.linkage.variants import lid_variant

        misid = _misidentification(res.lid, sm.scores, sm.true_index, misid_threshold)
        var = (lid_variant(dsm.scores, dsm.true_index, sm.scores, sm.true_index, calibration=calibration,
                           znorm=not no_znorm, p_target=prior, threshold=misid_threshold) if variant else None)
        out = res.to_dict()
        out["confident_misidentification"] = misid
        if var is not None:
            out["lid_variant"] = var.to_dict()
        out["input"] = {
            "table": str(table),
            "dev": None if dev is None else str(dev),
            "n_probes": sm.n_probes,
            "n_speakers": sm.n_speakers,
            "n_dropped_unenrolled": sm.n_dropped,
            "dev_n_dropped_unenrolled": None if dsm is None else dsm.n_dropped,
        }
        if curves is not None:
            out["population"] = curves.to_dict()
        combined = None
        if combine is not None:
            from ..analysis.profiles import default_delta
            from ..metrics.linkage.combine import combined_probes

            with _named_inputs(table, sm, dev, dsm):
                combined = combined_probes(
                    res.lid.llr_matrix(sm.scores), sm.true_index, range(1, combine + 1), budget_bits=budget, seed=seed,
                    delta=default_delta(int(np.unique(sm.true_index).size)) if delta is None else delta)
            out["combined_probes"] = combined.to_dict()
        verdicts, undecided = {}, {}
        if vopts is not None:
            from ..analysis.families import one_to_n_verdict

            name = Path(table).name
            v, why = verdict_or_reason(lambda: one_to_n_verdict(sm, name, seed=seed, **vopts))
            if v is None:
                undecided[name] = why
            else:
                verdicts[name] = v
        out["verdicts"] = verdicts
        if undecided:
            out["verdicts_not_decided"] = undecided
        if json_out:
            echo_json(out)  # infinities become the strings "inf" / "-inf"
            return
        from .console import Console

        print_verdicts(Console(), verdicts, undecided)
        _print(res, sm, dsm, table)
        _print_misid(misid, var)
        if curves is not None:
            _print_population(curves)
        if combined is not None:
            _print_combined(combined)


def _print_combined(c) -> None:
    from rich import box
    from rich.table import Table

    from .console import Console

    con = Console()
    d = c.rows["sum"]
    t = Table(title=f"Repeated recordings: k probes of one speaker, LLRs summed ({100 * c.level:g} % intervals, "
                    f"bootstrap of the speakers; ALID, the largest speaker's LID and eps at delta = {c.delta:.3g} in "
                    "bits)",
              box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for col in ("k", "speakers", "sets", "ALID", "interval", "rank-1 %", "spk. max", "eps"):
        t.add_column(col, justify="right", no_wrap=True, min_width=len(col))
    for j, k in enumerate(c.ks.tolist()):
        t.add_row(str(k), str(int(c.n_speakers[j])), "all" if c.exact[j] else f"{c.max_subsets} drawn",
                  f"{d['alid_bits'][j]:.3f}", f"[{d['alid_low'][j]:.2f}, {d['alid_high'][j]:.2f}]",
                  f"{100 * d['rank1'][j]:.1f}", f"{d['speaker_lid_max_bits'][j]:.2f}",
                  "-" if math.isnan(d["eps_bits"][j]) else _fmt(float(d["eps_bits"][j]), 2))
    con.print(t)
    con.print("Single probes of the same speakers (each k's speakers differ; compare a row with this, not rows "
              "with each other): ALID " + " ".join(f"{v:.3f}" for v in c.alid_one_bits) + " bits.",
              highlight=False, markup=False)
    others = [r for r in c.rules if r != "sum"]
    if others:
        con.print("ALID (bits) by the other rules, k = " + ", ".join(map(str, c.ks.tolist())) + ": " + "; ".join(
            f"{r} " + " ".join(f"{v:.3f}" for v in c.rows[r]["alid_bits"]) for r in others) + ".",
            highlight=False, markup=False)
    for note in c.notes:
        con.print(f"Not computed: {note}.", highlight=False, markup=False)
    w = c.within_budget_up_to.get("sum")
    if c.budget_bits is not None:
        con.print(f"The largest speaker's LID (its summed recordings, averaged over its sets; the estimate) exceeds "
                  f"the budget of {c.budget_bits:.2f} bits from one recording on." if w is None else
                  f"The largest speaker's LID (its summed recordings, averaged over its sets; the estimate) stays "
                  f"within the budget of {c.budget_bits:.2f} bits up to k = {w}"
                  + ("." if w == c.ks[-1] else ", and exceeds it at the next k."),
                  highlight=False, markup=False)


def _population_sizes(text: Optional[str]):
    """The sizes of ``--population`` (integers in 2 .. 1e12, comma-separated), or None without the option."""
    from ..metrics.linkage.population import MAX_POPULATION

    if text is None:
        return None
    out = []
    for part in text.split(","):
        part = part.strip().replace("_", "")
        try:
            v = int(part)
        except ValueError:
            v = 0
        if not 2 <= v <= MAX_POPULATION:
            raise VpevalError(f"--population: expected comma-separated integers from 2 to {MAX_POPULATION:,} "
                              f"(population sizes), got {part!r} in {text!r}")
        out.append(v)
    return out


def _size(v: int) -> str:
    """A population size in at most 9 characters: 1,000,000 or 1e9 (2.5e10)."""
    return f"{v:,}" if v < 10 ** 7 else f"{v:.3g}".replace("e+0", "e").replace("e+", "e")


def _pct(p: float) -> str:
    """A share in percent in at most 7 characters, small ones in scientific notation."""
    v = 100 * p
    return "0" if v == 0 else f"{v:.2f}" if v >= 0.01 else f"{v:.1e}"


def _print_population(c) -> None:
    from rich import box
    from rich.table import Table

    from .console import Console

    con = Console()
    pct = f"{100 * c.level:g} %"
    t = Table(title=f"Linkage against the population size N' (the LID chain's attacker; {pct} intervals, "
                    f"bootstrap of the {c.unit}s; ALID and LID_max in bits; * extrapolated)",
              box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for col in ("N'", "rank-1 %", "interval", "chance %", "ALID", "interval", "LID_max"):
        t.add_column(col, justify="right", no_wrap=True, min_width=len(col))
    for j, size in enumerate(c.sizes.tolist()):
        t.add_row(_size(size) + ("" if c.measured[j] else " *"), _pct(c.rank1[j]),
                  f"{_pct(c.rank1_low[j])}-{_pct(c.rank1_high[j])}", _pct(c.chance[j]),
                  f"{c.alid_bits[j]:.2f}", f"[{c.alid_low[j]:.2f}, {c.alid_high[j]:.2f}]", f"{c.lid_max_bits[j]:.2f}")
    con.print(t)
    lines = []
    if not c.measured.all():
        m = c.model
        lines.append(f"* Beyond N = {c.n_speakers:,} enrolled speakers, extrapolated by a model: impostors independent "
                     f"draws from the {m['n_pool']:,} pooled impostor z-scores, a generalised Pareto tail above the "
                     f"top {100 * m['tail_share']:.1f} % (shape {m['shape']:.3f}, scale {m['scale']:.3f} z-units).")
    if c.check is not None:
        k = c.check
        lines.append(f"Check: fitted on {k['n_fit']:,} of the {c.n_speakers:,} enrolled speakers, the model misses "
                     f"the measured curves at N' = {k['sizes'][0]:,}-{k['sizes'][-1]:,} by at most "
                     f"{100 * k['max_abs_rank1']:.2f} points of rank-1 and {k['max_abs_alid_bits']:.3f} bits of "
                     "ALID" + {True: ".", False: ", more than the model's own error: do not rely on the rows marked "
                               "*.", None: " (too few speakers in the quarter to judge the model by: the rows marked * "
                               "rest on its assumptions alone)."}[k["reliable"]])
    if c.budget_bits is not None:
        if c.within_budget_up_to is None:
            lines.append(f"LID_max exceeds the budget of {c.budget_bits:.2f} bits at every size shown.")
        else:
            lines.append(f"LID_max (the largest probe's LID; an interval cannot reach above the largest value seen, "
                         f"so this reads the estimate) stays within the budget of {c.budget_bits:.2f} bits up to N' "
                         f"= {_size(c.within_budget_up_to)}" + ("" if c.within_budget_up_to == c.sizes[-1] else
                                                                ", and exceeds it at the next size") + ".")
    for line in lines:
        con.print(line, highlight=False, markup=False)


def _misidentification(lr, scores, true_index, threshold, rows: int = 4096) -> dict:
    """:func:`~vpeval.metrics.linkage.variants.confident_misidentification` of the chain's own LLRs (each probe's
    fold calibration applied to its z-normalised row), in row blocks."""
    from ..metrics.linkage.variants import confident_misidentification

    n = scores.shape[0]
    hits, total = 0, 0.0
    for a in range(0, n, rows):
        r = confident_misidentification(lr.llr_rows(scores, a, min(a + rows, n)), true_index[a:a + rows], threshold)
        h = int(round(r["share"] * r["n"]))
        hits += h
        total += r["mean_log_odds_bits"] * h if h else 0.0
    return {"share": hits / n, "mean_log_odds_bits": total / hits if hits else float("nan"),
            "threshold": float(threshold), "n": int(n)}


def _print_misid(misid, var) -> None:
    from .console import Console
    from rich.table import Table

    con = Console()
    lo = misid["mean_log_odds_bits"]
    con.print(f"Confident misidentification: {100 * misid['share']:.2f} % of probes have a wrong speaker with "
              f"posterior above {misid['threshold']:g}" + ("" if math.isnan(lo) else
                                                            f" (mean log-odds {lo:.3f} bits)") + ".",
              highlight=False, markup=False)
    if var is None:
        return
    d = var.to_dict()
    t = Table(title=f"LID sensitivity: calibration {d['calibration']}, z-norm {'on' if d['znorm'] else 'off'}, "
                    f"prior {'training proportion' if d['p_target'] is None else d['p_target']} "
                    "(fitted on --dev)")
    for c in ("ALID", "PDR (%)", "LID+", "LID-", "LID_max", "misid. (%)"):
        t.add_column(c, justify="right")
    m = d["misidentification"]
    t.add_row(_fmt(d["alid_bits"]), _fmt(100 * d["pdr"]), _fmt(d["lid_plus_bits"]), _fmt(d["lid_minus_bits"]),
              _fmt(d["lid_max_bits"]), _fmt(100 * m["share"]))
    con.print(t)


def _print(res, sm, dsm, table) -> None:
    from .console import Console
    from rich.table import Table

    con = Console()
    n_cols = sm.n_speakers
    con.print(f"[bold]{escape(str(table))}[/bold]: {sm.n_probes} probes x {n_cols} enrolled speakers"
              + (f" ({sm.n_dropped} probes dropped: speaker not enrolled)" if sm.n_dropped else ""))
    if dsm is not None and dsm.n_dropped:
        con.print(f"development table: {dsm.n_dropped} probes dropped (speaker not enrolled)")
    lr = res.lid
    s = lr.summary
    con.print(f"Calibration: {lr.calibration}.")
    for f in range(lr.n_folds):
        tag = f"fold {f + 1}: " if lr.mode == "cross-fit" else ""
        reg = " (regularised)" if lr.regularized[f] else ""
        b = float(lr.intercept[f])
        con.print(f"  {escape(str(tag))}LLR = {lr.slope[f]:.6g} * z {'-' if b < 0 else '+'} {abs(b):.6g} nats{reg}")

    t = Table(title="Local information disclosure (bits)")
    for c in ("ALID", "PDR (%)", "NDR (%)", "LID+", "LID-", "LID_max", "log2 N"):
        t.add_column(c, justify="right")
    t.add_row(_fmt(s.alid), _fmt(100 * s.pdr), _fmt(100 * s.ndr), _fmt(s.lid_plus), _fmt(s.lid_minus), _fmt(s.lid_max),
              _fmt(math.log2(n_cols)))
    con.print(t)

    ident = res.identification
    t = Table(title=f"Closed-set identification (ties: {ident.ties})")
    t.add_column("rank k", justify="right")
    t.add_column("rate (%)", justify="right")
    t.add_column("chance k/N (%)", justify="right")
    for k, v in ident.rates.items():
        t.add_row(str(k), _fmt(100 * v), _fmt(100 * ident.chance[k]))
    con.print(t)
    con.print(f"Mean rank of the true speaker: {ident.mean_rank:.2f} (chance {(n_cols + 1) / 2:.2f})")

    cs = res.closed_set
    t = Table(title="Closed-set linkability: P(true speaker beats N'-1 random others)")
    t.add_column("N'", justify="right")
    t.add_column("linkability", justify="right")
    t.add_column("chance 1/N'", justify="right")
    for size in sorted({v for v in (2, 5, 10, 100, n_cols) if v <= n_cols}):
        t.add_row(str(size), _fmt(float(cs.linkability[size - 1])), _fmt(float(cs.chance[size - 1])))
    con.print(t)
