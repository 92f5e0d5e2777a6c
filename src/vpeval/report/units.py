"""The one unit convention of everything a person reads (HTML page, terminal, plots, ``vpeval verify``).

* Error rates (EER, Pmiss, Pfa, minDCF thresholds' rates, rank-k and identification rates): **percent**.
* Disclosure and information (eps_max, |LLR|, LID, ALID, LID_max, D_ECE, minCllr, Cllr, rank disclosure):
  **bits** (1 bit = ln 2 nats = log10 2 bans).
* privacy-ZEBRA tags are defined on eps_max in log10 units (bans); the tag letter is shown, not that number.

report.json and ``--json`` outputs keep machine units, named in every field or beside it (``eer_rocch`` a
fraction, ``*_nats``, ``*_bits``, ``unit`` fields); those names are unchanged.
"""

from __future__ import annotations

import math

__all__ = ["LN2", "UNITS_NOTE", "HIDDEN_KEYS", "to_display", "display_unit", "nats_to_bits", "display_metrics"]

LN2 = math.log(2.0)

UNITS_NOTE = (
    "Units on this page: error rates (EER, miss and false-alarm rates, identification rates) in percent; "
    "disclosure and information (eps_max, |LLR|, LID, ALID, D_ECE, minCllr, rank disclosure) in bits. "
    "1 bit = ln 2 = 0.693 nats = log10 2 = 0.301 bans. privacy-ZEBRA tags are defined on eps_max in log10 units; "
    "the ECE plots' horizontal axis is the prior log-odds in nats, as in the privacy-ZEBRA papers; fusion weights "
    "and calibration slopes are in nats of LLR per unit of score. "
    "report.json keeps machine units named in every field (EERs as fractions, eps_max_nats, alid_bits, ...)."
)


def display_unit(unit: str) -> tuple[float, str]:
    """Factor and unit turning a machine unit into the display one: fraction -> %, nats -> bits."""
    return {"fraction": (100.0, "%"), "nats": (1.0 / LN2, "bits")}.get(unit, (1.0, unit))


def to_display(value, unit: str):
    """``(value in display units, display unit)``; non-numbers pass through unchanged."""
    k, u = display_unit(unit)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value, u
    return value * k, u


def nats_to_bits(x: float) -> float:
    """``x / ln 2``."""
    return x / LN2


#: Verification-summary keys not shown to a person: the same eps_max in other units (the bits row stays).
HIDDEN_KEYS = ("eps_max", "eps_max_log10")


def display_metrics(summary) -> list[tuple[str, str, object, str, str]]:
    """``(key, name, value, unit, definition)`` of a :func:`vpeval.metrics.summary.verification_summary` list in
    the display convention: EERs in percent, eps_max once in bits; everything else as it is (minDCF is a
    normalised cost, linkability a number in [0, 1], its name marked when it carries the small-sample caveat of
    :func:`vpeval.metrics.verification.linkability_caveat`)."""
    out = []
    for m in summary:
        if m.key in HIDDEN_KEYS:
            continue
        value, unit, name = m.value, m.unit, m.name
        definition = m.definition
        if m.key.startswith("eer"):
            value, unit, definition = 100.0 * value, "%", definition.replace("0.5", "50 %")
        elif m.key == "eps_max_bits":
            name = "eps_max (worst-case disclosure)"
        elif m.key == "linkability":
            unit = "0 to 1"
            if getattr(m, "caveat", None):  # too few trials per histogram bin: said where the number is read
                name = f"{name} (biased up: few trials per bin)"
        out.append((m.key, name, value, unit, definition))
    return out
