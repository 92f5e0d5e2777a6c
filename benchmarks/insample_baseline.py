#!/usr/bin/env python
"""CCA and Procrustes on independent embeddings: the in-sample protocol reads high, the held-out one reads 0.

Original and "anonymized" embeddings are drawn independently (standard normal, ``--dim`` dimensions, so no
relation at all between the views) for ``--pairs`` utterances of speakers with ``--per-speaker`` utterances
each, and :func:`vpeval.metrics.embedding.embedding_structure` scores them under both of its protocols. The
in-sample top-10 CCA correlation and Procrustes cosine are what a random pairing gives at that sample size:
the level the Beyond-EER paper calls its random-permutation baseline (CCA 0.734, Procrustes 0.29-0.31). They
fall as the pairs grow, so a system scored on more pairs than its baseline can read "below random" without any
structure being involved. Held out, both stay near 0 at every size.

    python benchmarks/insample_baseline.py --markdown                 # docs/findings.md, section 10
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings

import numpy as np

from vpeval.metrics.embedding import PAPER_REFERENCE_BASELINE, embedding_structure


def one(n: int, dim: int, per: int, seed: int):
    rng = np.random.default_rng([seed, n, dim])
    X, Y = rng.standard_normal((n, dim)), rng.standard_normal((n, dim))
    groups = np.array([f"s{i // per:04d}" for i in range(n)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = embedding_structure(X, Y, groups, n_permutations=19, seed=seed)
    return (r.cca.value, r.procrustes.value, r.cca_insample.value, r.procrustes_insample.value,
            r.cca_insample.baseline_mean, r.procrustes_insample.baseline_mean)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=lambda s: [int(x) for x in s.split(",")], default=[846, 2386])
    ap.add_argument("--dim", type=int, default=192)
    ap.add_argument("--per-speaker", type=int, default=10)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    t0, load0 = time.time(), os.getloadavg()[0]
    rows = []
    for n in args.pairs:
        got = np.array([one(n, args.dim, args.per_speaker, s) for s in range(args.seeds)])
        rows.append((n, np.median(got, axis=0)))
    ref = PAPER_REFERENCE_BASELINE
    print(f"independent views, {args.dim} dimensions, {args.per_speaker} utterances per speaker, median of "
          f"{args.seeds} seeds, 19 permutations each; paper's baselines: CCA top-10 {ref['cca_top10']}, Procrustes "
          f"{ref['procrustes_cosine'][0]}-{ref['procrustes_cosine'][1]}; {time.time() - t0:.0f} s on "
          f"{platform.machine()}, load {load0:.1f} -> {os.getloadavg()[0]:.1f}\n")
    head = ["pairs", "CCA top-10 in-sample", "its permutation mean", "Procrustes in-sample", "its permutation mean",
            "CCA top-10 held out", "Procrustes held out"]
    if args.markdown:
        print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for n, m in rows:
        cells = [f"{n:,}"] + [f"{v:.2f}" for v in (m[2], m[4], m[3], m[5], m[0], m[1])]
        print(("| " + " | ".join(cells) + " |") if args.markdown else "  ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
