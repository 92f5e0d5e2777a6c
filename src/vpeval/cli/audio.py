"""``vpeval anonymize`` and ``vpeval embed``: the audio end of the pipeline."""

from __future__ import annotations

import json
from contextlib import nullcontext
from pathlib import Path
from typing import Optional

import typer

from ..errors import VpevalError
from .common import PathsFromOpt, QuietOpt, SchedulerOpt, WorkersOpt, execution

__all__ = ["register"]

_AUDIO_RULES = (
    "Audio: mono FLAC/WAV below the folder (recursive), at any sampling rate: vpeval works at 16 kHz and "
    "resamples other rates on read (soxr, as librosa), recording each file's own rate (anonymization.csv "
    "input_rate_hz, the embedding file's input_rate_hz, the audit report's inputs); --strict-rate refuses them "
    "instead. Files with several channels are refused unless --channel N picks one (0 = first). "
    "Utterance id = file name without extension; speaker id = its first '-'-separated field "
    "(1688-142285-0000 -> 1688) unless --metadata CSV (columns utterance_id,speaker_id) is given. "
    "A Kaldi data folder (with wav.scp) is read instead as wav.scp (plain file paths, relative to the folder; "
    "piped commands and other extended file names are refused, never run) + utt2spk (+ spk2gender, text, "
    "segments: utterances as start/end seconds of the recordings, end -1 = to the end, each utterance processed "
    "alone); Kaldi's validate_data_dir.sh rules are enforced (sorted files, utt2spk sorted by speaker too). "
    "anonymize then writes a data folder (OUT_DIR/wav.scp, utt2spk, spk2utt, spk2gender, text), one file per "
    "utterance (segments cut out)."
)


# Options of both audio-folder commands (anonymize, embed).
_MetadataOpt = typer.Option(None, "--metadata", help="CSV utterance_id,speaker_id.")
_JsonSummaryOpt = typer.Option(False, "--json", help="Print a JSON summary on stdout.")
_StrictRateOpt = typer.Option(False, "--strict-rate", help="Refuse audio that is not at 16 kHz instead of "
                              "resampling it on read.")
_ChannelOpt = typer.Option(None, "--channel", min=0, help="Of files with several channels, read this one "
                           "(0 = first, the left); without it such files are refused.")


def _rates_text(counts: dict) -> str:
    """' (resampled to 16 kHz on read: 20 at 8000 Hz)' for rates other than 16 kHz, else ''."""
    other = {r: n for r, n in counts.items() if int(r) != 16000}
    if not other:
        return ""
    return " (resampled to 16 kHz on read: " + ", ".join(f"{n} at {r} Hz" for r, n in sorted(
        other.items(), key=lambda kv: int(kv[0]))) + ")"


def _fail(exc: BaseException) -> None:
    from ..io.output import OutputError
    from .common import fail

    fail(str(exc), 3 if isinstance(exc, OutputError) else 2)


