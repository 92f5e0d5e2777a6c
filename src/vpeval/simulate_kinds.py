"""More score generators with exact (oracle) LLRs: heavy tails, skew, and 1-to-N with a leaking share of probes.

* **Heavy tails and skew** (:class:`StudentTScoreModel`, :class:`LognormalScoreModel`): Student-t scores with
  ``df`` degrees of freedom (equal scales: the oracle LLR is bounded, while a Gaussian fit to such scores has
  unbounded quadratic LLRs that explode on the outliers) and lognormal scores (skewed; the oracle LLR is affine
  in ``ln s``).  :func:`student_t_scores` and :func:`lognormal_scores` build them from a separation.

* **1-to-N with a leaking share** (:class:`LeakyShareModel`): every probe is scored against ``N`` speakers;
  impostor scores ``~ N(0, 1)``; the true speaker's score is ``~ N(d, 1)`` for a share ``q`` of the probes
  and ``~ N(0, 1)`` for the rest.  The pooled verification EER stays near 50 % while the leaking probes are
  identified: the LID paper's pattern.  The oracle posterior of every candidate is exact (see
  :meth:`LeakyShareModel.oracle_lid`); :func:`lid_oracle_comparison` runs vpeval's LID chain beside it.

Every model draws through :func:`numpy.random.default_rng` of its ``seed``, as :mod:`vpeval.simulate` does.
Units: LLRs in nats; LID in bits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from .errors import VpevalError
from .simulate import GaussianScoreModel, SimulatedScores, _count, _finite, _positive

__all__ = [
    "StudentTScoreModel",
    "LognormalScoreModel",
    "student_t_scores",
    "lognormal_scores",
    "LeakyShareModel",
    "SimulatedOneToN",
    "lid_oracle_comparison",
]


def _exact_eer(tar_dist, non_dist) -> float:
    """EER of the rule ``s >= t`` for two continuous frozen scipy distributions: ``P(tar < t) = P(non >= t)``."""
    from scipy.optimize import brentq

    lo = min(tar_dist.ppf(1e-15), non_dist.ppf(1e-15))
    hi = max(tar_dist.isf(1e-15), non_dist.isf(1e-15))
    t = brentq(lambda x: tar_dist.cdf(x) - non_dist.sf(x), lo, hi, xtol=1e-14)
    return float(tar_dist.cdf(t))


@dataclass(frozen=True)
class StudentTScoreModel:
    """Target and non-target scores from two Student-t densities with ``df`` degrees of freedom.

    Parameters
    ----------
    df : float
        Degrees of freedom (``> 0``; 3 gives heavy tails with a finite variance, 1 is Cauchy).
    mu_tar, scale_tar, mu_non, scale_non : float
        Location and scale (``> 0``) of each class; ``s = mu + scale * T`` with ``T ~ t(df)``.

    Notes
    -----
    With equal scales the oracle LLR ``(df+1)/2 [ln(1 + z_non^2/df) - ln(1 + z_tar^2/df)]`` is bounded and
    tends to 0 in both tails, so eps_max stays finite however many trials are drawn; a Gaussian fit with two
    variances gives a quadratic LLR whose value on the outliers grows without bound.
    """

    df: float
    mu_tar: float
    scale_tar: float
    mu_non: float
    scale_non: float

    def __post_init__(self):
        object.__setattr__(self, "df", _positive(self.df, "df"))
        for name in ("mu_tar", "mu_non"):
            object.__setattr__(self, name, _finite(getattr(self, name), name))
        for name in ("scale_tar", "scale_non"):
            object.__setattr__(self, name, _positive(getattr(self, name), name))

    def _dists(self):
        return (stats.t(self.df, self.mu_tar, self.scale_tar), stats.t(self.df, self.mu_non, self.scale_non))

    def llr(self, scores) -> np.ndarray:
        """Exact LLR (nats) of each score: ``ln f_tar(s) - ln f_non(s)``.

        Examples
        --------
        >>> m = StudentTScoreModel(3.0, 1.0, 1.0, 0.0, 1.0)
        >>> round(float(m.llr([0.5])[0]), 12)   # midpoint of equal-scale classes
        0.0
        """
        s = np.asarray(scores, dtype=np.float64)
        t, n = self._dists()
        return t.logpdf(s) - n.logpdf(s)

    def sample(self, n_tar: int, n_non: int, seed=None) -> "SimulatedScores":
        """Draw ``n_tar`` target then ``n_non`` non-target scores (one generator) with their oracle LLRs."""
        n_tar, n_non = _count(n_tar, "n_tar"), _count(n_non, "n_non")
        rng = np.random.default_rng(seed)
        tar = self.mu_tar + self.scale_tar * rng.standard_t(self.df, n_tar)
        non = self.mu_non + self.scale_non * rng.standard_t(self.df, n_non)
        return SimulatedScores(tar=tar, non=non, tar_llr=self.llr(tar), non_llr=self.llr(non), model=self)

    def eer(self) -> float:
        """Exact EER of the score threshold rule (accept iff ``s >= t``)."""
        return _exact_eer(*self._dists())

    def params(self) -> dict:
        """The model's parameters, JSON-ready."""
        return {"family": "student_t", "df": self.df, "mu_tar": self.mu_tar, "scale_tar": self.scale_tar,
                "mu_non": self.mu_non, "scale_non": self.scale_non}


