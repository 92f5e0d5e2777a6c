"""Timing of the beyond-identity analyses (embedding structure, SBLS, DeID/G_VD).

Run: PYTHONPATH=src python benchmarks/bench_beyond.py
Prints the wall time of each analysis on the bundled example and on synthetic sets of growing size.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from vpeval.io.embeddings import read_embeddings
from vpeval.metrics.distinctiveness import voice_distinctiveness
from vpeval.metrics.embedding import embedding_structure
from vpeval.report.beyond import analyse_attributes, analyse_distinctiveness, analyse_embedding_structure

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "librispeech-mini"


def _time(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def main():
    md = pd.read_csv(EXAMPLE / "metadata.csv", dtype=str, keep_default_na=False)
    for name in ("mfcc", "resemblyzer"):
        es = read_embeddings(EXAMPLE / f"embeddings_{name}.npz")
        print(f"{name:12s} embedding {_time(lambda: analyse_embedding_structure(es)):.2f} s  "
              f"attributes {_time(lambda: analyse_attributes(es, md)):.2f} s  "
              f"distinctiveness {_time(lambda: analyse_distinctiveness(es)):.2f} s")
    rng = np.random.default_rng(0)
    for n, d in ((1000, 256), (4000, 256), (10000, 512)):
        X = rng.normal(size=(n, d))
        Y = X + rng.normal(size=(n, d))
        g = np.repeat(np.arange(n // 10), 10).astype(str)
        print(f"synthetic n={n:6d} d={d}: embedding_structure (20 perms) "
              f"{_time(lambda: embedding_structure(X, Y, g)):.2f} s")
    for n_spk, per in ((40, 10), (100, 20)):
        n = n_spk * per
        X = rng.normal(size=(n, 256))
        g = np.repeat(np.arange(n_spk), per).astype(str)
        print(f"synthetic {n_spk} speakers x {per}: voice_distinctiveness "
              f"{_time(lambda: voice_distinctiveness(X, X + rng.normal(size=X.shape), g)):.2f} s")


if __name__ == "__main__":
    main()
