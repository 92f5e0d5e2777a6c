"""Score generators with exact (oracle) log-likelihood ratios.

Every generator draws from known normal densities, so the true LLR of any score is available in closed form
and LLR estimators can be compared with the truth.  All randomness goes through a
:class:`numpy.random.Generator` built from the ``seed`` argument, so a seed reproduces the draw exactly.

Two families are provided.

* **Verification trials** (:class:`GaussianScoreModel`): target scores ``~ N(mu_tar, sigma_tar^2)`` and
  non-target scores ``~ N(mu_non, sigma_non^2)``; the oracle LLR (nats) is
  ``ln N(s; mu_tar, sigma_tar) - ln N(s; mu_non, sigma_non)``.

  - :func:`counterexample`: the worst-case paper's counterexample (equal means, ``sigma_tar = 2``,
    ``sigma_non = 1``, 2,000 scores per class): the EER is close to 50 % (the ROC is nearly the diagonal
    around the EER point) while the LLR, quadratic in the score, is unbounded, so single trials can disclose a
    lot.
  - :func:`equal_variance`: ``N(separation * sigma, sigma^2)`` against ``N(0, sigma^2)``; the LLR is affine,
    ``separation * s / sigma - separation^2 / 2``.

* **1-to-N identification** (:class:`GaussianRankModel`): each probe is scored against ``N`` enrolled
  speakers; the true speaker's score is ``~ N(target)`` and impostor ``j``'s score ``~ N(impostors[j])``,
  all independent.  The exact distribution of the rank of any entry is computed by numerical integration
  (:meth:`GaussianRankModel.rank_pmf`), giving the exact ``gamma_k`` and the exact rank LLR against every
  impostor, with which the exchangeability assumption of the rank LLR (worst-case paper, Eq. 35) is checked.

More kinds (heavy-tailed, skewed, 1-to-N with a leaking share of probes) are in :mod:`vpeval.simulate_kinds`.

Units: LLRs in nats throughout.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import integrate, stats

from .errors import VpevalError

__all__ = [
    "GaussianScoreModel",
    "SimulatedScores",
    "counterexample",
    "equal_variance",
    "GaussianRankModel",
    "SimulatedRanks",
    "counterexample_rank_model",
    "non_exchangeable_rank_model",
    "exchangeability_drift",
]


def _positive(value, name):
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise VpevalError(f"{name} must be a positive finite number, got {value!r}")
    return value


def _finite(value, name):
    value = float(value)
    if not np.isfinite(value):
        raise VpevalError(f"{name} must be finite, got {value!r}")
    return value


def _count(value, name, minimum=1):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise VpevalError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class GaussianScoreModel:
    """Target and non-target scores drawn from two normal densities.

    Parameters
    ----------
    mu_tar, sigma_tar : float
        Mean and standard deviation of the target scores (``sigma_tar > 0``).
    mu_non, sigma_non : float
        Mean and standard deviation of the non-target scores (``sigma_non > 0``).
    """

    mu_tar: float
    sigma_tar: float
    mu_non: float
    sigma_non: float

    def __post_init__(self):
        object.__setattr__(self, "mu_tar", _finite(self.mu_tar, "mu_tar"))
        object.__setattr__(self, "mu_non", _finite(self.mu_non, "mu_non"))
        object.__setattr__(self, "sigma_tar", _positive(self.sigma_tar, "sigma_tar"))
        object.__setattr__(self, "sigma_non", _positive(self.sigma_non, "sigma_non"))

    def llr(self, scores) -> np.ndarray:
        """Exact LLR (nats) of each score: ``ln f_tar(s) - ln f_non(s)``.

        Finite for every finite score; computed from log-densities so it does not overflow.

        Examples
        --------
        >>> m = GaussianScoreModel(0.0, 2.0, 0.0, 1.0)
        >>> round(float(m.llr([0.0])[0]), 6)   # ln(1/2)
        -0.693147
        """
        s = np.asarray(scores, dtype=np.float64)
        return stats.norm.logpdf(s, self.mu_tar, self.sigma_tar) - stats.norm.logpdf(
            s, self.mu_non, self.sigma_non
        )

    def sample(self, n_tar: int, n_non: int, seed=None) -> "SimulatedScores":
        """Draw ``n_tar`` target and ``n_non`` non-target scores with their oracle LLRs.

        ``seed`` is anything :func:`numpy.random.default_rng` accepts (an int, a ``SeedSequence`` or a
        ``Generator``).  Targets are drawn first, then non-targets, from the same generator.
        """
        n_tar = _count(n_tar, "n_tar")
        n_non = _count(n_non, "n_non")
        rng = np.random.default_rng(seed)
        tar = rng.normal(self.mu_tar, self.sigma_tar, n_tar)
        non = rng.normal(self.mu_non, self.sigma_non, n_non)
        return SimulatedScores(tar=tar, non=non, tar_llr=self.llr(tar), non_llr=self.llr(non), model=self)

    def eer(self) -> float:
        """Exact equal error rate of the score threshold rule (accept iff ``s >= t``).

        The threshold ``t`` solving ``P(tar < t) = P(non >= t)`` is found by bracketing root search.  For
        the counterexample this is exactly 0.5 (``t = mu``), the value the rule reaches although the LLR
        carries information: only a two-sided rule on ``|s - mu|`` exploits it.
        """

        def gap(t):
            return stats.norm.cdf(t, self.mu_tar, self.sigma_tar) - stats.norm.sf(t, self.mu_non, self.sigma_non)

        lo = min(self.mu_tar - 40 * self.sigma_tar, self.mu_non - 40 * self.sigma_non)
        hi = max(self.mu_tar + 40 * self.sigma_tar, self.mu_non + 40 * self.sigma_non)
        from scipy.optimize import brentq

        t = brentq(gap, lo, hi, xtol=1e-14)
        return float(stats.norm.cdf(t, self.mu_tar, self.sigma_tar))

    def params(self) -> dict:
        """The model's parameters, JSON-ready."""
        return {"family": "normal", "mu_tar": self.mu_tar, "sigma_tar": self.sigma_tar, "mu_non": self.mu_non,
                "sigma_non": self.sigma_non}


