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

* ``P_attr = 1 - mean_a max(0, mAUC_a - 0.5) / 0.5`` where ``mAUC_a`` is the mean over the classes of
  attribute ``a`` of the one-vs-rest ROC AUC of the attacker's class scores (ties count 1/2: the
  Mann-Whitney statistic with mid-ranks). Classes with no evaluation utterance (no positives) are skipped and
  listed.
* ``P_assoc = 1 - mean_a I(A; Â) / log K_a``: the mutual information between the true attribute ``A`` and
  the attacker's decision ``Â = argmax`` of the class scores (ties go to the first class in sorted order),
  computed from the confusion matrix (plug-in estimate), normalised by the entropy of a uniform ``K_a``-class
  attribute; numerator and denominator in the same base (bits are reported). The plug-in estimate is biased
  upwards on small samples: a chance attacker gets a small positive MI. With unbalanced classes even a
  perfect attacker reaches only ``I = H(A) < log K``, so ``P_assoc`` then stays above 0 (the paper's
  normalisation, kept as published).
* ``P_subgroup = omega (1 - max_g L_g) + (1 - omega) min_g(1 - L_g) / max_g(1 - L_g)`` (default
  ``omega = 0.7``) over demographic subgroups ``g`` (the values of one metadata column, or intersections
  built by the caller, e.g. ``sex + "/" + age_group``): the first term penalises the worst-treated group, the
  second the disparity between groups. When every group has ``L_g = 1`` the ratio is 0/0 and is taken as 1
  (all groups equally exposed).

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

import numpy as np
from scipy.stats import rankdata

from ..errors import VpevalError

