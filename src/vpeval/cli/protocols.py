"""``vpeval trials``: build trial protocols from speaker embeddings and write Kaldi files and 1-to-N tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer

from .common import (EnrollRuleOpt, SchedulerOpt, WorkersOpt, execution, handle_errors, read_metadata_csv,
                     split_comma_list)

from ..errors import InputFileError, VpevalError

__all__ = ["register", "trials_command", "attack_command"]

_HELP = """Build trial protocols from speaker embeddings (definitions: docs/protocols.md).

EMBEDDINGS: one or more .npz/.parquet embedding files, joined (same extractor required), with the original and anonymized embeddings of the same utterance ids.

Writes into OUT: protocol.csv (utterance_id,speaker_id,role: the split used); <type>/trials (Kaldi key "<enroll> <test> target|nontarget"); <type>/scores ("<enroll> <test> <score>", cosine, shortest exact float repr); one_to_n_<xy>.csv (enroll_spk,trial_spk,trial_id,score: every probe in condition y against every enrolled speaker in condition x, cohort included) for each of oo, oa, aa that a requested type uses.

Trial types: oo, oa, aa, oaoa, oaoo, oaaa, aaaa, aa-centroid (default: all; cross-profile needs runs under two profile keys: see vpeval audit).

VoicePrivacy lists: with --vpc-trials FILE (repeatable; lines '<enroll_speaker> <test_utterance> target|nontarget') and --enroll-list ENROLLS (the challenge's 'enrolls' file), exactly the listed trials are scored for oo, oa, aa (--types may narrow them): each enrollment speaker's model is built from its listed enrollment embeddings in the enrollment condition by --enroll-rule (vpc, the default: mean of the raw embeddings, as the challenge's scripts do; normalized: normalised mean of the normalised embeddings), the test side is the listed utterance in the test condition, the score their cosine; the JSON summary names the rule. Unknown ids and labels that contradict the embeddings' speakers are errors naming file and line. protocol.csv then holds the listed enrollment and tested utterances; no 1-to-N tables are written.
"""


def _read_enroll_list(path: Path) -> list[str]:
    from ..io.readers import read_id_list

    return read_id_list(path, "utterance id")


def _parse_types(types: Optional[List[str]]):
    if not types:
        return None
    return split_comma_list(types)


def trials_command(
    embeddings: List[Path] = typer.Argument(..., help="Embedding files (.npz or .parquet)."),
    out_dir: Path = typer.Option(..., "-o", "--out", "--out-dir", metavar="OUT",
                                 help="Output folder (created if missing; must be empty unless --force)."),
    force: bool = typer.Option(False, "--force", help="Replace an earlier `vpeval trials`/`attack` output folder "
                               "(nothing else) as a whole."),
    metadata: Optional[Path] = typer.Option(
        None, "--metadata", help="CSV utterance_id,speaker_id[,condition,...]: checked against the embeddings."
    ),
    types: Optional[List[str]] = typer.Option(
        None, "--types", help="Trial types, comma-separated or repeated (default: all)."
    ),
    enroll_list: Optional[Path] = typer.Option(
        None, "--enroll-list", help="File with one enrollment utterance id per line (default: sorted-half split); "
        "the VoicePrivacy 'enrolls' file."
    ),
    vpc_trials: Optional[List[Path]] = typer.Option(
        None, "--vpc-trials", help="VoicePrivacy trials file '<enroll_speaker> <test_utterance> target|nontarget' "
        "(repeatable; needs --enroll-list): score exactly these trials for oo, oa, aa."
    ),
    enroll_rule: Optional[str] = EnrollRuleOpt,
    cohort_impostors: bool = typer.Option(
        True, "--cohort-impostors/--no-cohort-impostors", help="Use cohort speakers' models as impostors."
    ),
    table_format: str = typer.Option("csv", "--table-format", help="1-to-N table format: csv or parquet."),
    original: str = typer.Option("original", "--original", help="Condition label of original speech."),
    anonymized: str = typer.Option("anonymized", "--anonymized", help="Condition label of anonymized speech."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary instead of a table."),
    scheduler: Optional[str] = SchedulerOpt,
    workers: Optional[int] = WorkersOpt,
) -> None:
    def run():
        with execution(scheduler, workers) as client:  # 1-to-N score matrices computed on the cluster
            return _run(embeddings, out_dir, metadata, _parse_types(types), enroll_list, cohort_impostors,
                        table_format, original, anonymized, force, client=client, vpc_trials=vpc_trials or None,
                        enroll_rule=enroll_rule)

    summary = handle_errors(run)()
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    from .console import Console
    from rich.table import Table

    table = Table(title=f"trials ({summary['extractor']}) -> {summary['out_dir']}",
                  caption="goal EER: what the trial type should give under perfect anonymization (its design, "
                          "not a result); `vpeval verify TYPE/scores --key TYPE/trials` measures it")
    for col in ("type", "trials", "targets", "non-targets", "goal EER"):
        table.add_column(col, justify="left" if col == "type" else "right")
    for name, row in summary["types"].items():
        tgt = row["target_eer"]
        table.add_row(name, str(row["n_trials"]), str(row["n_targets"]), str(row["n_nontargets"]),
                      "reference" if tgt is None else f"{100 * tgt:g} %")
    console = Console()
    console.print(table)
    if "enroll_rule" in summary:
        console.print(f"enrollment rule: {summary['enroll_rule']['name']} ({summary['enroll_rule']['description']})")
    for path in summary["one_to_n"].values():
        console.print(f"1-to-N table: {path}")
    _print_set_aside(console, summary)


def _print_set_aside(console, summary) -> None:
    """One line naming the rows of further profile runs that no trial type used (nothing is left out silently)."""
    rows = summary.get("set_aside_rows")
    if rows:
        console.print("set aside " + ", ".join(f"{n:,} rows of condition {c!r}" for c, n in rows.items())
                      + " (further profile runs: no trial type of this command uses them; `vpeval audit` builds the "
                      "cross-profile types from them)", highlight=False, markup=False)


def _read_set(paths, conditions=None, profiles: bool = False):
    """The embedding files joined (one extractor, one dimension); ``conditions``: the allowed condition labels
    (with ``profiles``, ``anonymized@KEY`` rows of further profile runs too)."""
    from ..io.embeddings import check_conditions, read_embeddings

    sets = [read_embeddings(p) for p in paths]
    if conditions is not None:
        for p, one in zip(paths, sets):
            check_conditions(one, p, conditions, profiles=profiles)
    es = sets[0]
    for p, other in zip(paths[1:], sets[1:]):
        if other.extractor != es.extractor:
            raise InputFileError(
                p, None, f"extractor {str(other.extractor)!r} differs from {str(es.extractor)!r} of {paths[0]}")
        if other.embeddings.shape[1] != es.embeddings.shape[1]:
            raise InputFileError(p, None, f"embeddings have dimension {other.embeddings.shape[1]}, those of "
                                 f"{paths[0]} {es.embeddings.shape[1]}")
        try:
            es = es.concat(other)
        except InputFileError as exc:  # e.g. an utterance id in both files
            raise InputFileError(p, None, f"cannot be joined with {', '.join(map(str, paths[:paths.index(p)]))}: "
                                 f"{exc.problem}") from None
    return es


def _run(embeddings, out_dir, metadata, types, enroll_list, cohort_impostors, table_format, original,
         anonymized, force=False, attack=None, client=None, vpc_trials=None, enroll_rule=None) -> dict:
    from ..io.output import claim_folder
    from ..pipeline.protocols import ProtocolError

    if table_format not in ("csv", "parquet"):
        raise VpevalError(f"--table-format must be csv or parquet, got {str(table_format)!r}")
    if enroll_rule is not None:
        from ..pipeline.vpc import ENROLL_RULES

        if vpc_trials is None:
            raise VpevalError("--enroll-rule applies to trials from VoicePrivacy lists: give --vpc-trials (and "
                              "--enroll-list); the split rule's models are normalised means (docs/protocols.md)")
        if enroll_rule not in ENROLL_RULES:
            raise VpevalError(f"--enroll-rule {enroll_rule!r}: expected one of {', '.join(ENROLL_RULES)}")
    inputs = list(embeddings) + ([metadata] if metadata else []) + ([enroll_list] if enroll_list else [])
    inputs += list(vpc_trials or [])
    # bad input is reported before the output is looked at; the rows of further profile runs (anonymized@KEY,
    # e.g. the bundled example's second run) enter no trial type of this command: set aside, and counted
    from ..io.embeddings import split_profile_runs

    es, runs = split_profile_runs(_read_set(embeddings, (original, anonymized), profiles=True))
    set_aside = {str(r.condition[0]): len(r) for r in runs.values()}
    tr = None
    if attack is not None:
        inputs += list(attack[0])
        tr = _read_set(attack[0], (original, anonymized))
    # the output is claimed (lock, refusal of an existing output) before the work; everything is written into
    # the claim's temporary folder and installed at the end, so a failed run leaves nothing
    with claim_folder(out_dir, command="attack" if attack is not None else "trials", force=force,
                      protect=inputs) as claim:
        try:
            summary = _build_and_write(claim.path, es, tr, out_dir, metadata, types, enroll_list, cohort_impostors,
                                       table_format, original, anonymized, attack, client, vpc_trials,
                                       enroll_rule or "vpc")
            if set_aside:
                summary["set_aside_rows"] = set_aside
            return summary
        except ProtocolError as exc:  # the pipeline names the extractor; the user knows the files
            prefix = f"{es.extractor}: "
            if not str(exc).startswith(prefix):
                raise
            raise ProtocolError(f"{', '.join(map(str, embeddings))}: {str(exc)[len(prefix):]}") from None


def _build_and_write(tmp, es, tr, out_dir, metadata, types, enroll_list, cohort_impostors, table_format,
                     original, anonymized, attack, client=None, vpc_trials=None, enroll_rule="vpc") -> dict:
    from ..io.kaldi_write import write_kaldi_scores, write_kaldi_trials, write_score_table
    from ..pipeline.protocols import TRIAL_TYPES, build_trials, check_metadata, make_protocol, one_to_n

    if metadata is not None:
        check_metadata(es, read_metadata_csv(metadata), source=str(metadata))
    if vpc_trials is not None:
        from ..io.kaldi_data import read_vpc_enrolls, read_vpc_trials
        from ..pipeline.vpc import VPC_TYPES, build_vpc_trials, vpc_protocol

        if enroll_list is None:
            raise VpevalError("--vpc-trials needs --enroll-list (the VoicePrivacy 'enrolls' file)")
        enrolls = read_vpc_enrolls(enroll_list)
        listed = [t for f in vpc_trials for t in read_vpc_trials(f)]
        attacker = None if attack is None else _attacker(es, tr, attack, original, anonymized)
        opts = dict(original=original, anonymized=anonymized, enrolls_source=str(enroll_list), enroll_rule=enroll_rule)
        if attacker is None:
            trials = build_vpc_trials(es, enrolls, listed, types or VPC_TYPES, **opts)
        else:  # a trained attacker scores exactly the listed trials
            trials = attacker.build_vpc_trials(enrolls, listed, types or VPC_TYPES, **opts)
        roles = vpc_protocol(es, enrolls, listed, enrolls_source=str(enroll_list))
        protocol = _FrameProtocol(roles)
        one_to_n = None
    else:
        protocol = make_protocol(es, _read_enroll_list(enroll_list) if enroll_list is not None else None)
        attacker = None
    if vpc_trials is not None:
        pass  # built above
    elif attack is not None:  # (train files, back-end, trained_on, asnorm, top_k)
        attacker = _attacker(es, tr, attack, original, anonymized)
        trials = attacker.build_trials(types, protocol=protocol, cohort_impostors=cohort_impostors,
                                       original=original, anonymized=anonymized)
    else:
        trials = build_trials(
            es, types, protocol=protocol, cohort_impostors=cohort_impostors, original=original, anonymized=anonymized,
            client=client,
        )
        if client is not None:
            from functools import partial

            one_to_n = partial(one_to_n, client=client)
    summary = _write_outputs(tmp, out_dir, es, protocol, trials, attacker, table_format, original, anonymized,
                             TRIAL_TYPES, write_kaldi_trials, write_kaldi_scores, write_score_table, one_to_n)
    if vpc_trials is not None:
        from ..pipeline.vpc import ENROLL_RULES

        summary["enroll_rule"] = {"name": enroll_rule, "description": ENROLL_RULES[enroll_rule]}
    return summary


def _write_outputs(tmp, out_dir, es, protocol, trials, attacker, table_format, original, anonymized, TRIAL_TYPES,
                   write_kaldi_trials, write_kaldi_scores, write_score_table, one_to_n) -> dict:
    """Write every output file into ``tmp``; the summary names the paths they will have under ``out_dir``."""
    _write_protocol(tmp / "protocol.csv", protocol)
    summary = {"extractor": es.extractor, "out_dir": str(out_dir), "protocol": str(out_dir / "protocol.csv"),
               "types": {}, "one_to_n": {}}
    if attacker is not None:
        from ..io.kaldi_write import atomic_write_bytes

        summary["attacker"] = dict(attacker.describe(), name=attacker.name)
        blob = (json.dumps(summary["attacker"], indent=2) + "\n").encode("utf-8")
        atomic_write_bytes(tmp / "attacker.json", lambda f: f.write(blob))
    for name, tr in trials.items():
        d = tmp / name
        d.mkdir(exist_ok=True)
        write_kaldi_trials(d / "trials", tr)
        write_kaldi_scores(d / "scores", tr)
        summary["types"][name] = {
            "trials": str(out_dir / name / "trials"), "scores": str(out_dir / name / "scores"), "n_trials": len(tr),
            "n_targets": int(tr.is_target.sum()), "n_nontargets": int((~tr.is_target).sum()),
            "target_eer": tr.meta["target_eer"],
        }
    pairs = []
    if one_to_n is None:  # trials from VoicePrivacy lists: no 1-to-N tables
        return summary
    for name in trials:
        tt = TRIAL_TYPES[name]
        if name == "aa-centroid":
            wanted = []
        else:  # the types' target and non-target conditions (oaoo: oa and oo)
            wanted = [(tt.enroll, tt.test), tt.nontarget_conditions]
        pairs += [p for p in wanted if p not in pairs]
    for e, p in sorted(pairs, key=lambda x: ("oo", "oa", "aa").index(x[0] + x[1])):
        if attacker is not None:
            m = attacker.one_to_n(protocol, enroll=e, probe=p, original=original, anonymized=anonymized)
        else:
            m = one_to_n(es, protocol, enroll=e, probe=p, original=original, anonymized=anonymized)
        write_score_table(tmp / f"one_to_n_{e}{p}.{table_format}", m)
        summary["one_to_n"][e + p] = str(out_dir / f"one_to_n_{e}{p}.{table_format}")
    return summary


def _attacker(es, tr, attack, original, anonymized):
    """The one attacker `vpeval attack` trains: ``attack`` = (train files, back-end, trained_on, asnorm, top_k)."""
    from ..pipeline.attackers import make_attackers

    train_files, backend, trained_on, asnorm, top_k = attack
    if tr.extractor != es.extractor:
        raise InputFileError(train_files[0], None, f"training embeddings are of extractor {tr.extractor!r}, "
                             f"the evaluation embeddings of {es.extractor!r}")
    if tr.embeddings.shape[1] != es.embeddings.shape[1]:
        raise InputFileError(train_files[0], None, f"training embeddings have dimension {tr.embeddings.shape[1]}, "
                             f"the evaluation embeddings {es.embeddings.shape[1]}")
    try:
        # the last attacker fielded is the one asked for (AS-norm variants follow their plain back-end)
        return make_attackers({es.extractor: es}, {es.extractor: tr}, backends=[backend],
                              conditions=[trained_on], asnorm=asnorm, top_k=top_k,
                              original=original, anonymized=anonymized)[-1]
    except VpevalError as exc:
        raise VpevalError(f"{train_files[0]}: {exc}") from None


class _FrameProtocol:
    """A ready ``protocol.csv`` table (list-given trials have no :class:`Protocol`)."""

    def __init__(self, frame):
        self._frame = frame

    def to_frame(self):
        return self._frame


def _write_protocol(path: Path, protocol) -> None:
    from ..io.kaldi_write import atomic_write_bytes

    data = protocol.to_frame().to_csv(index=False, lineterminator="\n").encode("utf-8")
    atomic_write_bytes(path, lambda f: f.write(data))


_ATTACK_HELP = """Train one attacker and write its trials and scores (the layout of `vpeval trials`).

EMBEDDINGS: evaluation embeddings (.npz/.parquet, original and anonymized rows). --train: embeddings of training speakers of the same extractor, disjoint from every evaluation speaker, with rows of the --trained-on condition. The back-end (cosine, centred-cosine, lda, plda; optionally under AS-norm with the training speakers as cohort) is fitted on the training speakers' embeddings in that condition: 'original' gives a lazy-informed attacker, 'anonymized' (speech anonymized by the same system) the semi-informed attacker of the VoicePrivacy Challenge. Enrollment is speaker-level (normalised mean of normalised enrollment embeddings).

Writes into OUT what `vpeval trials` writes (protocol.csv, <type>/trials, <type>/scores with the back-end's scores, one_to_n_<xy> tables) and attacker.json (extractor, backend, trained_on, training_speakers, settings).
"""


def attack_command(
    embeddings: List[Path] = typer.Argument(..., help="Evaluation embedding files (.npz or .parquet)."),
    train: List[Path] = typer.Option(..., "--train", help="Training-speaker embedding file (repeatable)."),
    out_dir: Path = typer.Option(..., "-o", "--out", "--out-dir", metavar="OUT",
                                 help="Output folder (created if missing; must be empty unless --force)."),
    backend: List[str] = typer.Option(["plda"], "--backend", help="cosine (only with --asnorm), centred-cosine, "
                                      "lda or plda (default), once."),
    trained_on: str = typer.Option("anonymized", "--trained-on", help="Training condition: original or "
                                   "anonymized."),
    asnorm: bool = typer.Option(False, "--asnorm", help="Adaptive S-norm, cohort = the training speakers."),
    top_k: int = typer.Option(200, "--top-k", help="AS-norm cohort size (capped at the training speakers)."),
    force: bool = typer.Option(False, "--force", help="Replace an earlier `vpeval trials`/`attack` output folder "
                               "(nothing else) as a whole."),
    types: Optional[List[str]] = typer.Option(None, "--types", help="Trial types, comma-separated or repeated "
                                              "(default: all)."),
    enroll_list: Optional[Path] = typer.Option(None, "--enroll-list", help="Enrollment utterance ids, one per "
                                               "line (default: sorted-half split); the VoicePrivacy 'enrolls' file."),
    vpc_trials: Optional[List[Path]] = typer.Option(
        None, "--vpc-trials", help="VoicePrivacy trials file (repeatable; needs --enroll-list): the attacker scores "
        "exactly these trials for oo, oa, aa, as `vpeval trials --vpc-trials` does with cosine."),
    enroll_rule: Optional[str] = EnrollRuleOpt,
    table_format: str = typer.Option("csv", "--table-format", help="1-to-N table format: csv or parquet."),
    original: str = typer.Option("original", "--original", help="Condition label of original speech."),
    anonymized: str = typer.Option("anonymized", "--anonymized", help="Condition label of anonymized speech."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary instead of a table."),
) -> None:
    from ..backends import BACKENDS

    def run():
        if len(backend) != 1:
            raise VpevalError(f"--backend given {len(backend)} times; `vpeval attack` trains one attacker "
                              "(`vpeval audit --backend ...` fields several)")
        name = backend[0]
        if name not in BACKENDS:
            raise VpevalError(f"--backend {name!r}: expected one of {', '.join(BACKENDS)}")
        if name == "cosine" and not asnorm:
            raise VpevalError("--backend cosine learns nothing from --train: use `vpeval trials` for plain cosine "
                              "scores, or add --asnorm (cohort from the training speakers)")
        if trained_on not in ("original", "anonymized"):
            raise VpevalError(f"--trained-on {trained_on!r}: expected original or anonymized")
        return _run(embeddings, out_dir, None, _parse_types(types), enroll_list, True, table_format, original,
                    anonymized, force, attack=(train, name, trained_on, asnorm, top_k), vpc_trials=vpc_trials or None,
                    enroll_rule=enroll_rule)

    summary = handle_errors(run)()
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    from .console import Console
    from rich.table import Table

    a = summary["attacker"]
    table = Table(title=f"attacker {a['name']} (trained on {a['trained_on']}, {a['training_speakers']} training "
                  f"speakers) -> {summary['out_dir']}")
    for col in ("type", "trials", "targets", "non-targets"):
        table.add_column(col, justify="left" if col == "type" else "right")
    for name, row in summary["types"].items():
        table.add_row(name, str(row["n_trials"]), str(row["n_targets"]), str(row["n_nontargets"]))
    Console().print(table)
    _print_set_aside(Console(), summary)


def register(app: typer.Typer) -> None:
    """Add the ``trials`` and ``attack`` commands to ``app``."""
    app.command("trials", help=_HELP)(trials_command)
    app.command("attack", help=_ATTACK_HELP)(attack_command)
