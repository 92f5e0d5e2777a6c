r"""Soft-biometric leakage: what an attribute attacker still infers (sex, age group, accent) from embeddings.

Source: the soft-biometric leakage score (SBLS) of S. Seo, O. Aulov, P. J. Phillips, "Measuring soft
biometric leakage in speaker de-identification systems", arXiv:2509.14469 (2025), the companion of the
multi-dimensional evaluation of speaker de-identification (Seo et al., arXiv:2508.14012). The three parts
and their combination below follow the issue's statement of that paper; equation numbers are not repeated
(not verified against the original), and the subgroup leakage ``L_g`` is vpeval's own definition. Higher
SBLS = more privacy (less leakage); every part is in [0, 1].

.. math::

    \mathrm{SBLS} = \alpha P_\mathrm{attr} + \beta P_\mathrm{assoc} + \gamma P_\mathrm{subgroup},
    \qquad \alpha + \beta + \gamma = 1 \ (\text{defaults } 0.4, 0.4, 0.2)

Permutation alignment (the paper's ``mAUC*``)
---------------------------------------------
An attacker whose class scores come out *swapped* after anonymization (its "F" column now fires for male
speakers) still reveals the attribute perfectly: anybody holding the scores and a few labelled utterances can
undo the swap. The paper therefore scores the label permutation that maximises the mean AUC. With
``A[c, j]`` the one-vs-rest AUC of score column ``j`` for true class ``c`` (class ``c`` against every other
utterance), the alignment is the bijection ``pi`` (class -> column) maximising
``mAUC*(pi) = mean_c A[c, pi(c)]`` over the classes ``c`` with evaluation utterances. The objective is a sum
of per-class terms, so the maximisation is a linear assignment problem: for ``K <= 7`` every one of the
``K!`` permutations is tried (exact search); beyond, :func:`scipy.optimize.linear_sum_assignment` (the
Hungarian algorithm, also exact for this objective) solves it. Ties between permutations (within
``1e-12``) are broken in favour of the identity, then of the first permutation in lexicographic order
(exact search) or of the solver's answer (Hungarian). Every aligned quantity below uses the aligned scores
``S*[:, c] = S[:, pi(c)]``; the chosen alignment is reported (true class -> score column used for it), and
the unaligned ("raw") readings are reported beside, named ``*_unaligned``.

The alignment is chosen on the evaluation data it is scored on, so it can only raise the leakage: for a
chance attacker with ``K = 2`` complementary scores, ``mAUC* = max(mAUC, 1 - mAUC) >= 0.5``, i.e. a
slightly optimistic reading of the attacker, as in the paper.

Parts
-----
* ``P_attr = 1 - mean_a max(0, mAUC*_a - 0.5) / 0.5`` where ``mAUC*_a`` is the aligned mean over the classes
  of attribute ``a`` of the one-vs-rest ROC AUC of the attacker's class scores (ties count 1/2: the
  Mann-Whitney statistic with mid-ranks). Classes with no evaluation utterance (no positives) are skipped and
  listed. The unaligned reading ``P_attr_unaligned`` uses the raw columns.
* Hard-prediction variant (attackers that output labels only, :func:`soft_biometric_leakage_labels`):
  ``P_attr = 1 - mean_a max(0, BA*_a - 1/K_a) / (1 - 1/K_a)`` where ``BA*_a`` is the macro balanced accuracy
  (mean over the classes with evaluation utterances of the per-class recall) of the aligned predictions and
  ``1/K_a`` its chance level (a random guess among ``K_a`` classes). Predicted labels are permuted by the
  bijection ``pi`` maximising ``BA*`` (the same assignment problem on the recall matrix
  ``R[c, j] = #{true c, predicted j} / #{true c}``).
* ``P_assoc = 1 - mean_a I(A; Â) / log K_a``: the mutual information between the true attribute ``A`` and
  the attacker's decision ``Â`` = argmax of the *aligned* class scores (ties go to the first class in
  ``classes`` order; hard variant: the aligned labels), computed from the confusion matrix (plug-in
  estimate), normalised by the entropy of a uniform ``K_a``-class attribute; numerator and denominator in
  the same base (bits are reported). ``I`` does not change when the decisions are relabelled, so the
  alignment only matters through argmax ties. The plug-in estimate is biased upwards on small samples: a
  chance attacker gets a small positive MI. With unbalanced classes even a perfect attacker reaches only
  ``I = H(A) < log K``, so ``P_assoc`` then stays above 0 (the paper's normalisation, kept as published).
* ``P_subgroup = omega (1 - max_g L_g) + (1 - omega) min_g(1 - L_g) / max_g(1 - L_g)`` (default
  ``omega = 0.7``) over demographic subgroups ``g`` (the values of one metadata column, or intersections
  built by the caller, e.g. ``sex + "/" + age_group``): the first term penalises the worst-treated group, the
  second the disparity between groups. When every group has ``L_g = 1`` the ratio is 0/0 and is taken as 1
  (all groups equally exposed). ``L_g`` is computed on the aligned scores (hard variant: on the one-hot
  encoding of the aligned predictions, where each AUC becomes ``(recall + specificity) / 2``).

Degenerate subgroups
--------------------
When the subgroups are the classes of one of the scored attributes (the default: subgroups = the first
attribute), ``P_subgroup`` measures that attribute again rather than a disparity between independent
demographic groups; for a binary attribute the two ``L_g`` even coincide, so the disparity term is 1 by
construction. :class:`SBLSResult` lists such attributes in ``subgroup_same_as`` and reports show the flag.

Subgroup leakage ``L_g`` (vpeval's definition)
------------------------------------------------------------------------
``L_g = mean_a max(0, AUC_{g,a} - 0.5) / 0.5`` where ``AUC_{g,a}`` is the mean over the classes ``c`` present
among the members of ``g`` of the AUC of class ``c``'s score for *members of g whose true class is c* against
*every evaluation utterance whose true class is not c*. It is the probability that the attacker ranks a
member of the group above an utterance of another class, rescaled so that chance is 0 and perfect ranking 1,
on the same scale as ``P_attr``. Why this and not accuracy or recall inside the group: a group often holds a
single class (the subgroups "female"/"male" for the attribute sex), and per-group accuracy is then maximised
by an attacker that always answers that class while learning nothing; a frozen attacker facing anonymized
speech is exactly such a biased attacker (McAdams shifts formants). The AUC uses negatives from outside the
group, so it is defined for single-class groups and immune to a shift of the decision threshold. For one
binary attribute with subgroups equal to its two classes the two ``L_g`` coincide (binary one-vs-rest AUCs
of complementary scores are equal), so the disparity term is then 1 by construction.

Attribute attacker
------------------
:class:`AttributeAttacker` is a scikit-learn logistic regression on L2-normalised, standardised embeddings,
trained on *original* speech of speakers disjoint from the evaluation speakers and applied frozen to the
evaluation utterances (original and anonymized). Class scores from any other classifier can be passed to
:func:`attribute_leakage` / :func:`soft_biometric_leakage` instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import itertools

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.stats import rankdata

from ..errors import VpevalError

__all__ = [
    "AttributeLeakageError",
    "one_vs_rest_auc",
    "confusion_matrix",
    "mutual_information",
    "p_attr",
    "p_attr_labels",
    "p_assoc",
    "p_subgroup",
    "sbls",
    "check_weights",
    "subgroup_leakage",
    "EXACT_SEARCH_MAX_K",
    "Alignment",
    "auc_matrix",
    "recall_matrix",
    "best_alignment",
    "AttributeLeakage",
    "attribute_leakage",
    "attribute_leakage_labels",
    "SBLSResult",
    "soft_biometric_leakage",
    "soft_biometric_leakage_labels",
    "AttributeAttacker",
]


class AttributeLeakageError(VpevalError):
    """Bad labels, class scores, weights or subgroups for the soft-biometric leakage metrics."""


# ------------------------------------------------------------------------------------------- validation


def _labels(y, name: str = "y_true") -> np.ndarray:
    arr = np.asarray(y)
    if arr.ndim != 1 or arr.size == 0:
        raise AttributeLeakageError(f"{name}: expected a non-empty 1-D array of labels, got shape {arr.shape}")
    arr = arr.astype(str)
    if (np.char.str_len(arr) == 0).any():
        i = int(np.flatnonzero(np.char.str_len(arr) == 0)[0])
        raise AttributeLeakageError(f"{name}: empty label at index {i}")
    return arr


def _classes(classes, y: np.ndarray) -> np.ndarray:
    cls = np.unique(y) if classes is None else np.asarray(classes).astype(str)
    if cls.ndim != 1 or np.unique(cls).size != cls.size:
        raise AttributeLeakageError(f"classes must be distinct labels, got {cls.tolist()}")
    if cls.size < 2:
        raise AttributeLeakageError(f"an attribute needs at least 2 classes, got {cls.tolist()}")
    unknown = np.setdiff1d(y, cls)
    if unknown.size:
        raise AttributeLeakageError(
            f"label {str(unknown[0])!r} is not one of the classes {cls.tolist()} (the attacker cannot answer it)")
    return cls


def _scores(scores, n: int, k: int) -> np.ndarray:
    try:
        s = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise AttributeLeakageError(f"scores: expected numbers ({exc})") from None
    if s.shape != (n, k):
        raise AttributeLeakageError(f"scores: expected shape ({n}, {k}) (utterances x classes), got {s.shape}")
    if np.isnan(s).any():
        raise AttributeLeakageError("scores contain NaN")
    return s


def _auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """Mann-Whitney AUC with mid-ranks: P(pos > neg) + P(pos == neg) / 2."""
    r = rankdata(np.concatenate([pos, neg]))
    return float((r[: pos.size].sum() - pos.size * (pos.size + 1) / 2) / (pos.size * neg.size))


# ---------------------------------------------------------------------------------------------- parts


def one_vs_rest_auc(y_true, scores, classes=None) -> dict[str, float]:
    """One-vs-rest ROC AUC of each class's score (ties count 1/2).

    Parameters
    ----------
    y_true : array_like of str, shape (n,)
    scores : array_like of float, shape (n, K)
        Column ``k`` scores class ``classes[k]`` (higher = more likely); probabilities, logits or any score.
    classes : array_like of str, shape (K,), optional
        Column labels (default: the sorted distinct labels of ``y_true``).

    Returns
    -------
    dict class -> AUC in [0, 1]
        Classes absent from ``y_true`` (no positives) or present in every row (no negatives) are left out.

    Raises
    ------
    AttributeLeakageError
        Shape mismatch, NaN, fewer than 2 classes, labels outside ``classes``.

    Examples
    --------
    >>> one_vs_rest_auc(["F", "F", "M", "M"], [[.9, .1], [.6, .4], [.4, .6], [.6, .4]])
    {'F': 0.875, 'M': 0.875}
    """
    y = _labels(y_true)
    cls = _classes(classes, y)
    s = _scores(scores, y.size, cls.size)
    out = {}
    for k, c in enumerate(cls.tolist()):
        pos = y == c
        if pos.any() and (~pos).any():
            out[c] = _auc(s[pos, k], s[~pos, k])
    return out


def confusion_matrix(y_true, y_pred, classes) -> np.ndarray:
    """Counts ``C[i, j]`` = #{true ``classes[i]``, predicted ``classes[j]``}; shape (K, K), int64."""
    y = _labels(y_true)
    p = _labels(y_pred, "y_pred")
    if p.shape != y.shape:
        raise AttributeLeakageError(f"y_pred has shape {p.shape}, y_true {y.shape}")
    cls = _classes(classes, y)
    _classes(cls, p)
    index = {c: i for i, c in enumerate(cls.tolist())}
    C = np.zeros((cls.size, cls.size), dtype=np.int64)
    np.add.at(C, (np.array([index[v] for v in y.tolist()]), np.array([index[v] for v in p.tolist()])), 1)
    return C


