"""``vpeval disclosure`` (worst-case disclosure per LLR estimator) and ``vpeval simulate`` (oracle comparison)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import numpy as np
import typer

from ..errors import VpevalError
from .guide import deprecated_short
from .common import (
    FORMATS_HELP, QuietOpt, ScoreInputOptions, echo_json, handle_errors, say_label_counts, score_input_options,
    split_comma_list,
)

__all__ = ["register", "disclosure_command", "rank_disclosure_command", "simulate_command", "disclosure_section", "simulation_comparison"]

_EST_HELP = (
    "LLR estimators, comma-separated or repeated: pav, pav_laplace, pav_succession, logistic, gaussian, "
    "gaussian_shared, student_t (default: pav, pav_laplace, logistic, gaussian, student_t)."
)


def _parse_estimators(values: Optional[List[str]]):
    from ..disclosure import DEFAULT_ESTIMATORS, ESTIMATORS

    if not values:
        return DEFAULT_ESTIMATORS
    out = split_comma_list(values)
    for name in out:
        if name not in ESTIMATORS:
            raise VpevalError(f"unknown LLR estimator {name!r}; known: {', '.join(ESTIMATORS)}")
    if len(set(out)) != len(out):
        raise VpevalError(f"an estimator is named twice in {out}")
    return tuple(out)


def _fmt(*args, **kwargs):
    """The report's number format (imported on use: the report layer pulls in plotting)."""
    from ..report.disclosure import _fmt as fmt

    return fmt(*args, **kwargs)


def __getattr__(name: str):
    # ``disclosure_section`` is re-exported (see __all__) but imported on first use (PEP 562), so registering
    # the commands does not load the report layer
    if name == "disclosure_section":
        from ..report.disclosure import disclosure_section

        return disclosure_section
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _trial_name(trials, cls: str, index: int) -> str:
    """The trial ``index`` of class ``cls`` ('target' / 'non-target') of ``trials`` in words: its enrollment and
    test ids where the input has them (Kaldi keys), else its place among the file's trials of that class."""
    import numpy as np

    if trials is not None and trials.enroll is not None and trials.test is not None:
        rows = np.flatnonzero(trials.is_target if cls == "target" else ~trials.is_target)
        if 0 <= index < rows.size:
            return f"{cls} trial (enrollment {trials.enroll[rows[index]]}, test {trials.test[rows[index]]})"
    return f"{cls} trial no. {index + 1} of the input's {cls} trials"


def _print_table(result, title, trials=None):
    """Compact terminal table (fits 80 columns); the attaining trial (named by its ids where ``trials`` has them)
    and errors are listed below it."""
    from rich import box
    from .console import Console
    from rich.table import Table as RichTable

    table = RichTable(title=title, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True,
                      caption="eps_max and |LLR| quantiles in nats (bits, log10 beside eps_max); "
                      "last three columns: % of trials with |LLR| above ln 2, ln 10, ln 100")
    for i, c in enumerate(["estimator", "eps_max", "bits", "log10", "q95", "q99", ">ln2", ">ln10", ">ln100"]):
        table.add_column(c, no_wrap=True, min_width=14 if i == 0 else max(len(c), 5),
                         justify="left" if i == 0 else "right")
    notes = []
    for r in result.results.values():
        if r.error is not None:
            table.add_row(r.estimator, "failed", *[""] * 7)
            notes.append(f"{r.estimator}: {r.error}")
            continue
        g3 = "{:.3g}"
        table.add_row(r.estimator, _fmt(r.eps_max_nats, g3), _fmt(r.eps_max_bits, g3), _fmt(r.eps_max_log10, g3),
                      _fmt(r.quantiles_nats[0.95], g3), _fmt(r.quantiles_nats[0.99], g3),
                      *[f"{100 * r.share_above[k]:.1f}" for k in ("ln2", "ln10", "ln100")])
        notes.append(f"{r.estimator}: eps_max attained by {_trial_name(trials, r.argmax_class, r.argmax_index)} (score "
                     f"{r.argmax_score:.6g}){'' if r.n_attaining == 1 else f' and {r.n_attaining - 1} more'}")
    console = Console()
    console.print(table)
    for line in notes:
        console.print(line, highlight=False, markup=False)


