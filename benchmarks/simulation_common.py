"""What the simulation scripts share (verdict_calibration.py, profile_calibration.py, secrecy_size.py): the
Clopper-Pearson interval of a rate, and the options of a simulated design, so that ``--speakers`` or ``--shift``
mean the same in each. Imported from the script's own folder (first on ``sys.path`` when a script runs)."""

from __future__ import annotations

import argparse


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) two-sided interval of a binomial rate: ``k`` events in ``n`` runs."""
    from scipy.stats import beta

    a = (1 - level) / 2
    lo = 0.0 if k == 0 else float(beta.ppf(a, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - a, k + 1, n - k))
    return lo, hi


def design_parser(doc: str, *, speakers: int, probes: int, distractors: int, helps: dict | None = None,
                  runs: int = 200, shift: float = 4.0, alpha: float = 0.05, seed: int = 2026,
                  n_perm: int | None = None) -> argparse.ArgumentParser:
    """A parser (described by the first paragraph of ``doc``) with the options every simulation script has, at
    the script's defaults: ``--runs``, ``--speakers``, ``--probes``, ``--distractors``, ``--shift`` (the leak's
    shift of the target scores), ``--alpha``, ``--seed``, ``--markdown``, and ``--n-perm`` (the test's
    relabellings) when ``n_perm`` is given; ``helps`` gives an option (by its dest) its help text. The script
    adds its own options."""
    helps = helps or {}
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    for name, kind, default in (("runs", int, runs), ("speakers", int, speakers), ("probes", int, probes),
                                ("distractors", int, distractors), ("shift", float, shift),
                                ("alpha", float, alpha), ("seed", int, seed)):
        ap.add_argument(f"--{name}", type=kind, default=default, help=helps.get(name))
    ap.add_argument("--markdown", action="store_true", help=helps.get("markdown"))
    if n_perm is not None:
        ap.add_argument("--n-perm", type=int, default=n_perm, help=helps.get("n_perm"))
    return ap