def mutual_information(confusion, base: float = 2.0) -> float:
    """Plug-in mutual information ``I(A; Â)`` of a confusion matrix of counts.

    ``I = sum_ij p_ij log(p_ij / (p_i. p_.j))`` with ``p = C / sum(C)`` and ``0 log 0 = 0``; ``base`` 2 gives
    bits, ``math.e`` nats.

    Raises
    ------
    AttributeLeakageError
        Not a 2-D array of non-negative finite counts with a positive total, or ``base <= 1``.

    Examples
    --------
    >>> mutual_information([[5, 0], [0, 5]])
    1.0
    >>> mutual_information([[2, 2], [2, 2]])
    0.0
    """
    C = np.asarray(confusion, dtype=np.float64)
    if C.ndim != 2 or not np.isfinite(C).all() or (C < 0).any() or not C.sum() > 0:
        raise AttributeLeakageError("confusion must be a 2-D array of non-negative counts with a positive total")
    if not base > 1:
        raise AttributeLeakageError(f"base must be > 1, got {base!r}")
    P = C / C.sum()
    pi, pj = P.sum(axis=1, keepdims=True), P.sum(axis=0, keepdims=True)
    nz = P > 0
    outer = (pi * pj)[nz]  # > 0 wherever P > 0
    mi = float(np.sum(P[nz] * np.log(P[nz] / outer)) / math.log(base))
    return max(mi, 0.0)