def _rank_gamma(path: str):
    """Rank histogram (fractional ties) of a 1-to-N matrix: a long .csv/.parquet table or a folder holding Kaldi
    ``trials`` and ``scores`` that cover every (enrolled speaker, probe) pair."""
    from ..io.matrix import read_kaldi_score_matrix, read_score_matrix
    from ..metrics.identification import rank_histogram

    p = Path(path)
    sm = read_kaldi_score_matrix(p / "trials", p / "scores") if p.is_dir() else read_score_matrix(p)
    return rank_histogram(sm.scores, sm.true_index, ties="fractional")


def _print_estimator_table(table, title):
    """Terminal form of :class:`vpeval.disclosure.EstimatorTable` and its order changes."""
    from rich import box
    from .console import Console
    from rich.table import Table as RichTable

    from ..disclosure import ESTIMATOR_LABELS

    console = Console()
    rt = RichTable(title=title, box=box.SIMPLE_HEAD, pad_edge=False,
                   caption="eps_max = max |LLR| over the trials, nats, per LLR estimator")
    rt.add_column("system", no_wrap=True)
    rt.add_column("ROCCH-EER (%)", justify="right")
    for e in table.estimators:
        rt.add_column(ESTIMATOR_LABELS.get(e, e), justify="right")
    for s in table.systems:
        rt.add_row(s, f"{100 * table.eer[s]:.2f}", *["n/a" if table.eps_max_nats[s][e] is None
                                                     else _fmt(table.eps_max_nats[s][e], "{:.3g}")
                                                     for e in table.estimators])
    console.print(rt)
    for s in table.systems:
        for e, why in table.errors[s].items():
            console.print(f"{s}, {ESTIMATOR_LABELS.get(e, e)}: n/a ({why})", highlight=False, markup=False)
    if not table.order_changes:
        console.print("The order of the systems is the same under the EER and every estimator.", highlight=False,
                      markup=False)
    for c in table.order_changes:
        a, b = c["systems"]
        lab = lambda names: ", ".join(ESTIMATOR_LABELS.get(n, n) for n in names)  # noqa: E731
        console.print(f"Order changes: {a} discloses more than {b} by {lab(c['a_more'])}, less by "
                      f"{lab(c['b_more'])}" + (f" (tied by {lab(c['tied'])})" if c["tied"] else "") + ".",
                      highlight=False, markup=False)


