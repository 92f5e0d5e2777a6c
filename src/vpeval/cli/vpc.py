"""``vpeval vpc-import`` (the VoicePrivacy toolkit's outputs with vpeval's numbers beside them) and ``vpeval
segment`` (fixed-length segments of training speech, as a Kaldi data folder with ``segments``)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from typing import Optional

from .common import PathsFromOpt, VerdictOptions, handle_errors, print_verdicts, verdict_option_group

__all__ = ["register"]

_HELP = """Read what the VoicePrivacy Challenge 2024 evaluation toolkit wrote, unchanged, and write vpeval's numbers beside the challenge's (definitions: docs/vpc_import.md).

TABLE: the toolkit's summary table (exp/results_summary/.../result_for_rank<suffix>, or a results_*.txt); its ASV rows (blocks 'ASV_eval', 'ASV_eval^anon') come first, as printed. --scores: the folder searched for the ASV score files (<dataset>_<split>_enrolls[suffix]-<dataset>_<split>_trials_<gender>[suffix]/scores, e.g. exp/); --data: the toolkit's data folder, whose <dataset>_<split>_trials_<gender>/trials keys them. Each table row is matched to the score file of its condition and ASV model (asv_anon* folders = the ASV_eval^anon block); vpeval adds the closest-point EER (the scripts' estimator), the interpolated and ROCCH EER with 95 % bootstrap intervals over the enrolled speakers, eps_max (bits) with its interval, the clipped per-speaker mean EER and the trial counts. Score files without a table row follow with an empty challenge EER. Writes OUT/vpc_import.csv and OUT/vpc_import.json (with the worst case over the attack rows), and the verdict of every attack row (the scores as given; speakers relabelled when every test utterance is scored against every model of its list): in the JSON's 'verdicts', the CSV's 'verdict' column and on the terminal first.
"""


_SEGMENT_HELP = """Cut every utterance of a Kaldi data folder into consecutive fixed-length segments for attacker training (LibriSpeech train-clean-100 style speakers with one long utterance each), and write OUT as a Kaldi data folder: the same recordings (wav.scp, absolute paths), a segments file (<utterance>-<k> <recording> <start> <end>), utt2spk, spk2utt and spk2gender; no text (segment transcripts are unknown). The remainder shorter than --seconds is left out, so is an utterance shorter than it. Reports how many speakers have fewer than --min-segments segments (they are kept). `vpeval embed OUT` then embeds each segment.
"""


def register(app: typer.Typer) -> None:
    """Add the ``vpc-import`` and ``segment`` commands to ``app``."""

    @app.command("segment", help=_SEGMENT_HELP)
    @handle_errors
    def segment(
        data: Path = typer.Argument(..., help="Kaldi data folder (wav.scp, utt2spk; segments honoured)."),
        out: Path = typer.Option(..., "-o", "--out", metavar="OUT", help="Output data folder."),
        seconds: float = typer.Option(3.0, "--seconds", help="Segment length in seconds, at least 0.032 "
                                     "(one 512-sample analysis frame, which every extractor can embed)."),
        min_segments: int = typer.Option(2, "--min-segments", min=1, help="Report speakers with fewer segments."),
        force: bool = typer.Option(False, "--force", help="Replace an earlier `vpeval segment` output folder."),
        as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
        paths_from: Optional[str] = PathsFromOpt,
    ):
        from ..io.kaldi_data import read_kaldi_data_folder, write_kaldi_data_folder
        from ..io.kaldi_segments import fixed_length_segments
        from ..io.output import claim_folder

        k = read_kaldi_data_folder(data, paths_from=paths_from)
        with claim_folder(out, command="segment", force=force, protect=list(Path(data).glob("*"))) as claim:
            cut = fixed_length_segments(k, seconds, min_segments=min_segments)
            if not cut["segments"]:
                from ..errors import VpevalError

                raise VpevalError(f"{data}: no utterance lasts {seconds:g} s; nothing to write")
            sex = None if k.sex is None else {s: k.sex[s] for s in set(cut["utt2spk"].values())}
            write_kaldi_data_folder(claim.path, cut["wav"], cut["utt2spk"], sex=sex, segments=cut["segments"])
        summary = {"out": str(out), "seconds": seconds, "segments": len(cut["segments"]),
                   "speakers": sum(n > 0 for n in cut["per_speaker"].values()),
                   "speakers_with_too_few_segments": len(cut["few"]), "min_segments": min_segments,
                   "few": cut["few"], "utterances_too_short": len(cut["too_short"])}
        if as_json:
            typer.echo(json.dumps(summary, indent=2))
            return
        typer.echo(f"{summary['segments']} segments of {seconds:g} s from {summary['speakers']} speakers -> {out}; "
                   f"{summary['speakers_with_too_few_segments']} speaker(s) with fewer than {min_segments} segments"
                   + (f" ({', '.join(cut['few'][:5])}{', ...' if len(cut['few']) > 5 else ''})" if cut["few"] else "")
                   + f"; {summary['utterances_too_short']} utterance(s) shorter than {seconds:g} s")

    @app.command("vpc-import", help=_HELP)
    @handle_errors
    @verdict_option_group()
    def vpc_import(
        table: Path = typer.Argument(..., help="The toolkit's result_for_rank* (or results_*.txt) table."),
        scores: Path = typer.Option(..., "--scores", help="Folder holding the toolkit's ASV score files (exp/)."),
        data: Path = typer.Option(..., "--data", help="The toolkit's data folder (with <test set>/trials)."),
        out: Path = typer.Option(Path("vpeval-vpc-import"), "-o", "--out", metavar="OUT", help="Output folder."),
        force: bool = typer.Option(False, "--force", help="Replace an earlier vpc-import output folder."),
        seed: int = typer.Option(0, "--seed", min=0, help="Bootstrap seed."),
        n_boot: int = typer.Option(200, "--n-boot", help="Bootstrap replicates of the 95 % intervals: at least 39 "
                                   "(fewer cannot give a 95 % interval: each 2.5 % tail needs a replicate)."),
        as_json: bool = typer.Option(False, "--json", help="Print the JSON summary instead of a table."),
        verdict_args: VerdictOptions = VerdictOptions(),
    ):
        from ..stats.results import check_replicates

        check_replicates(n_boot, 0.95, "--n-boot")  # the 95 % intervals need 39 (before any input is read)
        vopts = verdict_args.checked()  # checked even with --no-verdict
        from ..io.kaldi_write import atomic_write_bytes
        from ..io.output import claim_folder
        from ..report.vpc_import import IMPORT_COLUMNS, cell_text, import_csv_text, import_vpc_outputs

        from ..io.vpc_results import find_vpc_score_files, read_result_for_rank

        read_result_for_rank(table)  # bad input is reported before the output is looked at
        inputs = [table] + [f.path for f in find_vpc_score_files(scores)]
        # the output is claimed (refused if it exists) before the work
        with claim_folder(out, command="vpc-import", force=force, protect=inputs) as claim:
            res = import_vpc_outputs(table, scores, data, n_boot=n_boot, seed=seed,
                                     verdict=None if verdict_args.no_verdict else vopts)
            csv_bytes = import_csv_text(res["rows"], res["not_defined"]).encode("utf-8")
            atomic_write_bytes(claim.path / "vpc_import.csv", lambda f: f.write(csv_bytes))
            doc = dict(res, columns=IMPORT_COLUMNS, table=str(table), scores=str(scores), data=str(data))
            from ..report.writer import _jsonable  # the JSON rule of every vpeval output (inf as "inf")

            doc = _jsonable(doc)
            blob = (json.dumps(doc, indent=2, allow_nan=False) + "\n").encode("utf-8")
            atomic_write_bytes(claim.path / "vpc_import.json", lambda f: f.write(blob))
        if as_json:
            typer.echo(json.dumps(doc, indent=2, allow_nan=False))
            return
        from .console import Console
        from rich.table import Table

        print_verdicts(Console(), res.get("verdicts", {}), res.get("verdicts_not_decided"))
        t = Table(title=f"VoicePrivacy results ({table}) with vpeval's numbers -> {out}")
        cols = ["block", "dataset", "split", "gender", "enrollment", "trial", "EER (%)",
                "vpeval closest-point EER (%)", "ROCCH-EER (%)", "eps_max (bits)", "clipped per-speaker mean EER (%)",
                "verdict"]
        for c in cols:
            t.add_column(c)
        text = cell_text(res["rows"], res["not_defined"], ".3f")  # a challenge cell printed NaN: "not defined"
        for i in range(len(res["rows"])):
            t.add_row(*[text(i, c) for c in cols])
        Console().print(t)
