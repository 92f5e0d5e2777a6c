"""How the SBLS ranking of systems depends on its free parameters (the beyond-EER paper's sensitivity study).

SBLS = alpha P_attr + beta P_assoc + gamma P_subgroup, with P_subgroup = omega (1 - max_g L_g) + (1 - omega)
min_g(1 - L_g) / max_g(1 - L_g) (:mod:`vpeval.metrics.attributes`). The weights and omega are choices, not
measurements. :func:`sbls_sweep` recomputes every system's SBLS over a grid of omegas (weights fixed) and over a
set of weight triples (omega fixed) from the parts already measured (``P_attr``, ``P_assoc`` and the subgroup
leakages ``L_g`` of each :class:`~vpeval.metrics.attributes.SBLSResult`: nothing is refitted), ranks the systems
under each setting (most private first: the highest SBLS) and says which settings change the ranking.
"""

from __future__ import annotations

from .attribute_parts import p_subgroup, sbls

__all__ = ["sbls_sweep", "DEFAULT_OMEGAS", "DEFAULT_WEIGHTS"]

#: Omegas of the sweep (the paper's default 0.7 among them).
DEFAULT_OMEGAS = (0.0, 0.25, 0.5, 0.7, 1.0)
#: (alpha, beta, gamma) triples of the sweep: the paper's default, equal weights, and each part emphasised.
DEFAULT_WEIGHTS = ((0.4, 0.4, 0.2), (1 / 3, 1 / 3, 1 / 3), (0.6, 0.2, 0.2), (0.2, 0.6, 0.2), (0.2, 0.2, 0.6))


def _ranking(values: dict) -> list:
    # most private first; equal SBLS ordered by name, so the ranking does not depend on the input order
    return sorted(values, key=lambda s: (-values[s], s))


def sbls_sweep(results: dict, omegas=DEFAULT_OMEGAS, weights=DEFAULT_WEIGHTS, *, base_weights=(0.4, 0.4, 0.2),
               base_omega: float = 0.7) -> dict:
    """SBLS of several systems over an omega sweep and a weight sweep, with the ranking under each setting.

    Parameters
    ----------
    results : dict name -> SBLSResult
        One measured result per system (e.g. each system's anonymized condition).
    omegas : sequence of float in [0, 1]
        Swept with the weights fixed at ``base_weights``.
    weights : sequence of (alpha, beta, gamma)
        Each in [0, 1], summing to 1; swept with omega fixed at ``base_omega``.
    base_weights, base_omega
        The reference setting (the paper's defaults); every ranking is compared with the ranking there.

    Returns
    -------
    dict
        ``"reference"``: ``{"alpha", "beta", "gamma", "omega", "ranking"}``; ``"rows"``: one dict per setting,
        ``{"sweep": "omega" | "weights", "alpha", "beta", "gamma", "omega", "sbls": {name: value},
        "ranking": [names, most private first], "ranking_changed": bool}``, omega rows first.

    Raises
    ------
    AttributeLeakageError
        Bad weights or omega (as :func:`~vpeval.metrics.attribute_parts.sbls` and ``p_subgroup``).

    Examples
    --------
    >>> from vpeval.metrics.attributes import SBLSResult
    >>> a = SBLSResult({}, {"f": 0.5, "m": 0.5}, "sex", 0.5, 0.5, 0.0, 0.0, 0.4, 0.4, 0.2, 0.7)  # even, high
    >>> b = SBLSResult({}, {"f": 0.0, "m": 0.3}, "sex", 0.5, 0.5, 0.0, 0.0, 0.4, 0.4, 0.2, 0.7)  # uneven, low
    >>> out = sbls_sweep({"A": a, "B": b}, omegas=(0.0, 1.0), weights=())
    >>> [(r["omega"], r["ranking"]) for r in out["rows"]]
    [(0.0, ['A', 'B']), (1.0, ['B', 'A'])]
    """
    names = list(results)

    def values(alpha, beta, gamma, omega):
        return {s: sbls(r.p_attr, r.p_assoc, p_subgroup(r.subgroup_leakage, omega), alpha=alpha, beta=beta,
                        gamma=gamma) for s, r in results.items()}

    ref = _ranking(values(*base_weights, base_omega))
    rows = []
    for o in omegas:
        v = values(*base_weights, float(o))
        rows.append({"sweep": "omega", "alpha": base_weights[0], "beta": base_weights[1], "gamma": base_weights[2],
                     "omega": float(o), "sbls": v, "ranking": _ranking(v), "ranking_changed": _ranking(v) != ref})
    for w in weights:
        a, b, g = (float(x) for x in w)
        v = values(a, b, g, base_omega)
        rows.append({"sweep": "weights", "alpha": a, "beta": b, "gamma": g, "omega": float(base_omega), "sbls": v,
                     "ranking": _ranking(v), "ranking_changed": _ranking(v) != ref})
    return {"reference": {"alpha": base_weights[0], "beta": base_weights[1], "gamma": base_weights[2],
                          "omega": base_omega, "ranking": ref}, "systems": names, "rows": rows}
