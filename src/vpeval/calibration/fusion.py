r"""Linear logistic-regression fusion of several systems' scores (BOSARIS / PYLLR linear fusion).

The fused score of a trial with member scores ``s = (s_1, ..., s_K)`` is the LLR (natural log, nats)

.. math:: \ell(s) = w^\top s + b,

with ``(w, b)`` minimising the prior-weighted cross-entropy of Brummer & du Preez, "Application-independent
evaluation of speaker detection", CSL 2006, Sec. 6 (the objective of BOSARIS ``train_binary_classifier`` /
``linear_fusion``, and of Pigeon et al. 2000 / Brummer et al. 2007 fusion):

.. math:: C(w, b) = \frac{P}{N_t}\sum_{i\in tar}\log\left(1+e^{-(\ell(s_i)+\mathrm{logit}P)}\right)
   + \frac{1-P}{N_n}\sum_{j\in non}\log\left(1+e^{\ell(s_j)+\mathrm{logit}P}\right).

The prior log-odds ``logit P`` is added inside the loss and not to the output, so the output is an LLR.
With one member this is :class:`~vpeval.calibration.LogisticCalibrator`.

Linearly separable training scores (a hyperplane with every target on one side and every non-target on the
other) have no finite optimum, and neither have quasi-separated ones (the same with some trials of either
class *on* the hyperplane; Albert & Anderson, Biometrika 1984): both are refused
(:class:`~vpeval.errors.SeparableScoresError`) unless a named ridge penalty is asked for. The unpenalised fit is
computed first; where its own trial weights prove that the classes overlap (:func:`overlap_certified`, Stiemke's
alternative), that is the answer, else a linear program over the directions of recession of the objective
(:func:`quasi_separation`) decides.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit

from .._checks import as_real
from ..errors import InvalidScoresError, SeparableScoresError
from .base import NotFittedError
from .logistic import newton_minimize

__all__ = ["LinearFusion", "linearly_separable", "overlap_certified", "quasi_separation"]


def _as_matrix(x, what: str, k: int | None = None) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim == 1 and k == 1:
        a = a[:, None]
    if a.ndim != 2 or a.shape[0] == 0 or a.shape[1] == 0:
        raise InvalidScoresError(f"{what} must be a non-empty 2-D array (n_trials, n_systems), got shape {a.shape}")
    if k is not None and a.shape[1] != k:
        raise InvalidScoresError(f"{what} has {a.shape[1]} systems' scores; the fusion was fitted on {k}")
    if np.isnan(a).any():
        raise InvalidScoresError(f"{what} contains NaN (row {int(np.flatnonzero(np.isnan(a).any(1))[0])})")
    return a


def linearly_separable(tar: np.ndarray, non: np.ndarray) -> bool:
    """Whether some ``(w, b)`` puts every target strictly above and every non-target strictly below 0.

    Solved as the feasibility linear program ``w.s_i + b >= 1`` (targets), ``w.s_j + b <= -1``
    (non-targets) with scipy's HiGHS solver; a scaling of any strictly separating hyperplane satisfies it.
    """
    from scipy.optimize import linprog

    k = tar.shape[1]
    a_ub = np.vstack([-np.hstack([tar, np.ones((tar.shape[0], 1))]), np.hstack([non, np.ones((non.shape[0], 1))])])
    res = linprog(np.zeros(k + 1), A_ub=a_ub, b_ub=-np.ones(a_ub.shape[0]), bounds=[(None, None)] * (k + 1),
                  method="highs")
    return res.status == 0


def quasi_separation(tar: np.ndarray, non: np.ndarray):
    """A direction in which the fusion's cross-entropy decreases for ever, or ``None`` when there is none.

    The unpenalised logistic objective has no finite minimiser exactly when some ``(w, b) != 0`` puts every
    target on or above and every non-target on or below the hyperplane ``w.s + b = 0`` with at least one trial
    strictly off it (complete or quasi-complete separation, Albert & Anderson 1984); ties *on* the
    hyperplane do not help. Found by the linear program

    ``max sum_i m_i`` subject to ``m_i = y_i (w.s_i + b)`` and ``0 <= m_i <= 1``

    (``y = +1`` targets, ``-1`` non-targets; HiGHS). Its optimum is 0 when there is no such direction and at
    least 1 otherwise (any separating direction can be scaled until a margin reaches 1), so the decision
    does not hang on the solver's tolerance. A direction with every margin 0 (collinear systems) is not
    separation.

    Parameters
    ----------
    tar, non : ndarray, shapes (n_tar, K) and (n_non, K)
        Scores, best standardised per system (the solver's tolerances are absolute).

    Returns
    -------
    None or dict
        ``{"weights": (K,), "intercept": float, "n_off": int, "n_on": int}``: a direction and how many
        training trials lie strictly on their own side / on the hyperplane (to rounding, 1e-7 of the
        largest margin).
    """
    from scipy.optimize import linprog

    k = tar.shape[1]
    y = np.concatenate([np.ones(tar.shape[0]), -np.ones(non.shape[0])])
    x1 = np.hstack([np.vstack([tar, non]), np.ones((y.size, 1))]) * y[:, None]
    res = linprog(-x1.sum(axis=0), A_ub=np.vstack([-x1, x1]),
                  b_ub=np.concatenate([np.zeros(y.size), np.ones(y.size)]), bounds=[(None, None)] * (k + 1),
                  method="highs")
    if res.status != 0 or -res.fun < 0.5:
        return None
    margins = x1 @ res.x
    tol = 1e-7 * max(1.0, float(np.abs(margins).max()))
    return {"weights": res.x[:k], "intercept": float(res.x[k]), "n_off": int((margins > tol).sum()),
            "n_on": int((np.abs(margins) <= tol).sum())}


def overlap_certified(a: np.ndarray, weights: np.ndarray) -> bool:
    """Whether positive trial weights prove that no direction separates the trials, even quasi-completely.

    A sufficient test, much cheaper than :func:`quasi_separation`'s linear program (on the demo's fusions of
    21,300 training trials: 0.3 ms against 0.2 s, medians, ``python benchmarks/fusion_overlap.py OUT``; 26 of its
    30 fits are certified, the 4 separable ones are not); ``False`` proves nothing.

    Stiemke's alternative: if some ``mu > 0`` on a subset S of the rows, with ``a_S`` of full column rank, has
    ``a_S^T mu = 0``, then every direction ``v`` with ``a v >= 0`` has ``mu . (a_S v) = 0``, so ``a_S v = 0``, so
    ``v = 0``: there is no separating direction, complete or quasi-complete. S is taken as the rows whose weight
    is at least 1e-3 (then 1e-2, 1e-1) of the largest, and ``mu`` as their weights projected onto the null space
    of ``a_S^T`` (least squares); the test holds when every entry of ``mu`` stays positive by more than the
    projection's rounding (``64 eps cond(a_S)^2 sqrt(|S|) max(weights_S)``: an entry that is 0 in exact
    arithmetic must not pass) and ``a_S^T mu`` is 0 to rounding (1e-10 of ``|a_S|^T mu``, entrywise).

    Parameters
    ----------
    a : ndarray, shape (n, K + 1)
        Row i is ``y_i (z_i, 1)``: the trial's standardised member scores and a 1, negated for a non-target.
    weights : ndarray, shape (n,)
        Positive weights whose combination ``a^T weights`` is close to 0: for a converged logistic fit, each
        trial's prior weight times the derivative of its loss (``a^T weights`` is then the objective's gradient).

    Returns
    -------
    bool
        Never raises; a NaN or infinite input gives ``False``.
    """
    k1 = a.shape[1]
    if not (np.isfinite(a).all() and np.isfinite(weights).all()) or not weights.max(initial=0.0) > 0:
        return False
    eps = np.finfo(np.float64).eps
    for frac in (1e-3, 1e-2, 1e-1):
        s = weights >= frac * weights.max()
        a_s, w_s = a[s], weights[s]
        if a_s.shape[0] < k1:
            continue
        sv = np.linalg.svd(a_s, compute_uv=False)
        if not sv[-1] > sv[0] * a_s.shape[0] * eps:  # not of full column rank
            continue
        mu = w_s - a_s @ np.linalg.solve(a_s.T @ a_s, a_s.T @ w_s)
        # positive beyond the rounding of the projection (an entry that is 0 in exact arithmetic, i.e. a
        # quasi-separating direction, comes out as +-1e-17 or so): the solve loses up to cond(a_s)^2 eps
        rounding = 64.0 * eps * (sv[0] / sv[-1]) ** 2 * math.sqrt(a_s.shape[0]) * w_s.max()
        if mu.min() > rounding and (np.abs(a_s.T @ mu) <= 1e-10 * (np.abs(a_s).T @ mu)).all():
            return True
    return False


class LinearFusion:
    """Prior-weighted logistic-regression fusion (module docstring): ``llr = weights_ @ scores + intercept_``.

    Parameters
    ----------
    p_target : float in (0, 1), optional
        The prior ``P`` of the objective; default the training proportion ``N_t / (N_t + N_n)``
        (unweighted maximum likelihood). BOSARIS fusions commonly use a small ``P`` such as 0.01 or 0.5.
    regularization : float, optional
        ``None`` (default): unpenalised; separable training scores raise
        :class:`~vpeval.errors.SeparableScoresError`. ``lam > 0`` adds ``lam/2 * sum_k (w_k sd_k)^2``
        (ridge on the standardised weights, ``sd_k`` the standard deviation of system ``k``'s training
        scores), which makes the fit finite; report it when used.
    names : sequence of str, optional
        Names of the fused systems (kept for reports).

    Attributes
    ----------
    weights_ : ndarray, shape (K,)
    intercept_ : float
    converged_ : bool
    trial_type : str or None
        The trial type the training scores are of (set by :func:`~vpeval.pipeline.fuse_attackers`, else None).
    fold_weights_ : list of (ndarray or None) or None
        Set by :func:`~vpeval.pipeline.fuse_attackers`: the weights refitted on each cross-fitting fold's
        held-out trials alone (None for a fold whose trials are separable), how much the weights depend on the
        training trials; :meth:`describe` reports their spread.

    Raises
    ------
    SeparableScoresError
        Separable or quasi-separated training scores (:func:`quasi_separation`, ties on the hyperplane
        included) without ``regularization``, or an unpenalised fit whose Newton iterations do not converge.
    InvalidScoresError
        NaN scores, shapes that disagree, an empty class, a system whose training scores are all equal.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> tar = rng.normal([1.0, 2.0], 1.0, size=(4000, 2))
    >>> non = rng.normal([0.0, 0.0], 1.0, size=(4000, 2))
    >>> f = LinearFusion().fit(tar, non)   # true LLR: 1 s_1 + 2 s_2 - 2.5
    >>> bool(np.allclose(f.weights_, [1.0, 2.0], atol=0.15) and abs(f.intercept_ + 2.5) < 0.15)
    True
    """

    def __init__(self, p_target: float | None = None, regularization: float | None = None, names=None):
        self.p_target = p_target
        self.regularization = regularization
        self.names = None if names is None else [str(n) for n in names]

    def fit(self, tar, non) -> "LinearFusion":
        """Fit on target scores ``tar`` (n_tar, K) and non-target scores ``non`` (n_non, K); returns ``self``."""
        tar = _as_matrix(tar, "tar")
        non = _as_matrix(non, "non", tar.shape[1])
        k = tar.shape[1]
        if self.names is not None and len(self.names) != k:
            raise InvalidScoresError(f"{len(self.names)} names for {k} systems")
        if not (np.isfinite(tar).all() and np.isfinite(non).all()):
            raise InvalidScoresError("fusion needs finite training scores (inf found)")
        # canonical row order: the fit is bit-for-bit independent of the order of the trials
        tar = tar[np.lexsort(tar.T[::-1])]
        non = non[np.lexsort(non.T[::-1])]
        allv = np.vstack([tar, non])
        mu, sd = allv.mean(axis=0), allv.std(axis=0)
        if not (sd > 0).all():
            raise InvalidScoresError(f"system {int(np.flatnonzero(~(sd > 0))[0])} has the same training score on "
                                     "every trial: its weight is not identifiable")
        lam = None if self.regularization is None else as_real(self.regularization, "regularization", low=0.0)
        zt, zn = (tar - mu) / sd, (non - mu) / sd
        p = tar.shape[0] / (tar.shape[0] + non.shape[0])
        if self.p_target is not None:
            p = as_real(self.p_target, "p_target", low=0.0, high=1.0)
        plo = math.log(p) - math.log1p(-p)
        wt, wn = p / tar.shape[0], (1.0 - p) / non.shape[0]
        zt1, zn1 = np.hstack([zt, np.ones((zt.shape[0], 1))]), np.hstack([zn, np.ones((zn.shape[0], 1))])

        def evaluate(theta):
            f, g, h = 0.0, np.zeros(k + 1), np.zeros((k + 1, k + 1))
            for z, w, sign in ((zt1, wt, -1.0), (zn1, wn, 1.0)):
                eta = z @ theta + plo
                f += w * float(np.logaddexp(0.0, sign * eta).sum())
                g += z.T @ (w * sign * expit(sign * eta))
                h += (z * (w * expit(eta) * expit(-eta))[:, None]).T @ z
            if lam is not None:
                f += 0.5 * lam * float(theta[:k] @ theta[:k])
                g[:k] += lam * theta[:k]
                h[:k, :k] += lam * np.eye(k)
            return f, g, h

        theta, converged = newton_minimize(evaluate, np.zeros(k + 1))
        if lam is None:
            # the linear program only where the fit's own weights do not prove overlap (a converged fit can
            # stop at a huge theta on separated trials, whose gradient vanishes too)
            weights = np.r_[wt * expit(-(zt1 @ theta + plo)), wn * expit(zn1 @ theta + plo)]
            if not (converged and overlap_certified(np.vstack([zt1, -zn1]), weights)):
                direction = quasi_separation(zt, zn)
                if direction is not None:
                    kind = ("linearly separable" if direction["n_on"] == 0 else
                            f"quasi-separated (linearly separable with {direction['n_on']} of "
                            f"{direction['n_on'] + direction['n_off']} trials tied on the separating hyperplane)")
                    raise SeparableScoresError(
                        f"target and non-target training scores are {kind}: the maximum-likelihood fusion weights "
                        "are infinite. Use more (or harder) training trials, or ask for "
                        "LinearFusion(regularization=...) explicitly.")
            if not converged:
                raise SeparableScoresError("the fusion's Newton iterations did not converge (quasi-separable "
                                           "training scores?); ask for LinearFusion(regularization=...) explicitly")
        self.converged_ = converged
        self.weights_ = theta[:k] / sd
        self.intercept_ = float(theta[k] - float(theta[:k] @ (mu / sd)))
        self.p_effective_ = p
        self.n_tar_, self.n_non_ = tar.shape[0], non.shape[0]
        return self

    def transform(self, scores) -> np.ndarray:
        """Fused LLRs (nats) of ``scores``, shape (n, K) -> (n,)."""
        if not hasattr(self, "weights_"):
            raise NotFittedError("LinearFusion is not fitted yet; call fit(tar, non) first")
        s = _as_matrix(scores, "scores", self.weights_.size)
        with np.errstate(invalid="ignore"):
            return s @ self.weights_ + self.intercept_

    def describe(self) -> dict:
        """Weights per system, intercept and training sizes (JSON-serialisable)."""
        names = self.names or [f"system {i}" for i in range(self.weights_.size)]
        out = {"weights": dict(zip(names, map(float, self.weights_))), "intercept": float(self.intercept_),
               "p_target": self.p_effective_, "regularization": self.regularization,
               "n_tar": int(self.n_tar_), "n_non": int(self.n_non_)}
        if getattr(self, "trial_type", None) is not None:
            out["learnt_on_trials"] = self.trial_type
        if getattr(self, "fold_weights_", None) is not None:
            # the weights refitted on each cross-fitting fold's held-out trials alone (None: that fold's trials
            # are (quasi-)separable), and their spread (max - min over the folds that fitted) per member
            out["fold_weights"] = [None if w is None else dict(zip(names, map(float, w)))
                                   for w in self.fold_weights_]
            fitted = [w for w in self.fold_weights_ if w is not None]
            out["weight_spread"] = (None if len(fitted) < 2 else
                                    dict(zip(names, map(float, np.ptp(np.array(fitted), axis=0)))))
        return out
