"""The ``vpeval`` command line: one subcommand per metric family, plus ``report`` and ``demo``.

Exit codes: 0 success; 2 bad input or usage (the message names file and line); 3 the output folder exists
and is not empty (use --force); 1 an unexpected internal error (a bug: please report it).
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable

from .. import __version__
from ..errors import InputFileError, VpevalError
from ..metrics.summary import verification_summary
from .common import (
    FORMATS_HELP, IgnoreOpt, KeyOpt, LabelCol, LLROpt, LowerOpt, NonOpt, PTargetOpt, ScoreCol, SepOpt,
    TargetOpt, display_name, echo_json, handle_errors, load_trials, split_name,
)

app = typer.Typer(
    name="vpeval",
    help="Measure how well a voice anonymizer hides who is speaking. " + __doc__.split("\n\n")[1],
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)


def _version(value: bool):
    if value:
        typer.echo(f"vpeval {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")):
    pass


# shared options: see .common


@app.command(help="Verification and privacy-ZEBRA metrics of one score input, as a table or JSON.\n"
             + FORMATS_HELP)
@handle_errors
def verify(
    scores: str = typer.Argument(..., help="Score file or folder (see formats)."),
    key: Optional[str] = KeyOpt,
    label_col: Optional[str] = LabelCol,
    score_col: Optional[str] = ScoreCol,
    target: Optional[List[str]] = TargetOpt,
    nontarget: Optional[List[str]] = NonOpt,
    ignore: Optional[List[str]] = IgnoreOpt,
    sep: Optional[str] = SepOpt,
    lower_is_target: bool = LowerOpt,
    p_target: List[float] = PTargetOpt,
    llr: bool = LLROpt,
    json_out: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
):
    t = load_trials(scores, key, label_col, score_col, target, nontarget, ignore, sep, lower_is_target)
    summary = verification_summary(t.tar, t.non, tuple(p_target), scores_are_llrs=llr)
    if json_out:
        echo_json({"input": t.source, "metrics": {m.key: m.as_dict() for m in summary}})
        return
    table = RichTable(title=escape(f"vpeval verify: {display_name(t.source)}"))
    for c in ("metric", "value", "unit"):
        table.add_column(c)
    for m in summary:
        v = m.value if isinstance(m.value, str) else f"{m.value:.6g}"
        table.add_row(escape(m.name), v, m.unit)
    Console().print(table)


@app.command(help="Write report.json and report.html (with DET and ECE plots) for one or more score "
             "inputs, each given as PATH or NAME=PATH.\n" + FORMATS_HELP)
@handle_errors
def report(
    inputs: List[str] = typer.Argument(..., help="Score inputs, each PATH or NAME=PATH."),
    out: Path = typer.Option(Path("vpeval-report"), "-o", "--out", help="Output folder (must not exist or be "
                             "empty, unless --force)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing output folder."),
    key: Optional[str] = typer.Option(None, "--key", help="Kaldi key; only with a single scores input."),
    label_col: Optional[str] = LabelCol,
    score_col: Optional[str] = ScoreCol,
    target: Optional[List[str]] = TargetOpt,
    nontarget: Optional[List[str]] = NonOpt,
    ignore: Optional[List[str]] = IgnoreOpt,
    sep: Optional[str] = SepOpt,
    lower_is_target: bool = LowerOpt,
    p_target: List[float] = PTargetOpt,
    llr: bool = LLROpt,
    title: str = typer.Option("vpeval privacy report", "--title"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing but errors."),
    json_out: bool = typer.Option(False, "--json", help="Print the verification numbers as JSON on stdout."),
):
    from ..report import Report, sha256_file, verification_section, write_report
    from ..report.disclosure import disclosure_section

    from ..report.writer import check_output_folder

    if key and len(inputs) != 1:
        raise VpevalError("--key applies to exactly one scores input; use folders with trials+scores for more")
    check_output_folder(out, force=force, protect=[split_name(i)[1] for i in inputs] + ([key] if key else []))
    systems, meta = {}, []
    for spec in inputs:
        name, path = split_name(spec)
        t = load_trials(path, key, label_col, score_col, target, nontarget, ignore, sep, lower_is_target)
        name = name or display_name(Path(path).stem or Path(path).name)
        if name in systems:
            raise VpevalError(f"two inputs are named {name!r}; give names with NAME=PATH")
        systems[name] = t
        files = [Path(path)] if not Path(path).is_dir() else [Path(path) / "trials", Path(path) / "scores"]
        if key:
            files.append(Path(key))
        meta += [{"name": name, "path": str(f), "sha256": sha256_file(f)} for f in files]
    rep = Report(title, inputs=meta, options={"p_targets": list(p_target), "lower_is_target": lower_is_target,
                                               "scores_are_llrs": llr})
    rep.add(verification_section(systems, tuple(p_target), scores_are_llrs=llr))
    for name, t in systems.items():
        rep.add(disclosure_section(t.tar, t.non, section_id=f"disclosure-{name}",
                                   title=f"Worst-case disclosure per LLR estimator: {name}")[0])
    write_report(rep, out, force=force, protect=[m["path"] for m in meta])
    if json_out:
        echo_json({"report": str(out / "report.html"), "systems": rep.sections[0].data["systems"]})
    elif not quiet:
        typer.echo(f"report written to {out / 'report.html'} (and report.json)")


def _find_example(example: Optional[Path]) -> Path:
    if example is not None:
        cands = [example]
    else:
        here = Path(__file__).resolve()
        cands = [here.parents[3] / "examples" / "librispeech-mini", Path.cwd() / "examples" / "librispeech-mini"]
    for c in cands:
        if c.is_dir() and sorted(c.glob("embeddings_*.npz")):
            return c
    raise VpevalError(
        "bundled example not found (looked in " + ", ".join(str(c) for c in cands) + "); run from a clone of "
        "the repository or pass --example DIR"
    )


def _load_system(folder: Path) -> dict:
    from ..io.embeddings import read_embeddings

    sets = {}
    for f in sorted(folder.glob("embeddings_*.npz")):
        es = read_embeddings(f)
        if es.extractor in sets:
            raise VpevalError(f"{f}: a second embedding file of extractor {es.extractor!r} in {folder}")
        sets[es.extractor] = es
    return sets


def _load_train(folder: Path, evaluation: dict) -> dict:
    """Attacker training embeddings from ``folder/train/embeddings_*.npz`` (empty dict when absent)."""
    tdir = folder / "train"
    if tdir.exists() and not tdir.is_dir():
        raise VpevalError(f"{tdir}: expected a folder of attacker training embeddings (train/embeddings_*.npz), "
                          "found a file")
    if not tdir.is_dir():
        return {}
    train = _load_system(tdir)
    if not train:
        raise VpevalError(f"{tdir}: a train/ folder needs embeddings_<extractor>.npz files (training speakers, "
                          "original and anonymized rows)")
    extra = sorted(set(train) - set(evaluation))
    if extra:
        raise VpevalError(f"{tdir}: training embeddings of extractor {extra[0]!r} have no evaluation embeddings in "
                          f"{folder}")
    return train


def _run_audit(systems: list[tuple[Path, str]], out: Path, force: bool, quiet: bool, json_out: bool, title: str,
               seed: int, backends=None, asnorm: bool = False, fusion: bool = True) -> None:
    from ..report import sha256_file, write_report
    from ..report.audit import audit_systems

    import pandas as pd

    from ..report.writer import check_output_folder

    check_output_folder(out, force=force, protect=[f for folder, _ in systems for f in folder.glob("*")])
    console = Console(stderr=True, quiet=quiet or json_out)
    loaded, inputs, metadata, train = {}, [], {}, {}
    for folder, name in systems:
        loaded[name] = _load_system(folder)
        train[name] = _load_train(folder, loaded[name])
        files = sorted(folder.glob("embeddings_*.npz")) + sorted((folder / "train").glob("embeddings_*.npz"))
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
        inputs += [{"name": f"{name}/{f.relative_to(folder).with_suffix('').as_posix()}", "path": str(f),
                    "sha256": sha256_file(f)} for f in files]
    utility = {}
    for folder, name in systems:
        tdir = folder / "transcripts"
        if (tdir / "ref.txt").is_file():
            from ..asr.transcripts import read_transcripts
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
    with console.status("auditing") as status:
        from ..backends import BACKENDS

        rep = audit_systems(loaded, title=title, seed=seed, metadata=metadata, utility=utility, pitch=pitch,
                            train={k: v for k, v in train.items() if v}, backends=backends or BACKENDS,
                            asnorm=asnorm, fusion=fusion, progress=lambda m: status.update(escape(m)))
        rep.inputs = inputs
        status.update("writing the report")
        write_report(rep, out, force=force, protect=[i["path"] for i in inputs])
    summary = next(s for s in rep.sections if s.id == "summary").data["systems"]
    if json_out:
        echo_json({"report": str(out / "report.html"), "verdicts": rep.extra.get("verdicts", {}), "summary": summary})
        return
    if quiet:
        return
    out_console = Console()
    _print_verdicts(out_console, rep.extra.get("verdicts", {}))
    for name, data in summary.items():
        from rich import box

        table = RichTable(title=escape(f"{name}: ROCCH-EER (%) per attacker and trial type (ideal in header)"),
                          box=box.SIMPLE_HEAD)
        # long names wrap at their " / " separators (never cut); the numbers stay on the name's first line
        table.add_column("attacker", overflow="fold", min_width=min(20, max(len(p) for a in data["attackers"]
                                                                              for p in a.split("/")) + 2))
        types = list(next(iter(data["attackers"].values())))
        for t in types:
            ideal = data["target_eer"].get(t)
            head = t.replace("cross-profile", "cross-\nprofile")
            table.add_column(f"{head}\n({'ref' if ideal is None else f'{100 * ideal:g}'})", overflow="fold",
                             justify="right", max_width=7)
        for att, by in data["attackers"].items():
            table.add_row(escape(att.replace("/", " / ")), *[f"{100 * by[t]['eer_rocch']:.1f}" for t in types])
        out_console.print(table)
    typer.echo(f"report written to {out / 'report.html'} (and report.json)")


def _print_verdicts(console: Console, verdicts: dict) -> None:
    """The verdict of each system with its sentence, then the scorecard; attacker names wrap, never cut."""
    if not verdicts:
        return
    for name, v in verdicts.items():
        console.print(f"[bold]{escape(name)}: {escape(v['verdict'].upper())}[/bold]. {escape(v['sentence'])}",
                      overflow="fold")
    def num(card, key, scale=1.0):
        return "n/a" if card.get(key) is None else f"{scale * card[key]['value']:.3g}"

    def who(card, key):
        return "" if card.get(key) is None else f"{card[key]['attacker']} ({card[key]['trial_type']})"

    for name, v in verdicts.items():  # one narrow table per system: fits 80 columns, names fold, never cut
        card = v["scorecard"]
        table = RichTable(title=escape(f"{name}: scorecard, worst case over attackers (EER ideal 50 %, "
                                       "disclosure ideal 0)"))
        table.add_column("headline metric", overflow="fold")
        table.add_column("value", overflow="fold", justify="right")
        table.add_column("attacker (trial type)", overflow="fold")
        table.add_row("verdict", v["verdict"], escape(f"{v['strongest_attacker']} ({v['trial_type']})"))
        for label, key, scale in (("lowest EER oa (%)", "eer_rocch_oa", 100), ("lowest EER aa (%)", "eer_rocch_aa", 100),
                                  ("highest eps_max (nats)", "eps_max_nats", 1.0),
                                  ("highest ALID (bits)", "alid_bits", 1.0), ("highest rank-1 (%)", "rank1", 100)):
            table.add_row(label, num(card, key, scale), escape(who(card, key)))
        if card.get("rank1_chance") is not None:
            table.add_row("rank-1 chance (%)", f"{100 * card['rank1_chance']:.3g}", "1/N")
        console.print(table)


@app.command(help="Run the full audit on the bundled LibriSpeech example (real speech anonymized by three systems side by "
             "side: McAdams, WORLD F0 scaling + VTLN-style envelope warping, and resampling; "
             "two extractors, each scored by cosine and by centred-cosine, LDA and PLDA back-ends trained on "
             "original and on anonymized speech of 150 training speakers, plus two fusions) and write the report. "
             "Needs no audio and no torch.")
@handle_errors
def demo(
    out: Path = typer.Option(Path("vpeval-demo"), "-o", "--out", help="Output folder."),
    example: Optional[Path] = typer.Option(None, "--example", help="Example folder (embeddings_*.npz)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing output folder."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing but errors."),
    json_out: bool = typer.Option(False, "--json", help="Print the summary as JSON on stdout."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of every random step (cross-fitting folds, bootstrap)."),
    backend: List[str] = typer.Option(
        [], "--backend", help="Back-end to attack with (repeatable): cosine, centred-cosine, lda, plda. "
        "Default: all of them."),
    asnorm: bool = typer.Option(False, "--asnorm", help="Also attack with every back-end under adaptive S-norm."),
    no_fusion: bool = typer.Option(False, "--no-fusion", help="Do not field the fusion attackers."),
):
    folder = _find_example(example)
    # McAdams in the example folder itself; the further systems in its subfolders (see its README)
    systems = [(folder, "mcadams")] + [(folder / x, x) for x in _EXAMPLE_SYSTEMS
                                       if sorted((folder / x).glob("embeddings_*.npz"))]
    _run_audit(systems, out, force, quiet, json_out,
               "vpeval demo: " + ", ".join(_EXAMPLE_SYSTEMS.get(n, "McAdams") for _, n in systems)
               + " anonymization of LibriSpeech (bundled example)", seed,
               backends=_backends(backend), asnorm=asnorm, fusion=not no_fusion)


_EXAMPLE_SYSTEMS = {"vtln": "WORLD F0 + VTLN-warping", "resample": "resampling"}


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
def audit(
    systems: List[str] = typer.Argument(..., help="System folders, each DIR or NAME=DIR."),
    out: Path = typer.Option(Path("vpeval-audit"), "-o", "--out", help="Output folder."),
    force: bool = typer.Option(False, "--force", help="Replace an existing output folder."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing but errors."),
    json_out: bool = typer.Option(False, "--json", help="Print the summary as JSON on stdout."),
    title: str = typer.Option("vpeval audit", "--title"),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of every random step."),
    backend: List[str] = typer.Option(
        [], "--backend", help="Back-end to attack with (repeatable): cosine, centred-cosine, lda, plda. "
        "Default: all of them; trained ones need a train/ folder."),
    asnorm: bool = typer.Option(False, "--asnorm", help="Also attack with every back-end under adaptive S-norm "
                                "(cohort: the training speakers)."),
    no_fusion: bool = typer.Option(False, "--no-fusion", help="Do not field the fusion attackers."),
):
    folders: list[tuple[Path, str]] = []
    for spec in systems:
        name, path = split_name(spec)
        folder = Path(path)
        if not folder.is_dir() or not sorted(folder.glob("embeddings_*.npz")):
            raise VpevalError(f"{folder}: not a folder with embeddings_*.npz files")
        name = name or display_name(folder.resolve().name)
        if name in [n for _, n in folders]:
            raise VpevalError(f"two systems are named {name!r}; give names with NAME=DIR")
        folders.append((folder, name))
    _run_audit(folders, out, force, quiet, json_out, title, seed, backends=_backends(backend), asnorm=asnorm,
               fusion=not no_fusion)


def _backends(names: list[str]):
    from ..backends import BACKENDS

    for b in names:
        if b not in BACKENDS:
            raise VpevalError(f"--backend {b!r}: expected one of {', '.join(BACKENDS)}")
    if len(set(names)) != len(names):
        raise VpevalError("--backend: a back-end is given more than once")
    return list(names) or None


def _register_families() -> None:
    from . import audio, beyond, disclosure, linkage, protocols, utility

    for module in (audio, protocols, disclosure, linkage, beyond, utility):
        module.register(app)


_register_families()


def main():  # console-script entry point
    app()


if __name__ == "__main__":
    main()
