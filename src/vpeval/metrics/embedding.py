r"""Linear structure shared by original and anonymized embeddings: held-out CCA and orthogonal Procrustes.

Source: the multi-dimensional evaluation of speaker de-identification (Seo et al., "Evaluating identity
leakage in speaker de-identification systems", arXiv:2508.14012), which measures how much of the original
embedding space is linearly predictable from the anonymized one, by canonical correlation analysis (CCA)
and by an orthogonal Procrustes alignment. The paper gives no equations for the protocol; the one below is
vpeval's, and every choice is stated here.

Input: matched pairs ``X[i]`` (original embedding of utterance ``i``) and ``Y[i]`` (anonymized embedding of
the same utterance), with the speaker of each pair.

Split (grouped by speaker)
--------------------------
Pairs are split into a training part (about 80 %) and a held-out part (about 20 %) **by speaker**: no
speaker has pairs on both sides, so a held-out score cannot come from remembering a speaker. The distinct
speaker ids are sorted, shuffled with ``numpy.random.default_rng(seed)``, and taken in that order into the
held-out part until it holds at least ``test_size`` of the pairs. Rows are put in a canonical order (by
speaker, then utterance id when given, then the embedding values) before anything random happens, so the
result never depends on the input row order.

CCA (SVD formulation on whitened data)
--------------------------------------
1. Centre each view with its training mean.
2. PCA step, fitted on the training part of each view: keep ``p = min(d, n_components_pca)`` principal
   directions (default ``n_components_pca = floor(n_train / 4)``, at most the dimension). This handles
   ``d >= n`` (and ``d`` close to ``n``, where plain CCA finds correlations of 1 in any data) and is the
   documented dimension reduction.
3. Ridge whitening: ``W_x = (C_xx + r_x I)^{-1/2}`` with ``r_x = ridge * trace(C_xx) / p`` (``ridge`` is
   relative to the mean variance, default 1e-3), likewise ``W_y``.
4. SVD of ``W_x C_xy W_y = U S V^T``; the canonical directions are ``a_k = W_x u_k`` and ``b_k = W_y v_k``
   (sign fixed so the training correlation is positive).
5. Held-out score: the Pearson correlation of ``X_test a_k`` and ``Y_test b_k`` on the held-out pairs for
   ``k = 1..n_components`` (the first components in training order, default 10), and their mean. Held-out
   correlations can be negative.

Orthogonal Procrustes
---------------------
Each view is centred with its training mean and every row L2-normalised; ``R`` is the orthogonal matrix
minimising ``||X_train R - Y_train||_F`` (:func:`scipy.linalg.orthogonal_procrustes`); the score is the mean
cosine similarity of ``X_test R`` and ``Y_test`` over the held-out pairs (1 = the anonymized embedding is a
rotation of the original, 0 = unrelated). Both views must have the same dimension. With ``n_train <= d``
the rotation is not determined outside the span of the training pairs, so even an exact rotation scores
below 1 on held-out pairs: the score is then a lower bound, and a
:class:`~vpeval.errors.DegenerateInputWarning` says so.

Permutation baseline
--------------------
The pairing of the *training* pairs is shuffled (a random permutation of the training rows of ``Y``), the
map is refitted, and the held-out pairs (never shuffled) are scored as above. This is repeated for
``n_permutations`` seeds ``seed + 1, ..., seed + n_permutations`` (reported; default 99, so that the
permutation p-value ``(1 + #{baseline >= value}) / (1 + n_permutations)`` can reach 0.01; its floor
``1 / (1 + n_permutations)`` is reported beside it), and the mean and the 95th
percentile (``numpy.percentile``, linear interpolation) of the baseline are reported beside each number: a
score at or below the baseline's 95th percentile shows no linear relation beyond chance. Because the
held-out pairs are never shuffled and the map is scored on pairs it was not fitted on, this baseline sits
near 0.

Two protocols: held-out (vpeval) and in-sample (the paper's)
------------------------------------------------------------
The multi-dimensional evaluation paper reports random-permutation reference levels of about **0.734** for
the mean top-10 CCA correlation and **0.29-0.31** for the Procrustes cosine. Those are *in-sample* numbers:
the pairing is randomly permuted and the correlation is measured on the same pairs the map was fitted on,
so the level reflects overfitting (it depends on the number of pairs, the dimension and the CCA
formulation), not a relation between the views. vpeval reports that protocol beside its own, on the same
data, so a reader can set a vpeval number beside the paper's tables:

========================  ===================================  ==========================================
protocol                  fitted on / measured on              baseline: what is permuted
========================  ===================================  ==========================================
held-out (vpeval)         training pairs / held-out speakers'  the training pairing; held-out pairs kept
                          pairs (no shared speaker)
in-sample (paper)         all pairs / the same pairs           the pairing of all pairs; measured on the
                                                               permuted pairs themselves
========================  ===================================  ==========================================

In-sample CCA uses the same formulation (PCA to ``floor(n / 4)`` directions of all ``n`` pairs by default,
ridge whitening, SVD) and reports the mean Pearson correlation of the first ``n_components`` canonical
variates on the pairs themselves. In-sample Procrustes is the mean cosine of ``X_n R`` and ``Y_n`` over the
fitted pairs, which equals the sum of the singular values of ``X_n^T Y_n`` divided by ``n`` (computed that
way). Only the in-sample numbers are comparable with the paper's reference levels; only the held-out ones
measure structure that generalises to unseen speakers.

The maps themselves (CCA, Procrustes) and the input checks are in :mod:`vpeval.metrics.embedding_maps`;
this module holds the speaker-grouped split, the permutation baselines and both protocols, and re-exports
every public name.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass

import numpy as np

from ..errors import DegenerateInputWarning, FewPermutationsWarning
from .embedding_maps import (
    CCAModel,  # noqa: F401 - re-exported: importable from here as before
    EmbeddingStructureError,
    _as_views,
    _cca_directions,
    _cca_setup,
    _centre_normalise,
    _columnwise_corr,
    cca_fit,
    cca_heldout,
    procrustes_fit,
    procrustes_heldout,
)

__all__ = [
    "EmbeddingStructureError",
    "GroupSplit",
    "group_split",
    "cca_fit",
    "cca_heldout",
    "procrustes_fit",
    "procrustes_heldout",
    "StructureScore",
    "EmbeddingStructure",
    "embedding_structure",
    "PAPER_REFERENCE_BASELINE",
]

#: Random-permutation reference levels printed in the multi-dimensional evaluation paper (in-sample protocol):
#: mean top-10 CCA correlation about 0.734, Procrustes cosine 0.29-0.31 (a range over its settings).
PAPER_REFERENCE_BASELINE = {"cca_top10": 0.734, "procrustes_cosine": [0.29, 0.31]}


def _one_blas_thread():
    """Context limiting BLAS to one thread (threadpoolctl, when installed): the matrices here are small
    (d <= a few hundred) and multi-threaded BLAS on them is slower, badly so on a loaded machine."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
        from contextlib import nullcontext

        return nullcontext()
    return threadpool_limits(limits=1, user_api="blas")



