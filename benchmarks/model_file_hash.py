#!/usr/bin/env python
"""What recording a model file's sha256 costs: ``file_record`` (the hash vpeval computes once when a model file is
opened) against reading the same bytes without hashing, interleaved in one process.

Usage::

    python benchmarks/model_file_hash.py [--mb 83] [--runs 7]

Writes ``--mb`` MB of random bytes (the size of an ECAPA-TDNN checkpoint of about 20 million float32 parameters) to a
temporary file, then times, alternating, a plain read in 1 MiB chunks and :func:`vpeval.io.extractor_info.file_record`
(read in 1 MiB chunks + sha256). After the first read the file sits in the page cache, so both are timed from memory:
the hash's own cost. Prints the medians and the 1-minute load average before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def main() -> None:
    from vpeval.io.extractor_info import file_record

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=83)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.onnx"
        path.write_bytes(os.urandom(args.mb * 1_000_000))

        def read_only():
            with open(path, "rb") as f:
                for _ in iter(lambda: f.read(1 << 20), b""):
                    pass

        read_only()  # into the page cache
        t_read, t_hash = [], []
        for _ in range(args.runs):
            t = time.perf_counter()
            read_only()
            t_read.append(time.perf_counter() - t)
            t = time.perf_counter()
            file_record(path)
            t_hash.append(time.perf_counter() - t)
    print(f"{args.mb} MB, {args.runs} runs each, interleaved: file_record (read + sha256) median "
          f"{statistics.median(t_hash):.3f} s, read alone median {statistics.median(t_read):.3f} s; "
          f"1-min load {load0:.2f} before, {os.getloadavg()[0]:.2f} after")


if __name__ == "__main__":
    main()
