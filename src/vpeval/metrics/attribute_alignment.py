"""Permutation alignment of an attribute attacker's classes (the paper's ``mAUC*``; rules in the docstring of
:mod:`vpeval.metrics.attributes`): the class x column matrices of AUCs (:func:`auc_matrix`) and recalls
(:func:`recall_matrix`), and the permutation maximising their mean (:func:`best_alignment`, exact search up to
:data:`EXACT_SEARCH_MAX_K` classes, Hungarian beyond)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment

from .attribute_parts import AttributeLeakageError, _auc, _classes, _labels, _scores, confusion_matrix

__all__ = ["EXACT_SEARCH_MAX_K", "Alignment", "auc_matrix", "recall_matrix", "best_alignment"]


EXACT_SEARCH_MAX_K = 7
_TIE_TOL = 1e-12


def auc_matrix(y_true, scores, classes=None) -> np.ndarray:
    """One-vs-rest AUC of every score column for every true class: the matrix the alignment maximises over.

    Parameters
    ----------
    y_true : array_like of str, shape (n,)
    scores : array_like of float, shape (n, K)
    classes : array_like of str, shape (K,), optional
        Column labels (default: sorted distinct labels of ``y_true``).

    Returns
    -------
    ndarray, shape (K, K)
        ``A[c, j]`` = AUC (ties 1/2) of column ``j`` with the utterances of true class ``classes[c]`` as
        positives and every other utterance as negatives. Row ``c`` is NaN when that class has no positive or
        no negative utterance. The diagonal is :func:`one_vs_rest_auc`.

    Examples
    --------
    >>> auc_matrix(["F", "F", "M", "M"], [[0, 1], [0, 1], [1, 0], [1, 0]])
    array([[0., 1.],
           [1., 0.]])
    """
    y = _labels(y_true)
    cls = _classes(classes, y)
    s = _scores(scores, y.size, cls.size)
    A = np.full((cls.size, cls.size), np.nan)
    for c, lab in enumerate(cls.tolist()):
        pos = y == lab
        if pos.any() and (~pos).any():
            A[c] = [_auc(s[pos, j], s[~pos, j]) for j in range(cls.size)]
    return A


def recall_matrix(y_true, y_pred, classes) -> np.ndarray:
    """``R[c, j] = #{true classes[c], predicted classes[j]} / #{true classes[c]}``; NaN rows for absent classes.

    The mean of the diagonal over the non-NaN rows is the macro balanced accuracy.

    >>> recall_matrix(["a", "a", "b"], ["b", "a", "a"], ["a", "b"])
    array([[0.5, 0.5],
           [1. , 0. ]])
    """
    C = confusion_matrix(y_true, y_pred, classes).astype(np.float64)
    n = C.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, C / np.where(n > 0, n, 1), np.nan)


@dataclass(frozen=True)
class Alignment:
    """Label permutation chosen by :func:`best_alignment`.

    Attributes
    ----------
    classes : list of str
        Class (and column) labels in score-column order.
    columns : tuple of int
        ``columns[c]`` = index of the score column (or predicted label) used for class ``classes[c]``.
    value : float
        Mean over the scored rows of ``M[c, columns[c]]`` (``mAUC*`` or ``BA*``).
    identity_value : float
        The same mean for the identity (the unaligned reading).
    method : str
        ``"exact search"`` (every permutation) or ``"hungarian"`` (:func:`scipy.optimize.linear_sum_assignment`).
    """

    classes: list
    columns: tuple
    value: float
    identity_value: float
    method: str

    @property
    def is_identity(self) -> bool:
        return self.columns == tuple(range(len(self.classes)))

    @property
    def mapping(self) -> dict:
        """True class -> label of the score column used for it."""
        return {c: self.classes[j] for c, j in zip(self.classes, self.columns)}

    def describe(self) -> str:
        """``"identity"`` or the moved classes, e.g. ``"F<-M, M<-F"`` (class <- column used for it)."""
        if self.is_identity:
            return "identity"
        return ", ".join(f"{c}<-{d}" for c, d in self.mapping.items() if c != d)

    def to_dict(self) -> dict:
        return {"mapping": self.mapping, "identity": self.is_identity, "value": self.value,
                "identity_value": self.identity_value, "method": self.method}


def best_alignment(M, classes=None, *, method: str = "auto") -> Alignment:
    """Bijection class -> column maximising the mean of ``M[c, pi(c)]`` over the rows without NaN.

    Parameters
    ----------
    M : array_like, shape (K, K)
        Per-class score of each column: :func:`auc_matrix` (soft scores) or :func:`recall_matrix` (labels).
        NaN rows (classes absent from the evaluation data) do not count; their columns are assigned last.
    classes : list of str, optional
        Labels (default ``"0" .. "K-1"``).
    method : {"auto", "exact", "hungarian"}
        ``"auto"``: exact search for ``K <=`` :data:`EXACT_SEARCH_MAX_K`, Hungarian beyond. Both reach the
        same maximum; they may choose different permutations when several tie.

    Returns
    -------
    Alignment
        Ties (within 1e-12) go to the identity, then to the lexicographically first permutation (exact
        search) or the solver's answer (Hungarian).

    Raises
    ------
    AttributeLeakageError
        ``M`` not square, no row without NaN, unknown ``method``.

    Examples
    --------
    >>> a = best_alignment([[0.0, 1.0], [1.0, 0.0]], ["F", "M"])
    >>> a.mapping, a.value, a.identity_value
    ({'F': 'M', 'M': 'F'}, 1.0, 0.0)
    """
    M = np.asarray(M, dtype=np.float64)
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] < 1:
        raise AttributeLeakageError(f"alignment: expected a square (K, K) matrix, got shape {M.shape}")
    K = M.shape[0]
    cls = [str(i) for i in range(K)] if classes is None else [str(c) for c in classes]
    if len(cls) != K:
        raise AttributeLeakageError(f"alignment: {len(cls)} class labels for a {K} x {K} matrix")
    if method not in ("auto", "exact", "hungarian"):
        raise AttributeLeakageError(f"alignment method must be 'auto', 'exact' or 'hungarian', got {method!r}")
    rows = np.flatnonzero(~np.isnan(M).any(axis=1))
    if rows.size == 0:
        raise AttributeLeakageError("alignment: no class has evaluation utterances")
    identity = float(M[rows, rows].mean())
    if method == "exact" or (method == "auto" and K <= EXACT_SEARCH_MAX_K):
        perms = np.array(list(itertools.permutations(range(K))), dtype=np.intp)  # identity first
        vals = M[rows[None, :], perms[:, rows]].mean(axis=1)
        best = int(np.flatnonzero(vals >= vals.max() - _TIE_TOL)[0])
        cols, name = tuple(int(j) for j in perms[best]), "exact search"
    else:
        r, c = linear_sum_assignment(M[rows], maximize=True)
        cols_arr = np.full(K, -1, dtype=np.intp)
        cols_arr[rows[r]] = c
        free = np.setdiff1d(np.arange(K), c)
        cols_arr[cols_arr < 0] = free  # absent classes take the unused columns in order
        cols, name = tuple(int(j) for j in cols_arr), "hungarian"
        if identity >= float(M[rows, cols_arr[rows]].mean()) - _TIE_TOL:
            cols = tuple(range(K))
    value = float(M[rows, np.asarray(cols)[rows]].mean())
    return Alignment(cls, cols, value, identity, name)