def _unit_scale(A: np.ndarray) -> np.ndarray:
    """``A`` times the power of two that brings its largest magnitude into [0.5, 1) (exact; zeros unchanged)."""
    m = float(np.max(np.abs(A))) if A.size else 0.0
    if m == 0.0:
        return A
    return np.ldexp(A, -np.frexp(m)[1])


# ------------------------------------------------------------------------------------------------ split


@dataclass(frozen=True)
class GroupSplit:
    """A speaker-grouped split of pair indices (into the canonical order's rows).

    Attributes
    ----------
    order : ndarray of int, shape (n,)
        Canonical row order of the input (see the module docstring).
    train, test : ndarray of int
        Indices into the *input* rows of the training and held-out pairs, in canonical order.
    test_groups : ndarray of str
        Speakers of the held-out part, sorted.
    """

    order: np.ndarray
    train: np.ndarray
    test: np.ndarray
    test_groups: np.ndarray


def _canonical_order(groups, ids, X, Y) -> np.ndarray:
    keys = [Y[:, j] for j in range(Y.shape[1] - 1, -1, -1)] + [X[:, j] for j in range(X.shape[1] - 1, -1, -1)]
    if ids is not None:
        keys.append(ids)
    keys.append(groups)
    return np.lexsort(keys)


def group_split(groups, *, test_size: float = 0.2, seed: int = 0, ids=None, X=None, Y=None) -> GroupSplit:
    """Split pairs by speaker into training and held-out parts (module docstring, "Split").

    Parameters
    ----------
    groups : array_like of str, shape (n,)
        Speaker of each pair.
    test_size : float in (0, 1)
        Smallest share of pairs in the held-out part.
    seed : int
    ids, X, Y : optional
        Utterance ids and the two views, used only to fix the canonical row order.

    Returns
    -------
    GroupSplit

    Raises
    ------
    EmbeddingStructureError
        Fewer than two speakers, or a ``test_size`` outside (0, 1), or a split that leaves one side empty.

    Examples
    --------
    >>> s = group_split(["a", "a", "b", "c", "c", "d"], test_size=0.3, seed=0)
    >>> sorted(set(s.train.tolist()) | set(s.test.tolist())) == list(range(6))
    True
    """
    groups = np.asarray(groups).astype(str)
    n = groups.size
    if not 0.0 < test_size < 1.0:
        raise EmbeddingStructureError(f"test_size must be in (0, 1), got {test_size!r}")
    speakers = np.unique(groups)
    if speakers.size < 2:
        raise EmbeddingStructureError(f"a speaker-grouped split needs at least 2 speakers, got {speakers.size}")
    ids_arr = None if ids is None else np.asarray(ids).astype(str)
    Xa = np.zeros((n, 0)) if X is None else np.asarray(X, dtype=np.float64)
    Ya = np.zeros((n, 0)) if Y is None else np.asarray(Y, dtype=np.float64)
    order = _canonical_order(groups, ids_arr, Xa, Ya)
    rng = np.random.default_rng(seed)
    shuffled = speakers[rng.permutation(speakers.size)]
    counts = dict(zip(*np.unique(groups, return_counts=True)))
    chosen, total = [], 0
    for s in shuffled:
        if total >= test_size * n:
            break
        chosen.append(s)
        total += counts[s]
    test_groups = np.sort(np.asarray(chosen, dtype=str))
    in_test = np.isin(groups[order], test_groups)
    train, test = order[~in_test], order[in_test]
    if train.size == 0 or test.size == 0:
        raise EmbeddingStructureError("the speaker-grouped split left no training or no held-out pairs")
    return GroupSplit(order, train, test, test_groups)