@dataclass(frozen=True)
class LognormalScoreModel:
    """Positive, right-skewed scores: ``ln s ~ N(mu_tar, sigma_tar^2)`` (targets), ``N(mu_non, sigma_non^2)``.

    The oracle LLR is the normal LLR of ``ln s`` (the Jacobian ``1/s`` cancels): affine in ``ln s`` when the
    sigmas are equal, so unbounded in both directions although every score is positive.
    """

    mu_tar: float
    sigma_tar: float
    mu_non: float
    sigma_non: float

    def __post_init__(self):
        for name in ("mu_tar", "mu_non"):
            object.__setattr__(self, name, _finite(getattr(self, name), name))
        for name in ("sigma_tar", "sigma_non"):
            object.__setattr__(self, name, _positive(getattr(self, name), name))

    def _dists(self):
        return (stats.lognorm(self.sigma_tar, scale=np.exp(self.mu_tar)),
                stats.lognorm(self.sigma_non, scale=np.exp(self.mu_non)))

    def llr(self, scores) -> np.ndarray:
        """Exact LLR (nats) of each positive score (NaN for ``s <= 0``, where neither class has density).

        Examples
        --------
        >>> m = LognormalScoreModel(1.0, 1.0, 0.0, 1.0)
        >>> round(float(m.llr([np.exp(0.5)])[0]), 12)
        0.0
        """
        s = np.asarray(scores, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):  # s <= 0: no density in either class
            ls = np.log(s)
        return (stats.norm.logpdf(ls, self.mu_tar, self.sigma_tar)
                - stats.norm.logpdf(ls, self.mu_non, self.sigma_non))

    def sample(self, n_tar: int, n_non: int, seed=None) -> "SimulatedScores":
        """Draw ``n_tar`` target then ``n_non`` non-target scores (one generator) with their oracle LLRs."""
        n_tar, n_non = _count(n_tar, "n_tar"), _count(n_non, "n_non")
        rng = np.random.default_rng(seed)
        tar = rng.lognormal(self.mu_tar, self.sigma_tar, n_tar)
        non = rng.lognormal(self.mu_non, self.sigma_non, n_non)
        return SimulatedScores(tar=tar, non=non, tar_llr=self.llr(tar), non_llr=self.llr(non), model=self)

    def eer(self) -> float:
        """Exact EER of the score threshold rule (the EER of ``ln s``: the log is increasing)."""
        return GaussianScoreModel(self.mu_tar, self.sigma_tar, self.mu_non, self.sigma_non).eer()

    def params(self) -> dict:
        """The model's parameters, JSON-ready."""
        return {"family": "lognormal", "mu_tar": self.mu_tar, "sigma_tar": self.sigma_tar,
                "mu_non": self.mu_non, "sigma_non": self.sigma_non}


def student_t_scores(df: float = 3.0, separation: float = 1.0, n_tar: int = 2000, n_non: int = 2000, seed=0):
    """Student-t scores, unit scale: targets ``separation + T``, non-targets ``T`` (``T ~ t(df)``).

    Examples
    --------
    >>> sim = student_t_scores(3.0, 1.0, 50, 50, seed=0)
    >>> bool(np.all(np.abs(sim.tar_llr) < 2.0))   # bounded oracle LLR
    True
    """
    return StudentTScoreModel(df, _finite(separation, "separation"), 1.0, 0.0, 1.0).sample(n_tar, n_non, seed)


