"""The ``vpeval`` command line: one subcommand per metric family, plus ``report`` and ``demo``.

Exit codes: 0 success; 2 bad input or usage (the message names file and line); 3 the output cannot be written
(it exists: --force replaces only an earlier output of the same command, proved by its manifest; or another
run is writing it); 4 out of memory (nothing written; the line says what the input needs); 130/143 interrupted
(Ctrl-C, SIGTERM); 1 an unexpected internal error (a bug: please report it).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import List, Optional

import typer
from rich.markup import escape
from rich.table import Table as RichTable

from .._version import __version__
from ..errors import InputFileError, VpevalError
from ..metrics.summary import verification_summary
from .guide import ROOT_EPILOG, GuideGroup, finish
from .system_extras import add_channels, load_adapt
from .console import Console, flush_stdout, printable_streams
from .common import (
    FORMATS_HELP, LLROpt, PTargetOpt, QuietOpt, SchedulerOpt, ScoreInputOptions, score_input_options, start_process,
    InputSnapshot, JobsOpt, jobs_value, WorkersOpt, display_name, install_warning_hook, echo_json, say_label_counts,
    execution, handle_errors, split_name, SplitOpt, VpcTableOpt, VerdictPermOpt, VerdictOptions, verdict_option_group,
    EnrollRuleOpt, print_verdicts, verdict_or_reason, audit_verdict_kwargs, VERIFY_JOBS_MIN_TRIALS,
)

app = typer.Typer(
    name="vpeval",
    help="Measure how well a voice anonymizer hides who is speaking. " + __doc__.split("\n\n")[1],
    epilog=ROOT_EPILOG,
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,  # click's plain layout; GuideGroup lists the commands by group
    cls=GuideGroup,
)


def _version(value: bool):
    if value:
        typer.echo(f"vpeval {__version__}")
        raise typer.Exit()


@app.callback()
def _root(ctx: typer.Context, version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                                           help="Print the version and exit.")):
    install_warning_hook(ctx)


@app.command(help="Verification and privacy-ZEBRA metrics of one score input, as a table or JSON.\n"
             + FORMATS_HELP)
@handle_errors
@score_input_options
@verdict_option_group()
def verify(
    scores: str = typer.Argument(..., help="Score file or folder (see formats)."),
    score_input: ScoreInputOptions = ScoreInputOptions(),
    p_target: List[float] = PTargetOpt,
    llr: bool = LLROpt,
    json_out: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    verdict_args: VerdictOptions = VerdictOptions(),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the verdict's relabellings and bootstrap."),
    jobs: int = JobsOpt,
):
    vopts = verdict_args.checked()  # checked even with --no-verdict (see its help)
    vopts, n_jobs = None if verdict_args.no_verdict else vopts, jobs_value(jobs)
    t = score_input.load(scores, profile=vopts is not None)
    # the sorted classes the reader's repeated-lines check made (kept by the trials, read-only): the verdict and
    # the summary read them, and no unsorted copy of either class is held (memory at 1e8 trials)
    source, (tar, non) = t.source, t.sorted_classes()
    labelled = say_label_counts(t, scores)  # rows ignored or mapped by the label options: counted, never silent
    verdicts, undecided = {}, {}
    if vopts is not None:
        from ..analysis.families import score_verdict
        from ..pipeline.jobs import Jobs

        name = display_name(source)
        with Jobs(n_jobs if len(t) >= VERIFY_JOBS_MIN_TRIALS else 1) as pool:  # workers repay their start-up
            v, why = verdict_or_reason(lambda: score_verdict(t, name, seed=seed, jobs=pool, **vopts))
        if v is None:
            undecided[name] = why
        else:
            verdicts[name] = v
    blocks = t.kept_tie_blocks()  # made by the verdict: read again, not merged again
    del t  # the trial keys and the unsplit scores are not needed any more (memory at 1e7 trials)
    summary = verification_summary(tar, non, tuple(p_target), scores_are_llrs=llr, blocks=blocks)
    from ..metrics.eer_defined import eer_undefined_reason

    eer_note = eer_undefined_reason(tar, non, scores_are_llrs=llr)
    if json_out:
        echo_json({"input": source, **({"label_counts": labelled} if labelled else {}), "verdicts": verdicts,
                   **({"verdicts_not_decided": undecided} if undecided else {}),
                   "metrics": {m.key: m.as_dict() for m in summary},
                   "eer_defined": eer_note is None, **({"eer_undefined_reason": eer_note} if eer_note else {})})
        return
    from ..report.units import display_metrics

    print_verdicts(Console(), verdicts, undecided)

    table = RichTable(title=escape(f"vpeval verify: {display_name(source)}"),
                      caption="EERs in %, eps_max in bits; --json gives every unit")
    for c in ("metric", "value", "unit"):
        table.add_column(c)
    errors = {m.key: m.error for m in summary}
    for key_, name, value, unit, _ in display_metrics(summary):
        v = value if isinstance(value, str) else str(value) if isinstance(value, int) else (  # counts as they are
            "n/a" if errors.get(key_) else f"{value:.6g}")
        if eer_note and key_.startswith("eer_"):
            v = f"undefined ({v})"
        table.add_row(escape(name), v, unit)
    Console().print(table)
    if eer_note:
        typer.echo(eer_note)
    for m in summary:
        if m.error:
            typer.echo(f"{m.name}: {m.error}")


@app.command(help="Write report.json and report.html (with DET and ECE plots) for one or more score "
             "inputs, each given as PATH or NAME=PATH.\n" + FORMATS_HELP)
@handle_errors
@score_input_options
@verdict_option_group()
def report(
    inputs: List[str] = typer.Argument(..., help="Score inputs, each PATH or NAME=PATH."),
    out: Path = typer.Option(Path("vpeval-report"), "-o", "--out", metavar="OUT",
                             help="Output folder (must not exist or be empty, unless --force)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing output folder."),
    score_input: ScoreInputOptions = ScoreInputOptions(),
    p_target: List[float] = PTargetOpt,
    llr: bool = LLROpt,
    title: str = typer.Option("vpeval privacy report", "--title"),
    quiet: bool = QuietOpt,
    json_out: bool = typer.Option(False, "--json", help="Print the verification numbers as JSON on stdout."),
    groups: Optional[Path] = typer.Option(
        None, "--groups", help="Speaker groups, Kaldi spk2gender layout ('speaker group' per line): adds a section "
        "with every metric per group of the enrollment speaker, with bootstrap intervals over the enrolled "
        "speakers. Needs trials with enrollment keys; every enrollment speaker must have a group."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the per-group bootstrap (with --groups) and of "
                             "the verdict."),
    verdict_args: VerdictOptions = VerdictOptions(),
    jobs: int = JobsOpt,
):
    from ..io.output import claim_folder
    from ..pipeline.jobs import HeldWarnings, warmed
    from ..report import Report, verification_section
    from ..report.verification import verification_summaries
    from ..report.disclosure import disclosure_parts, trials_disclosure_section
    from ..report.writer import FigureDrafts, render_report

    key = score_input.key
    vopts = verdict_args.checked()  # checked even with --no-verdict (see its help)
    no_verdict, n_perm = verdict_args.no_verdict, verdict_args.n_perm
    if key and len(inputs) != 1:
        raise VpevalError("--key applies to exactly one scores input; use folders with trials+scores for more")
    protect = [split_name(i)[1] for i in inputs] + ([key] if key else []) + ([str(groups)] if groups else [])
    spk_groups = None
    if groups is not None:
        from ..io.speaker_groups import read_speaker_groups

        spk_groups = read_speaker_groups(groups)
    with claim_folder(out, command="report", force=force, protect=protect) as claim, InputSnapshot() as snap, \
            warmed(jobs_value(jobs)) as pool:  # the workers start while the inputs are read
        systems, meta = {}, []
        for spec in inputs:
            name, path = split_name(spec)
            try:
                t = score_input.load(snap.path(path), key and snap.path(key))
            except VpevalError as exc:
                raise snap.rename(exc) from None
            name = name or display_name(Path(path).stem or Path(path).name)
            if name in systems:
                raise VpevalError(f"two inputs are named {name!r}; give names with NAME=PATH")
            if spk_groups is not None and t.enroll is None:  # said before any work starts
                raise VpevalError(f"--groups: input {name!r} has no enrollment keys (a score/label file); give "
                                  "Kaldi trials+scores")
            systems[name] = t
            files = ([Path(path)] if not Path(path).is_dir() else [Path(path) / "trials", Path(path) / "scores"]) + (
                [Path(key)] if key else [])
            labelled = say_label_counts(t, path, quiet)  # said and recorded with its file, never silent
            meta += [{"name": name, "path": str(f), "sha256": snap.sha256(f),
                      **({"label_counts": labelled} if labelled and i == 0 else {})} for i, f in enumerate(files)]
        # every option that shaped the numbers, the score-input ones (label mapping, columns, key) included
        rep = Report(title, inputs=meta, options={"p_targets": list(p_target), **score_input.as_options(),
                                                   "scores_are_llrs": llr})
        # from the classes sorted on reading: no copy of a class here (trials_disclosure_section, below)
        disclosed = {name: pool.submit(disclosure_parts, *t.sorted_classes()) for name, t in systems.items()}
        verified = pool.submit(verification_summaries, {n: t.sorted_classes() for n, t in systems.items()},
                               tuple(p_target), scores_are_llrs=llr)  # meanwhile, from the classes sorted on reading
        if not no_verdict:  # each input's relabellings on the workers (--jobs) while the sections below are computed
            from ..analysis.families import start_score_verdict
            from ..report.verdict import verdict_section

            rep.options.update({"verdict_perm": "auto" if n_perm is None else n_perm,
                                "budget_bits": vopts["budget_bits"], "alpha": vopts["alpha"], "delta": vopts["delta"],
                                "seed": seed})
            started = {name: start_score_verdict(t, name, jobs=pool, seed=seed, **vopts) for name, t in systems.items()}
            placeholder = rep.add(verdict_section({}))  # replaced once the tests are taken, below
        rep.drafts = FigureDrafts() if pool.parallel and not no_verdict else None  # drawn here during the tests
        with HeldWarnings() as held:  # said after the verdicts' warnings, as in one process
            rep.add(verification_section(systems, tuple(p_target), scores_are_llrs=llr, summaries=verified.get()))
            if spk_groups is not None:
                from ..io.output import sha256_file
                from ..pipeline.groups import group_breakdown, pooled_result
                from ..report.groups import score_groups_section

                n_boot, by_input = 200, {}
                for name, t in systems.items():
                    by_input[name] = [pooled_result(t, n_boot=n_boot, seed=seed)] + group_breakdown(
                        t, spk_groups, n_boot=n_boot, seed=seed, source=str(groups))
                meta.append({"name": "groups", "path": str(groups), "sha256": sha256_file(groups)})
                rep.options.update({"groups": str(groups), "seed": seed, "n_boot": n_boot})
                rep.add(score_groups_section(by_input, source=str(groups), seed=seed, n_boot=n_boot))
            disclosures = {}
            for name, started_parts in disclosed.items():
                sec, disclosures[name] = trials_disclosure_section(systems[name], name, started_parts.get())
                rep.add(sec)
            if len(systems) > 1:
                from ..disclosure import estimator_table
                from ..report.disclosure import estimator_table_section

                rep.add(estimator_table_section(estimator_table(
                    {n: (t.tar, t.non) for n, t in systems.items()}, disclosures=disclosures)))
        if not no_verdict:
            taken = {name: verdict_or_reason(r.get) for name, r in started.items()}
            verdicts = {name: v for name, (v, _) in taken.items() if v is not None}
            undecided = {name: why for name, (v, why) in taken.items() if v is None}
            rep.extra["verdicts"] = verdicts
            if undecided:
                rep.extra["verdicts_not_decided"] = undecided
            rep.sections[rep.sections.index(placeholder)] = verdict_section(verdicts, undecided=undecided)
        held.release()
        render_report(rep, claim.path, jobs=pool)
    if json_out:
        from ..report.verification import verification_entries

        ver, nd = next(sec for sec in rep.sections if sec.id == "verification"), rep.extra.get("verdicts_not_decided")
        labelled = {i["name"]: i["label_counts"] for i in meta if "label_counts" in i}
        echo_json({"report": str(out / "report.html"), "verdicts": rep.extra.get("verdicts", {}),
                   **({"verdicts_not_decided": nd} if nd else {}),
                   **({"label_counts": labelled} if labelled else {}),
                   "systems": verification_entries(ver.data, definitions=False)})
    elif not quiet:
        print_verdicts(Console(), rep.extra.get("verdicts", {}), rep.extra.get("verdicts_not_decided", {}))
        typer.echo(f"report written to {out / 'report.html'} (and report.json)")


#: The bundled examples, the default first: the ladder of six systems, then the three-system example.
EXAMPLES = ("ladder", "librispeech-mini")


def _is_example(c: Path) -> bool:
    return c.is_dir() and ((c / "systems.csv").is_file() or bool(sorted(c.glob("embeddings_*.npz"))))


def _find_example(example: Optional[Path]) -> Path:
    if example is not None:
        cands = [example]
    else:
        here = Path(__file__).resolve()
        cands = [root / "examples" / EXAMPLES[0] for root in (here.parents[3], Path.cwd())]
    for c in cands:
        if _is_example(c):
            return c
    raise VpevalError(
        "bundled example not found (looked in " + ", ".join(str(c) for c in cands) + "); run from a clone of "
        "the repository or pass --example DIR"
    )


def _example_systems(folder: Path) -> list[tuple[Path, str, str]]:
    """(folder, name, description) of each system of an example: those ``systems.csv`` lists (columns
    ``system,description``, in its order; each a subfolder), else the three-system layout (McAdams in the folder
    itself, the further systems in subfolders)."""
    import csv

    listing = folder / "systems.csv"
    if not listing.is_file():
        return [(folder, "mcadams", "McAdams")] + [(folder / x, x, d) for x, d in _EXAMPLE_SYSTEMS.items()
                                                   if sorted((folder / x).glob("embeddings_*.npz"))]
    with open(listing, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        if reader.fieldnames != ["system", "description"]:
            raise VpevalError(f"{listing}: line 1: expected the header 'system,description', got {reader.fieldnames}")
        out = []
        for row in reader:
            sub = folder / row["system"]
            if not row["system"] or not sorted(sub.glob("embeddings_*.npz")):
                raise VpevalError(f"{listing}: line {reader.line_num}: {sub} holds no embeddings_*.npz")
            out.append((sub, row["system"], row["description"]))
    if not out:
        raise VpevalError(f"{listing}: lists no system")
    return out


def _run_audit(systems: list[tuple[Path, str]], out: Path, force: bool, quiet: bool, json_out: bool, title: str,
               seed: int, backends=None, asnorm: bool = False, fusion: bool = True, vpc_table: Optional[Path] = None,
               dataset: str = "", split: str = "", command: str = "audit", client=None,
               verdict: dict | None = None, vpc_in_report: str | None = None, vpc_lists=None,
               figures: str = "strongest", jobs: int = 1) -> None:
    from contextlib import nullcontext
    from ..io.output import claim_file, claim_folder
    from ..pipeline.jobs import warmed  # not at the top: importing the CLI loads no pipeline (test_lazy_import)

    protect = [f for folder, _ in systems for f in folder.glob("*")]
    if vpc_table is not None and (Path(vpc_table).resolve() == out.resolve()
                                  or out.resolve() in Path(vpc_table).resolve().parents):
        raise VpevalError(f"{vpc_table}: the per-group table must not go into the report folder {out}")
    vpc_claim = (claim_file(vpc_table, command=f"{command} --vpc-table", force=force,
                            protect=[f for folder, _ in systems for f in folder.rglob("*")])
                 if vpc_table is not None else nullcontext())
    with claim_folder(out, command=command, force=force, protect=protect) as claim, vpc_claim as vclaim, \
            warmed(jobs) as jobs:
        rep = _audit_into(claim.path, systems, quiet, json_out, title, seed, backends, asnorm, fusion, dataset, split,
                          client, verdict, vpc_lists, figures=figures, jobs=jobs)
        from ..report.groups import vpc_csv_text

        sec = next((s for s in rep.sections if s.id == "groups"), None)
        text = vpc_csv_text([] if sec is None else sec.data["vpc_rows"])
        if vclaim is not None:
            with open(vclaim.path, "w", encoding="utf-8", newline="") as f:
                f.write(text)
        if vpc_in_report is not None:  # inside the claimed report folder: installed with the report, or not at all
            with open(claim.path / vpc_in_report, "w", encoding="utf-8", newline="") as f:
                f.write(text)
    _print_audit(rep, out, quiet, json_out)


def _audit_into(dest: Path, systems, quiet, json_out, title, seed, backends, asnorm, fusion, dataset="", split="",
                client=None, verdict: dict | None = None, vpc_lists=None, figures: str = "strongest", jobs: int = 1):
    """Run the audit and render its report into the claimed folder ``dest``; ``vpc_lists`` = (enrolls file,
    trials files, enroll rule) or None."""
    from ..report import sha256_file
    from ..report.audit import audit_systems
    from ..report.writer import render_report
    from .systems import input_details, load_system, load_train

    import pandas as pd

    console = Console(stderr=True, quiet=quiet or json_out)
    loaded, inputs, metadata, train, adapt = {}, [], {}, {}, {}
    for folder, name in systems:
        loaded[name] = load_system(folder)
        train[name] = load_train(folder, loaded[name])
        files = sorted(folder.glob("embeddings_*.npz")) + sorted((folder / "train").glob("embeddings_*.npz"))
        adapt[name] = load_adapt(folder, files)
        if train[name] and (folder / "train" / "metadata.csv").is_file():
            from ..pipeline import check_metadata

            tmeta = folder / "train" / "metadata.csv"
            try:
                table = pd.read_csv(tmeta, dtype=str, keep_default_na=False)
            except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
                raise InputFileError(tmeta, None, f"not a readable CSV table ({exc})") from None
            for es in train[name].values():
                check_metadata(es, table, source=str(tmeta))
            files.append(tmeta)
        if (folder / "metadata.csv").is_file():
            files.append(folder / "metadata.csv")
            try:
                metadata[name] = pd.read_csv(folder / "metadata.csv", dtype=str, keep_default_na=False)
            except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
                raise InputFileError(folder / "metadata.csv", None, f"not a readable CSV table ({exc})") from None
            from ..pipeline import check_metadata

            for es in loaded[name].values():  # every embedding row must be described, with the same speaker
                check_metadata(es, metadata[name], source=str(folder / "metadata.csv"))
        channel_files = add_channels(folder, name, loaded[name], train[name])
        rel = (lambda f: (f.relative_to(folder) if folder in f.parents else Path("..", f.name)).with_suffix(""))
        inputs += [{"name": f"{name}/{rel(f).as_posix()}", "path": str(f),
                    "sha256": sha256_file(f), **input_details(f)} for f in files]
        inputs += [{"name": f"{name}/channels/{'train/' if f.parent.name == 'train' else ''}{f.stem}", "path": str(f),
                    "sha256": sha256_file(f)} for f in channel_files]
    utility = {}
    for folder, name in systems:
        tdir = folder / "transcripts"
        if (tdir / "ref.txt").is_file():
            from ..audio.asr.transcripts import read_transcripts
            from ..metrics.utility import wer

            ref = read_transcripts(tdir / "ref.txt")
            hyps = [c for c in ("original", "anonymized") if (tdir / f"{c}.txt").is_file()]
            if not hyps:
                raise VpevalError(f"{tdir}: ref.txt needs original.txt and/or anonymized.txt beside it")
            utility[name] = {c: wer(ref, read_transcripts(tdir / f"{c}.txt")) for c in hyps}
            inputs += [{"name": f"{name}/transcripts/{f.name}", "path": str(f), "sha256": sha256_file(f)}
                       for f in sorted(tdir.glob("*.txt"))]
    pitch = {}
    for folder, name in systems:
        if (folder / "pitch_correlation.csv").is_file():
            from ..io.pitch_table import read_pitch_table

            f = folder / "pitch_correlation.csv"
            pitch[name] = read_pitch_table(f)
            inputs.append({"name": f"{name}/pitch_correlation", "path": str(f), "sha256": sha256_file(f)})
    lists = None
    if vpc_lists is not None:
        from ..pipeline.vpc import VPCLists

        enrolls, trial_files, rule = vpc_lists
        lists = VPCLists.read(enrolls, trial_files, enroll_rule=rule or "vpc")
        inputs += [{"name": f"vpc-lists/{Path(f).name}", "path": str(f), "sha256": sha256_file(f)}
                   for f in [enrolls, *trial_files]]
    with console.status("auditing") as status:
        from ..backends import BACKENDS

        rep = audit_systems(loaded, title=title, seed=seed, metadata=metadata, utility=utility, pitch=pitch,
                            train={k: v for k, v in train.items() if v}, backends=backends or BACKENDS,
                            asnorm=asnorm, fusion=fusion, progress=lambda m: status.update(escape(m)),
                            dataset=dataset, split=split, client=client, vpc_lists=lists, figures=figures,
                            adapt={k: v for k, v in adapt.items() if v is not None} or None, jobs=jobs,
                            **audit_verdict_kwargs(verdict))
        rep.inputs = inputs
        status.update("writing the report")
        render_report(rep, dest, jobs=jobs)
    return rep


def _print_audit(rep, out: Path, quiet: bool, json_out: bool) -> None:
    summary = next(s for s in rep.sections if s.id == "summary").data["systems"]
    if json_out:
        extra = {"comparisons": rep.extra["comparisons"]} if "comparisons" in rep.extra else {}
        if "verdicts_not_decided" in rep.extra:
            extra["verdicts_not_decided"] = rep.extra["verdicts_not_decided"]
        echo_json({"report": str(out / "report.html"), "verdicts": rep.extra.get("verdicts", {}), **extra,
                   "summary": summary})
        return
    if quiet:
        return
    out_console = Console()
    _print_verdicts(out_console, rep.extra.get("verdicts", {}), rep.extra.get("verdicts_not_decided", {}))
    for system, e in rep.extra.get("channel_verdicts", {}).items():  # content/prosody channels: which decides
        out_console.print(escape(f"{system}: channels: {e['sentence']}" + (f" {e['caveat']}" if e.get("caveat") else "")))
    comp = next((s for s in rep.sections if s.id == "comparisons"), None)
    order = None if comp is None else comp.data.get("order_line")
    _print_comparisons(out_console, rep.extra.get("comparisons", []), order)
    from .audit_terminal import print_system_table

    flag = next(s for s in rep.sections if s.id == "summary").data["above_half_flag"]
    for name, data in summary.items():
        print_system_table(out_console, name, data, flag)
    verdicts = rep.extra.get("verdicts", {})
    if len(verdicts) > 1:  # the answer again where the eye lands after the evidence scrolled past
        out_console.print(escape("In short: " + "; ".join(f"{s} {v['verdict']}" for s, v in verdicts.items())
                                 + (f". Order (share of trials beyond the budget, measured; the verdicts read "
                                    f"its bounds at delta; lower protects better): {order}"
                                    if order else "") + "."), overflow="fold")
    typer.echo(f"report written to {out / 'report.html'} (and report.json)")


def _print_comparisons(console: Console, comparisons: list, order: str | None = None) -> None:
    """One line per pair of systems, as the report's page orders them: the paired comparison of the share of trials
    beyond the budget (percentage points; ``order``, the report's order line, before them), of the verdicts' worst
    cases (bits), then per attack type of the strongest attacker's EER (EER points)."""
    share = [c for c in comparisons if c["metric"] == "share_beyond"]
    worst = [c for c in comparisons if c["metric"] == "worst_case"]
    eer = [c for c in comparisons if c["metric"] == "eer_rocch"]
    if not eer and not worst and not share:
        return
    console.print("[bold]Paired comparison[/bold] (A - B with its 95 % paired speaker-bootstrap interval; a lower "
                  "share beyond the budget, a lower worst case or a higher EER protects better; eps_max and ALID "
                  "per type in the report):")
    if order:
        console.print(escape(f"  order by the share of trials beyond the budget (measured, not a bound): {order} "
                             "('<': the neighbours' interval excludes 0)"), overflow="fold")
    for c in share:
        d, lo, hi = (100 * c[k] + 0.0 for k in ("diff_fraction", "ci_low_fraction", "ci_high_fraction"))
        console.print(escape(f"  {c['system_a']} - {c['system_b']} (share of trials beyond the budget, points): "
                             f"{d:+.3g} [{lo:+.3g}, {hi:+.3g}]: {c['reading'].split(': ', 1)[-1]}"), overflow="fold")
    for c in worst:
        d, lo, hi = (c[k] + 0.0 for k in ("diff_bits", "ci_low_bits", "ci_high_bits"))
        console.print(escape(f"  {c['system_a']} - {c['system_b']} (verdict's worst case, bits): {d:+.3g} "
                             f"[{lo:+.3g}, {hi:+.3g}]: {c['reading'].split(': ', 1)[-1]}"), overflow="fold")
    for c in eer:
        # + 0.0 turns -0.0 (e.g. 100 * -0.0) into 0.0, so a null difference does not print as "-0"
        d, lo, hi = (100 * c[k] + 0.0 for k in ("diff_fraction", "ci_low_fraction", "ci_high_fraction"))
        console.print(escape(f"  {c['system_a']} - {c['system_b']} ({c['trial_type']}, lowest ROCCH-EER, EER "
                             f"points): {d:+.3g} [{lo:+.3g}, {hi:+.3g}]: {c['reading'].split(': ', 1)[-1]}"),
                      overflow="fold")


def _print_verdicts(console: Console, verdicts: dict, undecided: dict | None = None) -> None:
    """The verdicts (:func:`vpeval.cli.common.print_verdicts`), then per audited system its scorecard."""
    from .audit_terminal import print_title

    print_verdicts(console, verdicts, undecided)

    def num(card, key, scale=1.0):
        return "n/a" if card.get(key) is None else f"{scale * card[key]['value']:.3g}"

    def who(card, key):
        return "" if card.get(key) is None else f"{card[key]['attacker']} ({card[key]['trial_type']})"

    for name, v in verdicts.items():  # one narrow table per system: fits 80 columns, names fold, never cut
        card = v.get("scorecard")
        if not card:
            continue
        print_title(console, f"{name}: scorecard over attackers (evidence; EER ideal 50 %, disclosure ideal 0)")
        table = RichTable()
        table.add_column("headline metric", overflow="fold")
        table.add_column("value", overflow="fold", justify="right")
        table.add_column("attacker (trial type)", overflow="fold")
        for label, key, scale in (("lowest ROCCH-EER oa (%)", "eer_rocch_oa", 100),
                                  ("lowest ROCCH-EER aa (%)", "eer_rocch_aa", 100),
                                  ("highest eps_max (bits)", "eps_max_nats", 1 / math.log(2)),
                                  ("highest ALID (bits)", "alid_bits", 1.0), ("highest rank-1 (%)", "rank1", 100)):
            table.add_row(label, num(card, key, scale), escape(who(card, key)))
        if card.get("rank1_chance") is not None:
            table.add_row("rank-1 chance (%)", f"{100 * card['rank1_chance']:.3g}", "1/N")
        console.print(table)
        if card.get("alid_bits") is not None and card["alid_bits"]["value"] < 0:
            from ..analysis.readings import NEGATIVE_LID_READING

            console.print(escape(f"  note: even the highest ALID is below 0: {NEGATIVE_LID_READING}"), overflow="fold")


FiguresOpt = typer.Option("strongest", "--figures", help="Per-attacker figures: 'strongest' (default: those of "
                          "the strongest attackers, which the main page links to; every other attacker stays "
                          "numbers in the appendix and report.json) or 'all'.")


@app.command(help="Run the full audit on the bundled LibriSpeech example (real speech of 67 evaluation speakers, "
             "anonymized by a ladder of six systems side by side: none, resampling, McAdams, WORLD F0 scaling + "
             "VTLN-style envelope warping, ASR + TTS with a keyed pseudo-voice per speaker, and ASR + TTS in one "
             "voice for everybody; --example examples/librispeech-mini: the older three-system example; "
             "two extractors, each scored by cosine and by centred-cosine, LDA and PLDA back-ends trained on "
             "original and on anonymized speech of 150 training speakers, plus two fusions, and per system the "
             "semi-informed (extractor adapted) attacker: the GE2E projection retrained on that system's anonymized "
             "training speech from cached LSTM states; beside the voice, content (transcripts) and prosody attackers "
             "and their fusion with the voice, from the example's channels/ folder, docs/channels.md) and write the "
             "report, "
             "with the per-gender VoicePrivacy table (f, m and the pooled 'all' row) as "
             "OUT/voiceprivacy_per_gender.csv. Needs no audio and no torch.")
@handle_errors
@verdict_option_group(n_perm=VerdictPermOpt)
def demo(
    out: Path = typer.Option(Path("vpeval-demo"), "-o", "--out", metavar="OUT", help="Output folder."),
    example: Optional[Path] = typer.Option(
        None, "--example", help="Example folder: examples/ladder (the default: six systems listed in its "
        "systems.csv) or examples/librispeech-mini (three systems)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing output folder."),
    quiet: bool = QuietOpt,
    json_out: bool = typer.Option(False, "--json", help="Print the summary as JSON on stdout."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of every random step (cross-fitting folds, bootstrap)."),
    backend: List[str] = typer.Option(
        [], "--backend", help="Back-end to attack with (repeatable): cosine, centred-cosine, lda, plda. "
        "Default: all of them."),
    asnorm: bool = typer.Option(False, "--asnorm", help="Also attack with every back-end under adaptive S-norm."),
    no_fusion: bool = typer.Option(False, "--no-fusion", help="Do not field the fusion attackers."),
    vpc_table: Optional[Path] = VpcTableOpt,
    dataset: str = typer.Option("", "--dataset", help="Value of the dataset column of --vpc-table (default: the "
                                "example folder's name)."),
    split: str = SplitOpt,
    verdict_args: VerdictOptions = VerdictOptions(),
    figures: str = FiguresOpt,
    jobs: int = JobsOpt,
):
    folder = _find_example(example)
    listed = _example_systems(folder)
    _run_audit([(f, n) for f, n, _ in listed], out, force, quiet, json_out,
               "vpeval demo: " + "; ".join(d for _, _, d in listed) + " (LibriSpeech, bundled example)", seed,
               backends=_backends(backend), asnorm=asnorm, fusion=not no_fusion, vpc_table=vpc_table,
               dataset=dataset or folder.name, split=split, command="demo",
               verdict=verdict_args.for_audit(),
               vpc_in_report=DEMO_VPC_TABLE, figures=_figures(figures), jobs=jobs_value(jobs))


_EXAMPLE_SYSTEMS = {"vtln": "WORLD F0 + VTLN-warping", "resample": "resampling"}

#: The per-gender VoicePrivacy table `vpeval demo` writes into its report folder (the CSV of --vpc-table).
DEMO_VPC_TABLE = "voiceprivacy_per_gender.csv"


@app.command(help="Audit one or more anonymization systems side by side. Each SYSTEM is a folder with "
             "embeddings_<extractor>.npz files (original and anonymized rows, see `vpeval embed`), optionally a "
             "train/ subfolder with embeddings_<extractor>.npz of attacker training speakers (original and "
             "anonymized rows; speakers disjoint from the evaluation ones: enables the trained back-ends lda, plda, "
             "centred-cosine for lazy-informed and semi-informed attackers, and their fusion), optionally "
             "metadata.csv (utterance_id,speaker_id,condition,sex,...: enables the soft-biometric section) and "
             "transcripts/ref.txt with transcripts/original.txt and/or anonymized.txt (Kaldi `utt_id words...` "
             "lines, e.g. from `vpeval utility --save-hyp`: enables the utility section and the privacy-utility "
             "plot), optionally pitch_correlation.csv (utterance_id,rho_f0 from `vpeval utility --pitch --save-pitch`: "
             "adds the pitch correlation), given as DIR or NAME=DIR.")
@handle_errors
@verdict_option_group(n_perm=VerdictPermOpt)
def audit(
    systems: List[str] = typer.Argument(..., help="System folders, each DIR or NAME=DIR."),
    out: Path = typer.Option(Path("vpeval-audit"), "-o", "--out", metavar="OUT", help="Output folder."),
    force: bool = typer.Option(False, "--force", help="Replace an existing output folder."),
    quiet: bool = QuietOpt,
    json_out: bool = typer.Option(False, "--json", help="Print the summary as JSON on stdout."),
    title: str = typer.Option("vpeval audit", "--title"),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of every random step."),
    backend: List[str] = typer.Option(
        [], "--backend", help="Back-end to attack with (repeatable): cosine, centred-cosine, lda, plda. "
        "Default: all of them; trained ones need a train/ folder."),
    asnorm: bool = typer.Option(False, "--asnorm", help="Also attack with every back-end under adaptive S-norm "
                                "(cohort: the training speakers)."),
    no_fusion: bool = typer.Option(False, "--no-fusion", help="Do not field the fusion attackers."),
    vpc_table: Optional[Path] = VpcTableOpt,
    dataset: str = typer.Option("", "--dataset", help="Value of the dataset column of --vpc-table."),
    split: str = SplitOpt,
    scheduler: Optional[str] = SchedulerOpt,
    workers: Optional[int] = WorkersOpt,
    verdict_args: VerdictOptions = VerdictOptions(),
    enroll_list: Optional[Path] = typer.Option(
        None, "--enroll-list", help="The VoicePrivacy 'enrolls' file (with --vpc-trials): every attacker scores "
        "exactly the listed trials instead of vpeval's own split."),
    vpc_trials: Optional[List[Path]] = typer.Option(
        None, "--vpc-trials", help="VoicePrivacy trials file (repeatable, e.g. trials_f and trials_m; needs "
        "--enroll-list): the oo, oa, aa trials of every attacker, the per-gender rows and the verdict."),
    enroll_rule: Optional[str] = EnrollRuleOpt,
    figures: str = FiguresOpt,
    jobs: int = JobsOpt,
):
    folders: list[tuple[Path, str]] = []
    if (enroll_list is None) != (not vpc_trials):
        raise VpevalError("--enroll-list and --vpc-trials go together (the VoicePrivacy enrolls and trials lists)")
    if enroll_rule is not None and not vpc_trials:
        raise VpevalError("--enroll-rule applies to the VoicePrivacy lists: give --vpc-trials and --enroll-list")
    lists = None if enroll_list is None else (enroll_list, list(vpc_trials), enroll_rule)
    verdict = verdict_args.for_audit()
    for spec in systems:
        name, path = split_name(spec)
        folder = Path(path)
        if not folder.is_dir() or not sorted(folder.glob("embeddings_*.npz")):
            raise VpevalError(f"{folder}: not a folder with embeddings_*.npz files")
        name = name or display_name(folder.resolve().name)
        if name in [n for _, n in folders]:
            raise VpevalError(f"two systems are named {name!r}; give names with NAME=DIR")
        folders.append((folder, name))
    with execution(scheduler, workers) as client:
        _run_audit(folders, out, force, quiet, json_out, title, seed, backends=_backends(backend), asnorm=asnorm,
                   fusion=not no_fusion, vpc_table=vpc_table, dataset=dataset, split=split, client=client,
                   verdict=verdict, vpc_lists=lists, figures=_figures(figures), jobs=jobs_value(jobs))


def _figures(value: str) -> str:
    from ..report.overview import FIGURE_CHOICES

    if value not in FIGURE_CHOICES:
        raise VpevalError(f"--figures {value!r}: expected one of {', '.join(FIGURE_CHOICES)}")
    return value


def _backends(names: list[str]):
    from ..backends import BACKENDS

    for b in names:
        if b not in BACKENDS:
            raise VpevalError(f"--backend {b!r}: expected one of {', '.join(BACKENDS)}")
    if len(set(names)) != len(names):
        raise VpevalError("--backend: a back-end is given more than once")
    return list(names) or None


def _register_families() -> None:
    from . import adapt, audio, beyond, disclosure, doctor, linkage, plan, protocols, utility, vpc

    for module in (audio, protocols, disclosure, linkage, beyond, utility, vpc, plan, doctor):
        module.register(app)
    adapt.register(app)
    finish(app)  # groups, one-line descriptions and examples of every command (vpeval.cli.guide)


_register_families()


def main():  # console-script entry point (vpeval.cli.entry), and `python -m vpeval.cli.main`
    try:
        printable_streams()
        start_process()
        try:
            app()
        finally:
            flush_stdout()
    except MemoryError:  # outside a command's own handling (typer's objects): the same line and exit code 4
        from .oom import out_of_memory_exit

        out_of_memory_exit()


if __name__ == "__main__":
    main()