# ----------------------------------------------------------------------------------------------- driver


@dataclass
class StructureScore:
    """One held-out score with its permutation baseline.

    Attributes
    ----------
    value : float
        The score on the true pairing.
    baseline : ndarray, shape (n_permutations,)
        The same score after shuffling the training pairing, one per seed.
    baseline_mean, baseline_p95 : float
        Mean and 95th percentile of ``baseline``.
    p_value : float
        ``(1 + #{baseline >= value}) / (1 + n_permutations)``: permutation p-value (one-sided).
    p_value_floor : float
        ``1 / (1 + n_permutations)``: the smallest reachable p-value, reported beside it.
    """

    value: float
    baseline: np.ndarray

    @property
    def baseline_mean(self) -> float:
        return float(np.mean(self.baseline))

    @property
    def baseline_p95(self) -> float:
        return float(np.percentile(self.baseline, 95))

    @property
    def p_value(self) -> float:
        return float((1 + np.sum(self.baseline >= self.value)) / (1 + self.baseline.size))

    @property
    def p_value_floor(self) -> float:
        return 1.0 / (1.0 + self.baseline.size)

    def to_dict(self) -> dict:
        return {"value": self.value, "baseline_mean": self.baseline_mean, "baseline_p95": self.baseline_p95,
                "p_value": self.p_value, "p_value_floor": self.p_value_floor, "n_permutations": int(self.baseline.size),
                "baseline": self.baseline.tolist()}


