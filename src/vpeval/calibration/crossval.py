"""Calibration on held-out data: fit on one set and apply to another, or cross-validate grouped by speaker.

An LLR estimator applied to the trials it was fitted on is optimistic (PAV most of all: it is the best
monotone fit of those very labels).  Two honest protocols:

* **dev/eval**: :func:`fit_apply` fits on development trials and maps evaluation scores (it is
  ``calibrator.fit(tar, non).transform(scores)`` with estimator names resolved);
* **speaker-grouped cross-validation**: :func:`crossval_llr` splits the *speakers* into folds and maps every
  trial with a calibrator fitted only on trials that share no speaker fold with it, so no speaker is
  calibrated on its own trials.
"""

from __future__ import annotations

import copy

import numpy as np

from .._checks import as_scores
from ..errors import VpevalError
from .registry import make_calibrator

__all__ = ["fit_apply", "crossval_llr", "speaker_folds"]


def _calibrator(calibrator):
    if isinstance(calibrator, str):
        return make_calibrator(calibrator)
    if not (hasattr(calibrator, "fit") and hasattr(calibrator, "transform")):
        raise VpevalError(f"calibrator must be an estimator name or an object with fit/transform, got {calibrator!r}")
    return copy.deepcopy(calibrator)


def fit_apply(calibrator, tar, non, scores) -> np.ndarray:
    """Fit ``calibrator`` on (``tar``, ``non``) and return the LLRs (nats) of ``scores``.

    Parameters
    ----------
    calibrator : str or calibrator object
        An estimator name of :data:`vpeval.disclosure.ESTIMATORS` (``"pav"``, ``"logistic"``, ...) or an
        unfitted calibrator (copied; the argument is not modified).
    tar, non : array_like
        Training (development) target and non-target scores.
    scores : array_like
        Scores to map (evaluation set).

    Examples
    --------
    >>> fit_apply("gaussian", [1.0, 3.0], [-1.0, 1.0], [0.0, 1.0, 2.0])
    array([-2.,  0.,  2.])
    """
    return _calibrator(calibrator).fit(tar, non).transform(scores)


def speaker_folds(speakers, n_folds: int, weights=None) -> dict:
    """Assign speakers to ``n_folds`` folds, balancing ``weights`` (trial counts), independent of order.

    Speakers are taken by decreasing weight (ties: ascending speaker id, as strings) and each goes to the
    currently lightest fold (ties: lowest fold index).  Returns ``{speaker: fold}``.
    """
    spk = np.asarray(speakers).astype(str)
    uniq = np.unique(spk)
    if isinstance(n_folds, bool) or not isinstance(n_folds, (int, np.integer)) or n_folds < 2:
        raise VpevalError(f"n_folds must be an integer >= 2, got {n_folds!r}")
    if n_folds > uniq.size:
        raise VpevalError(f"n_folds={n_folds} exceeds the number of distinct speakers ({uniq.size})")
    if weights is None:
        w = dict(zip(*np.unique(spk, return_counts=True)))
    else:
        w = dict(weights)
    order = sorted(uniq.tolist(), key=lambda s: (-w.get(s, 0), s))
    load = [0] * n_folds
    out = {}
    for s in order:
        f = min(range(n_folds), key=lambda i: (load[i], i))
        out[s] = f
        load[f] += w.get(s, 0)
    return out


def _labels(labels, n):
    lab = np.asarray(labels)
    if lab.shape != (n,):
        raise VpevalError(f"labels: expected shape ({n},) like scores, got {lab.shape}")
    if lab.dtype == bool:
        return lab
    if lab.dtype.kind in "iuf" and np.all((lab == 0) | (lab == 1)):
        return lab == 1
    if lab.dtype.kind in "US":
        ok = np.isin(lab, ["target", "nontarget"])
        if ok.all():
            return lab == "target"
        i = int(np.flatnonzero(~ok)[0])
        raise VpevalError(f"labels: expected 'target' or 'nontarget', got {lab[i]!r} at index {i}")
    raise VpevalError("labels: expected booleans, 0/1, or 'target'/'nontarget'")


