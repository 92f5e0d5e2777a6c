#!/usr/bin/env python
"""Coverage and power of the privacy profile's bounds (vpeval.analysis.profiles), by simulation.

The verdict's ``protects`` reads ``eps_high(delta) <= budget`` and its ``leaks`` needs ``eps_low(delta) > budget``;
both bounds come from the members' scores alone (no relabelling), so this script measures them directly, on every
input design a user can bring, many runs per cell:

- ``file-iid``: a ``score label`` file of independent trials (no speakers);
- ``file-rounded``: the same scores rounded to ``--decimals`` (tied scores, as files written with few digits have;
  the oracle is that of the rounded population law, whose decisions never split a tie);
- ``file-speakers``: the scores of a crossed design (every probe against every model) with speaker structure,
  ``0.7 u[speaker, model] + 0.71 e`` (perfect secrecy: a pair effect per probe speaker and model), read twice:
  with its speakers known (design effects over probe speakers) and as a bare score file (trials assumed
  independent);
- ``incomplete``: the same with a random 30 % of the non-target trials missing (not every probe meets every model);
- ``audit``: ``--speakers`` speakers x ``--probes`` probes against the speakers and ``--distractors`` other models,
  speakers known.

Conditions (``--conditions``): ``null`` (perfect secrecy), ``counterexample`` (targets with twice the variance of
the non-targets, same mean: the worst-case paper's Fig. 1, for every speaker), ``shift-X`` (every target score
raised by X: a finite profile, where the coverage of both bounds is informative), ``selective-P`` (a share P of the
speakers, at least one, with their target scores raised by ``--shift``), ``exposed-1`` (one speaker's targets
above every non-target). The oracle eps(delta) of each condition is computed from its population law over every
interval and complement (a sample of 2e6 trials per class through :func:`vpeval.metrics.profile.privacy_profile_bits`,
the same for all runs). Reported per cell: the share of runs with ``eps_high <= budget`` (``protects`` as far as the
bounds decide it), with ``eps_low > budget`` (``leaks`` needs it and the rejected test), with ``eps_low <= oracle``,
with ``oracle <= eps_high`` and with both (coverage), each with a Clopper-Pearson 95 % interval.

    python benchmarks/profile_calibration.py --runs 200 --markdown     # the tables of docs/verdict_calibration.md
    python benchmarks/profile_calibration.py --runs 20 --quick          # smoke run
    python benchmarks/profile_calibration.py --table-speakers --runs 100 --markdown   # protects vs S and delta
"""

from __future__ import annotations

import math
import os
import platform
import sys
import time

import numpy as np
from simulation_common import clopper_pearson, design_parser  # benchmarks/, the script's folder, is on sys.path

from vpeval.analysis.members import TrialInput
from vpeval.analysis.profiles import default_delta, member_profiles, profile_family
from vpeval.analysis.verdict import DEFAULT_BUDGET_BITS
from vpeval.io.trials import Trials
from vpeval.metrics.profile import privacy_profile_bits


def crossed(rng, S: int, P: int, D: int, condition: str, shift: float, missing: float = 0.0, effect: float = 0.7):
    """(scores, is_target, enroll, test, probe speaker) of S speakers x P probes against S + D models; ``effect``:
    the weight of the pair effect u[speaker, model] (0: independent trials), the total variance kept at 1."""
    M = S + D
    p_spk = np.repeat(np.arange(S), P)
    u = rng.standard_normal((S, M))
    s = effect * u[p_spk] + math.sqrt(1.0 - effect ** 2) * rng.standard_normal((S * P, M))
    tgt = np.zeros((S * P, M), dtype=bool)
    tgt[np.arange(S * P), p_spk] = True
    rows = np.arange(S * P)
    if condition == "counterexample":
        s[tgt] *= math.sqrt(2.0)
    elif condition.startswith("shift-"):
        s[tgt] += float(condition.split("-", 1)[1])
    elif condition.startswith("selective-"):
        k = max(1, int(round(float(condition.split("-", 1)[1]) * S)))
        leaky = np.zeros(S, dtype=bool)
        leaky[rng.choice(S, k, replace=False)] = True
        r = rows[leaky[p_spk]]
        s[r, p_spk[r]] += shift
    elif condition == "exposed-1":
        r = rows[p_spk == 0]
        s[r, 0] = 50.0 + rng.standard_normal(r.size)
    keep = np.ones_like(tgt)
    if missing:
        keep = tgt | (rng.random(tgt.shape) >= missing)
    enroll = np.broadcast_to(np.array([f"m{j:04d}" for j in range(M)]), tgt.shape)
    test = np.broadcast_to(np.array([f"p{i:05d}" for i in range(S * P)])[:, None], tgt.shape)
    pspk = np.broadcast_to(np.array([f"m{j:04d}" for j in p_spk])[:, None], tgt.shape)
    return s[keep], tgt[keep], enroll[keep], test[keep], pspk[keep]