def p_attr(mauc) -> float:
    """``1 - mean_a max(0, mAUC_a - 0.5) / 0.5`` over attributes (one mAUC per attribute).

    >>> p_attr([1.0]), p_attr([0.5]), p_attr([0.3]), p_attr([0.75, 1.0])
    (0.0, 1.0, 1.0, 0.25)
    """
    m = np.atleast_1d(np.asarray(mauc, dtype=np.float64))
    if m.size == 0 or np.isnan(m).any() or (m < 0).any() or (m > 1).any():
        raise AttributeLeakageError(f"mAUC values must be in [0, 1], got {m.tolist()}")
    return float(1.0 - np.mean(np.maximum(0.0, m - 0.5) / 0.5))


def p_assoc(nmi) -> float:
    """``1 - mean_a I(A_a; Â_a) / log K_a`` (normalised mutual informations, one per attribute, in [0, 1]).

    >>> p_assoc([1.0]), p_assoc([0.0])
    (0.0, 1.0)
    """
    v = np.atleast_1d(np.asarray(nmi, dtype=np.float64))
    if v.size == 0 or np.isnan(v).any() or (v < 0).any() or (v > 1 + 1e-12).any():
        raise AttributeLeakageError(f"normalised MI values must be in [0, 1], got {v.tolist()}")
    return float(1.0 - np.mean(np.minimum(v, 1.0)))


def p_subgroup(leakage, omega: float = 0.7) -> float:
    """``omega (1 - max_g L_g) + (1 - omega) min_g(1 - L_g) / max_g(1 - L_g)``; 0/0 (all ``L_g = 1``) -> ratio 1.

    Parameters
    ----------
    leakage : array_like or dict of float in [0, 1]
        ``L_g`` per subgroup.
    omega : float in [0, 1]

    Examples
    --------
    >>> p_subgroup([0.0, 0.0]), round(p_subgroup([1.0, 1.0]), 12), round(p_subgroup([0.2, 0.6]), 12)
    (1.0, 0.3, 0.43)
    """
    vals = np.asarray(list(leakage.values()) if isinstance(leakage, dict) else leakage, dtype=np.float64)
    vals = np.atleast_1d(vals)
    if vals.size == 0 or np.isnan(vals).any() or (vals < 0).any() or (vals > 1).any():
        raise AttributeLeakageError(f"subgroup leakages must be in [0, 1], got {vals.tolist()}")
    if not 0.0 <= omega <= 1.0:
        raise AttributeLeakageError(f"omega must be in [0, 1], got {omega!r}")
    keep = 1.0 - vals
    ratio = 1.0 if keep.max() == 0 else keep.min() / keep.max()
    return float(omega * (1.0 - vals.max()) + (1.0 - omega) * ratio)