def anonymize_cmd(
    in_dir: Path = typer.Argument(..., help="Folder of original audio."),
    out_dir: Path = typer.Argument(..., help="Output folder (layout mirrored; must not be inside IN_DIR)."),
    alpha: str = typer.Option(
        "0.8", "--alpha",
        help="McAdams coefficient: a number (fixed, VoicePrivacy 2020 used 0.8), or 'speaker' / 'utterance' "
             "to draw one per speaker / per utterance uniformly in [--alpha-min, --alpha-max) from --seed.",
    ),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed for drawn alphas (required with speaker/utterance)."),
    profile: Optional[str] = typer.Option(
        None, "--profile", metavar="KEY",
        help="Pseudo-identity profile key: every speaker's parameters drawn from KEY (per speaker, instead of "
             "--seed), so one key gives each speaker one pseudo-voice on every utterance and run, another key "
             "another one (run twice with two keys for Beyond-EER's profiles). Recorded in anonymization.csv."),
    alpha_min: float = typer.Option(0.5, "--alpha-min", help="Lower end of the drawn alpha range."),
    alpha_max: float = typer.Option(0.9, "--alpha-max", help="Upper end of the drawn alpha range."),
    metadata: Optional[Path] = _MetadataOpt,
    audio_format: str = typer.Option("flac", "--format", help="Output format: flac or wav (16-bit PCM)."),
    force: bool = typer.Option(False, "--force", help="Replace an earlier `vpeval anonymize` output folder "
                               "(proved by its manifest) as a whole."),
    method: str = typer.Option(
        "mcadams", "--method",
        help="mcadams (VoicePrivacy B2), vtln (WORLD: F0 ratio + bilinear spectral-envelope warping, VoiceMask "
             "style), resample (phase vocoder + resampling: F0 and formants scaled together), asr-tts (the "
             "Whisper-base transcript spoken again by one fixed synthetic voice, for every speaker; extras 'asr' "
             "and 'tts') or pseudo-speaker (asr-tts, then vtln of that voice: a pseudo-voice per speaker). vtln, "
             "resample and pseudo-speaker draw their parameters: give --alpha speaker and --seed or --profile "
             "(--alpha utterance too; extra 'vocoder' for vtln); asr-tts draws none (no --alpha, --seed or --profile)."),
    engine: Optional[str] = typer.Option(
        None, "--engine", help="asr-tts and pseudo-speaker only: the synthesiser, piper (the en_US-joe-medium voice; extra 'tts') or "
                               "espeak-ng (Debian's program, voice en-us). Default: piper if installed, else "
                               "espeak-ng with a warning. The one used is in anonymization.csv (engine, voice)."),
    strict_rate: bool = _StrictRateOpt,
    channel: Optional[int] = _ChannelOpt,
    rate: Optional[int] = typer.Option(
        None, "--rate", help="Sampling rate (Hz) of the written files; default: each input file's own rate. The "
                             "anonymizers run at 16 kHz, so output above 16 kHz holds nothing above 8 kHz."),
    quiet: bool = QuietOpt,
    as_json: bool = _JsonSummaryOpt,
    scheduler: Optional[str] = SchedulerOpt,
    workers: Optional[int] = WorkersOpt,
    paths_from: Optional[str] = PathsFromOpt,
    repeats: int = typer.Option(
        1, "--repeats", min=1, help="K: anonymize every utterance K times with fresh parameters drawn per copy "
        "(copies named <utt>-k00 ...; needs --seed; for attacker training data, vpeval.audio.anonymize.repeats)."),
    speed_perturb: bool = typer.Option(False, "--speed-perturb", help="With --repeats: speed-perturb each copy by a "
                                       "factor drawn from 0.9, 1.0, 1.1 before anonymizing it."),
) -> None:
    """Anonymize every utterance with the McAdams coefficient (VoicePrivacy baseline B2) or --method.

    Writes the anonymized files and OUT_DIR/anonymization.csv
    (utterance_id,speaker_id,alpha,duration_s,output,input_rate_hz,output_rate_hz; vtln: warp,f0_ratio and
    resample: ratio instead of alpha; asr-tts: text,empty_transcript,engine,voice instead of alpha and
    output_duration_s after duration_s, its output at 16 kHz unless --rate and as long as the speech it made;
    pseudo-speaker: those of asr-tts and warp,f0_ratio).
    """
    from ..audio.anonymize import anonymize_folder
    from ..io.output import claim_folder

    if alpha in ("speaker", "utterance"):
        a: object = alpha
    else:
        from ..io.numbers import parse_number

        try:
            a = parse_number(alpha)  # a finite number in vpeval's one syntax: 'nan', 'inf' and '1_0' are refused
        except ValueError:
            _fail(VpevalError(f"--alpha must be a finite number in (0, 1], 'speaker' or 'utterance', got {alpha!r}"))
    try:
        from ..io.kaldi_paths import check_paths_from

        check_paths_from(paths_from)
        ri, ro = in_dir.resolve(), out_dir.resolve()
        if ro == ri or ri in ro.parents:
            raise VpevalError(f"output folder {out_dir} must not be the input folder or inside it")
        protect = [in_dir, *([metadata] if metadata is not None else [])]
        if force:
            _refuse_replacing_inputs(in_dir, out_dir, paths_from)
        # written into the claim's temporary folder and installed whole (see vpeval.io.output)
        with claim_folder(out_dir, command="anonymize", force=force, protect=protect) as claim, \
                execution(scheduler, workers) as client:
            if engine is not None and method not in ("asr-tts", "pseudo-speaker"):
                raise VpevalError(f"--engine applies to --method asr-tts and pseudo-speaker only, not {method!r}")
            if method == "asr-tts" and (repeats > 1 or speed_perturb):
                raise VpevalError("--method asr-tts speaks every utterance in one fixed voice: --repeats and "
                                  "--speed-perturb have no parameters to draw")
            if method == "pseudo-speaker" and (repeats > 1 or speed_perturb):
                raise VpevalError("--method pseudo-speaker gives each speaker one pseudo-voice: --repeats and "
                                  "--speed-perturb do not apply (run it again with another --profile for a second one)")
            if repeats > 1 or speed_perturb:
                from ..audio.anonymize.repeats import SPEED_FACTORS, anonymize_repeats

                if seed is None or profile is not None:
                    raise VpevalError("--repeats/--speed-perturb draw fresh parameters per copy: give --seed (not "
                                      "--profile)")
                if paths_from is not None:
                    raise VpevalError("--repeats/--speed-perturb read a folder of audio files, not a Kaldi data "
                                      "folder: --paths-from does not apply")
                df = anonymize_repeats(in_dir, claim.path, repeats=repeats, seed=seed, method=method,
                                       speed=SPEED_FACTORS if speed_perturb else None,
                                       alpha_range=(alpha_min, alpha_max), metadata=metadata,
                                       audio_format=audio_format, quiet=quiet)
            else:
                df = anonymize_folder(
                    in_dir, claim.path, alpha=a, seed=seed, alpha_range=(alpha_min, alpha_max), metadata=metadata,
                    audio_format=audio_format, quiet=quiet, client=client, method=method, strict_rate=strict_rate,
                    channel=channel, out_rate=rate, paths_from=paths_from, profile=profile, engine=engine,
                )
    except (VpevalError, ImportError) as exc:  # ImportError: the audio extra is missing (its message says so)
        _fail(exc)
    summary = {
        "out_dir": str(out_dir),
        "utterances": int(len(df)),
        "speakers": int(df["speaker_id"].nunique()),
        "duration_s": round(float(df["duration_s"].sum()), 3),
        "alpha": "speaker" if profile is not None else alpha,
        **({"profile": profile} if profile is not None else {}),
        "method": method,
        **({"alpha_min_used": float(df["alpha"].min()), "alpha_max_used": float(df["alpha"].max())}
           if method == "mcadams" else {}),
        **(_asr_tts_summary(df) if method in ("asr-tts", "pseudo-speaker") else {}),
        "manifest": str(out_dir / "anonymization.csv"),
        "input_rates_hz": {str(r): int(n) for r, n in sorted(df["input_rate_hz"].value_counts().items())},
        "output_rates_hz": {str(r): int(n) for r, n in sorted(df["output_rate_hz"].value_counts().items())},
    }
    if method == "asr-tts":
        summary["alpha"] = None
    if as_json:
        typer.echo(json.dumps(summary))
    elif not quiet:
        spoken = "" if method not in ("asr-tts", "pseudo-speaker") else (
            f": {', '.join(summary['engines'])} voice {', '.join(summary['voices'])}, "
            f"{summary['output_duration_s']:.1f} s out, {summary['empty_transcripts']} empty transcripts as silence")
        typer.echo(
            f"anonymized {summary['utterances']} utterances of {summary['speakers']} speakers "
            f"({summary['duration_s']:.1f} s) into {out_dir} ({method}{spoken})"
            f"{_rates_text(summary['input_rates_hz'])}; "
            f"{'parameters' if method not in ('asr-tts', 'pseudo-speaker') else 'transcripts'} in the manifest {summary['manifest']}"
        )


