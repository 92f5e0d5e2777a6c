#!/usr/bin/env python
"""Size, power and interval coverage of vpeval's verdict, by simulated audits.

Every simulated audit has the demo's structure: ``--speakers`` evaluation speakers (demo: 10) with 5 probes each,
enrolled among ``--speakers + --distractors`` models (demo: 10 + 101), ``--attackers`` attackers (demo: 22 per system
since its adapted and channel attackers; the default 16 is the count of the first runs in docs/verdict_calibration.md), two
attack trial types (oa, aa), each with its verification trials (every probe against every model) and its 1-to-N
matrix, i.e. the family of :func:`vpeval.analysis.families.audit_verdict`. Scores are

    s[a, t, probe i, model m] = 0.7 u[spk(i), m] + 0.5 v[a, t, spk(i), m] + e[a, t, i, m]   (all N(0, 1))

so that attackers are correlated (``u`` is shared), and every probe of a speaker shares its pair effects with
every model (the speaker structure the permutation must respect). Conditions:

- ``null``: the above, perfect secrecy (the same-speaker pair is not special);
- ``counterexample``: the worst-case paper's case, target scores with twice the standard deviation of the
  non-targets and the same mean (EER near 50 %, large worst case), for every attacker;
- ``selective-P``: a share P of the speakers (at least one) unprotected, their target scores raised by
  ``--shift`` standard deviations times an attacker strength drawn in [0.5, 1]; the others perfectly hidden.

Reported per condition: the share of each verdict word over ``--runs`` seeded audits, the rejection rate with
its binomial 95 % interval (Clopper-Pearson), the median worst case and noise floor, and the coverage of the
90 % worst-case interval: the share of runs whose interval holds the condition's median worst case over all its
runs (the estimand: the worst case this design shows at this sample size).

    python benchmarks/verdict_calibration.py --runs 200 --markdown > docs/verdict_calibration.md
    python benchmarks/verdict_calibration.py --runs 20 --n-perm 199 --quick        # smoke run
    python benchmarks/verdict_calibration.py --from-json a.json b.json --markdown --plot docs/verdict_calibration.png

Takes about 1.5 s per audit at --n-perm 199 on one core.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import time

import numpy as np
from simulation_common import clopper_pearson, design_parser  # benchmarks/, the script's folder, is on sys.path

from vpeval.analysis import OneToNInput, TrialInput, secrecy_test
from vpeval.analysis.verdict import DEFAULT_BUDGET_BITS, VERDICTS, decide
from vpeval.io.trials import Trials
from vpeval.pipeline.protocols import OneToN


def simulate_family(rng, condition: str, n_spk: int, n_dis: int, n_att: int, n_probe: int = 5,
                    shift: float = 4.0, types=("oa", "aa")):
    """Members (TrialInput, OneToNInput lists) of one simulated audit (module docstring)."""
    spk = np.array([f"s{i:03d}" for i in range(n_spk)])
    models = np.r_[spk, np.array([f"d{i:03d}" for i in range(n_dis)])]
    M = models.size
    probe_spk_idx = np.repeat(np.arange(n_spk), n_probe)
    probe_id = np.array([f"{spk[s]}-{k}" for s in range(n_spk) for k in range(n_probe)])
    probe_spk = spk[probe_spk_idx]
    P = probe_id.size
    true = probe_spk_idx  # eval speakers are the first columns
    target = np.zeros((P, M), dtype=bool)
    target[np.arange(P), true] = True
    u = rng.standard_normal((n_spk, M))
    leaky = np.zeros(n_spk, dtype=bool)
    if condition.startswith("selective-"):
        share = float(condition.split("-", 1)[1])
        k = max(1, int(round(share * n_spk)))
        leaky[rng.choice(n_spk, k, replace=False)] = True
    trials, one_to_n = [], []
    for t in types:
        for a in range(n_att):
            v = rng.standard_normal((n_spk, M))
            s = 0.7 * u[probe_spk_idx] + 0.5 * v[probe_spk_idx] + rng.standard_normal((P, M))
            if condition == "counterexample":
                s[target] *= 2.0
            elif condition.startswith("selective-"):
                strength = rng.uniform(0.5, 1.0)
                rows = leaky[probe_spk_idx]
                s[np.arange(P)[rows], true[rows]] += shift * strength * math.sqrt(1.74)
            name = f"att{a:02d}"
            tr = Trials(s.reshape(-1), target.reshape(-1), np.tile(models, P), np.repeat(probe_id, M),
                        source=f"{name}/{t}")
            trials.append(TrialInput(name, t, tr, np.tile(models, P), np.repeat(probe_spk, M)))
            one_to_n.append(OneToNInput(name, t, OneToN(s, true.astype(np.int64), probe_id, probe_spk, models,
                                                        t[0], t[1], "sim")))
    return trials, one_to_n


def run_condition(condition: str, args) -> dict:
    rows = []
    for r in range(args.runs):
        rng = np.random.default_rng([args.seed, r, sum(map(ord, condition))])
        trials, one_to_n = simulate_family(rng, condition, args.speakers, args.distractors, args.attackers,
                                           n_probe=args.probes, shift=args.shift)
        test = secrecy_test(trials, one_to_n, n_perm=args.n_perm, n_boot=args.n_boot, seed=r, alpha=args.alpha)
        v = decide(test, args.budget_bits)
        w = test.worst
        rows.append({"verdict": v.verdict, "rejected": test.rejected, "value": w.value, "floor": w.floor,
                     "lo": w.ci_low, "hi": w.ci_high, "eer": v.average["eer_rocch"] if v.average else None,
                     "eps_low": v.profile.eps_low, "eps_high": v.profile.eps_high, "delta": v.profile.delta})
    n = len(rows)
    k = sum(r["rejected"] for r in rows)
    med = float(np.median([r["value"] for r in rows]))
    cover = sum(r["lo"] <= med <= r["hi"] for r in rows) / n
    out = {"condition": condition, "runs": n, "rejected": k / n, "rejected_ci": clopper_pearson(k, n),
           "words": {w: sum(r["verdict"] == w for r in rows) / n for w in VERDICTS},
           "median_worst_bits": med, "median_floor_bits": float(np.median([r["floor"] for r in rows])),
           "coverage_90": cover, "median_lowest_eer": float(np.median([r["eer"] for r in rows])),
           "median_eps_low_bits": float(np.median([r["eps_low"] for r in rows])),
           "median_eps_high_bits": float(np.median([r["eps_high"] for r in rows])), "delta": rows[0]["delta"]}
    return out


def main(argv=None) -> int:
    ap = design_parser(__doc__, speakers=10, probes=5, distractors=101, n_perm=199,
                       helps={"probes": "probes (target trials) per speaker (demo: 5)"})
    ap.add_argument("--n-boot", type=int, default=100)
    ap.add_argument("--power-speakers", type=int, default=20,
                    help="evaluation speakers of the selective-failure conditions (5 %% of 20 is one speaker)")
    ap.add_argument("--attackers", type=int, default=16)
    ap.add_argument("--budget-bits", type=float, default=DEFAULT_BUDGET_BITS)
    ap.add_argument("--conditions", default="null,counterexample,selective-0.05,selective-0.1,selective-0.2")
    ap.add_argument("--quick", action="store_true", help="4 attackers, 31 distractors (a smoke run)")
    ap.add_argument("--json", type=str, default=None, help="also write the results to this JSON file")
    ap.add_argument("--plot", type=str, default=None, help="also draw the rejection rates and coverage (PNG)")
    ap.add_argument("--from-json", nargs="+", default=None,
                    help="render the table (and --plot) from JSON files written by earlier runs, run nothing")
    args = ap.parse_args(argv)
    if args.from_json:
        setups, results = [], []
        for f in args.from_json:
            with open(f) as fh:
                d = json.load(fh)
            setups.append(d["setup"])
            results += d["results"]
        _render(results, setups, args, argv)
        return 0
    if args.quick:
        args.attackers, args.distractors = 4, 31
    t0 = time.time()
    load0 = os.getloadavg()[0]
    results = []
    base_speakers = args.speakers
    for spec in args.conditions.split(","):
        c, _, n = spec.partition("@")  # "null@40": the condition with 40 evaluation speakers
        args.speakers = int(n) if n else (args.power_speakers if c.startswith("selective-") else base_speakers)
        res = run_condition(c, args)
        res["speakers"] = args.speakers
        res["probes"] = args.probes
        results.append(res)
        print(json.dumps(res), file=sys.stderr, flush=True)
    args.speakers = base_speakers
    head = (f"{args.runs} runs per condition, {args.attackers} attackers x (oa, aa) x (eps_max, D_ECE, LID_max, "
            f"ALID), {args.distractors} distractors, {args.probes} probes per speaker, n_perm {args.n_perm}, n_boot "
            f"{args.n_boot}, alpha {args.alpha}, budget {args.budget_bits:.3g} bits, shift {args.shift}, seed "
            f"{args.seed}; {time.time() - t0:.0f} s on {platform.machine()} (python {platform.python_version()}), "
            f"load {load0:.1f} -> {os.getloadavg()[0]:.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"setup": head, "results": results}, f, indent=1)
    _render(results, [head], args, argv)
    return 0


def _render(results, setups, args, argv) -> None:
    if args.plot:
        _plot(results, args.plot, args.alpha)
    if args.markdown:
        print(f"<!-- python benchmarks/verdict_calibration.py {' '.join(argv or sys.argv[1:])} -->")
        for head in setups:
            print(head + "\n")
        print("| condition | speakers | probes per speaker | rejected (95 % CI) | leaks | partial | inconclusive | protects | "
              "median worst case (bits) | median noise floor (bits) | delta | median eps low / high (bits) | "
              "90 % interval coverage | median lowest EER |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in results:
            w = r["words"]
            lo, hi = r["rejected_ci"]
            print(f"| {r['condition']} | {r['speakers']} | {r.get('probes', 5)} | {100 * r['rejected']:.1f} % ({100 * lo:.1f}-{100 * hi:.1f}) "
                  f"| {100 * w['leaks']:.1f} % | {100 * w['partial']:.1f} % | {100 * w['inconclusive']:.1f} % | "
                  f"{100 * w['protects']:.1f} % | {r['median_worst_bits']:.2f} | {r['median_floor_bits']:.2f} | "
                  f"{r.get('delta', float('nan')):.3g} | {r.get('median_eps_low_bits', float('nan')):.2f} / "
                  f"{r.get('median_eps_high_bits', float('nan')):.2f} | "
                  f"{100 * r['coverage_90']:.0f} % | {100 * r['median_lowest_eer']:.1f} % |")
    else:
        for head in setups:
            print(head)
        for r in results:
            print(json.dumps(r))


def _plot(results, path: str, alpha: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax3, ax2) = plt.subplots(1, 3, figsize=(12, 3.6))
    names = [f"{r['condition']} ({r.get('speakers', '?')} spk"
             + (f", {r['probes']} probes)" if r.get("probes", 5) != 5 else ")") for r in results]
    null = [r["condition"] == "null" for r in results]
    x = np.arange(len(names))
    rate = np.array([r["rejected"] for r in results])
    lo = np.array([r["rejected_ci"][0] for r in results])
    hi = np.array([r["rejected_ci"][1] for r in results])
    ax1.bar(x, 100 * rate, color=["grey" if n else "C0" for n in null])
    ax1.errorbar(x, 100 * rate, yerr=[100 * (rate - lo), 100 * (hi - rate)], fmt="none", color="k", capsize=3)
    ax1.axhline(100 * alpha, ls=":", color="r", label=f"alpha = {100 * alpha:g} %")
    ax1.set_xticks(x, names, rotation=30, ha="right", fontsize=8)
    ax1.set_ylabel("perfect secrecy rejected (%)")
    ax1.set_ylim(0, 105)
    ax1.legend(fontsize=8)
    ax1.set_title("size (null) and power", fontsize=9)
    ax3.bar(x, [100 * r["words"]["protects"] for r in results], color=["grey" if n else "C3" for n in null])
    ax3.set_xticks(x, names, rotation=30, ha="right", fontsize=8)
    ax3.set_ylabel("verdict 'protects' (%)")
    ax3.set_ylim(0, 105)
    ax3.set_title("'protects' (grey: perfectly secret; red: leaking)", fontsize=9)
    ax2.bar(x, [100 * r["coverage_90"] for r in results], color="C2")
    ax2.axhline(90, ls=":", color="k", label="nominal 90 %")
    ax2.set_xticks(x, names, rotation=30, ha="right", fontsize=8)
    ax2.set_ylabel("interval holds the median worst case (%)")
    ax2.set_ylim(0, 105)
    ax2.legend(fontsize=8)
    ax2.set_title("coverage of the 90 % worst-case interval", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