def lognormal_scores(separation: float = 1.0, sigma: float = 1.0, n_tar: int = 2000, n_non: int = 2000, seed=0):
    """Lognormal scores: ``ln s ~ N(separation * sigma, sigma^2)`` (targets) and ``N(0, sigma^2)``.

    The oracle LLR is ``separation * ln(s) / sigma - separation^2 / 2`` nats.

    Examples
    --------
    >>> sim = lognormal_scores(2.0, 1.0, 10, 10, seed=3)
    >>> bool(np.allclose(sim.tar_llr, 2.0 * np.log(sim.tar) - 2.0))
    True
    """
    separation, sigma = _finite(separation, "separation"), _positive(sigma, "sigma")
    return LognormalScoreModel(separation * sigma, sigma, 0.0, sigma).sample(n_tar, n_non, seed)


# --------------------------------------------------------------------------------------------------------
# 1-to-N with a leaking share of probes (the LID paper's pattern)


@dataclass(frozen=True)
class SimulatedOneToN:
    """A simulated probe x enrolled-speaker score matrix with exact posteriors.

    Attributes
    ----------
    score_matrix : ndarray of shape (n_probes, N), float64
    true_index : ndarray of shape (n_probes,), int
        True speaker's column, uniform over ``0..N-1``.
    leaking : ndarray of shape (n_probes,), bool
        Probes whose true speaker's score was drawn shifted.
    oracle_lid : ndarray of shape (n_probes,), float64
        Exact LID (bits) of every probe: ``log2(N p_true)`` with the exact posterior (uniform prior).
    model : LeakyShareModel
    """

    score_matrix: np.ndarray
    true_index: np.ndarray
    leaking: np.ndarray
    oracle_lid: np.ndarray
    model: "LeakyShareModel"

    def trials(self) -> SimulatedScores:
        """The matrix as verification trials: true-speaker entries are targets, all others non-targets, each
        with its exact LLR :meth:`LeakyShareModel.llr` (row-major order)."""
        mask = np.zeros(self.score_matrix.shape, dtype=bool)
        mask[np.arange(mask.shape[0]), self.true_index] = True
        tar, non = self.score_matrix[mask], self.score_matrix[~mask]
        return SimulatedScores(tar=tar, non=non, tar_llr=self.model.llr(tar), non_llr=self.model.llr(non),
                               model=self.model)


@dataclass(frozen=True)
class LeakyShareModel:
    """1-to-N scores where a share of the probes leaks its speaker and the rest reveal nothing.

    Every entry is ``~ N(0, 1)`` except the true speaker's entry of a *leaking* probe (probability ``share``,
    independently per probe), which is ``~ N(shift, 1)``. ``share = 0`` is a pure-noise attacker (the
    random-noise baseline); small ``share`` with a large ``shift`` gives the LID paper's pattern: the pooled
    verification EER near 50 % while a share of probes is identified with LID near ``log2 N``.

    Parameters
    ----------
    n_speakers : int
        ``N >= 2``.
    share : float
        ``q`` in ``[0, 1]``.
    shift : float
        ``d``, finite.

    Notes
    -----
    A target entry has density ``(1 - q) phi(s) + q phi(s - d)``, a non-target entry ``phi(s)``, so the exact
    LLR of an entry is ``ln((1 - q) + q exp(d s - d^2 / 2))`` (nats), and the exact posterior of candidate
    ``j`` given the whole row is proportional to ``exp(LLR(s_j))`` (the other factors are common to every
    candidate), so the oracle LID is ``log2(N softmax(LLR(row))_true)``.
    """

    n_speakers: int = 20
    share: float = 0.1
    shift: float = 4.0

    def __post_init__(self):
        object.__setattr__(self, "n_speakers", _count(self.n_speakers, "n_speakers", 2))
        q = float(self.share)
        if not 0.0 <= q <= 1.0:
            raise VpevalError(f"share must be in [0, 1], got {self.share!r}")
        object.__setattr__(self, "share", q)
        object.__setattr__(self, "shift", _finite(self.shift, "shift"))

    def llr(self, scores) -> np.ndarray:
        """Exact LLR (nats) of an entry being the true speaker's: ``ln((1-q) + q exp(d s - d^2/2))``.

        Examples
        --------
        >>> float(LeakyShareModel(10, 0.0, 3.0).llr([2.5])[0])   # pure noise: nothing to learn
        0.0
        """
        s = np.asarray(scores, dtype=np.float64)
        q, d = self.share, self.shift
        if q == 0.0:
            return np.zeros_like(s)
        if q == 1.0:
            return d * s - d * d / 2
        return np.logaddexp(np.log1p(-q), np.log(q) + d * s - d * d / 2)

    def oracle_lid(self, score_matrix, true_index) -> np.ndarray:
        """Exact LID (bits) of each row, ``log2(N p_true)`` with the exact posterior (uniform prior)."""
        m = np.asarray(score_matrix, dtype=np.float64)
        t = np.asarray(true_index)
        ll = self.llr(m)
        lse = np.logaddexp.reduce(ll, axis=1)
        log_p = ll[np.arange(m.shape[0]), t] - lse
        return (np.log(m.shape[1]) + log_p) / np.log(2)

    def sample(self, n_probes: int, seed=None) -> SimulatedOneToN:
        """Draw ``n_probes`` rows: noise, true columns, leaking flags, then shifts, from one generator."""
        n_probes = _count(n_probes, "n_probes")
        rng = np.random.default_rng(seed)
        n = self.n_speakers
        m = rng.normal(0.0, 1.0, (n_probes, n))
        true_index = rng.integers(0, n, n_probes)
        leaking = rng.random(n_probes) < self.share
        rows = np.arange(n_probes)
        m[rows[leaking], true_index[leaking]] += self.shift
        return SimulatedOneToN(m, true_index, leaking, self.oracle_lid(m, true_index), self)

    def eer(self) -> float:
        """Exact EER of the pooled verification trials (accept iff ``s >= t``): target entries against
        non-target entries."""
        from scipy.optimize import brentq

        q, d = self.share, self.shift

        def gap(t):
            return (1 - q) * stats.norm.cdf(t) + q * stats.norm.cdf(t - d) - stats.norm.sf(t)

        t = brentq(gap, -40 - abs(d), 40 + abs(d), xtol=1e-14)
        return float(stats.norm.sf(t))

    def params(self) -> dict:
        """The model's parameters, JSON-ready."""
        return {"family": "leaky_share", "n_speakers": self.n_speakers, "share": self.share, "shift": self.shift}


