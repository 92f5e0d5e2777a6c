"""The parts of the soft-biometric leakage score and their checks (formulas in the docstring of
:mod:`vpeval.metrics.attributes`): one-vs-rest AUCs, confusion matrix, mutual information, ``P_attr`` (from
mAUC or from balanced accuracy), ``P_assoc``, ``P_subgroup`` with the subgroup leakage ``L_g``, the weighted
sum ``sbls``, and the validation of labels, classes and class scores shared by the whole family."""

from __future__ import annotations

import math

import numpy as np
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


def _label_pair(y_true, y_pred, classes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """True and predicted labels of one attribute, checked (same shape, every label one of the classes), with
    the classes (default: the sorted distinct true labels): ``(y, p, cls)``, arrays of str."""
    y = _labels(y_true)
    p = _labels(y_pred, "y_pred")
    if p.shape != y.shape:
        raise AttributeLeakageError(f"y_pred has shape {p.shape}, y_true {y.shape}")
    cls = _classes(classes, y)
    _classes(cls, p)
    return y, p, cls


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
    y, p, cls = _label_pair(y_true, y_pred, classes)
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
    """``L_g`` for one attribute (:mod:`vpeval.metrics.attributes`): chance-normalised AUC of each subgroup's members.

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