def check_weights(alpha: float, beta: float, gamma: float, tol: float = 1e-9) -> None:
    """Raise :class:`AttributeLeakageError` unless the weights are in [0, 1] and sum to 1 (within ``tol``)."""
    w = (alpha, beta, gamma)
    if any(not (0.0 <= x <= 1.0) for x in w):
        raise AttributeLeakageError(f"SBLS weights must each be in [0, 1], got alpha, beta, gamma = {w}")
    if abs(sum(w) - 1.0) > tol:
        raise AttributeLeakageError(
            f"SBLS weights must sum to 1, got alpha + beta + gamma = {alpha} + {beta} + {gamma} = {sum(w):.12g}")


def sbls(p_attr_value: float, p_assoc_value: float, p_subgroup_value: float, *, alpha: float = 0.4,
         beta: float = 0.4, gamma: float = 0.2) -> float:
    """``alpha P_attr + beta P_assoc + gamma P_subgroup`` (weights checked by :func:`check_weights`).

    >>> sbls(1.0, 1.0, 1.0), sbls(0.0, 0.0, 0.3)
    (1.0, 0.06)
    """
    check_weights(alpha, beta, gamma)
    return float(alpha * p_attr_value + beta * p_assoc_value + gamma * p_subgroup_value)


def subgroup_leakage(y_true, scores, classes, groups) -> dict[str, float]:
    """``L_g`` for one attribute (module docstring): chance-normalised AUC of each subgroup's members.

    Parameters
    ----------
    y_true : array_like of str, shape (n,)
    scores : array_like, shape (n, K)
    classes : array_like of str, shape (K,)
    groups : array_like of str, shape (n,)
        Subgroup of each utterance.

    Returns
    -------
    dict subgroup -> L_g in [0, 1]
        A subgroup whose classes have no negatives anywhere (cannot happen with >= 2 classes present) is
        left out.

    Examples
    --------
    >>> subgroup_leakage(["F", "F", "M", "M"], [[1, 0], [1, 0], [0, 1], [0, 1]], ["F", "M"], ["F", "F", "M", "M"])
    {'F': 1.0, 'M': 1.0}
    """
    y = _labels(y_true)
    cls = _classes(classes, y)
    s = _scores(scores, y.size, cls.size)
    g = _labels(groups, "groups")
    if g.shape != y.shape:
        raise AttributeLeakageError(f"groups has shape {g.shape}, y_true {y.shape}")
    out = {}
    for grp in np.unique(g).tolist():
        in_g = g == grp
        aucs = []
        for k, c in enumerate(cls.tolist()):
            pos = in_g & (y == c)
            neg = y != c
            if pos.any() and neg.any():
                aucs.append(_auc(s[pos, k], s[neg, k]))
        if aucs:
            out[grp] = float(max(0.0, np.mean(aucs) - 0.5) / 0.5)
    return out


# ------------------------------------------------------------------------------------------- alignment

#: Largest number of classes for which :func:`best_alignment` tries every permutation (7! = 5040).
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


def p_attr_labels(balanced_accuracy, n_classes) -> float:
    """Hard-prediction ``P_attr = 1 - mean_a max(0, BA_a - 1/K_a) / (1 - 1/K_a)`` (chance level ``1/K_a``).

    Parameters
    ----------
    balanced_accuracy : array_like of float in [0, 1]
        Macro balanced accuracy of the (aligned) predictions, one per attribute.
    n_classes : array_like of int >= 2
        ``K_a`` per attribute.

    >>> p_attr_labels([1.0], [3]), p_attr_labels([1 / 3], [3]), p_attr_labels([0.75], [2])
    (0.0, 1.0, 0.5)
    """
    b = np.atleast_1d(np.asarray(balanced_accuracy, dtype=np.float64))
    k = np.atleast_1d(np.asarray(n_classes, dtype=np.float64))
    if b.size == 0 or b.shape != k.shape or np.isnan(b).any() or (b < 0).any() or (b > 1 + 1e-12).any():
        raise AttributeLeakageError(f"balanced accuracies must be in [0, 1], one per attribute, got {b.tolist()}")
    if (k < 2).any():
        raise AttributeLeakageError(f"every attribute needs at least 2 classes, got {k.tolist()}")
    chance = 1.0 / k
    return float(1.0 - np.mean(np.maximum(0.0, np.minimum(b, 1.0) - chance) / (1.0 - chance)))


# ---------------------------------------------------------------------------------------------- bundle


