"""Does adapting the extractor beat the back-end-only semi-informed attackers? (the README's figures)

    python benchmarks/adapted_vs_backend.py [--n-boot 1000] [--seed 0]

On the bundled example (examples/librispeech-mini, each of its three systems), fields exactly the demo's
attackers trained on anonymized speech (``make_attackers``, every back-end) and the extractor-adapted one
(``vpeval.pipeline.adapted.field_adapted``, default settings, seed 0), builds the oa and aa trials of the demo's
protocol, and prints per system and trial type the ROCCH-EER of the adapted attacker, of the best back-end-only
attacker on the same extractor (resemblyzer GE2E) and of the best back-end-only attacker on any extractor, with
the paired difference (back-end minus adapted, EER points: positive = adaptation is stronger) and its 95 %
paired speaker-bootstrap interval (probe speakers resampled, the same draw for both attackers).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "librispeech-mini"


def main(argv=None) -> int:
    from vpeval.io.embeddings import read_embeddings
    from vpeval.metrics.verification import rocch_eer
    from vpeval.pipeline import make_attackers
    from vpeval.pipeline.adapted import _paired_change, field_adapted, read_adapt_folder
    from vpeval.pipeline.protocols import build_trials, make_protocol

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    for system, folder in (("mcadams", EXAMPLE), ("vtln", EXAMPLE / "vtln"), ("resample", EXAMPLE / "resample")):
        sets = {n: read_embeddings(folder / f"embeddings_{f}.npz") for n, f in
                (("mfcc-stats", "mfcc"), ("resemblyzer-ge2e", "resemblyzer"))}
        train = {n: read_embeddings(folder / "train" / f"embeddings_{f}.npz") for n, f in
                 (("mfcc-stats", "mfcc"), ("resemblyzer-ge2e", "resemblyzer"))}
        backs = [a for a in make_attackers(sets, train, conditions=("anonymized",)) if a.trained_on == "anonymized"]
        inp = read_adapt_folder(folder)
        adapted = field_adapted(inp.states, inp.train, inp.W0, inp.b0, seed=args.seed, evaluation=list(sets.values()))
        for t in ("oa", "aa"):
            ta = build_trials(adapted.es, [t], protocol=make_protocol(adapted.es))[t]
            eers = {}
            for a in backs:
                tb = a.build_trials([t], protocol=make_protocol(a.es))[t]
                eers[a.name] = (rocch_eer(tb.tar, tb.non), tb)
            same = min((v[0], k) for k, v in eers.items() if k.startswith("resemblyzer-ge2e/"))[1]
            best = min((v[0], k) for k, v in eers.items())[1]
            e_ad = rocch_eer(ta.tar, ta.non)
            line = f"{system:8s} {t}: adapted {100 * e_ad:5.2f} %"
            for label, k in (("best GE2E back-end", same), ("best back-end", best)):
                tb = eers[k][1]
                if not (np.array_equal(tb.enroll, ta.enroll) and np.array_equal(tb.test, ta.test)):
                    raise SystemExit(f"{k}: other trials than the adapted attacker's")
                c = _paired_change(tb, ta, n_boot=args.n_boot, seed=args.seed)
                lo, hi = c["eer_gain_ci"]
                line += (f" | {label} {k} {100 * eers[k][0]:5.2f} %, minus adapted {100 * c['eer_gain']:+.2f} "
                         f"[{100 * lo:+.2f}, {100 * hi:+.2f}] points")
            print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