def crossval_llr(scores, labels, groups, calibrator, n_folds: int = 5) -> np.ndarray:
    """Cross-validated LLRs (nats): every trial is mapped by a calibrator fitted without its speakers.

    Parameters
    ----------
    scores : array_like of shape (n,)
        Scores of all trials.
    labels : array_like of shape (n,)
        ``True``/1/``"target"`` for target trials, ``False``/0/``"nontarget"`` for non-target trials.
    groups : array_like of shape (n,) or (n, 2)
        Speaker of each trial, or the (enrolment speaker, test speaker) pair.  Speakers are compared as
        strings.
    calibrator : str or calibrator object
        Estimator name (``"pav_laplace"``, ``"logistic"``, ``"gaussian"``, ...) or unfitted calibrator
        (copied for every fit).
    n_folds : int
        Number of speaker folds, ``2 <= n_folds <= number of speakers``.

    Returns
    -------
    ndarray of shape (n,)
        LLR of every trial in the input order.

    Raises
    ------
    VpevalError
        Bad shapes or labels, NaN scores, too many folds, or a training set without targets or without
        non-targets (or otherwise unfit for the estimator; the message names the held-out folds).

    Notes
    -----
    Speakers are split into folds by :func:`speaker_folds` (balanced by trial count, independent of the
    input order).  A trial whose speakers lie in the fold set ``K`` (one fold, or two for a cross-speaker
    pair) is mapped by a calibrator fitted on every trial none of whose speakers lies in ``K``.  With one
    speaker per trial this is ordinary grouped K-fold cross-validation (``n_folds`` fits); with pairs it
    takes up to ``n_folds (n_folds + 1) / 2`` fits and trains on fewer trials, the price of never letting a
    speaker of the held-out trial into training.  Deterministic: no randomness involved.

    Examples
    --------
    >>> scores = [2.0, 1.5, 0.1, -0.2, 1.8, 0.3, -0.4, 0.0]
    >>> labels = [1, 1, 0, 0, 1, 1, 0, 0]
    >>> spk = ["a", "a", "a", "a", "b", "b", "b", "b"]
    >>> llr = crossval_llr(scores, labels, spk, "gaussian", n_folds=2)   # a mapped by b's fit and back
    >>> bool(llr[0] > 0 > llr[3])
    True
    """
    s = as_scores(scores, "scores")
    n = s.size
    lab = _labels(labels, n)
    g = np.asarray(groups)
    if g.ndim == 1 and g.shape == (n,):
        g = g[:, None]
    elif not (g.ndim == 2 and g.shape[0] == n and g.shape[1] in (1, 2)):
        raise VpevalError(f"groups: expected shape ({n},) or ({n}, 2), got {g.shape}")
    g = g.astype(str)
    weights = dict(zip(*np.unique(g, return_counts=True)))
    folds = speaker_folds(g.ravel(), n_folds, weights)
    fmap = np.vectorize(folds.__getitem__, otypes=[np.int64])(g)
    # fold-membership mask of every trial: bit f set if one of its speakers is in fold f
    mask = np.zeros(n, dtype=np.int64)
    for c in range(fmap.shape[1]):
        mask |= np.left_shift(1, fmap[:, c])
    out = np.empty(n)
    for key in np.unique(mask):
        held = mask == key
        train = (mask & key) == 0
        tar, non = s[train & lab], s[train & ~lab]
        heldout = sorted(f for f in range(n_folds) if key >> f & 1)
        if tar.size == 0 or non.size == 0:
            raise VpevalError(
                f"cross-validation: holding out speaker fold(s) {heldout} leaves "
                f"{tar.size} target and {non.size} non-target training trials; use fewer folds"
            )
        cal = _calibrator(calibrator)
        try:
            cal.fit(tar, non)
        except VpevalError as exc:
            msg = f"cross-validation fit without speaker fold(s) {heldout}: {exc}"
            try:
                new = type(exc)(msg)
            except TypeError:  # an error type with another signature
                new = VpevalError(msg)
            raise new from None
        out[held] = cal.transform(s[held])
    return out