def lid_oracle_comparison(model: LeakyShareModel, n_probes: int = 2000, seed=0, **pipeline_options) -> dict:
    """vpeval's LID chain against the exact LID on a :class:`LeakyShareModel` simulation.

    Draws an evaluation matrix (``seed``) and an independent development matrix of the same size (``seed + 1``
    for an int seed), runs :func:`vpeval.metrics.linkage.lid_pipeline` (z-norm, logistic calibration fitted on
    the development matrix, softmax; ``separable="regularize"`` unless given) and compares its per-probe LIDs
    with :meth:`LeakyShareModel.oracle_lid`.

    Returns
    -------
    dict
        ``vpeval`` and ``oracle``: ALID, PDR, NDR, LID+, LID-, LID_max (bits; PDR/NDR fractions);
        ``leaking_share`` (drawn), ``oracle_lid_leaking_mean`` / ``vpeval_lid_leaking_mean`` (bits, over the
        leaking probes, NaN if none), ``mean_abs_error_bits`` (mean ``|LID - oracle LID|``), ``eer_exact``
        (pooled verification EER of the model), ``n_probes``, ``n_speakers``, ``seed``, ``model``; and, not
        JSON-ready, ``lid_bits`` / ``oracle_lid_bits`` (per evaluation probe) and ``simulation`` (the
        :class:`SimulatedOneToN` evaluation draw).
    """
    from .metrics.linkage import lid_pipeline, lid_summary

    n_probes = _count(n_probes, "n_probes")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise VpevalError(f"seed must be an integer >= 0, got {seed!r}")
    ev = model.sample(n_probes, seed=int(seed))
    dev = model.sample(n_probes, seed=int(seed) + 1)
    pipeline_options.setdefault("separable", "regularize")
    res = lid_pipeline(dev.score_matrix, ev.score_matrix, dev.true_index, ev.true_index, **pipeline_options)

    def summ(s):
        return {"alid": s.alid, "pdr": s.pdr, "ndr": s.ndr, "lid_plus": s.lid_plus, "lid_minus": s.lid_minus,
                "lid_max": s.lid_max}

    lk = ev.leaking
    return {
        "model": model.params(), "n_probes": n_probes, "n_speakers": model.n_speakers, "seed": int(seed),
        "eer_exact": model.eer(),
        "vpeval": summ(res.summary), "oracle": summ(lid_summary(ev.oracle_lid, model.n_speakers)),
        "leaking_share": float(lk.mean()),
        "oracle_lid_leaking_mean": float(ev.oracle_lid[lk].mean()) if lk.any() else float("nan"),
        "vpeval_lid_leaking_mean": float(res.lid[lk].mean()) if lk.any() else float("nan"),
        "mean_abs_error_bits": float(np.mean(np.abs(res.lid - ev.oracle_lid))),
        "lid_bits": res.lid, "oracle_lid_bits": ev.oracle_lid, "simulation": ev,
    }
