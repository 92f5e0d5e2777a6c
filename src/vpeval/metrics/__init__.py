"""Metrics: pure functions over NumPy arrays, one module per family."""

from .verification import (
    DETCurve,
    act_dcf,
    cllr,
    det_curve,
    eer,
    interp_eer,
    closest_eer,
    closest_eer_exact,
    linkability,
    min_cllr,
    min_dcf,
    rocch,
    rocch_eer,
)
from .zebra import ZebraResult, d_ece, ece_profile, zebra, zebra_tag

__all__ = [
    "DETCurve", "det_curve", "eer", "rocch_eer", "interp_eer", "closest_eer", "closest_eer_exact",
    "rocch", "min_dcf", "act_dcf", "cllr",
    "min_cllr", "linkability", "ZebraResult", "zebra", "zebra_tag", "d_ece", "ece_profile",
]