@dataclass(frozen=True)
class SimulatedScores:
    """Simulated verification scores and their exact LLRs.

    Attributes
    ----------
    tar, non : ndarray of shape (n_tar,), (n_non,), float64
        Target and non-target scores.
    tar_llr, non_llr : ndarray, float64
        Oracle LLR (nats) of every score, from the generating densities.
    model : GaussianScoreModel, or a model of :mod:`vpeval.simulate_kinds`
        The generating model; ``model.llr(s)`` is the oracle score -> LLR curve.
    """

    tar: np.ndarray
    non: np.ndarray
    tar_llr: np.ndarray
    non_llr: np.ndarray
    model: GaussianScoreModel

    @property
    def eps_max(self) -> float:
        """Largest oracle ``|LLR|`` over the drawn trials (nats)."""
        return float(max(np.max(np.abs(self.tar_llr)), np.max(np.abs(self.non_llr))))


def counterexample(n_per_class: int = 2000, seed=0) -> SimulatedScores:
    """The worst-case paper's counterexample: equal means, ``sigma_tar = 2``, ``sigma_non = 1``.

    Target scores ``~ N(0, 2^2)``, non-target scores ``~ N(0, 1)``, ``n_per_class`` of each (2,000 in the
    paper).  The oracle LLR is ``-ln 2 + (3/8) s^2`` nats: never below ``-ln 2`` but unbounded above, so
    eps_max grows with the sample while the EER stays near 50 %.

    Examples
    --------
    >>> sim = counterexample(2000, seed=1)
    >>> sim.tar.shape, sim.non.shape
    ((2000,), (2000,))
    >>> bool(np.allclose(sim.tar_llr, -np.log(2) + 3 / 8 * sim.tar ** 2))
    True
    """
    n = _count(n_per_class, "n_per_class")
    return GaussianScoreModel(0.0, 2.0, 0.0, 1.0).sample(n, n, seed)


