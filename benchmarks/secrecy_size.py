#!/usr/bin/env python
"""Size of the perfect-secrecy test on every input design a user can bring, by simulation.

Scores of a crossed design with speaker structure, ``effect * u[speaker, model] + sqrt(1 - effect^2) * e``
(perfect secrecy: the pair effect ``u`` is shared by all probes of a speaker against one model, and the target
pair is not special), handed to :func:`vpeval.analysis.secrecy_test` the ways a user can:

- ``bare``: a ``score label`` file (no keys: trial relabelling, which assumes independent trials);
- ``keyed``: Kaldi ``enroll test score`` + key, every probe against every model (speakers read from the key's
  target trials: speaker relabelling);
- ``keyed-incomplete``: the same with a random ``--missing`` share of the non-target trials absent (not every
  probe meets every model);
- ``audit``: speakers known, plus ``--distractors`` enrolled models never probed.

Reported per design: the rejection rate at ``--alpha`` with a Clopper-Pearson 95 % interval, the relabelling
scheme the test chose, and the share of trials it relabelled. A valid test rejects in at most ``alpha`` of the
runs (within the interval).

    python benchmarks/secrecy_size.py --runs 200 --markdown
    python benchmarks/secrecy_size.py --runs 20 --speakers 10        # smoke run
"""

from __future__ import annotations

import os
import platform
import sys
import time
import warnings
from collections import Counter

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from profile_calibration import crossed  # noqa: E402
from simulation_common import clopper_pearson, design_parser  # noqa: E402

from vpeval.analysis import secrecy_test  # noqa: E402
from vpeval.analysis.members import TrialInput, speakers_from_keys  # noqa: E402
from vpeval.io.trials import Trials  # noqa: E402

DESIGNS = ("bare", "keyed", "keyed-incomplete", "audit")


def members(rng, design: str, args) -> list[TrialInput]:
    """One attacker's trials of one simulated run, as ``design`` hands them to the test."""
    D = args.distractors if design == "audit" else 0
    miss = args.missing if design == "keyed-incomplete" else 0.0
    s, lab, enr, tst, psp = crossed(rng, args.speakers, args.probes, D, args.condition, args.shift, miss, args.effect)
    if args.model_effect:  # a model ("hub") effect shared by every probe scored against that model
        w = rng.standard_normal(args.speakers + D)
        s = s + args.model_effect * w[np.char.lstrip(enr.astype(str), "m").astype(int)]
    if design == "bare":
        return [TrialInput("a", "scores", Trials(s, lab))]
    t = Trials(s, lab, enroll=np.ascontiguousarray(enr), test=np.ascontiguousarray(tst))
    if design == "audit":
        return [TrialInput("a", "oa", t, np.ascontiguousarray(enr), np.ascontiguousarray(psp))]
    spk = speakers_from_keys(t)
    return [TrialInput("a", "scores", t, *spk)]


def run_design(design: str, args) -> dict:
    rejected, schemes, share = 0, Counter(), []
    for r in range(args.runs):
        rng = np.random.default_rng([args.seed, r, sum(map(ord, design))])
        m = members(rng, design, args)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = secrecy_test(m, n_perm=args.n_perm, n_boot=1, seed=r, alpha=args.alpha,
                               statistics=("eps_max", "d_ece"))
        rejected += bool(res.rejected)
        schemes[res.scheme] += 1
        share.append(getattr(res, "tested_share", 1.0))
    lo, hi = clopper_pearson(rejected, args.runs)
    return {"design": design, "runs": args.runs, "rate": rejected / args.runs, "ci": (lo, hi),
            "schemes": dict(schemes), "tested_share": float(np.median(share))}


def main(argv=None) -> int:
    ap = design_parser(__doc__, speakers=29, probes=10, distractors=60, n_perm=199,
                       helps={"speakers": "29: the size of a VoicePrivacy LibriSpeech list"})
    ap.add_argument("--missing", type=float, default=0.3)
    ap.add_argument("--effect", type=float, default=0.7)
    ap.add_argument("--model-effect", type=float, default=0.0,
                    help="weight of a per-model effect added to every score against that model (hub models)")
    ap.add_argument("--condition", default="null",
                    help="null (size), or a leak for power: shift-X (every target raised by X), selective-P (a share "
                         "P of the speakers raised by --shift), counterexample (profile_calibration.crossed)")
    ap.add_argument("--designs", default=",".join(DESIGNS))
    args = ap.parse_args(argv)
    t0, load0 = time.time(), os.getloadavg()[0]
    rows = [run_design(d, args) for d in args.designs.split(",")]
    setup = (f"{args.condition}: {args.runs} runs per design, {args.speakers} speakers x {args.probes} probes, speaker effect "
             f"{args.effect}, model effect {args.model_effect}, {args.missing:.0%} of non-targets missing (keyed-incomplete), {args.distractors} "
             f"distractors (audit), one attacker (eps_max, d_ece), n_perm {args.n_perm}, alpha {args.alpha}, seed "
             f"{args.seed}; {time.time() - t0:.0f} s on {platform.machine()}, load {load0:.1f} -> "
             f"{os.getloadavg()[0]:.1f}")
    print(setup + "\n")
    if args.markdown:
        print(f"| design | scheme | trials tested (median share) | rejected, {args.condition} (95 % CI) |")
        print("|---|---|---|---|")
    for r in rows:
        sch = ", ".join(f"{k} {v}" for k, v in sorted(r["schemes"].items()))
        rate = f"{100 * r['rate']:.1f} % ({100 * r['ci'][0]:.1f}-{100 * r['ci'][1]:.1f})"
        if args.markdown:
            print(f"| {r['design']} | {sch} | {100 * r['tested_share']:.0f} % | {rate} |")
        else:
            print(f"{r['design']:18s} {sch:24s} tested {100 * r['tested_share']:.0f} %  rejected {rate}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
