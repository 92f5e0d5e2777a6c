#!/usr/bin/env python
"""Cache the frozen GE2E LSTM states the demo's extractor-adapted attacker needs (sibling of make_example.py).

Usage (from this folder)::

    python make_adapt_states.py [DATA_DIR] [--anon-dir DIR] [--out DIR] [--systems mcadams,vtln,resample]
                                [--speakers ID,...] [--windows]

Needs torch, webrtcvad-wheels and resemblyzer 0.1.4 (as the resemblyzer embeddings of make_example.py).

What is written (float16 states, ``vpeval.pipeline.adapt_head.write_states``):

* ``ge2e_projection.npz`` (this folder): ``W`` (256 x 256) and ``b`` (256), float32, the pretrained projection
  ``VoiceEncoder.linear`` of resemblyzer 0.1.4 (Apache-2.0, (c) Corentin Jemine), the starting point of the
  head-only adaptation (the demo has no torch to read it from the wheel);
* ``<system>/ge2e_states.npz``: the evaluation utterances (the same 201 as ``embeddings_resemblyzer.npz``),
  original then anonymized by that system (McAdams: this folder; ``vtln/``, ``resample/``);
* ``<system>/train/ge2e_states.npz``: the training speakers' 3 s segments (those of ``train/``), anonymized
  by that system only (the adapted attacker trains on anonymized speech).

Each row is the **mean over the utterance's partial windows** of the LSTM's final hidden state of the last
layer (1.6 s windows at 1.3 per second, as ``VoiceEncoder.embed_utterance`` cuts them, after the resemblyzer
preprocessing of :mod:`vpeval.audio.embed.resemblyzer`). The head applied to such pooled states is an
approximation of the per-window computation (``vpeval.pipeline.adapt_head``, module doc); ``--windows``
keeps every window's state instead (exact, about 5 times larger).

The audio is anonymized exactly as in make_example.py (``anonymize_folder(..., alpha="speaker", seed=2024,
method=...)``), in a temporary folder; ``--anon-dir DIR`` reuses already anonymized audio instead, laid out
``DIR/original/<subset>/*.flac`` and ``DIR/<system>/<subset>/*.flac`` (made with those same calls). Training
utterances are cut in memory at the sample positions of make_example.py (consecutive 3 s segments, the
remainder dropped).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_example as mx  # noqa: E402  (the sibling script: speakers, training split, constants)

SYSTEM_DIRS = {"mcadams": ".", "vtln": "vtln", "resample": "resample"}


def _states(items, cut: bool, threads: int):
    """(rows, counts, utterance ids, speakers) of the LSTM states of files; ``cut``: 3 s segments of each."""
    from vpeval.audio.embed.adapt import lstm_states
    from vpeval.audio.io import read_audio

    n = int(mx.SEGMENT_S * 16000)
    blocks, counts, utts, spks = [], [], [], []
    for f in items:
        x = read_audio(f)
        spk = f.stem.split("-")[0]
        parts = [(f"{f.stem}-s{k:02d}", x[k * n:(k + 1) * n]) for k in range(x.size // n)] if cut else [(f.stem, x)]
        for uid, seg in parts:
            s = lstm_states(seg, threads=threads)
            blocks.append(s)
            counts.append(s.shape[0])
            utts.append(uid)
            spks.append(spk)
    return blocks, counts, utts, spks


def _stateset(parts, condition: str, pooled: bool):
    from vpeval.pipeline.adapt_head import StateSet

    blocks, counts, utts, spks = parts
    order = np.argsort(np.asarray(utts), kind="stable")
    ss = StateSet(np.vstack([blocks[i] for i in order]), np.asarray(counts)[order], np.asarray(utts)[order],
                  np.asarray(spks)[order], [condition] * len(utts))
    return ss.pool() if pooled else ss


def _join(a, b):
    from vpeval.pipeline.adapt_head import StateSet

    return StateSet(np.vstack([a.states, b.states]), np.r_[a.counts, b.counts], np.r_[a.utterance_id, b.utterance_id],
                    np.r_[a.speaker_id, b.speaker_id], np.r_[a.condition, b.condition], a.pooled, a.source)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", nargs="?", default=str(mx.DEFAULT_DATA), help="librispeech-mini folder")
    ap.add_argument("--anon-dir", default=None, help="already anonymized audio (see the module doc)")
    ap.add_argument("--out", default=str(HERE), help="output folder (default: this folder)")
    ap.add_argument("--systems", default=",".join(SYSTEM_DIRS), help="comma-separated: " + ",".join(SYSTEM_DIRS))
    ap.add_argument("--speakers", default=None, help="comma-separated speaker ids (default: all)")
    ap.add_argument("--windows", action="store_true", help="keep every window's state (exact, larger)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)

    from vpeval.audio.anonymize import anonymize_folder
    from vpeval.audio.embed.adapt import pretrained_projection
    from vpeval.pipeline.adapt_head import write_states

    data, out = Path(args.data), Path(args.out)
    systems = [s for s in args.systems.split(",") if s]
    for s in systems:
        if s not in SYSTEM_DIRS:
            sys.exit(f"error: unknown system {s!r}; choose from {', '.join(SYSTEM_DIRS)}")
    speakers = mx.read_speakers(data)
    chosen = set(args.speakers.split(",")) if args.speakers else None
    train_spk = mx.training_speakers(data, speakers)
    if chosen is not None:
        train_spk &= chosen
    out.mkdir(parents=True, exist_ok=True)
    W, b = pretrained_projection()
    np.savez_compressed(out / "ge2e_projection.npz", W=W.astype(np.float32), b=b.astype(np.float32))
    timings = {}
    with tempfile.TemporaryDirectory(prefix="vpeval-states-") as tmp:
        if args.anon_dir:
            root = Path(args.anon_dir)
        else:
            root = Path(tmp)
            mx.link_inputs(data, speakers, chosen, root / "original")
            for s in systems:
                t = time.perf_counter()
                anonymize_folder(root / "original", root / s, alpha="speaker", seed=mx.SEED, method=s,
                                 **({"alpha_range": mx.ALPHA_RANGE} if s == "mcadams" else {}), quiet=args.quiet)
                timings[f"anonymize_{s}_s"] = round(time.perf_counter() - t, 2)

        def files(folder):
            fs = sorted(Path(folder).rglob("*.flac"))
            if chosen is not None:
                fs = [f for f in fs if f.stem.split("-")[0] in chosen]
            if not fs:
                sys.exit(f"error: no FLAC files under {folder}")
            return [f for f in fs if f.stem.split("-")[0] not in train_spk], \
                [f for f in fs if f.stem.split("-")[0] in train_spk]

        pooled = not args.windows
        t = time.perf_counter()
        ev, _ = files(root / "original")
        orig = _stateset(_states(ev, False, args.threads), "original", pooled)
        timings["states_original_s"] = round(time.perf_counter() - t, 2)
        for s in systems:
            t = time.perf_counter()
            ev, tr = files(root / s)
            anon = _stateset(_states(ev, False, args.threads), "anonymized", pooled)
            if not np.array_equal(anon.utterance_id, orig.utterance_id):
                sys.exit(f"error: {s}: the anonymized utterances differ from the original ones")
            d = out / SYSTEM_DIRS[s]
            (d / "train").mkdir(parents=True, exist_ok=True)
            write_states(d / "ge2e_states.npz", _join(orig, anon))
            if tr:
                write_states(d / "train" / "ge2e_states.npz", _stateset(_states(tr, True, args.threads),
                                                                        "anonymized", pooled))
            timings[f"states_{s}_s"] = round(time.perf_counter() - t, 2)
    from importlib import metadata

    prov = {"what": "frozen resemblyzer GE2E LSTM states (final hidden state of the last layer) "
                    + ("per partial window" if args.windows else "averaged over each utterance's partial windows"),
            "dtype": "float16", "rate_per_s": 1.3, "window_s": 1.6, "min_coverage": 0.75,
            "systems": systems, "training_speakers": len(train_spk), "timings": timings,
            "versions": {d: metadata.version(d) for d in ("vpeval", "numpy", "torch", "resemblyzer", "librosa")},
            "command": "python make_adapt_states.py " + " ".join(argv if argv is not None else sys.argv[1:])}
    (out / "adapt_states_provenance.json").write_text(json.dumps(prov, indent=2) + "\n")
    if not args.quiet:
        print(f"wrote ge2e_projection.npz and ge2e_states.npz for {', '.join(systems)} to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