@dataclass
class AttributeLeakage:
    """Leakage of one attribute (aligned readings, with the unaligned ones beside).

    Attributes
    ----------
    name : str
    classes : list of str
        Column order of the scores.
    variant : str
        ``"scores"`` (class scores, leakage from ``mAUC*``) or ``"labels"`` (hard predictions, from ``BA*``).
    alignment : Alignment
        Class -> column permutation (maximising mAUC for scores, balanced accuracy for labels).
    auc : dict class -> float
        One-vs-rest AUC per class of its aligned column (labels: of the one-hot aligned predictions).
    mauc : float
        Mean of ``auc`` (``mAUC*``; chance 0.5).
    auc_unaligned, mauc_unaligned : dict, float
        The same without alignment (raw columns).
    confusion : ndarray (K, K), int
        Rows true class, columns aligned decision, in ``classes`` order.
    mi_bits : float
        ``I(A; Â)`` in bits (plug-in) of the aligned decision.
    nmi, nmi_unaligned : float
        ``mi_bits / log2 K`` in [0, 1], aligned and raw decisions (equal unless argmax ties).
    accuracy, balanced_accuracy : float
        Of the aligned decision (chance: the majority share, and ``1/K``).
    balanced_accuracy_unaligned : float
    leakage, leakage_unaligned : float
        Chance-normalised leakage feeding ``P_attr``: ``max(0, mAUC - 0.5) / 0.5`` (scores) or
        ``max(0, BA - 1/K) / (1 - 1/K)`` (labels).
    n : int
        Evaluation utterances.
    skipped_classes : list of str
        Classes without positives in the evaluation set (left out of ``mauc``).
    """

    name: str
    classes: list
    auc: dict
    mauc: float
    confusion: np.ndarray
    mi_bits: float
    nmi: float
    accuracy: float
    balanced_accuracy: float
    n: int
    skipped_classes: list = field(default_factory=list)
    variant: str = "scores"
    alignment: Alignment | None = None
    auc_unaligned: dict = field(default_factory=dict)
    mauc_unaligned: float = float("nan")
    nmi_unaligned: float = float("nan")
    balanced_accuracy_unaligned: float = float("nan")
    leakage: float = float("nan")
    leakage_unaligned: float = float("nan")

    def to_dict(self) -> dict:
        return {"name": self.name, "variant": self.variant, "classes": self.classes,
                "alignment": None if self.alignment is None else self.alignment.to_dict(),
                "auc": self.auc, "mauc": self.mauc, "auc_unaligned": self.auc_unaligned,
                "mauc_unaligned": self.mauc_unaligned, "confusion": self.confusion.tolist(), "mi_bits": self.mi_bits,
                "nmi": self.nmi, "nmi_unaligned": self.nmi_unaligned, "accuracy": self.accuracy,
                "balanced_accuracy": self.balanced_accuracy,
                "balanced_accuracy_unaligned": self.balanced_accuracy_unaligned, "leakage": self.leakage,
                "leakage_unaligned": self.leakage_unaligned, "n": self.n,
                "chance_mauc": 0.5, "chance_balanced_accuracy": 1.0 / len(self.classes),
                "skipped_classes": self.skipped_classes}


def _decision_stats(y, pred, cls):
    C = confusion_matrix(y, pred, cls)
    mi = mutual_information(C, 2.0)
    present = C.sum(axis=1) > 0
    ba = float(np.mean(np.diag(C)[present] / C.sum(axis=1)[present]))
    return C, mi, min(1.0, mi / math.log2(cls.size)), ba


def _onehot(labels: np.ndarray, cls: np.ndarray) -> np.ndarray:
    return (labels[:, None] == cls[None, :]).astype(np.float64)


def _leakage_from(value: float, chance: float) -> float:
    return float(max(0.0, value - chance) / (1.0 - chance))


def attribute_leakage(y_true, scores, classes=None, *, name: str = "attribute",
                      alignment_method: str = "auto") -> AttributeLeakage:
    """Aligned AUCs, confusion matrix and mutual information of one attribute's class scores.

    Parameters
    ----------
    y_true : array_like of str, shape (n,)
    scores : array_like, shape (n, K)
        Class scores (column ``k`` for ``classes[k]``). They are permutation-aligned
        (:func:`best_alignment` on :func:`auc_matrix`); the decision is the argmax of the aligned scores
        (ties: first class in ``classes`` order).
    classes : array_like of str, shape (K,), optional
        Default: sorted distinct labels of ``y_true``.
    name : str
    alignment_method : {"auto", "exact", "hungarian"}

    Returns
    -------
    AttributeLeakage
        ``variant = "scores"``; ``leakage = max(0, mAUC* - 0.5) / 0.5``.

    Raises
    ------
    AttributeLeakageError
        See :func:`one_vs_rest_auc`; also when no class has both positives and negatives.

    Examples
    --------
    >>> r = attribute_leakage(["F", "F", "M", "M"], [[0, 1], [0, 1], [1, 0], [1, 0]], name="sex")
    >>> r.mauc_unaligned, r.mauc, r.alignment.mapping, r.nmi
    (0.0, 1.0, {'F': 'M', 'M': 'F'}, 1.0)
    """
    y = _labels(y_true)
    cls = _classes(classes, y)
    s = _scores(scores, y.size, cls.size)
    A = auc_matrix(y, s, cls)
    present = ~np.isnan(A).any(axis=1)
    if not present.any():
        raise AttributeLeakageError(f"{name}: no class has both positive and negative evaluation utterances")
    al = best_alignment(A, cls.tolist(), method=alignment_method)
    cols = np.asarray(al.columns)
    idx = np.flatnonzero(present)
    auc = {cls[c]: float(A[c, cols[c]]) for c in idx}
    auc_raw = {cls[c]: float(A[c, c]) for c in idx}
    pred = cls[np.argmax(s[:, cols], axis=1)]
    C, mi, nmi, ba = _decision_stats(y, pred, cls)
    _, _, nmi_raw, ba_raw = _decision_stats(y, cls[np.argmax(s, axis=1)], cls)
    mauc, mauc_raw = float(np.mean(list(auc.values()))), float(np.mean(list(auc_raw.values())))
    return AttributeLeakage(
        name=name, classes=cls.tolist(), auc=auc, mauc=mauc, confusion=C, mi_bits=mi, nmi=nmi,
        accuracy=float(np.trace(C) / C.sum()), balanced_accuracy=ba, n=int(y.size),
        skipped_classes=[c for c in cls.tolist() if c not in auc], variant="scores", alignment=al,
        auc_unaligned=auc_raw, mauc_unaligned=mauc_raw, nmi_unaligned=nmi_raw, balanced_accuracy_unaligned=ba_raw,
        leakage=_leakage_from(mauc, 0.5), leakage_unaligned=_leakage_from(mauc_raw, 0.5),
    )