def oracle(condition: str, S: int, shift: float, deltas, decimals: int | None = None) -> np.ndarray:
    """eps(delta) of the condition's population law (bits), from 2e6 draws per class (rounded to ``decimals``
    when given: the law of the rounded scores)."""
    rng = np.random.default_rng(99)
    n = 2_000_000
    non = rng.standard_normal(n)
    tar = rng.standard_normal(n)
    if condition == "null":
        return np.zeros(len(deltas))
    if condition == "counterexample":
        tar *= math.sqrt(2.0)
    elif condition.startswith("shift-"):
        tar += float(condition.split("-", 1)[1])
    elif condition.startswith("selective-"):
        k = max(1, int(round(float(condition.split("-", 1)[1]) * S)))
        tar[: int(n * k / S)] += shift
    elif condition == "exposed-1":
        tar[: n // S] = 50.0 + rng.standard_normal(n // S)
    if decimals is not None:
        tar, non = np.round(tar, decimals), np.round(non, decimals)
    return np.asarray(privacy_profile_bits(tar, non, deltas))


def one_run(rng, design: str, condition: str, args):
    if design in ("file-iid", "file-rounded"):
        nt, nn = args.file_targets, args.file_nontargets
        tar, non = rng.standard_normal(nt), rng.standard_normal(nn)
        if condition == "counterexample":
            tar *= math.sqrt(2.0)
        elif condition.startswith("shift-"):
            tar += float(condition.split("-", 1)[1])
        elif condition != "null":
            return None  # speakers are needed to define a selective leak
        if design == "file-rounded":
            tar, non = np.round(tar, args.decimals), np.round(non, args.decimals)
        t = Trials(np.r_[tar, non], np.r_[np.ones(nt, bool), np.zeros(nn, bool)])
        return [TrialInput("a", "scores", t)], None
    miss = 0.3 if design == "incomplete" else 0.0
    D = args.distractors if design == "audit" else 0
    s, lab, enr, tst, psp = crossed(rng, args.speakers, args.probes, D, condition, args.shift, miss,
                                    args.speaker_effect)
    if design == "file-speakers-bare":
        return [TrialInput("a", "scores", Trials(s, lab))], args.speakers
    t = Trials(s, lab, enroll=enr, test=tst)
    return [TrialInput("a", "oa", t, enr, psp)], args.speakers


def run_cell(design: str, condition: str, args) -> dict | None:
    got = []
    ora = None
    for r in range(args.runs):
        rng = np.random.default_rng([args.seed, r, sum(map(ord, design + condition))])
        made = one_run(rng, design, condition, args)
        if made is None:
            return None
        members, S = made
        fam = profile_family(member_profiles(members), alpha=args.alpha,
                             delta=args.delta if args.delta else default_delta(S))
        if ora is None:
            ora = float(oracle(condition, S or 50, args.shift, [fam.delta],
                               args.decimals if design == "file-rounded" else None)[0])
        got.append((fam.eps_low, fam.eps_high, fam.delta, fam.members[0]["deff_tar"], fam.members[0]["deff_non"]))
    n = len(got)
    b = args.budget_bits
    cnt = {"protects_bound": sum(h <= b for _, h, *_ in got), "leaks_bound": sum(lo > b for lo, *_ in got),
           "low_ok": sum(lo <= ora + 1e-9 for lo, *_ in got), "high_ok": sum(ora <= h + 1e-9 for _, h, *_ in got)}
    cnt["both"] = sum(lo <= ora + 1e-9 <= h + 2e-9 for lo, h, *_ in got)
    return {"design": design, "condition": condition, "runs": n, "delta": got[0][2], "oracle_bits": ora,
            "median_eps_low": float(np.median([g[0] for g in got])),
            "median_eps_high": float(np.median([g[1] for g in got])),
            "median_deff": (float(np.median([g[3] for g in got])), float(np.median([g[4] for g in got]))),
            **{k: (v / n, clopper_pearson(v, n)) for k, v in cnt.items()}}


def speakers_table(args) -> list:
    """protects rate (eps_high <= budget) under perfect secrecy against S and delta, crossed design."""
    rows = []
    for S in args.table_sizes:
        deltas = sorted({*args.table_deltas, default_delta(S)})
        hits = np.zeros(len(deltas), dtype=int)
        for r in range(args.runs):
            rng = np.random.default_rng([args.seed, r, S])
            s, lab, enr, tst, psp = crossed(rng, S, args.probes, 0, "null", 0.0, effect=args.speaker_effect)
            prof = member_profiles([TrialInput("a", "oa", Trials(s, lab, enroll=enr, test=tst), enr, psp)])[0]
            _, _, hi = prof.at(np.array(deltas), args.alpha, 1)
            hits += hi <= args.budget_bits
        rows.append({"speakers": S, "probes": args.probes, "deltas": deltas, "protects": (hits / args.runs).tolist(),
                     "runs": args.runs, "default_delta": default_delta(S)})
        print(rows[-1], file=sys.stderr, flush=True)
    return rows


def plan_table(args) -> list:
    """Probes per speaker a perfectly secret crossed design needs for eps_high <= budget at delta = 1 / (2 S), from
    the bound of a typical perfectly secret sample (vpeval.metrics.profile.typical_bounds_bits), per design effect."""
    from vpeval.analysis.profiles import _smallest_factor
    from vpeval.metrics.profile import typical_bounds_bits

    rows = []
    for S in args.table_sizes:
        row = {"speakers": S}
        for deff in args.plan_deffs:
            def ok(p, S=S, deff=deff):
                n_t = S * p
                return typical_bounds_bits(n_t, n_t * (S - 1), 1.0 / (2 * S), alpha=args.alpha, deff_tar=deff,
                                           deff_non=deff) <= args.budget_bits
            c = _smallest_factor(lambda c: ok(c), 1e5)
            row[deff] = None if c is None else int(math.ceil(c))
        rows.append(row)
    return rows


def main(argv=None) -> int:
    ap = design_parser(__doc__, speakers=40, probes=10, distractors=60)
    ap.add_argument("--file-targets", type=int, default=10_000)
    ap.add_argument("--file-nontargets", type=int, default=100_000)
    ap.add_argument("--decimals", type=int, default=1, help="file-rounded: the scores' decimals")
    ap.add_argument("--speaker-effect", type=float, default=0.7,
                    help="weight of the pair effect u[speaker, model] in the crossed designs (0: independent)")
    ap.add_argument("--delta", type=float, default=None, help="default: 1 / (2 S), 1 %% without speakers")
    ap.add_argument("--budget-bits", type=float, default=DEFAULT_BUDGET_BITS)
    ap.add_argument("--designs", default="file-iid,file-speakers,file-speakers-bare,incomplete,audit")
    ap.add_argument("--conditions", default="null,counterexample,selective-0.05,selective-0.2,exposed-1")
    ap.add_argument("--quick", action="store_true", help="smaller designs (a smoke run)")
    ap.add_argument("--table-speakers", action="store_true", help="the protects rate against S and delta instead")
    ap.add_argument("--table-sizes", type=lambda s: [int(x) for x in s.split(",")],
                    default=[10, 16, 29, 40, 100, 200])
    ap.add_argument("--table-deltas", type=lambda s: [float(x) for x in s.split(",")],
                    default=[0.005, 0.01, 0.02, 0.05, 0.1])
    ap.add_argument("--plan-table", action="store_true",
                    help="probes per speaker needed at delta = 1 / (2 S) instead, per design effect")
    ap.add_argument("--plan-deffs", type=lambda s: [float(x) for x in s.split(",")], default=[1.0, 2.0, 4.0])
    args = ap.parse_args(argv)
    if args.quick:
        args.speakers, args.probes, args.distractors = 20, 5, 20
        args.file_targets, args.file_nontargets = 2000, 20_000
    t0, load0 = time.time(), os.getloadavg()[0]
    cmd = f"python benchmarks/profile_calibration.py {' '.join(argv if argv is not None else sys.argv[1:])}"
    if args.plan_table:
        rows = plan_table(args)
        print(f"<!-- {cmd} -->\nprobes per speaker (every probe against every speaker's model, no distractors) for "
              f"eps_high <= {args.budget_bits:.3g} bits at delta = 1 / (2 S) under perfect secrecy, alpha {args.alpha}"
              "\n")
        print("| speakers | " + " | ".join(f"deff {d:g}" for d in args.plan_deffs) + " |")
        print("|---|" + "---|" * len(args.plan_deffs))
        for r in rows:
            print(f"| {r['speakers']} | " + " | ".join("none" if r[d] is None else f"{r[d]:,}" for d in args.plan_deffs)
                  + " |")
        return 0
    if args.table_speakers:
        rows = speakers_table(args)
        head = (f"{args.runs} runs per row, crossed design without distractors, {args.probes} probes per speaker, "
                f"perfect secrecy, speaker effect {args.speaker_effect}, alpha {args.alpha}, budget {args.budget_bits:.3g} bits; "
                f"{time.time() - t0:.0f} s, load {load0:.1f} -> {os.getloadavg()[0]:.1f}")
        if args.markdown:
            deltas = sorted({d for r in rows for d in r["deltas"]})
            print(f"<!-- {cmd} -->\n{head}\n")
            print("| speakers | targets | default delta | " + " | ".join(f"delta {d:.3g}" for d in deltas) + " |")
            print("|---|---|---|" + "---|" * len(deltas))
            for r in rows:
                rate = dict(zip(r["deltas"], r["protects"]))
                print(f"| {r['speakers']} | {r['speakers'] * r['probes']} | {r['default_delta']:.3g} | "
                      + " | ".join(f"{100 * rate[d]:.0f} %" if d in rate else "" for d in deltas) + " |")
        return 0
    results = []
    for design in args.designs.split(","):
        for cond in args.conditions.split(","):
            res = run_cell(design, cond, args)
            if res is not None:
                results.append(res)
                print(res, file=sys.stderr, flush=True)
    head = (f"{args.runs} runs per cell; designs: score file {args.file_targets:,} / {args.file_nontargets:,} "
            f"trials; crossed {args.speakers} speakers x {args.probes} probes (audit: + {args.distractors} "
            f"distractor models; incomplete: 30 % of non-targets missing); speaker effect {args.speaker_effect}; "
            f"shift {args.shift}; alpha {args.alpha}; "
            f"budget {args.budget_bits:.3g} bits; seed {args.seed}; {time.time() - t0:.0f} s on "
            f"{platform.machine()}, load {load0:.1f} -> {os.getloadavg()[0]:.1f}")
    if args.markdown:
        print(f"<!-- {cmd} -->\n{head}\n")
        print("| design | condition | delta | oracle eps (bits) | median eps low / high (bits) | median deff tar / non "
              "| eps high <= budget | eps low > budget | eps low <= oracle | oracle <= eps high | both |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")

        def pc(x):
            v, (lo, hi) = x
            return f"{100 * v:.1f} % ({100 * lo:.1f}-{100 * hi:.1f})"

        for r in results:
            dt, dn = r["median_deff"]
            print(f"| {r['design']} | {r['condition']} | {r['delta']:.3g} | {r['oracle_bits']:.2f} | "
                  f"{r['median_eps_low']:.2f} / {r['median_eps_high']:.2f} | {dt:.2f} / {dn:.2f} | "
                  f"{pc(r['protects_bound'])} | {pc(r['leaks_bound'])} | {pc(r['low_ok'])} | {pc(r['high_ok'])} | "
                  f"{pc(r['both'])} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