@deprecated_short("disclosure", "-e", "--estimators", "estimators")  # -e is --extractor now (vpeval.cli.guide)
@score_input_options
def disclosure_command(
    scores: List[str] = typer.Argument(..., help="Score inputs (see formats), each PATH or NAME=PATH. With "
                                       "several, the worst-case paper's Table 3 layout: per system the EER and "
                                       "eps_max per estimator, and where the order of systems changes."),
    score_input: ScoreInputOptions = ScoreInputOptions(),
    estimators: Optional[List[str]] = typer.Option(None, "--estimators", help=_EST_HELP + " With several "
                                                   "inputs the default is pav_laplace, gaussian, student_t."),
    rank_table: Optional[List[str]] = typer.Option(
        None, "--rank-table", help="NAME=TABLE: the 1-to-N score matrix of system NAME (a long .csv/.parquet "
        "table enroll_spk,trial_spk,trial_id,score, or a folder with Kaldi trials and scores covering every "
        "pair); adds the rank-LLR column (Eq. 35). Repeatable."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
):
    from ..disclosure import TABLE_ESTIMATORS, estimator_table, worst_case_disclosure
    from .common import display_name, split_name

    if len(scores) > 1 or rank_table:
        if score_input.key:
            raise VpevalError("--key applies to exactly one scores input; use folders with trials+scores for more")
        est = _parse_estimators(estimators) if estimators else TABLE_ESTIMATORS
        systems, sources, labelled = {}, {}, {}
        for spec in scores:
            name, path = split_name(spec)
            name = name or display_name(Path(path).stem or Path(path).name)
            if name in systems:
                raise VpevalError(f"two inputs are named {name!r}; give names with NAME=PATH")
            t = score_input.load(path)
            systems[name], sources[name] = (t.tar, t.non), t.source
            if (counts := say_label_counts(t, path)) is not None:  # ignored or mapped rows: counted, never silent
                labelled[name] = counts
        gammas = {}
        for spec in rank_table or []:
            name, path = split_name(spec)
            if name is None or name not in systems:
                raise VpevalError(f"--rank-table {spec!r}: expected NAME=TABLE with NAME one of {list(systems)}")
            gammas[name] = _rank_gamma(path)
        table = estimator_table(systems, est, rank_gammas=gammas)
        if json_out:
            echo_json({"inputs": sources, **({"label_counts": labelled} if labelled else {}),
                       "estimator_table": table.to_dict()})
            return
        _print_estimator_table(table, f"vpeval disclosure: {len(systems)} systems (worst-case paper, Table 3 layout)")
        return
    est = _parse_estimators(estimators)
    t = score_input.load(split_name(scores[0])[1])
    labelled = say_label_counts(t, split_name(scores[0])[1])
    res = worst_case_disclosure(t.tar, t.non, est)
    if json_out:
        echo_json({"input": t.source, **({"label_counts": labelled} if labelled else {}), "disclosure": res.to_dict()})
        return
    _print_table(res, f"vpeval disclosure: {t.source} ({res.n_tar} target, {res.n_non} non-target trials)", t)


def simulation_comparison(sim, estimators, rank_model=None, n_probes=2000, seed=0) -> dict:
    """Each estimator's LLRs against the oracle on the simulated trials, plus the rank LLR (if a model).

    Returns a JSON-ready dict: per estimator the mean and maximum ``|LLR - oracle|`` over the trials (nats)
    and eps_max beside the oracle's; for the rank model the exact and estimated ``gamma`` and rank LLRs.
    """
    from ..calibration.rank import rank_llr
    from ..disclosure import worst_case_disclosure
    from ..metrics import interp_eer, rocch_eer

    res = worst_case_disclosure(sim.tar, sim.non, estimators, oracle=(sim.tar_llr, sim.non_llr))
    oracle = np.concatenate([sim.tar_llr, sim.non_llr])
    errs = {}
    for name, r in res.results.items():
        if name == "oracle":
            continue
        if r.error is not None:
            errs[name] = {"error": r.error}
            continue
        d = np.abs(np.concatenate([r.tar_llr, r.non_llr]) - oracle)
        errs[name] = {"mean_abs_error_nats": float(np.mean(d)), "max_abs_error_nats": float(np.max(d)),
                      "eps_max_nats": r.eps_max_nats, "oracle_eps_max_nats": res["oracle"].eps_max_nats}
    m = sim.model
    out = {
        "model": m.params(),
        "n_tar": int(sim.tar.size), "n_non": int(sim.non.size), "seed": seed,
        "eer_exact": m.eer(), "eer_rocch": rocch_eer(sim.tar, sim.non), "eer_interp": interp_eer(sim.tar, sim.non),
        "disclosure": res.to_dict(),
        "llr_error_vs_oracle": errs,
    }
    if rank_model is not None:
        from ..metrics.identification import rank_histogram

        exact = rank_model.gamma()
        ranks = rank_model.sample(n_probes, seed=seed)
        emp = rank_histogram(ranks.score_matrix, ranks.true_index, ties="fractional")
        ex_llr, est_llr = rank_llr(exact), rank_llr(emp)
        out["rank"] = {
            "n_speakers": rank_model.n_speakers, "n_probes": n_probes,
            "gamma_exact": exact.tolist(), "gamma_estimated": emp.tolist(),
            "rank_llr_exact_nats": ex_llr.tolist(), "rank_llr_estimated_nats": est_llr.tolist(),
            "max_abs_error_nats": float(np.max(np.abs(est_llr - ex_llr))),
        }
    return out, res


def _write_simulation(tmp: Path, rep, sim, comparison) -> None:
    """Write scores, oracle LLRs, comparison and the report (subfolder ``report``) into the claimed folder
    ``tmp`` (see :mod:`vpeval.io.output`)."""
    from ..report.writer import _jsonable, render_report

    (tmp / "report").mkdir()
    render_report(rep, tmp / "report")
    with open(tmp / "scores.txt", "w", encoding="utf-8") as f:
        f.writelines(f"{float(v)!r} 1\n" for v in sim.tar)
        f.writelines(f"{float(v)!r} 0\n" for v in sim.non)
    with open(tmp / "oracle_llr.txt", "w", encoding="utf-8") as f:
        f.writelines(f"{float(v)!r} 1 {float(o)!r}\n" for v, o in zip(sim.tar, sim.tar_llr))
        f.writelines(f"{float(v)!r} 0 {float(o)!r}\n" for v, o in zip(sim.non, sim.non_llr))
    with open(tmp / "comparison.json", "w", encoding="utf-8") as f:
        json.dump(_jsonable(comparison), f, indent=2)
        f.write("\n")


@deprecated_short("simulate", "-e", "--estimators", "estimators")
def simulate_command(
    out_dir: Path = typer.Option(..., "-o", "--out", "--out-dir", metavar="OUT",
                                 help="Output folder (must not exist or be empty, unless --force)."),
    kind: str = typer.Option("counterexample", "--kind", help="counterexample (equal means, sigma 2 vs 1), "
                             "equal-variance (normal, d' = --separation), student-t (heavy tails: t(--df) "
                             "shifted by --separation, unit scale; bounded oracle LLR), lognormal (skewed: ln s "
                             "normal, shifted by --separation) or one-to-n (N = --n-speakers; a share --share of "
                             "the probes has its true speaker's score shifted by --shift, the rest are noise: "
                             "EER near 50 % with identified probes, the LID paper's pattern)."),
    n: int = typer.Option(2000, "--n", help="Scores per class (not one-to-n)."),
    separation: float = typer.Option(2.0, "--separation", help="Shift of the targets for equal-variance, "
                                     "student-t and lognormal (scale units)."),
    df: float = typer.Option(3.0, "--df", help="Degrees of freedom for --kind student-t."),
    share: float = typer.Option(0.1, "--share", help="Share of leaking probes for --kind one-to-n."),
    shift: float = typer.Option(4.0, "--shift", help="Score shift of a leaking probe's true speaker (one-to-n)."),
    n_speakers: int = typer.Option(10, "--n-speakers", help="N of the 1-to-N simulation (counterexample, "
                                   "one-to-n)."),
    n_probes: int = typer.Option(2000, "--n-probes", help="Probes of the 1-to-N simulation."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of numpy's default_rng."),
    estimators: Optional[List[str]] = typer.Option(None, "--estimators", help=_EST_HELP),
    force: bool = typer.Option(False, "--force", help="Replace an existing output folder."),
    json_out: bool = typer.Option(False, "--json", help="Print the comparison as JSON."),
    quiet: bool = QuietOpt,
):
    from ..report import Paragraph, Report, Table
    from ..simulate import counterexample, counterexample_rank_model, equal_variance
    from ..simulate_kinds import LeakyShareModel, lid_oracle_comparison, lognormal_scores, student_t_scores

    est = _parse_estimators(estimators)
    from ..io.output import claim_folder

    kinds = ("counterexample", "equal-variance", "student-t", "lognormal", "one-to-n")
    if kind not in kinds:
        raise VpevalError(f"--kind must be one of {', '.join(kinds)}, got {kind!r}")
    # claimed before the work: a second run into the same folder is refused at once
    with claim_folder(Path(out_dir), command="simulate", force=force) as claim:
        rank_model, lid_cmp = None, None
        if kind == "counterexample":
            sim = counterexample(n, seed=seed)
            rank_model = counterexample_rank_model(n_speakers)
        elif kind == "equal-variance":
            sim = equal_variance(separation, n, n, seed=seed)
        elif kind == "student-t":
            sim = student_t_scores(df, separation, n, n, seed=seed)
        elif kind == "lognormal":
            sim = lognormal_scores(separation, 1.0, n, n, seed=seed)
        else:
            lid_cmp = lid_oracle_comparison(LeakyShareModel(n_speakers, share, shift), n_probes, seed)
            sim = lid_cmp.pop("simulation").trials()
        comparison, _ = simulation_comparison(sim, est, rank_model, n_probes, seed)
        rep = Report(f"vpeval simulate: {kind}", options={
            "kind": kind, "n": n if lid_cmp is None else None, "seed": seed,
            "separation": separation if kind in ("equal-variance", "student-t", "lognormal") else None,
            "df": df if kind == "student-t" else None,
            "share": share if lid_cmp is not None else None, "shift": shift if lid_cmp is not None else None,
            # the rest of what shaped the numbers: the estimators compared and the 1-to-N simulation's size
            "estimators": list(est),
            "n_speakers": n_speakers if kind in ("counterexample", "one-to-n") else None,
            "n_probes": n_probes if kind in ("counterexample", "one-to-n") else None})
        from ..report.disclosure import disclosure_section

        sec, _ = disclosure_section(sim.tar, sim.non, est, oracle=(sim.tar_llr, sim.non_llr, sim.model.llr))
        rows = [[name, e.get("mean_abs_error_nats", float("nan")), e.get("max_abs_error_nats", float("nan")),
                 e.get("error", "")] for name, e in comparison["llr_error_vs_oracle"].items()]
        sec.blocks.insert(1, Paragraph(
            f"Simulated scores with exact LLRs ({kind}; "
            + (f"{n} per class" if lid_cmp is None else f"the {n_probes} x {n_speakers} score matrix pooled into "
               f"{sim.tar.size} target and {sim.non.size} non-target trials") + f"; seed {seed}). Exact EER "
            f"{100 * comparison['eer_exact']:.2f} %, ROCCH-EER {100 * comparison['eer_rocch']:.2f} %, interpolated "
            f"EER {100 * comparison['eer_interp']:.2f} %."))
        sec.blocks.append(Table(["estimator", "mean |LLR - oracle| (nats)", "max |LLR - oracle| (nats)", "error"],
                                rows, caption="LLR error against the oracle over the simulated trials"))
        if rank_model is not None:
            sec.blocks.append(_rank_llr_figure(rank_model, n_probes, seed))
            rk = comparison["rank"]
            sec.blocks.append(Table(
                ["rank", "gamma exact", "gamma estimated", "rank LLR exact (nats)", "rank LLR estimated (nats)"],
                [[k + 1, rk["gamma_exact"][k], rk["gamma_estimated"][k], rk["rank_llr_exact_nats"][k],
                  rk["rank_llr_estimated_nats"][k]] for k in range(rk["n_speakers"])],
                caption=f"Rank LLR (worst-case paper Eq. 35) from {n_probes} simulated probes against "
                        f"{rk['n_speakers']} speakers, against its exact value (exchangeable impostors)."))
        if lid_cmp is not None:
            lid_bits, oracle_bits = lid_cmp.pop("lid_bits"), lid_cmp.pop("oracle_lid_bits")
            comparison["lid"] = lid_cmp
            sec.blocks.append(_lid_oracle_table(lid_cmp))
            sec.blocks.append(_lid_oracle_figure(lid_bits, oracle_bits, n_speakers))
        sec.data = comparison
        rep.add(sec)
        _write_simulation(claim.path, rep, sim, comparison)
    if json_out:
        echo_json(comparison)
    elif not quiet:
        typer.echo(f"wrote {out_dir}/scores.txt (score label), oracle_llr.txt, comparison.json and "
                   f"{out_dir}/report/report.html")


def rank_llr_points(rank_model, n_probes, seed, max_probes=300):
    """Every entry of the first ``max_probes`` rows of the rank simulation of :func:`simulation_comparison`
    (the same draw: same ``n_probes`` and ``seed``) as ``(score, rank LLR of its rank, is_true_speaker)``;
    the rank LLR (Eq. 35, nats) from the histogram of all ``n_probes`` rows."""
    from ..calibration.rank import rank_llr
    from ..metrics.identification import rank_histogram

    ranks = rank_model.sample(n_probes, seed=seed)
    m = ranks.score_matrix
    llr = rank_llr(rank_histogram(m, ranks.true_index, ties="fractional"))
    sub = m[:max_probes]
    order = (sub[:, :, None] < sub[:, None, :]).sum(axis=2)  # 0 = highest score of the row (continuous: no ties)
    is_true = np.zeros(sub.shape, dtype=bool)
    is_true[np.arange(sub.shape[0]), ranks.true_index[:max_probes]] = True
    return sub.ravel(), llr[order.ravel()], is_true.ravel()


def _rank_llr_figure(rank_model, n_probes, seed):
    """The worst-case paper's Fig. 2 view: rank LLRs at their entries' scores against the oracle score LLR."""
    from ..report import Figure
    from ..simulate import GaussianScoreModel

    scores, llr, is_true = rank_llr_points(rank_model, n_probes, seed)
    imp = rank_model.impostors[0]
    oracle = GaussianScoreModel(rank_model.target[0], rank_model.target[1], imp[0], imp[1])

    def draw(fig):
        ax = fig.add_subplot(1, 1, 1)
        grid = np.linspace(scores.min(), scores.max(), 400)
        ax.plot(grid, oracle.llr(grid), "k-", lw=1.2, label="oracle LLR of the score")
        ax.plot(scores[~is_true], llr[~is_true], ".", ms=2, alpha=0.4, color="C0", label="rank LLR: impostor entries")
        ax.plot(scores[is_true], llr[is_true], ".", ms=3, alpha=0.7, color="C3", label="rank LLR: true-speaker entries")
        ax.set_xlabel("score")
        ax.set_ylabel("LLR (nats)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)

    return Figure("rank_llr_vs_oracle", draw, "Rank LLR (Eq. 35, estimated from the simulated probes) of each "
                  "entry's rank, at the entry's score, against the oracle LLR of the score (worst-case paper, "
                  f"Fig. 2): the rank keeps only the order within a row, so it cannot follow the oracle's growth in "
                  f"both tails. First {min(300, n_probes)} probes of {n_probes}.")


def _lid_oracle_table(c):
    """Report table: vpeval's LID chain beside the exact LID of a one-to-n simulation."""
    from ..report import Table

    keys = ("alid", "pdr", "lid_plus", "lid_minus", "lid_max")

    def row(name, d, lk):
        vals = [d[k] if d[k] is not None else float("nan") for k in keys]
        vals[1] = 100 * vals[1]
        return [name, *vals, lk]

    return Table(["LID", "ALID (bits)", "PDR (%)", "LID+ (bits)", "LID- (bits)", "LID_max (bits)",
                  "mean LID of leaking probes (bits)"],
                 [row("vpeval (z-norm, logistic)", c["vpeval"], c["vpeval_lid_leaking_mean"]),
                  row("oracle (exact posterior)", c["oracle"], c["oracle_lid_leaking_mean"])],
                 caption=f"LID against the oracle: {c['n_probes']} probes x {c['n_speakers']} speakers, "
                         f"{100 * c['leaking_share']:.1f} % leaking probes drawn; pooled exact EER "
                         f"{100 * c['eer_exact']:.2f} %; mean |LID - oracle| {c['mean_abs_error_bits']:.3g} bits.")


def _lid_oracle_figure(lid_bits, oracle_bits, n_speakers):
    from ..plots import LIDCCDFDisplay
    from ..report import Figure

    def draw(fig):
        ax = fig.add_subplot(1, 1, 1)
        LIDCCDFDisplay(lid_bits, n_speakers, label="vpeval (z-norm, logistic)").plot(ax)
        LIDCCDFDisplay(oracle_bits, n_speakers, label="oracle (exact posterior)").plot(ax)
        ax.legend(fontsize=8)

    return Figure("lid_ccdf_oracle", draw, "Share of probes whose LID is at least x bits: vpeval's LID chain "
                  "and the exact LID of the simulation; dotted: log2 N.")


_RANK_HELP = """\
Similarity-rank disclosure (Backstrom et al.) of a 1-to-N score table: per-rank disclosure log2(N gamma_k) bits,
MaxD, MeanD = log2 N - H(gamma) bits, IdR = gamma_1, RS, and the rank LLR of the worst-case paper (Eq. 35, nats;
it assumes exchangeable impostors, see docs/rank_llr_exchangeability.md).

TABLE is a long CSV or Parquet table enroll_spk,trial_spk,trial_id,score (every probe scored against every
enrolled speaker) or, with --key, a Kaldi score file 'enroll_spk trial_id score' with its key
'enroll_spk trial_id target|nontarget'.
"""


def rank_disclosure_command(
    table: Path = typer.Argument(..., help="1-to-N score table (.csv/.parquet) or Kaldi score file."),
    key: Optional[Path] = typer.Option(None, "--key", help="Kaldi key for TABLE (TABLE is then Kaldi scores)."),
    ties: str = typer.Option("fractional", "--ties", help="Tie rule for ranks: fractional (a tie spreads the "
                             "probe over its tied ranks), optimistic or pessimistic."),
    smoothing: str = typer.Option("none", "--smoothing", help="none, or laplace (alpha pseudo-probes per rank)."),
    alpha: float = typer.Option(1.0, "--alpha", help="Pseudo-probes per rank for --smoothing laplace."),
    drop_unenrolled: bool = typer.Option(False, "--drop-unenrolled", help="Drop probes whose speaker is not "
                                         "enrolled (count is reported)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
):
    from ..io.matrix import read_kaldi_score_matrix, read_score_matrix
    from ..metrics.identification import rank_histogram
    from ..metrics.rank_disclosure import rank_disclosure

    sm = (read_kaldi_score_matrix(key, table, drop_unenrolled=drop_unenrolled) if key is not None
          else read_score_matrix(table, drop_unenrolled=drop_unenrolled))
    gamma = rank_histogram(sm.scores, sm.true_index, ties=ties)
    res = rank_disclosure(gamma, smoothing=smoothing, n_probes=int(sm.scores.shape[0]), alpha=alpha)
    out = res.to_dict()
    out["input"] = {"table": str(table), "key": None if key is None else str(key), "ties": ties,
                    "n_probes": int(sm.scores.shape[0]), "n_speakers": int(sm.scores.shape[1]),
                    "n_dropped_unenrolled": int(sm.n_dropped)}
    if json_out:
        echo_json(out)
        return
    from rich import box
    from .console import Console
    from rich.table import Table as RichTable

    console = Console()
    n = res.n_speakers
    dropped = (f"; {sm.n_dropped:,} probe{'' if sm.n_dropped == 1 else 's'} dropped: speaker not enrolled "
               "(--drop-unenrolled)" if drop_unenrolled
               else "")  # said, as in `vpeval linkage`: never dropped silently
    console.print(f"vpeval rank-disclosure: {table} ({sm.scores.shape[0]} probes x {n} speakers; ties {ties}; "
                  f"smoothing {res.smoothing}{dropped})", highlight=False, markup=False)
    console.print(f"MaxD {_fmt(res.max_d)} bits   MeanD {_fmt(res.mean_d)} bits   IdR {_fmt(res.idr)} "
                  f"(chance {1 / n:.4g})   RS {_fmt(res.rs)}   rank-LLR eps_max {_fmt(res.rank_eps_max)} nats "
                  f"({_fmt(res.rank_eps_max_bits)} bits)", highlight=False, markup=False)
    rows = RichTable(box=box.SIMPLE_HEAD, pad_edge=False)
    for c in ("rank", "gamma", "disclosure (bits)", "rank LLR (nats)"):
        rows.add_column(c, justify="right")
    show = range(n) if n <= 20 else [*range(10), *range(n - 5, n)]
    for k in show:
        rows.add_row(str(k + 1), f"{res.gamma[k]:.4g}", _fmt(float(res.per_rank_bits[k])),
                     _fmt(float(res.rank_llr[k])))
    console.print(rows)
    if n > 20:
        console.print(f"(ranks 11..{n - 5} omitted; --json lists all)", highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    """Add ``disclosure``, ``rank-disclosure`` and ``simulate`` to the ``vpeval`` app."""
    app.command("rank-disclosure", help=_RANK_HELP)(handle_errors(rank_disclosure_command))
    app.command("disclosure", help="Worst-case disclosure eps_max per LLR estimator (nats, bits, log10), the "
                "trial attaining it, |LLR| quantiles and exceedance shares. With several inputs (NAME=PATH): the "
                "worst-case paper's Table 3 layout, EER beside eps_max per estimator per system (--rank-table adds "
                "the rank LLR), and the pairs of systems whose order changes between the EER and the "
                "estimators.\n" + FORMATS_HELP)(
        handle_errors(disclosure_command))
    app.command("simulate", help="Simulate scores with exact LLRs (the worst-case paper's counterexample, "
                "equal-variance normals, heavy-tailed Student-t, skewed lognormal, or a 1-to-N matrix with a "
                "leaking share of probes, whose LID is also compared with the exact LID), compare every estimator "
                "with the oracle, and write into OUT: scores.txt (`score label` lines, 1 = target), "
                "oracle_llr.txt (`score label oracle_llr_nats`), comparison.json and report/report.html.")(handle_errors(simulate_command))