def attribute_leakage_labels(y_true, y_pred, classes=None, *, name: str = "attribute",
                             alignment_method: str = "auto") -> AttributeLeakage:
    """Hard-prediction variant of :func:`attribute_leakage`: the attacker outputs labels only.

    The predicted labels are relabelled by the permutation maximising the macro balanced accuracy
    (:func:`best_alignment` on :func:`recall_matrix`); ``leakage = max(0, BA* - 1/K) / (1 - 1/K)``. The
    ``auc`` fields are those of the one-hot aligned predictions (``(recall + specificity) / 2`` per class).

    Parameters
    ----------
    y_true, y_pred : array_like of str, shape (n,)
    classes : array_like of str, shape (K,), optional
        Default: sorted distinct labels of ``y_true``; every prediction must be one of them.
    name : str
    alignment_method : {"auto", "exact", "hungarian"}

    Returns
    -------
    AttributeLeakage
        ``variant = "labels"``.

    Examples
    --------
    >>> r = attribute_leakage_labels(list("aabbcc"), list("bbccaa"), name="accent")
    >>> r.balanced_accuracy_unaligned, r.balanced_accuracy, r.leakage, r.alignment.describe()
    (0.0, 1.0, 1.0, 'a<-b, b<-c, c<-a')
    """
    y = _labels(y_true)
    p = _labels(y_pred, "y_pred")
    if p.shape != y.shape:
        raise AttributeLeakageError(f"y_pred has shape {p.shape}, y_true {y.shape}")
    cls = _classes(classes, y)
    _classes(cls, p)
    R = recall_matrix(y, p, cls)
    al = best_alignment(R, cls.tolist(), method=alignment_method)
    inv = np.empty(cls.size, dtype=np.intp)
    inv[np.asarray(al.columns)] = np.arange(cls.size)  # predicted column j -> class it stands for
    index = {c: i for i, c in enumerate(cls.tolist())}
    pred = cls[inv[np.array([index[v] for v in p.tolist()])]]
    C, mi, nmi, ba = _decision_stats(y, pred, cls)
    _, _, nmi_raw, ba_raw = _decision_stats(y, p, cls)
    auc = one_vs_rest_auc(y, _onehot(pred, cls), cls)
    auc_raw = one_vs_rest_auc(y, _onehot(p, cls), cls)
    if not auc:
        raise AttributeLeakageError(f"{name}: no class has both positive and negative evaluation utterances")
    chance = 1.0 / cls.size
    return AttributeLeakage(
        name=name, classes=cls.tolist(), auc=auc, mauc=float(np.mean(list(auc.values()))), confusion=C,
        mi_bits=mi, nmi=nmi, accuracy=float(np.trace(C) / C.sum()), balanced_accuracy=ba, n=int(y.size),
        skipped_classes=[c for c in cls.tolist() if c not in auc], variant="labels", alignment=al,
        auc_unaligned=auc_raw, mauc_unaligned=float(np.mean(list(auc_raw.values()))), nmi_unaligned=nmi_raw,
        balanced_accuracy_unaligned=ba_raw, leakage=_leakage_from(ba, chance),
        leakage_unaligned=_leakage_from(ba_raw, chance),
    )


@dataclass
class SBLSResult:
    """Result of :func:`soft_biometric_leakage`. All ``p_*`` and ``sbls`` in [0, 1], higher = more private.

    Attributes
    ----------
    attributes : dict name -> AttributeLeakage
    subgroup_leakage : dict subgroup -> L_g (mean over attributes, aligned scores)
    subgroup_name : str
    p_attr, p_assoc, p_subgroup, sbls : float
        The paper's readings (permutation-aligned).
    alpha, beta, gamma, omega : float
    variant : str
        ``"scores"`` or ``"labels"`` (hard predictions).
    p_attr_unaligned, p_subgroup_unaligned, sbls_unaligned : float
        The same without alignment (vpeval before the alignment; an attacker whose columns are swapped looks
        private here).
    subgroup_leakage_unaligned : dict
    subgroup_same_as : list of str
        Attributes whose classes are exactly the subgroups (degenerate ``P_subgroup``, module docstring).
    """

    attributes: dict
    subgroup_leakage: dict
    subgroup_name: str
    p_attr: float
    p_assoc: float
    p_subgroup: float
    sbls: float
    alpha: float
    beta: float
    gamma: float
    omega: float
    variant: str = "scores"
    p_attr_unaligned: float = float("nan")
    p_subgroup_unaligned: float = float("nan")
    sbls_unaligned: float = float("nan")
    subgroup_leakage_unaligned: dict = field(default_factory=dict)
    subgroup_same_as: list = field(default_factory=list)

    @property
    def subgroup_degenerate(self) -> bool:
        """True when the subgroups are the classes of a scored attribute."""
        return bool(self.subgroup_same_as)

    def to_dict(self) -> dict:
        return {"variant": self.variant, "attributes": {k: v.to_dict() for k, v in self.attributes.items()},
                "subgroup_leakage": self.subgroup_leakage, "subgroup_name": self.subgroup_name,
                "subgroup_degenerate": self.subgroup_degenerate, "subgroup_same_as": self.subgroup_same_as,
                "p_attr": self.p_attr, "p_assoc": self.p_assoc, "p_subgroup": self.p_subgroup, "sbls": self.sbls,
                "unaligned": {"p_attr": self.p_attr_unaligned, "p_subgroup": self.p_subgroup_unaligned,
                              "sbls": self.sbls_unaligned, "subgroup_leakage": self.subgroup_leakage_unaligned},
                "weights": {"alpha": self.alpha, "beta": self.beta, "gamma": self.gamma, "omega": self.omega}}