def equal_variance(separation: float, n_tar: int = 2000, n_non: int = 2000, sigma: float = 1.0, seed=0):
    """Equal-variance normal scores with a given separation ``d' = (mu_tar - mu_non) / sigma``.

    Non-targets ``~ N(0, sigma^2)``, targets ``~ N(separation * sigma, sigma^2)``.  The oracle LLR is affine:
    ``separation * s / sigma - separation^2 / 2`` nats (``separation = 0`` gives LLR 0 everywhere).

    Examples
    --------
    >>> sim = equal_variance(2.0, 10, 10, seed=3)
    >>> bool(np.allclose(sim.tar_llr, 2.0 * sim.tar - 2.0))
    True
    """
    separation = _finite(separation, "separation")
    sigma = _positive(sigma, "sigma")
    return GaussianScoreModel(separation * sigma, sigma, 0.0, sigma).sample(n_tar, n_non, seed)


# --------------------------------------------------------------------------------------------------------
# 1-to-N identification: score matrices and exact rank distributions


@dataclass(frozen=True)
class SimulatedRanks:
    """A simulated probe x enrolled-speaker score matrix.

    Attributes
    ----------
    score_matrix : ndarray of shape (n_probes, n_speakers), float64
        ``score_matrix[i, j]`` is the similarity of probe ``i`` to enrolled speaker ``j``.
    true_index : ndarray of shape (n_probes,), int
        Column of the true speaker of each probe (drawn uniformly, so column order carries no information).
    impostor_group : ndarray of shape (n_probes, n_speakers), int
        ``-1`` at the true speaker; otherwise the index in ``model.impostors`` whose density generated the
        entry.
    model : GaussianRankModel
    """

    score_matrix: np.ndarray
    true_index: np.ndarray
    impostor_group: np.ndarray
    model: "GaussianRankModel"

    def target_ranks(self) -> np.ndarray:
        """Rank (1 = most similar) of the true speaker in each row.

        The scores are continuous, so ties have probability zero; a row in which the true speaker's score
        ties another one raises :class:`~vpeval.errors.VpevalError` rather than applying a tie rule.
        """
        rows = np.arange(self.score_matrix.shape[0])
        true = self.score_matrix[rows, self.true_index][:, None]
        if np.any((self.score_matrix == true).sum(axis=1) > 1):
            raise VpevalError("a true-speaker score ties another score; simulated ranks assume no ties")
        return 1 + (self.score_matrix > true).sum(axis=1)

    def empirical_gamma(self) -> np.ndarray:
        """Histogram estimate of ``gamma_k`` (share of probes whose true speaker is at rank ``k``)."""
        n = self.score_matrix.shape[1]
        return np.bincount(self.target_ranks() - 1, minlength=n) / self.score_matrix.shape[0]