def _asr_tts_summary(df) -> dict:
    """The asr-tts part of the summary: engines and voices used, output length, silent outputs."""
    return {"engines": sorted(set(df["engine"])), "voices": sorted(set(df["voice"])),
            "output_duration_s": round(float(df["output_duration_s"].sum()), 3),
            "empty_transcripts": int(df["empty_transcript"].sum())}


def _refuse_replacing_inputs(in_dir: Path, out_dir: Path, paths_from: str | None = None) -> None:
    """``--force`` never replaces an output holding this run's input audio: a Kaldi data folder's ``wav.scp``
    may point into an earlier output (OutputExistsError naming the wav.scp line)."""
    import os

    from ..io.kaldi_data import is_kaldi_data_folder, read_kaldi_data_folder
    from ..io.output import OutputExistsError

    if not is_kaldi_data_folder(in_dir):
        return
    target = Path(os.path.realpath(out_dir))
    data = read_kaldi_data_folder(in_dir, check_files=False, paths_from=paths_from)
    for utt in sorted(data.wav, key=lambda u: data.wav_line[u]):
        p = Path(os.path.realpath(data.wav[utt]))
        if p == target or target in p.parents:
            raise OutputExistsError(
                f"{out_dir}: holds {data.wav[utt]}, the input audio of utterance {utt!r} "
                f"({in_dir / 'wav.scp'}:{data.wav_line[utt]}); --force will not replace it; choose another folder")


