"""The histogram bins of linkability ``D<->sys`` and its small-sample caveat (:func:`linkability_caveat`): below
:data:`LINKABILITY_MIN_PER_BIN` trials per bin of the sparser class the histogram estimate is biased upwards
(measured in :func:`vpeval.metrics.verification.linkability`'s docstring; ``benchmarks/linkability_bias.py``).
Names re-exported by :mod:`vpeval.metrics.verification`."""

from __future__ import annotations

from ..errors import SmallSampleWarning, user_stacklevel

__all__ = ["LINKABILITY_MIN_PER_BIN", "LINKABILITY_WARNING", "linkability_caveat", "warn_small_linkability",
           "default_linkability_bins"]

#: Trials per histogram bin of the sparser class (``min(n_tar, n_non) / n_bins``) below which linkability is
#: flagged: from 30 on its mean over uninformative scores fell below 0.05 in every configuration measured
#: (:func:`~vpeval.metrics.verification.linkability`'s table; ``benchmarks/linkability_bias.py``).
LINKABILITY_MIN_PER_BIN = 30

#: The text of linkability's :class:`~vpeval.errors.SmallSampleWarning` (one text, so that a command shows it once
#: however many score sets it reads; the counts are in each value's caveat).
LINKABILITY_WARNING = (
    f"linkability D<->sys rests on fewer than {LINKABILITY_MIN_PER_BIN} trials per histogram bin of the sparser "
    "class: at such counts its mean over uninformative scores exceeds 0.05 (0.73 at 1 target and 99 non-target "
    "trials, true value 0), so it overstates linkability; the caveat beside the value (--json, report.json) gives "
    "the counts (vpeval.metrics.verification.linkability_caveat)")


def linkability_caveat(n_tar: int, n_non: int, n_bins: int | None = None) -> str | None:
    """The small-sample caveat of :func:`~vpeval.metrics.verification.linkability` on these counts, or None when
    they suffice.

    Parameters
    ----------
    n_tar, n_non : int
        Target and non-target trials.
    n_bins : int, optional
        Histogram bins (default :func:`default_linkability_bins` of ``n_tar``).

    Returns
    -------
    str or None
        A short phrase with the trials per bin of the sparser class (``min(n_tar, n_non) / n_bins``), when below
        :data:`LINKABILITY_MIN_PER_BIN` (the rule and its measurement:
        :func:`~vpeval.metrics.verification.linkability`); short, since a report holds one per score set.

    Examples
    --------
    >>> linkability_caveat(1, 99)
    'biased upwards: 0.1 trials per bin in the sparser class, below 30'
    >>> linkability_caveat(3000, 5000) is None
    True
    """
    n_bins = default_linkability_bins(n_tar) if n_bins is None else int(n_bins)
    per = min(int(n_tar), int(n_non)) / n_bins
    if per >= LINKABILITY_MIN_PER_BIN:
        return None
    return f"biased upwards: {per:.3g} trials per bin in the sparser class, below {LINKABILITY_MIN_PER_BIN}"


def warn_small_linkability(n_tar: int, n_non: int, n_bins: int | None = None) -> str | None:
    """:func:`linkability_caveat`, issuing :data:`LINKABILITY_WARNING` (a
    :class:`~vpeval.errors.SmallSampleWarning`) when there is one."""
    note = linkability_caveat(n_tar, n_non, n_bins)
    if note is not None:
        import warnings

        warnings.warn(LINKABILITY_WARNING, SmallSampleWarning, stacklevel=user_stacklevel())
    return note


def default_linkability_bins(n_tar: int) -> int:
    """Default number of histogram bins of :func:`~vpeval.metrics.verification.linkability` for ``n_tar``
    target trials."""
    return max(10, min(n_tar // 10, 100))
