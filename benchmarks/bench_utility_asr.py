#!/usr/bin/env python
"""Speed of the offline Whisper-base recogniser, as real-time factor RTF = wall time / audio duration
(lower is faster; 0.1 = ten times faster than real time).

Usage::

    python benchmarks/bench_utility_asr.py [--threads 1,2] [--compute-types int8,float32] [--n 10]

Times ``FasterWhisperBackend.transcribe`` (model already loaded, one warm-up call excluded; file reading
excluded) on the 5 LibriVox utterances of the Debian package ``pocketsphinx-testdata`` (24.7 s) and on the
first ``--n`` utterances of ``../shared/data/librispeech-mini/test-other`` when present.  Model loading is
reported separately.  Report the machine load beside the numbers: other processes on a 2-core machine
change them a lot.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from vpeval.audio.asr import FasterWhisperBackend  # noqa: E402
from vpeval.audio.io import SAMPLE_RATE, read_audio  # noqa: E402

LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
MINI = ROOT.parent / "shared" / "data" / "librispeech-mini" / "test-other"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", default="2")
    ap.add_argument("--compute-types", default="int8,float32")
    ap.add_argument("--n", type=int, default=10)
    a = ap.parse_args()
    sets = {}
    if LIBRIVOX.is_dir():
        sets["pocketsphinx librivox"] = [read_audio(p) for p in sorted(LIBRIVOX.glob("*.wav"))]
    if MINI.is_dir():
        sets[f"librispeech-mini test-other (first {a.n})"] = [read_audio(p) for p in sorted(MINI.rglob("*.flac"))[:a.n]]
    if not sets:
        sys.exit("no audio found (install pocketsphinx-testdata or provide ../shared/data)")
    print(f"cpus: {os.cpu_count()}, load average: {os.getloadavg()}")
    for ct in a.compute_types.split(","):
        for thr in [int(t) for t in a.threads.split(",")]:
            t0 = time.perf_counter()
            b = FasterWhisperBackend(compute_type=ct, cpu_threads=thr)
            load = time.perf_counter() - t0
            b.transcribe(next(iter(sets.values()))[0])  # warm-up
            for name, wavs in sets.items():
                dur = sum(len(w) for w in wavs) / SAMPLE_RATE
                t0 = time.perf_counter()
                cpu0 = time.process_time()
                for w in wavs:
                    b.transcribe(w)
                wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
                print(f"{ct:8s} threads={thr} load={load:.1f}s  {name}: {dur:.1f} s audio, "
                      f"wall {wall:.1f} s, RTF {wall / dur:.3f} (CPU time / audio {cpu / dur:.3f})")


if __name__ == "__main__":
    main()