@dataclass(frozen=True)
class GaussianRankModel:
    """Independent normal scores of one true speaker and ``N - 1`` impostors per probe.

    Parameters
    ----------
    target : (float, float)
        ``(mu, sigma)`` of the true speaker's score.
    impostors : sequence of (float, float)
        ``(mu, sigma)`` of each impostor's score; ``N = len(impostors) + 1``.  Equal pairs make the impostors
        exchangeable, the assumption behind the rank LLR of the worst-case paper (Eq. 35).
    grid_size : int
        Number of points of the integration grid of :meth:`rank_pmf` (Simpson's rule over
        ``[min mu - 12 sigma, max mu + 12 sigma]``).
    """

    target: tuple
    impostors: tuple
    grid_size: int = 20001
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        t = (_finite(self.target[0], "target mu"), _positive(self.target[1], "target sigma"))
        imps = tuple(
            (_finite(m, "impostor mu"), _positive(s, "impostor sigma")) for m, s in self.impostors
        )
        if len(imps) < 1:
            raise VpevalError("at least one impostor is needed (N >= 2)")
        _count(self.grid_size, "grid_size", 101)
        object.__setattr__(self, "target", t)
        object.__setattr__(self, "impostors", imps)

    @property
    def n_speakers(self) -> int:
        """``N``, the number of enrolled speakers each probe is compared with."""
        return len(self.impostors) + 1

    def sample(self, n_probes: int, seed=None) -> SimulatedRanks:
        """Draw ``n_probes`` rows of scores; the true speaker's column is uniform over ``0..N-1``.

        Impostor ``j`` (``j = 0..N-2``) occupies the ``j``-th non-true column of every row.
        """
        n_probes = _count(n_probes, "n_probes")
        rng = np.random.default_rng(seed)
        n = self.n_speakers
        params = np.array([self.target, *self.impostors])  # row 0 = true speaker
        draws = rng.normal(params[:, 0], params[:, 1], size=(n_probes, n))
        true_index = rng.integers(0, n, n_probes)
        # column c of a row holds entry order[c]: the true speaker at true_index, impostors in order elsewhere
        cols = np.arange(n)[None, :]
        entry = np.where(cols < true_index[:, None], cols + 1, cols)
        entry = np.where(cols == true_index[:, None], 0, entry)
        matrix = np.take_along_axis(draws, entry, axis=1)
        return SimulatedRanks(matrix, true_index, entry - 1, self)

    def _grid(self):
        params = np.array([self.target, *self.impostors])
        lo = np.min(params[:, 0] - 12 * params[:, 1])
        hi = np.max(params[:, 0] + 12 * params[:, 1])
        return np.linspace(lo, hi, self.grid_size)

    def rank_pmf(self, entry: int) -> np.ndarray:
        """Exact ``P(rank = k)``, ``k = 1..N``, of one entry (0 = true speaker, ``j + 1`` = impostor ``j``).

        Rank 1 is the highest score.  With ``S_o(s)`` the survival function of every other entry ``o``,
        the count of others above ``s`` is Poisson-binomial; its probabilities are built by the usual
        one-entry-at-a-time recursion on a grid of ``s`` and integrated against the entry's density
        (Simpson's rule).  Accuracy is about 1e-10 with the default grid.
        """
        n = self.n_speakers
        entry = int(entry)
        if not 0 <= entry < n:
            raise VpevalError(f"entry must be in 0..{n - 1}, got {entry}")
        params = [self.target, *self.impostors]
        key = (params[entry], tuple(sorted(params[:entry] + params[entry + 1:])))
        if key in self._cache:
            return self._cache[key].copy()
        s = self._grid()
        pmf = np.zeros((s.size, n))
        pmf[:, 0] = 1.0
        for o, (mu, sigma) in enumerate(params):
            if o == entry:
                continue
            p = stats.norm.sf(s, mu, sigma)[:, None]
            shifted = np.zeros_like(pmf)
            shifted[:, 1:] = pmf[:, :-1]
            pmf = pmf * (1 - p) + shifted * p
        dens = stats.norm.pdf(s, *params[entry])[:, None]
        out = integrate.simpson(dens * pmf, x=s, axis=0)
        self._cache[key] = out
        return out.copy()

    def gamma(self) -> np.ndarray:
        """Exact ``gamma_k = P(true speaker at rank k)``, ``k = 1..N`` (sums to 1)."""
        return self.rank_pmf(0)

    def impostor_rank_pmf(self) -> np.ndarray:
        """Exact rank probabilities of each impostor, shape ``(N - 1, N)``."""
        return np.array([self.rank_pmf(j + 1) for j in range(len(self.impostors))])

    def rank_llr_against(self, impostor: int) -> np.ndarray:
        """Exact rank LLR (nats) of "true speaker" against "impostor ``impostor``": ``ln gamma_k / q_jk``.

        This is the oracle the rank LLR of Eq. 35 estimates when the non-target hypothesis is one particular
        impostor; it equals Eq. 35 for every impostor exactly when the impostors are exchangeable.
        """
        with np.errstate(divide="ignore"):
            return np.log(self.gamma()) - np.log(self.rank_pmf(int(impostor) + 1))