@dataclass
class EmbeddingStructure:
    """Result of :func:`embedding_structure`.

    Attributes
    ----------
    cca : StructureScore
        Mean of the first ``n_components`` held-out canonical correlations (unitless, in [-1, 1]).
    cca_components : ndarray, shape (n_components,)
        The held-out correlations themselves.
    procrustes : StructureScore
        Mean held-out cosine similarity after the Procrustes rotation (unitless, in [-1, 1]).
    n_train, n_test, n_speakers_test, n_components, n_pca : int
        ``n_components`` is the number of held-out components averaged: the one asked for, capped (with a
        :class:`~vpeval.errors.DegenerateInputWarning`) at the embeddings' numerical rank on the training pairs;
        ``method["n_components_requested"]`` keeps the request.
    seed : int
        Seed of the split; the permutation seeds are ``permutation_seeds``.
    permutation_seeds : list of int
    method : dict
        Names of the choices made (split, CCA formulation, ridge, normalisation).
    cca_insample, procrustes_insample : StructureScore or None
        The paper's protocol (module docstring): fitted and measured on all pairs, baseline = pairing of all
        pairs permuted, same seeds. Comparable with the paper's reference levels (about 0.734 and 0.29-0.31).
    n_pca_insample : int
        PCA directions per view of the in-sample CCA.
    """

    cca: StructureScore
    cca_components: np.ndarray
    procrustes: StructureScore | None
    n_train: int
    n_test: int
    n_speakers_test: int
    n_components: int
    n_pca: int
    seed: int
    permutation_seeds: list
    method: dict
    cca_insample: StructureScore | None = None
    procrustes_insample: StructureScore | None = None
    n_pca_insample: int = 0

    def to_dict(self) -> dict:
        scores = ("cca", "procrustes", "cca_components", "cca_insample", "procrustes_insample")
        d = {k: v for k, v in asdict(self).items() if k not in scores}
        d["cca"] = self.cca.to_dict()
        d["cca_components"] = self.cca_components.tolist()
        d["procrustes"] = None if self.procrustes is None else self.procrustes.to_dict()
        d["protocol"] = "held-out (vpeval)"
        d["insample"] = {
            "protocol": "in-sample (paper)",
            "cca": None if self.cca_insample is None else self.cca_insample.to_dict(),
            "procrustes": None if self.procrustes_insample is None else self.procrustes_insample.to_dict(),
            "n_pairs": self.n_train + self.n_test, "n_pca": self.n_pca_insample,
            "paper_reference_baseline": PAPER_REFERENCE_BASELINE,
        }
        return d