def embed_cmd(
    audio_dir: Path = typer.Argument(..., help="Folder of audio to embed."),
    output: Path = typer.Option(..., "-o", "--out", "--output", metavar="OUT", help="Embeddings file to write (.npz)."),
    extractor: str = typer.Option("mfcc", "--extractor", "-e", help="mfcc (model-free, 40-dim), resemblyzer (GE2E, 256-dim; needs the embed extra), voicefilter-dvector (LSTM d-vector, 256-dim, int8 ONNX; needs the voicefilter extra), or your own model file: onnx:PATH (the onnx extra) or torchscript:PATH (torch), reading the features its sidecar PATH.json states (docs/extractors.md)."),
    features: Optional[Path] = typer.Option(None, "--features", help="onnx:/torchscript: only: the JSON file stating the model's input features, instead of the sidecar PATH.json next to the model (docs/extractors.md)."),
    condition: str = typer.Option("original", "--condition", "-c", help="Condition label stored with the rows: original, anonymized, or anonymized@KEY for a further run of "
         "the same system under another profile key (vpeval anonymize --profile KEY): vpeval audit then builds "
         "Beyond-EER's cross-profile trials."),
    metadata: Optional[Path] = _MetadataOpt,
    append: bool = typer.Option(False, "--append", help="Add the rows to an existing OUT (same extractor; a model file must be the same file, by its sha256, with the same features)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing OUT written by `vpeval embed` "
                               "(proved by its manifest); without --append or --force an existing OUT is "
                               "refused."),
    metadata_out: Optional[Path] = typer.Option(
        None, "--metadata-out",
        help="Kaldi data folder input only: write its utterance metadata (utterance_id,speaker_id,condition and "
             "sex from spk2gender) to this CSV, e.g. SYSTEM/metadata.csv for `vpeval audit`; with --append the "
             "rows are added to an existing file."),
    strict_rate: bool = _StrictRateOpt,
    channel: Optional[int] = _ChannelOpt,
    quiet: bool = QuietOpt,
    as_json: bool = _JsonSummaryOpt,
    scheduler: Optional[str] = SchedulerOpt,
    workers: Optional[int] = WorkersOpt,
    paths_from: Optional[str] = PathsFromOpt,
) -> None:
    """Extract one speaker embedding per utterance and save them as .npz (float32).

    The file holds embeddings, utterance_id, speaker_id, condition, extractor and the extractor record
    extractor_info (model file name, size and sha256, features; package version or settings of the built-in
    extractors; see vpeval.io.extractor_info); run twice with --append to keep original and anonymized rows in
    one file.
    """
    import numpy as np

    from ..audio.embed import embed_folder, get_extractor
    from ..io.embeddings import read_embeddings, write_embeddings
    from ..io.output import OutputExistsError, claim_file

    try:
        from ..io.kaldi_paths import check_paths_from

        check_paths_from(paths_from)
        if output.suffix != ".npz":
            raise VpevalError(f"{output}: the output must be a .npz file")
        from ..io.embeddings import valid_profile_key, profile_key

        if condition not in ("original", "anonymized") and not valid_profile_key(profile_key(condition) or ""):
            raise VpevalError(f"--condition must be 'original', 'anonymized' or 'anonymized@KEY' (KEY without white "
                              f"space or '@'), got {condition!r}")
        check_profile_record(audio_dir, condition)
        if append and force:
            raise VpevalError("--append and --force exclude each other")
        if metadata_out is not None:
            from ..io.kaldi_data import is_kaldi_data_folder

            if not is_kaldi_data_folder(audio_dir):
                raise VpevalError("--metadata-out needs a Kaldi data folder (with wav.scp) as input")
        ext = get_extractor(extractor, features=features)
        # claimed before the work (a second run is refused at once); with --append the earlier rows are read
        # under the claim's lock, and old and new rows are installed together
        with claim_file(output, command="embed", force=force, append=append, protect=[audio_dir]) as claim, \
                (claim_file(metadata_out, command="embed --metadata-out", force=force, append=append,
                            protect=[audio_dir, output]) if metadata_out is not None else nullcontext()) as mclaim:
            earlier = read_embeddings(output) if append and output.exists() else None
            if earlier is not None and earlier.extractor != ext.name:  # refused before the work, not after it
                raise VpevalError(f"{output}: cannot join embeddings of extractor {ext.name!r} to "
                                  f"{earlier.extractor!r}")
            with execution(scheduler, workers) as client:
                es = embed_folder(audio_dir, ext, condition=condition, metadata=metadata, quiet=quiet, client=client,
                                  strict_rate=strict_rate, channel=channel, paths_from=paths_from)
            new_rates = {str(r): int(n) for r, n in zip(*np.unique(es.input_rate_hz, return_counts=True))}
            if earlier is not None:
                es = earlier.concat(es, name=output)
            write_embeddings(claim.path, es)
            if mclaim is not None:
                _write_kaldi_metadata(audio_dir, condition, metadata_out, mclaim.path, append)
    except OutputExistsError as exc:
        _fail(OutputExistsError(f"{exc}; --append adds the new rows to it") if not append else exc)
    except (VpevalError, ImportError) as exc:  # ExtractorUnavailableError is an ImportError
        _fail(exc)
    summary = {
        "output": str(output),
        "extractor": es.extractor,
        "dim": int(es.embeddings.shape[1]),
        "rows": len(es),
        "conditions": {c: int((es.condition == c).sum()) for c in sorted(set(es.condition.tolist()))},
        "input_rates_hz": new_rates,
        "extractor_info": es.extractor_info,
    }
    if as_json:
        typer.echo(json.dumps(summary))
    elif not quiet:
        typer.echo(
            f"wrote {summary['rows']} {summary['extractor']} embeddings ({summary['dim']}-dim) to {output}"
            f"{_rates_text(new_rates)}{_model_text(ext.info())}"
        )