__all__ = [
    "AttributeLeakageError",
    "one_vs_rest_auc",
    "confusion_matrix",
    "mutual_information",
    "p_attr",
    "p_assoc",
    "p_subgroup",
    "sbls",
    "check_weights",
    "subgroup_leakage",
    "AttributeLeakage",
    "attribute_leakage",
    "SBLSResult",
    "soft_biometric_leakage",
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


# ---------------------------------------------------------------------------------------------- bundle


@dataclass
class AttributeLeakage:
    """Leakage of one attribute.

    Attributes
    ----------
    name : str
    classes : list of str
        Column order of the scores.
    auc : dict class -> float
        One-vs-rest AUC per class.
    mauc : float
        Mean of ``auc`` (chance 0.5).
    confusion : ndarray (K, K), int
        Rows true class, columns argmax decision, in ``classes`` order.
    mi_bits : float
        ``I(A; Â)`` in bits (plug-in).
    nmi : float
        ``mi_bits / log2 K`` in [0, 1].
    accuracy, balanced_accuracy : float
        Of the argmax decision (chance: the majority share, and ``1/K``).
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

    def to_dict(self) -> dict:
        return {"name": self.name, "classes": self.classes, "auc": self.auc, "mauc": self.mauc,
                "confusion": self.confusion.tolist(), "mi_bits": self.mi_bits, "nmi": self.nmi,
                "accuracy": self.accuracy, "balanced_accuracy": self.balanced_accuracy, "n": self.n,
                "chance_mauc": 0.5, "chance_balanced_accuracy": 1.0 / len(self.classes),
                "skipped_classes": self.skipped_classes}


def attribute_leakage(y_true, scores, classes=None, *, name: str = "attribute") -> AttributeLeakage:
    """AUCs, confusion matrix and mutual information of one attribute's class scores.

    Parameters
    ----------
    y_true : array_like of str, shape (n,)
    scores : array_like, shape (n, K)
        Class scores (column ``k`` for ``classes[k]``); the decision is the argmax (ties: first column).
    classes : array_like of str, shape (K,), optional
        Default: sorted distinct labels of ``y_true``.
    name : str

    Returns
    -------
    AttributeLeakage

    Raises
    ------
    AttributeLeakageError
        See :func:`one_vs_rest_auc`; also when no class has both positives and negatives.

    Examples
    --------
    >>> r = attribute_leakage(["F", "M", "F", "M"], [[2, 1], [1, 2], [2, 1], [1, 2]], name="sex")
    >>> r.mauc, r.mi_bits, r.nmi
    (1.0, 1.0, 1.0)
    """
    y = _labels(y_true)
    cls = _classes(classes, y)
    s = _scores(scores, y.size, cls.size)
    auc = one_vs_rest_auc(y, s, cls)
    if not auc:
        raise AttributeLeakageError(f"{name}: no class has both positive and negative evaluation utterances")
    pred = cls[np.argmax(s, axis=1)]
    C = confusion_matrix(y, pred, cls)
    mi = mutual_information(C, 2.0)
    present = C.sum(axis=1) > 0
    recalls = np.diag(C)[present] / C.sum(axis=1)[present]
    return AttributeLeakage(
        name=name, classes=cls.tolist(), auc=auc, mauc=float(np.mean(list(auc.values()))), confusion=C,
        mi_bits=mi, nmi=min(1.0, mi / math.log2(cls.size)), accuracy=float(np.trace(C) / C.sum()),
        balanced_accuracy=float(np.mean(recalls)), n=int(y.size),
        skipped_classes=[c for c in cls.tolist() if c not in auc],
    )


@dataclass
class SBLSResult:
    """Result of :func:`soft_biometric_leakage`. All ``p_*`` and ``sbls`` in [0, 1], higher = more private.

    Attributes
    ----------
    attributes : dict name -> AttributeLeakage
    subgroup_leakage : dict subgroup -> L_g (mean over attributes)
    subgroup_name : str
    p_attr, p_assoc, p_subgroup, sbls : float
    alpha, beta, gamma, omega : float
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

    def to_dict(self) -> dict:
        return {"attributes": {k: v.to_dict() for k, v in self.attributes.items()},
                "subgroup_leakage": self.subgroup_leakage, "subgroup_name": self.subgroup_name,
                "p_attr": self.p_attr, "p_assoc": self.p_assoc, "p_subgroup": self.p_subgroup, "sbls": self.sbls,
                "weights": {"alpha": self.alpha, "beta": self.beta, "gamma": self.gamma, "omega": self.omega}}


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
) -> SBLSResult:
    """SBLS over any number of attributes (module docstring for every formula).

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
        attribute).
    subgroup_name : str, optional
        Name shown in reports (default: the first attribute's name, or ``"subgroup"``).
    alpha, beta, gamma : float
        Weights, each in [0, 1], summing to 1 (paper defaults 0.4, 0.4, 0.2).
    omega : float in [0, 1]
        Weight of the worst-group term in ``P_subgroup`` (paper default 0.7).

    Returns
    -------
    SBLSResult

    Raises
    ------
    AttributeLeakageError
        Bad weights or omega, no attribute, mismatched keys or lengths, and every error of
        :func:`attribute_leakage`.
    """
    check_weights(alpha, beta, gamma)
    if not 0.0 <= omega <= 1.0:
        raise AttributeLeakageError(f"omega must be in [0, 1], got {omega!r}")
    if not y_true:
        raise AttributeLeakageError("no attribute given")
    if set(y_true) != set(scores):
        raise AttributeLeakageError(
            f"y_true and scores must name the same attributes, got {sorted(y_true)} and {sorted(scores)}")
    names = list(y_true)
    classes = classes or {}
    n = None
    res = {}
    for a in names:
        y = _labels(y_true[a], f"y_true[{a!r}]")
        if n is None:
            n = y.size
        elif y.size != n:
            raise AttributeLeakageError(f"attribute {a!r} has {y.size} labels, expected {n} like the others")
        res[a] = attribute_leakage(y, scores[a], classes.get(a), name=a)
    if subgroups is None:
        groups = _labels(y_true[names[0]])
        subgroup_name = subgroup_name or names[0]
    else:
        groups = _labels(subgroups, "subgroups")
        subgroup_name = subgroup_name or "subgroup"
        if groups.size != n:
            raise AttributeLeakageError(f"subgroups has {groups.size} labels, expected {n}")
    per_attr = [subgroup_leakage(y_true[a], scores[a], res[a].classes, groups) for a in names]
    common = sorted(set.intersection(*(set(d) for d in per_attr)))
    L = {g: float(np.mean([d[g] for d in per_attr])) for g in common}
    pa = p_attr([r.mauc for r in res.values()])
    pb = p_assoc([r.nmi for r in res.values()])
    pc = p_subgroup(L, omega)
    return SBLSResult(res, L, subgroup_name, pa, pb, pc, sbls(pa, pb, pc, alpha=alpha, beta=beta, gamma=gamma),
                      alpha, beta, gamma, omega)


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
