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

Modules: the parts and their checks are in :mod:`vpeval.metrics.attribute_parts`, the permutation
alignment in :mod:`vpeval.metrics.attribute_alignment`, the attacker in :mod:`vpeval.metrics.attribute_attacker`;
this module holds the per-attribute bundle and SBLS over several attributes, and re-exports every public name
of the family.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import attribute_parts as _parts
from .attribute_alignment import EXACT_SEARCH_MAX_K, Alignment, auc_matrix, best_alignment, recall_matrix
from .attribute_attacker import AttributeAttacker
from .attribute_parts import (
    AttributeLeakageError,
    _classes,
    _label_pair,
    _labels,
    _scores,
    check_weights,
    confusion_matrix,
    mutual_information,
    one_vs_rest_auc,
    p_assoc,
    p_attr,
    p_attr_labels,
    p_subgroup,
    sbls,
    subgroup_leakage,
)

__all__ = [
    *_parts.__all__,  # the parts and their checks, re-exported
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


def _relabelled(p: np.ndarray, cls: np.ndarray, alignment: Alignment) -> np.ndarray:
    """Hard predictions ``p`` (labels in ``cls``) relabelled by ``alignment``: predicted column j stands for
    the class whose aligned column is j."""
    inv = np.empty(cls.size, dtype=np.intp)
    inv[np.asarray(alignment.columns)] = np.arange(cls.size)  # predicted column j -> class it stands for
    index = {c: i for i, c in enumerate(cls.tolist())}
    return cls[inv[np.array([index[v] for v in p.tolist()])]]


def _leakage_result(name, variant, y, cls, al, auc, auc_raw, pred, pred_raw) -> AttributeLeakage:
    """The :class:`AttributeLeakage` of one attribute from its per-class AUCs and its decisions, aligned
    (``auc``, ``pred``) and raw (``auc_raw``, ``pred_raw``); the leakage is taken from mAUC (chance 0.5) for
    ``variant="scores"``, from the balanced accuracy (chance 1/K) for ``"labels"``."""
    C, mi, nmi, ba = _decision_stats(y, pred, cls)
    _, _, nmi_raw, ba_raw = _decision_stats(y, pred_raw, cls)
    mauc, mauc_raw = float(np.mean(list(auc.values()))), float(np.mean(list(auc_raw.values())))
    if variant == "scores":
        leakage, leakage_raw = _leakage_from(mauc, 0.5), _leakage_from(mauc_raw, 0.5)
    else:
        chance = 1.0 / cls.size
        leakage, leakage_raw = _leakage_from(ba, chance), _leakage_from(ba_raw, chance)
    return AttributeLeakage(
        name=name, classes=cls.tolist(), auc=auc, mauc=mauc, confusion=C, mi_bits=mi, nmi=nmi,
        accuracy=float(np.trace(C) / C.sum()), balanced_accuracy=ba, n=int(y.size),
        skipped_classes=[c for c in cls.tolist() if c not in auc], variant=variant, alignment=al,
        auc_unaligned=auc_raw, mauc_unaligned=mauc_raw, nmi_unaligned=nmi_raw, balanced_accuracy_unaligned=ba_raw,
        leakage=leakage, leakage_unaligned=leakage_raw,
    )


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
    return _leakage_result(name, "scores", y, cls, al, auc, auc_raw, pred, cls[np.argmax(s, axis=1)])


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
    y, p, cls = _label_pair(y_true, y_pred, classes)
    R = recall_matrix(y, p, cls)
    al = best_alignment(R, cls.tolist(), method=alignment_method)
    pred = _relabelled(p, cls, al)
    auc = one_vs_rest_auc(y, _onehot(pred, cls), cls)
    auc_raw = one_vs_rest_auc(y, _onehot(p, cls), cls)
    if not auc:
        raise AttributeLeakageError(f"{name}: no class has both positive and negative evaluation utterances")
    return _leakage_result(name, "labels", y, cls, al, auc, auc_raw, pred, p)


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
            aligned[a], raw[a] = _onehot(_relabelled(p, cls, r.alignment), cls), _onehot(p, cls)
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
