"""Adaptation time of the extractor-adapted attacker on the bundled example's 150 training speakers.

    python benchmarks/adapt_time.py [--runs 5] [--full-runs 5] [--anon-dir /work/anon_audio] [DATA_DIR]

Measured interleaved with their floors, medians of ``--runs`` (wall seconds, one process, 1 torch thread, 1 BLAS
thread for the head), with ``/proc/loadavg`` printed before and after:

1. **head-only on cached states** (what ``vpeval demo`` does per system): ``AdaptedHead(steps=50).fit`` on
   ``examples/librispeech-mini/train/ge2e_states.npz`` (634 pooled segments of 150 speakers); floor: the same
   with ``steps=0`` (sorting, class vectors, one forward pass);
2. **one full fine-tune epoch** (``--full-runs``): ``fine_tune_encoder(..., epochs=1)`` on the McAdams-anonymized
   3 s training segments (1,902 windows, batches of 32); floor: ``epochs=0`` (preprocessing, mel windows, one
   forward pass for the class vectors);
3. **LSTM states from audio** (``--state-runs``; the head-only mode's one-off cost without the cache):
   ``lstm_states`` of every segment; floor: the resemblyzer preprocessing alone.

The audio is read from ``--anon-dir`` (``DIR/mcadams/train-clean-100/*.flac``, made as in make_example.py) or
anonymized first into a temporary folder from DATA_DIR.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "librispeech-mini"
sys.path.insert(0, str(EXAMPLE))


def _load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def _timed(fn, label: str = "") -> float:
    t = time.perf_counter()
    fn()
    dt = time.perf_counter() - t
    if label:  # each measurement as it comes, with the load (a run on a busy machine takes long)
        print(f"  {label:8s} {dt:8.3f} s  (load {_load()})", flush=True)
    return dt


def main(argv=None) -> int:
    import make_example as mx

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", nargs="?", default=str(mx.DEFAULT_DATA))
    ap.add_argument("--anon-dir", default=None)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--full-runs", type=int, default=5, help="runs of the full-epoch pair")
    ap.add_argument("--state-runs", type=int, default=5, help="runs of the LSTM-states pair")
    ap.add_argument("--skip-audio", action="store_true", help="only the head-only timing on cached states")
    args = ap.parse_args(argv)

    from vpeval.pipeline.adapt_head import AdaptedHead, read_states

    print(f"load before: {_load()}")
    tr = read_states(EXAMPLE / "train" / "ge2e_states.npz")
    with np.load(EXAMPLE / "ge2e_projection.npz") as z:
        W0, b0 = z["W"], z["b"]
    res: dict[str, list] = {"head50": [], "head0": []}
    for _ in range(args.runs):
        res["head50"].append(_timed(lambda: AdaptedHead(W0, b0, steps=50).fit(tr), "head50"))
        res["head0"].append(_timed(lambda: AdaptedHead(W0, b0, steps=0).fit(tr), "head0"))
    if not args.skip_audio:
        from vpeval.audio.anonymize import anonymize_folder
        from vpeval.audio.embed.adapt import fine_tune_encoder, lstm_states
        from vpeval.audio.embed.resemblyzer import preprocess
        from vpeval.audio.io import read_audio

        data = Path(args.data)
        speakers = mx.read_speakers(data)
        train_spk = mx.training_speakers(data, speakers)
        with tempfile.TemporaryDirectory() as tmp:
            if args.anon_dir:
                folder = Path(args.anon_dir) / "mcadams" / "train-clean-100"
            else:
                mx.link_inputs(data, speakers, train_spk, Path(tmp) / "o")
                anonymize_folder(Path(tmp) / "o", Path(tmp) / "a", alpha="speaker", seed=mx.SEED,
                                 alpha_range=mx.ALPHA_RANGE, quiet=True)
                folder = Path(tmp) / "a" / "train-clean-100"
            n = int(mx.SEGMENT_S * 16000)
            segs = []
            for f in sorted(folder.glob("*.flac")):
                spk = f.stem.split("-")[0]
                if spk in train_spk:
                    x = read_audio(f)
                    segs += [(x[k * n:(k + 1) * n], spk) for k in range(x.size // n)]
            print(f"{len(segs)} training segments of {len({s for _, s in segs})} speakers")
            res.update(states=[], prep=[], epoch1=[], epoch0=[])
            for _ in range(args.full_runs):  # the full epoch first: the figure that matters most
                res["epoch1"].append(_timed(lambda: fine_tune_encoder(segs, epochs=1, seed=0), "epoch1"))
                res["epoch0"].append(_timed(lambda: fine_tune_encoder(segs, epochs=0, seed=0), "epoch0"))
            for _ in range(args.state_runs):
                res["states"].append(_timed(lambda: [lstm_states(x) for x, _ in segs], "states"))
                res["prep"].append(_timed(lambda: [preprocess(x) for x, _ in segs], "prep"))
    for k, v in res.items():
        if not v:
            continue
        print(f"{k:8s} median {statistics.median(v):8.3f} s  runs {[round(x, 3) for x in v]}")
    print(f"load after: {_load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