def _same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    """True when the labels ``a`` and ``b`` split the rows the same way (a bijective relabelling)."""
    pairs = np.unique(np.stack([a, b], axis=1), axis=0).shape[0]
    return pairs == np.unique(a).size == np.unique(b).size


def _sbls_core(y_true, preds, classes, variant, subgroups, subgroup_name, alpha, beta, gamma, omega,
               alignment_method) -> SBLSResult:
    check_weights(alpha, beta, gamma)
    if not 0.0 <= omega <= 1.0:
        raise AttributeLeakageError(f"omega must be in [0, 1], got {omega!r}")
    if not y_true:
        raise AttributeLeakageError("no attribute given")
    what = "scores" if variant == "scores" else "y_pred"
    if set(y_true) != set(preds):
        raise AttributeLeakageError(
            f"y_true and {what} must name the same attributes, got {sorted(y_true)} and {sorted(preds)}")
    names = list(y_true)
    classes = classes or {}
    n = None
    res, ys, aligned, raw = {}, {}, {}, {}
    for a in names:
        y = _labels(y_true[a], f"y_true[{a!r}]")
        if n is None:
            n = y.size
        elif y.size != n:
            raise AttributeLeakageError(f"attribute {a!r} has {y.size} labels, expected {n} like the others")
        if variant == "scores":
            r = attribute_leakage(y, preds[a], classes.get(a), name=a, alignment_method=alignment_method)
            cls = np.asarray(r.classes)
            s = _scores(preds[a], y.size, cls.size)
            aligned[a], raw[a] = s[:, np.asarray(r.alignment.columns)], s
        else:
            r = attribute_leakage_labels(y, preds[a], classes.get(a), name=a, alignment_method=alignment_method)
            cls = np.asarray(r.classes)
            p = _labels(preds[a], "y_pred")
            inv = np.empty(cls.size, dtype=np.intp)
            inv[np.asarray(r.alignment.columns)] = np.arange(cls.size)
            index = {c: i for i, c in enumerate(cls.tolist())}
            pi = np.array([index[v] for v in p.tolist()])
            aligned[a], raw[a] = _onehot(cls[inv[pi]], cls), _onehot(p, cls)
        res[a], ys[a] = r, y
    if subgroups is None:
        groups = ys[names[0]]
        subgroup_name = subgroup_name or names[0]
    else:
        groups = _labels(subgroups, "subgroups")
        subgroup_name = subgroup_name or "subgroup"
        if groups.size != n:
            raise AttributeLeakageError(f"subgroups has {groups.size} labels, expected {n}")
    same_as = [a for a in names if _same_partition(groups, ys[a])]

    def subgroup_term(score_sets):
        per_attr = [subgroup_leakage(ys[a], score_sets[a], res[a].classes, groups) for a in names]
        common = sorted(set.intersection(*(set(d) for d in per_attr)))
        return {g: float(np.mean([d[g] for d in per_attr])) for g in common}

    L, L_raw = subgroup_term(aligned), subgroup_term(raw)
    pa = 1.0 - float(np.mean([r.leakage for r in res.values()]))
    pa_raw = 1.0 - float(np.mean([r.leakage_unaligned for r in res.values()]))
    pb = p_assoc([r.nmi for r in res.values()])
    pb_raw = p_assoc([r.nmi_unaligned for r in res.values()])
    pc, pc_raw = p_subgroup(L, omega), p_subgroup(L_raw, omega)
    w = dict(alpha=alpha, beta=beta, gamma=gamma)
    return SBLSResult(res, L, subgroup_name, pa, pb, pc, sbls(pa, pb, pc, **w), alpha, beta, gamma, omega,
                      variant=variant, p_attr_unaligned=pa_raw, p_subgroup_unaligned=pc_raw,
                      sbls_unaligned=sbls(pa_raw, pb_raw, pc_raw, **w), subgroup_leakage_unaligned=L_raw,
                      subgroup_same_as=same_as)