def counterexample_rank_model(n_speakers: int = 10, **kw) -> GaussianRankModel:
    """1-to-N version of the counterexample: true speaker ``N(0, 2^2)``, ``N - 1`` impostors ``N(0, 1)``.

    The impostors are exchangeable, so the rank LLR of Eq. 35 is exact here.
    """
    n = _count(n_speakers, "n_speakers", 2)
    return GaussianRankModel((0.0, 2.0), tuple([(0.0, 1.0)] * (n - 1)), **kw)


def non_exchangeable_rank_model(
    n_speakers: int = 10,
    n_close: int = 3,
    target_mean: float = 2.0,
    close_mean: float = 1.5,
    far_mean: float = 0.0,
    **kw,
) -> GaussianRankModel:
    """Impostors that are not exchangeable: ``n_close`` of them are systematically closer to the target.

    True speaker ``N(target_mean, 1)``; ``n_close`` "close" impostors ``N(close_mean, 1)`` (e.g. speakers of
    the same sex and accent as the target); the other ``N - 1 - n_close`` "far" impostors ``N(far_mean, 1)``.
    Impostor indices ``0 .. n_close - 1`` are the close ones.
    """
    n = _count(n_speakers, "n_speakers", 2)
    n_close = _count(n_close, "n_close", 0)
    if n_close > n - 1:
        raise VpevalError(f"n_close must be at most n_speakers - 1 = {n - 1}, got {n_close}")
    imps = [(close_mean, 1.0)] * n_close + [(far_mean, 1.0)] * (n - 1 - n_close)
    return GaussianRankModel((target_mean, 1.0), tuple(imps), **kw)


def exchangeability_drift(model: GaussianRankModel) -> dict:
    """How far the rank LLR of Eq. 35 is from the exact rank LLR against each distinct impostor density.

    Eq. 35 uses the pooled non-target rank probability ``(1 - gamma_k) / (N - 1)``, which is exact on
    average over the impostors whatever their densities (the ranks of a row are a permutation), but is the
    right denominator for one particular impostor only when the impostors are exchangeable.  For each
    distinct impostor density ``j`` the drift is ``eq35_k - ln(gamma_k / q_jk)`` (nats), by rank.

    Returns
    -------
    dict
        ``gamma`` (exact, length N), ``eq35`` (rank LLR of Eq. 35 from the exact gamma, nats), and
        ``groups``: one entry per distinct impostor ``(mu, sigma)`` with ``params``, ``count``,
        ``exact_llr`` (nats, by rank), ``drift`` (nats, by rank), ``max_abs_drift`` (nats, over ranks),
        ``mean_abs_drift`` (nats, expectation of ``|drift|`` over that impostor's own rank distribution),
        ``drift_rank1`` (nats).
    """
    from .calibration.rank import rank_llr

    gamma = model.gamma()
    eq35 = rank_llr(gamma)
    groups = []
    for params in sorted(set(model.impostors)):
        j = model.impostors.index(params)
        q = model.rank_pmf(j + 1)
        exact = model.rank_llr_against(j)
        drift = eq35 - exact
        groups.append(
            {
                "params": params,
                "count": model.impostors.count(params),
                "exact_llr": exact,
                "drift": drift,
                "max_abs_drift": float(np.max(np.abs(drift))),
                "mean_abs_drift": float(np.sum(q * np.abs(drift))),
                "drift_rank1": float(drift[0]),
            }
        )
    return {"gamma": gamma, "eq35": eq35, "groups": groups}