def embedding_structure(
    X,
    Y,
    groups,
    *,
    ids=None,
    test_size: float = 0.2,
    n_components: int = 10,
    n_components_pca: int | None = None,
    ridge: float = 1e-3,
    n_permutations: int = 99,
    seed: int = 0,
    procrustes: bool | None = None,
) -> EmbeddingStructure:
    """Held-out CCA and Procrustes between original and anonymized embeddings, with permutation baselines,
    and the paper's in-sample protocol beside (module docstring).

    Parameters
    ----------
    X, Y : array_like of shape (n, d_x), (n, d_y)
        Original (``X``) and anonymized (``Y``) embedding of the same ``n`` utterances, row-aligned.
    groups : array_like of str, shape (n,)
        Speaker of each pair (the split is grouped by speaker).
    ids : array_like of str, shape (n,), optional
        Utterance ids; only used for the canonical row order.
    test_size : float
        Smallest held-out share of pairs (default 0.2: an 80/20 split).
    n_components : int
        Canonical correlations averaged (default 10, the multi-dimensional evaluation's "top-10").
    n_components_pca, ridge
        See :func:`cca_fit`.
    n_permutations : int >= 1
        Shuffles of the pairing for the baselines; seeds ``seed + 1 .. seed + n_permutations``. The default
        99 lets the permutation p-value reach ``1/100 = 0.01``; below 19 the p-value can never reach 0.05 and a
        :class:`~vpeval.errors.FewPermutationsWarning` says so.
    seed : int
        Seed of the speaker split.
    procrustes : bool, optional
        Compute the Procrustes score (default: when ``d_x == d_y``).

    Returns
    -------
    EmbeddingStructure

    Raises
    ------
    EmbeddingStructureError
        Shape mismatch, NaN, fewer than 2 speakers, too few pairs for ``n_components``, ``procrustes=True``
        with unequal dimensions, ``n_permutations < 1``.
    """
    X, Y = _as_views(X, Y)
    # every score here is invariant to a positive scale of either view (CCA, cosine after Procrustes, relative
    # ridge); each view is brought to unit magnitude by an exact power of two so values near 1e+-300 neither
    # overflow nor underflow in the covariances
    X, Y = _unit_scale(X), _unit_scale(Y)
    n = X.shape[0]
    groups = np.asarray(groups).astype(str)
    if groups.shape != (n,):
        raise EmbeddingStructureError(f"groups must have shape ({n},), got {groups.shape}")
    if ids is not None:
        ids = np.asarray(ids).astype(str)
        if ids.shape != (n,):
            raise EmbeddingStructureError(f"ids must have shape ({n},), got {ids.shape}")
    if int(n_permutations) < 1:
        raise EmbeddingStructureError(f"n_permutations must be >= 1, got {n_permutations!r}")
    if int(n_permutations) < 19:
        warnings.warn(f"{int(n_permutations)} permutations: the smallest reachable p-value 1/{int(n_permutations) + 1} "
                      "is above 0.05, so no score can be shown above its baseline at that level; use at least 19 "
                      "(the default 99 reaches p = 0.01)", FewPermutationsWarning, stacklevel=2)
    if procrustes is None:
        procrustes = X.shape[1] == Y.shape[1]
    elif procrustes and X.shape[1] != Y.shape[1]:
        _as_views(X, Y, same_dim=True)
    with _one_blas_thread():
        return _embedding_structure(X, Y, groups, ids, test_size, n_components, n_components_pca, ridge,
                                    int(n_permutations), seed, procrustes)