def soft_biometric_leakage(
    y_true: dict,
    scores: dict,
    classes: dict | None = None,
    *,
    subgroups=None,
    subgroup_name: str | None = None,
    alpha: float = 0.4,
    beta: float = 0.4,
    gamma: float = 0.2,
    omega: float = 0.7,
    alignment_method: str = "auto",
) -> SBLSResult:
    """SBLS over any number of attributes from class scores, permutation-aligned (module docstring).

    Parameters
    ----------
    y_true : dict attribute -> array_like of str, shape (n,)
        True class of each evaluation utterance, per attribute (same ``n`` and row order for all).
    scores : dict attribute -> array_like, shape (n, K_a)
        Class scores of the attacker, per attribute.
    classes : dict attribute -> list of str, optional
        Column labels of each score matrix (default: sorted distinct true labels).
    subgroups : array_like of str, shape (n,), optional
        Demographic subgroup of each utterance for ``P_subgroup`` (default: the classes of the first
        attribute, a degenerate choice flagged in ``subgroup_same_as``).
    subgroup_name : str, optional
        Name shown in reports (default: the first attribute's name, or ``"subgroup"``).
    alpha, beta, gamma : float
        Weights, each in [0, 1], summing to 1 (paper defaults 0.4, 0.4, 0.2).
    omega : float in [0, 1]
        Weight of the worst-group term in ``P_subgroup`` (paper default 0.7).
    alignment_method : {"auto", "exact", "hungarian"}
        See :func:`best_alignment`.

    Returns
    -------
    SBLSResult
        ``p_attr`` from ``mAUC*``; the unaligned readings beside.

    Raises
    ------
    AttributeLeakageError
        Bad weights or omega, no attribute, mismatched keys or lengths, and every error of
        :func:`attribute_leakage`.

    Examples
    --------
    >>> r = soft_biometric_leakage({"sex": ["F", "F", "M", "M"]}, {"sex": [[0, 1], [0, 1], [1, 0], [1, 0]]})
    >>> r.p_attr, r.p_assoc, r.p_attr_unaligned, r.attributes["sex"].alignment.describe()
    (0.0, 0.0, 1.0, 'F<-M, M<-F')
    """
    return _sbls_core(y_true, scores, classes, "scores", subgroups, subgroup_name, alpha, beta, gamma, omega,
                      alignment_method)


def soft_biometric_leakage_labels(
    y_true: dict,
    y_pred: dict,
    classes: dict | None = None,
    *,
    subgroups=None,
    subgroup_name: str | None = None,
    alpha: float = 0.4,
    beta: float = 0.4,
    gamma: float = 0.2,
    omega: float = 0.7,
    alignment_method: str = "auto",
) -> SBLSResult:
    """SBLS of an attacker that outputs labels only (the paper's hard-prediction variant).

    ``P_attr = 1 - mean_a max(0, BA*_a - 1/K_a) / (1 - 1/K_a)`` with ``BA*`` the macro balanced accuracy of
    the aligned predictions; ``P_assoc`` from the aligned predictions; ``L_g`` from their one-hot encoding.
    Parameters as :func:`soft_biometric_leakage`, with ``y_pred`` (dict attribute -> predicted labels, shape
    (n,)) in place of the scores.

    Examples
    --------
    >>> r = soft_biometric_leakage_labels({"sex": ["F", "F", "M", "M"]}, {"sex": ["M", "M", "F", "F"]})
    >>> r.p_attr, r.p_assoc, r.p_attr_unaligned
    (0.0, 0.0, 1.0)
    """
    return _sbls_core(y_true, y_pred, classes, "labels", subgroups, subgroup_name, alpha, beta, gamma, omega,
                      alignment_method)


# --------------------------------------------------------------------------------------------- attacker


class AttributeAttacker:
    """Logistic-regression attribute classifier on embeddings (scikit-learn), trained once and frozen.

    Pipeline: L2-normalise each embedding, standardise each dimension (training mean and std), then
    :class:`sklearn.linear_model.LogisticRegression` (lbfgs, multinomial for K > 2, L2 penalty ``C``).

    Parameters
    ----------
    C : float, default 0.1
        Inverse L2 penalty. A moderate penalty because the training set of the bundled example (251
        utterances) is about as large as the embedding dimension (256), where an unpenalised fit separates
        the training data and extrapolates poorly.
    max_iter : int

    Attributes
    ----------
    classes_ : ndarray of str
        Column order of :meth:`predict_scores` (sorted labels).

    Notes
    -----
    Training rows are put in a canonical order (by label, then embedding values) before fitting, so the fit
    does not depend on row order. Requires scikit-learn.
    """

    def __init__(self, C: float = 0.1, max_iter: int = 5000):
        try:
            ok = bool(np.isfinite(C) and C > 0)
        except TypeError:
            ok = False
        if not ok:
            raise AttributeLeakageError(f"C (inverse L2 penalty) must be a positive finite number, got {C!r}")
        self.C = C
        self.max_iter = max_iter

    def fit(self, X, y) -> "AttributeAttacker":
        """Fit on embeddings ``X`` (n, d) with labels ``y`` (n,); at least 2 classes."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import Normalizer, StandardScaler

        X = np.asarray(X, dtype=np.float64)
        y = _labels(y, "training labels")
        if X.ndim != 2 or X.shape[0] != y.size:
            raise AttributeLeakageError(f"training embeddings have shape {X.shape}, labels {y.shape}")
        if not np.isfinite(X).all():
            raise AttributeLeakageError("training embeddings contain NaN or inf")
        if np.unique(y).size < 2:
            raise AttributeLeakageError(f"the attacker needs at least 2 training classes, got {np.unique(y).tolist()}")
        order = np.lexsort([X[:, j] for j in range(X.shape[1] - 1, -1, -1)] + [y])
        self.model_ = make_pipeline(Normalizer(), StandardScaler(),
                                    LogisticRegression(C=self.C, max_iter=self.max_iter))
        self.model_.fit(X[order], y[order])
        self.classes_ = np.asarray(self.model_.classes_).astype(str)
        self.n_train_ = int(y.size)
        return self

    def predict_scores(self, X) -> np.ndarray:
        """Class posteriors (n, K) under the training prior, columns in ``classes_`` order."""
        if not hasattr(self, "model_"):
            raise AttributeLeakageError("AttributeAttacker is not fitted; call fit(X, y) first")
        X = np.asarray(X, dtype=np.float64)
        if not np.isfinite(X).all():
            raise AttributeLeakageError("embeddings contain NaN or inf")
        return self.model_.predict_proba(X)