def _model_text(info: dict) -> str:
    """`` (model file NAME, sha256 FIRST16...)`` for an extractor that runs a model file, else ''."""
    mf = info.get("model_file")
    return "" if mf is None else f" (model file {mf['name']}, sha256 {mf['sha256'][:16]}...)"


def _write_kaldi_metadata(audio_dir: Path, condition: str, path: Path, dest: Path, append: bool) -> None:
    """The utterance metadata of the Kaldi data folder ``audio_dir`` (with sex from spk2gender), written to the
    claimed ``dest`` for the output ``path``; with ``append`` the rows of an existing ``path`` are kept and the
    new ones added after them, as in the .npz (an utterance already there in the same condition is refused)."""
    import pandas as pd

    from ..io.kaldi_data import kaldi_metadata_table, read_kaldi_data_folder

    table = kaldi_metadata_table(read_kaldi_data_folder(audio_dir, check_files=False), condition)
    if append and path.exists():
        old = pd.read_csv(path, dtype=str, keep_default_na=False)
        if list(old.columns) != list(table.columns):
            raise VpevalError(f"{path}: columns {list(old.columns)} differ from {list(table.columns)}; "
                              "cannot append")
        seen = set(zip(old["utterance_id"], old["condition"]))
        dup = [u for u in table["utterance_id"] if (u, condition) in seen]
        if dup:
            raise VpevalError(f"{path}: utterance {dup[0]!r} is already listed in condition {condition!r} "
                              f"({len(dup)} of the new rows are); --append adds rows, it never replaces them")
        table = pd.concat([old, table], ignore_index=True)
    table.to_csv(dest, index=False)


def register(app: typer.Typer) -> None:
    """Add the ``anonymize`` and ``embed`` commands to ``app``."""
    import inspect

    # the docstrings dedented first: joined to the unindented rules, their indented lines were printed with runs
    # of spaces inside the sentences
    app.command("anonymize", help=inspect.cleandoc(anonymize_cmd.__doc__ or "") + "\n\n" + _AUDIO_RULES)(anonymize_cmd)
    app.command("embed", help=inspect.cleandoc(embed_cmd.__doc__ or "") + "\n\n" + _AUDIO_RULES)(embed_cmd)


def check_profile_record(audio_dir: Path, condition: str) -> None:
    """The condition label against what ``vpeval anonymize`` recorded in ``audio_dir/anonymization.csv``: its
    audio is anonymized (not ``original``), and a run under profile key K is ``anonymized`` or
    ``anonymized@K``, never another key. Folders without the file (other anonymizers' output) are not checked.

    Raises
    ------
    VpevalError
        The label contradicts the record (naming the file and the key).
    """
    import csv

    from ..io.embeddings import profile_key

    record = Path(audio_dir) / "anonymization.csv"
    if not record.is_file():
        return
    with open(record, newline="", encoding="utf-8") as fh:
        rows = csv.DictReader(fh)
        keys = {r.get("profile") or "" for r in rows} if rows.fieldnames and "profile" in rows.fieldnames else {""}
    if condition == "original":
        raise VpevalError(f"{record}: this folder holds anonymized audio (written by vpeval anonymize); embed it with "
                          "-c anonymized (or anonymized@KEY for a further profile run), not as original")
    key = profile_key(condition)
    if key is not None and keys != {key}:
        shown = ", ".join(sorted(repr(k) for k in keys if k)) or "no profile key"
        raise VpevalError(f"{record}: the audio was anonymized under {shown}, but the condition names profile key "
                          f"{key!r}")