def _embedding_structure(X, Y, groups, ids, test_size, n_components, n_components_pca, ridge, n_permutations,
                         seed, procrustes) -> EmbeddingStructure:
    split = group_split(groups, test_size=test_size, seed=seed, ids=ids, X=X, Y=Y)
    Xtr, Ytr, Xte, Yte = X[split.train], Y[split.train], X[split.test], Y[split.test]
    if Xte.shape[0] < 2:
        raise EmbeddingStructureError(f"held-out correlations need at least 2 pairs, got {Xte.shape[0]}")
    # The whitening (and the Procrustes normalisation) depend on each view's marginal statistics only, so
    # they are fitted once; a permutation of the training pairing changes only the cross-covariance.
    wx, wy, k = _cca_setup(Xtr, Ytr, n_components, n_components_pca, ridge)
    Tx, Ty, Tx_te, Ty_te = wx(Xtr), wy(Ytr), wx(Xte), wy(Yte)

    def cca_scores(perm):
        U, V, _ = _cca_directions(Tx, Ty if perm is None else Ty[perm], k)
        return _columnwise_corr(Tx_te @ U, Ty_te @ V)

    if procrustes:
        from scipy.linalg import orthogonal_procrustes

        if Xtr.shape[0] <= X.shape[1]:
            warnings.warn(
                f"Procrustes: {Xtr.shape[0]} training pairs for dimension {X.shape[1]}; the rotation is "
                "underdetermined outside the training span and the held-out cosine is a lower bound",
                DegenerateInputWarning, stacklevel=3)

        mx, my = Xtr.mean(axis=0), Ytr.mean(axis=0)
        Xn, Yn = _centre_normalise(Xtr, mx), _centre_normalise(Ytr, my)
        Xn_te, Yn_te = _centre_normalise(Xte, mx), _centre_normalise(Yte, my)

        def pro_score(perm):
            R, _ = orthogonal_procrustes(Xn, Yn if perm is None else Yn[perm])
            return float(np.mean(np.einsum("ij,ij->i", Xn_te @ R, Yn_te)))

    comps = cca_scores(None)
    pro = pro_score(None) if procrustes else None
    seeds = [seed + k for k in range(1, int(n_permutations) + 1)]
    base_cca, base_pro = [], []
    for s in seeds:
        perm = np.random.default_rng(s).permutation(Xtr.shape[0])
        base_cca.append(float(np.mean(cca_scores(perm))))
        if procrustes:
            base_pro.append(pro_score(perm))

    # In-sample protocol of the paper: fit on all pairs (canonical order), measure on the same pairs.
    Xall, Yall = X[split.order], Y[split.order]
    wxa, wya, k_ins = _cca_setup(Xall, Yall, n_components, n_components_pca, ridge)
    Ax, Ay = wxa(Xall), wya(Yall)

    def cca_insample(perm):
        Ayp = Ay if perm is None else Ay[perm]
        U, V, _ = _cca_directions(Ax, Ayp, k_ins)
        return float(np.mean(_columnwise_corr(Ax @ U, Ayp @ V)))

    if procrustes:
        Xna = _centre_normalise(Xall, Xall.mean(axis=0))
        Yna = _centre_normalise(Yall, Yall.mean(axis=0))

        def pro_insample(perm):
            # mean_i cos(Xn_i R, Yn_i) = trace(R^T Xn^T Yn) / n = (sum of singular values of Xn^T Yn) / n
            M = Xna.T @ (Yna if perm is None else Yna[perm])
            return float(np.linalg.svd(M, compute_uv=False).sum() / Xna.shape[0])

    ins_cca, ins_pro = cca_insample(None), (pro_insample(None) if procrustes else None)
    base_ins_cca, base_ins_pro = [], []
    for s in seeds:
        perm = np.random.default_rng(s).permutation(Xall.shape[0])
        base_ins_cca.append(cca_insample(perm))
        if procrustes:
            base_ins_pro.append(pro_insample(perm))
    n_pca = min(wx.M.shape[1], wy.M.shape[1])
    method = {
        "split": f"grouped by speaker, held-out share >= {test_size:g}",
        "cca": "SVD of the cross-covariance of PCA-reduced, ridge-whitened views (numpy)",
        "pca_dims": n_pca,
        "n_components_requested": int(n_components),
        "n_components_insample": int(k_ins),
        "ridge_relative": ridge,
        "procrustes": "scipy.linalg.orthogonal_procrustes after centring (training means) and L2 normalisation",
        "baseline": "training pairing shuffled; held-out pairs unchanged",
        "protocol": "held-out (vpeval): fitted on training speakers, measured on held-out speakers",
        "insample_protocol": "in-sample (paper): fitted and measured on all pairs; baseline permutes the pairing "
                             "of all pairs and measures on the permuted pairs",
    }
    return EmbeddingStructure(
        cca=StructureScore(float(np.mean(comps)), np.asarray(base_cca)),
        cca_components=comps,
        procrustes=None if not procrustes else StructureScore(pro, np.asarray(base_pro)),
        n_train=int(split.train.size), n_test=int(split.test.size), n_speakers_test=int(split.test_groups.size),
        n_components=int(k), n_pca=int(n_pca), seed=int(seed), permutation_seeds=seeds,
        method=method,
        cca_insample=StructureScore(ins_cca, np.asarray(base_ins_cca)),
        procrustes_insample=None if not procrustes else StructureScore(ins_pro, np.asarray(base_ins_pro)),
        n_pca_insample=int(min(wxa.M.shape[1], wya.M.shape[1])),
    )
