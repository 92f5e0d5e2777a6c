"""When the EER does not exist: trials that all carry one score (the worst-case paper, Sec. 4.3).

The EER is the error rate at a threshold where ``Pmiss = Pfa``. If every trial, target and non-target, has the
same score ``c`` (ideal LLRs of a system that reveals nothing are all 0), the decision rule ``score >= t`` has
only two operating points: accept everything (``Pmiss = 0``, ``Pfa = 1``) or reject everything (``Pmiss = 1``,
``Pfa = 0``). No threshold equalises the two error rates, so the EER is undefined there. The 50 % that
:func:`vpeval.rocch_eer`, :func:`vpeval.interp_eer` and :func:`vpeval.closest_eer` return is a convention: the
midpoint of those two points, which is also the maximum over target priors ``P`` of the minimum Bayes error
``min(P, 1 - P)`` (the ROCCH-EER as a maximum of Bayes risks); it is not a measured operating point.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from .._checks import as_tar_non

__all__ = ["eer_undefined_reason"]


def eer_undefined_reason(tar, non, *, scores_are_llrs: bool = False) -> Optional[str]:
    """Why the EER of these trials is undefined, or ``None`` if it is defined.

    Parameters
    ----------
    tar, non : array_like, 1-D
        Target and non-target scores (non-empty, no NaN; as :func:`vpeval.rocch_eer`).
    scores_are_llrs : bool
        The scores are LLRs (nats): the message then says they carry no information and what their ideal value
        is.

    Returns
    -------
    str or None
        A one-paragraph explanation when every trial of both classes has the same score (exact equality,
        ``-0.0 == 0.0``); ``None`` otherwise (at least two distinct scores give an operating point strictly
        between "accept all" and "reject all", and the step DET curve meets ``Pmiss = Pfa`` or crosses it).

    Raises
    ------
    InvalidScoresError
        Empty class or NaN score.

    Notes
    -----
    The worst-case paper, Sec. 4.3: the ideal LLRs of a system that hides everything
    are 0 for every trial, and their EER is undefined, while their worst-case disclosure is exactly 0.
    Order-independent: depends only on the set of scores.

    Examples
    --------
    >>> print(eer_undefined_reason([0.0, 0.0], [0.0, 0.0, 0.0]) is not None)
    True
    >>> eer_undefined_reason([0.0, 1.0], [0.0]) is None
    True
    """
    t, n = as_tar_non(tar, non)
    c = t[0]
    if not (np.all(t == c) and np.all(n == c)):
        return None
    what = "LLR" if scores_are_llrs else "score"
    unit = " nats" if scores_are_llrs else ""
    head = (f"EER undefined: all {t.size + n.size} trials (both classes) carry the same {what} {float(c):.6g}{unit}"
            + (", so the LLRs carry no information (a system that hides everything has ideal LLRs 0 for every "
               "trial, the worst-case paper, Sec. 4.3)" if scores_are_llrs else "") + ". ")
    return head + (
        "Every threshold either accepts all trials (Pmiss 0 %, Pfa 100 %) or rejects all (Pmiss 100 %, Pfa 0 %): "
        "no threshold gives Pmiss = Pfa. The 50 % shown is a convention (the midpoint of those two points, equal "
        "to the maximum over priors P of the minimum Bayes error min(P, 1 - P)), not a measured operating point.")
