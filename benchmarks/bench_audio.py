#!/usr/bin/env python
"""Throughput of the audio path, in real-time factor (seconds of audio per second of wall time).

Usage::

    python benchmarks/bench_audio.py [DATA_DIR] [--n 40] [--threads 1,2]

Reads the first ``--n`` utterances of ``DATA_DIR/test-other`` (default ``../shared/data/librispeech-mini``
relative to the repository root; synthetic speech-like signals when absent) and times, per utterance and
after one warm-up call:

- ``mcadams`` (alpha 0.7), target >= 20x real time;
- the MFCC-statistics extractor;
- the resemblyzer extractor (if installed) for each torch thread count in ``--threads``, target >= 50x.

File reading is excluded.  Report the machine load beside the numbers: other processes on a small machine
change them a lot (torch threads spin while waiting for a busy core).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from vpeval.audio.anonymize import mcadams  # noqa: E402
from vpeval.audio.embed import ExtractorUnavailableError, MfccStatsExtractor  # noqa: E402
from vpeval.audio.io import read_audio  # noqa: E402


def load(data: Path, n: int):
    files = sorted((data / "test-other").rglob("*.flac"))[:n]
    if files:
        return [read_audio(f) for f in files], f"{len(files)} LibriSpeech utterances"
    rng = np.random.default_rng(0)
    sig = []
    for i in range(n):
        t = np.arange(16000 * 8) / 16000
        f0 = 100 + 10 * i
        x = sum(np.sin(2 * np.pi * f0 * k * t) / k for k in range(1, 20)) * (1 + np.sin(2 * np.pi * 3 * t))
        sig.append(0.05 * x + 0.003 * rng.standard_normal(t.size))
    return sig, f"{n} synthetic 8 s signals (real data absent)"


def rtf(fn, xs) -> float:
    fn(xs[0])
    dur = sum(x.size for x in xs) / 16000
    t = time.perf_counter()
    for x in xs:
        fn(x)
    return dur / (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data", nargs="?", default=str(ROOT / ".." / "shared" / "data" / "librispeech-mini"))
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--threads", default="1,2")
    args = ap.parse_args()
    xs, what = load(Path(args.data), args.n)
    dur = sum(x.size for x in xs) / 16000
    print(f"input: {what}, {dur:.1f} s; cpus={os.cpu_count()}, load average {os.getloadavg()[0]:.2f}")
    print(f"mcadams (alpha 0.7):          {rtf(lambda x: mcadams(x, 0.7), xs):8.1f} x real time (target >= 20)")
    ext = MfccStatsExtractor()
    print(f"mfcc-stats extractor:         {rtf(ext.embed, xs):8.1f} x real time")
    try:
        from vpeval.audio.embed.resemblyzer import ResemblyzerExtractor

        for th in (int(t) for t in args.threads.split(",")):
            rz = ResemblyzerExtractor(threads=th)
            print(f"resemblyzer ({th} torch thread{'s' if th > 1 else ''}):  {rtf(rz.embed, xs):8.1f} x real time "
                  "(target >= 50)")
    except ExtractorUnavailableError:
        print("resemblyzer: not installed (pip install torch==2.13.0 webrtcvad-wheels; "
              "pip install --no-deps resemblyzer==0.1.4)")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
