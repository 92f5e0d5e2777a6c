"""``vpeval adapt``: the extractor-adapted attacker's embeddings from audio (head-only or full fine-tune)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from ..errors import VpevalError


def adapt_cmd(
    train_dir: Path = typer.Argument(..., help="Training speakers' speech anonymized by the audited system "
                                     "(speakers disjoint from the evaluation ones)."),
    original: Path = typer.Option(..., "--original", help="Evaluation audio, original."),
    anonymized: Path = typer.Option(..., "--anonymized", help="Evaluation audio, anonymized by the system."),
    output: Path = typer.Option(..., "-o", "--out", "--output", metavar="OUT",
                                help="Embeddings file to write (.npz, both conditions)."),
    epochs: int = typer.Option(0, "--epochs", min=0, help="0: head-only (frozen LSTM, projection retrained on "
                               "cached LSTM states); N >= 1: fine-tune the whole encoder for N epochs."),
    steps: int = typer.Option(50, "--steps", min=0, help="Adam steps of the head-only mode."),
    seed: int = typer.Option(0, "--seed", min=0),
    threads: int = typer.Option(1, "--threads", min=1, help="Torch intra-op threads."),
    force: bool = typer.Option(False, "--force", help="Replace an existing OUT written by vpeval."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Adapt resemblyzer's GE2E encoder to an anonymizer and embed the evaluation audio with it.

    The semi-informed (extractor adapted) attacker of vpeval.pipeline.adapted, from audio: the encoder is
    adapted on TRAIN_DIR with an additive-margin softmax over its speakers (head-only by default; --epochs N
    fine-tunes the LSTM too), then embeds --original and --anonymized. Put OUT in a system folder as
    embeddings_<name>.npz to audit with it (cosine scoring). Needs the embed extra (torch, resemblyzer).
    """
    import time

    from ..audio.embed import embed_folder
    from ..audio.embed.adapt import AdaptedResemblyzerExtractor, fine_tune_encoder, pretrained_projection, \
        states_folder
    from ..audio.io import read_item_audio_rate, scan_audio_folder
    from ..io.embeddings import write_embeddings
    from ..io.output import claim_file
    from ..pipeline.adapt_head import AdaptedHead

    try:
        if output.suffix != ".npz":
            raise VpevalError(f"{output}: the output must be a .npz file")
        train_spk = {it.speaker_id for it in scan_audio_folder(train_dir)}
        eval_spk = {it.speaker_id for d in (original, anonymized) for it in scan_audio_folder(d)}
        shared = sorted(train_spk & eval_spk)
        if shared:
            raise VpevalError(f"{len(shared)} training speaker(s) are also evaluation speakers (first: {shared[0]!r}); "
                              "the adaptation must never see evaluation speakers")
        with claim_file(output, command="adapt", force=force, protect=[train_dir, original, anonymized]) as claim:
            t0 = time.perf_counter()
            if epochs == 0:
                W0, b0 = pretrained_projection()
                head = AdaptedHead(W0, b0, steps=steps, seed=seed).fit(states_folder(train_dir, threads=threads))
                ext = AdaptedResemblyzerExtractor.from_head(head, threads=threads)
                info = head.describe()
            else:
                items = scan_audio_folder(train_dir)
                ext = fine_tune_encoder([(read_item_audio_rate(it)[0], it.speaker_id) for it in items],
                                        epochs=epochs, seed=seed, threads=threads,
                                        names_of=[f"{it.path} (utterance {it.utterance_id})" for it in items])
                info = {"mode": "full fine-tune", "epochs": epochs, "seed": seed,
                        "loss_per_epoch": [round(float(x), 6) for x in ext.loss_]}
            fit_s = time.perf_counter() - t0
            es = embed_folder(original, ext, condition="original", quiet=True).concat(
                embed_folder(anonymized, ext, condition="anonymized", quiet=True))
            write_embeddings(claim.path, es)
    except (VpevalError, ImportError) as exc:
        from .audio import _fail

        _fail(exc)
    summary = {"output": str(output), "extractor": es.extractor, "rows": len(es),
               "training_speakers": len(train_spk), "adaptation": info, "fit_s": round(fit_s, 2)}
    typer.echo(json.dumps(summary) if as_json else
               f"wrote {len(es)} {es.extractor} embeddings to {output} (adapted on {len(train_spk)} speakers in "
               f"{fit_s:.1f} s, {info['mode']})")


def register(app: typer.Typer) -> None:
    """Add the ``adapt`` command to ``app``."""
    app.command("adapt", help=adapt_cmd.__doc__)(adapt_cmd)
