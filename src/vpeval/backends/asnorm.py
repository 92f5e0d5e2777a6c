r"""Adaptive symmetric score normalisation (AS-norm) around any back-end.

For a raw score ``s(e, t)``, the cohort is the set of training speakers' models (the normalised mean of each
training speaker's normalised embeddings, exactly like an enrollment model). ``S_e`` is the set of the
``top_k`` highest scores of ``e`` against the cohort and ``S_t`` that of ``t``; with ``mu`` and ``sigma`` their
mean and sample standard deviation (``ddof=1``):

.. math:: s_{\mathrm{as}}(e, t) = \tfrac12\left(\frac{s - \mu(S_e)}{\sigma(S_e)}
          + \frac{s - \mu(S_t)}{\sigma(S_t)}\right).

This is "AS-norm1" of Matejka et al., "Analysis of score normalization in multilingual speaker recognition",
Interspeech 2017, Eq. 3 (adaptive cohort: Sturim & Reynolds, ICASSP 2005; symmetric S-norm: Kenny, Odyssey
2010). The top-``k`` selection uses values only, so ties among cohort scores cannot change the result.
"""

from __future__ import annotations

import numpy as np

from .base import Backend, BackendError, speaker_means, unit_rows, warn_few_speakers

__all__ = ["ASNorm", "speaker_models"]


def speaker_models(x: np.ndarray, spk: np.ndarray):
    """Sorted speaker ids and each speaker's model: the unit-length mean of its unit rows, shape (S, d)."""
    names, _, _, means = speaker_means(unit_rows(x), spk)
    return names, unit_rows(means, "training speaker mean")


def _top_k_stats(s: np.ndarray, k: int):
    top = -np.partition(-s, k - 1, axis=1)[:, :k]
    return top.mean(axis=1), top.std(axis=1, ddof=1)


class ASNorm(Backend):
    """AS-norm (module docstring) of ``backend``'s scores, cohort from the training speakers.

    Parameters
    ----------
    backend : Backend
        The raw scorer; :meth:`fit` fits it on the same training data.
    top_k : int, default 200
        Cohort scores kept per side; capped at the number of training speakers (documented, not an error;
        :meth:`describe` and the audit report give the top-k in use beside the one requested). At least 2 (a
        standard deviation needs two values). A cohort of fewer than 10 speakers warns
        (:class:`~vpeval.errors.FewTrainingSpeakersWarning`).

    Attributes
    ----------
    cohort_ : ndarray, shape (n_training_speakers, d)
    top_k_ : int
        The ``top_k`` in use after the cap.

    Raises
    ------
    BackendError
        (at scoring) a zero cohort standard deviation for some input (all its top-``k`` cohort scores equal).

    Examples
    --------
    >>> from vpeval.backends import CosineBackend
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(30, 4))
    >>> b = ASNorm(CosineBackend(), top_k=5).fit(x, np.repeat(np.arange(10).astype(str), 3))
    >>> b.name, b.top_k_, b.score(x[:2], x[2:5]).shape
    ('cosine+asnorm', 5, (2, 3))
    """

    def __init__(self, backend: Backend, top_k: int = 200):
        super().__init__()
        if not isinstance(backend, Backend) or isinstance(backend, ASNorm):
            raise BackendError(f"ASNorm wraps one plain Backend, got {backend!r}")
        if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 2:
            raise BackendError(f"AS-norm top_k must be an integer >= 2, got {top_k!r}")
        self.backend = backend
        self.top_k = int(top_k)
        self.name = f"{backend.name}+asnorm"

    def clone(self) -> "ASNorm":
        return ASNorm(self.backend.clone(), top_k=self.top_k)

    def _needs_repeats(self) -> bool:
        return self.backend._needs_repeats()

    def _min_speakers(self) -> int:
        return max(2, self.backend._min_speakers())

    def _fit(self, x, spk):
        self.backend.fit(x, spk)
        _, self.cohort_ = speaker_models(x, spk)
        self.top_k_ = min(self.top_k, self.cohort_.shape[0])
        warn_few_speakers(self.cohort_.shape[0], "AS-norm: the cohort score statistics are")

    def _score(self, e, t):
        raw = self.backend.score(e, t)
        mu_e, sd_e = _top_k_stats(self.backend.score(e, self.cohort_), self.top_k_)
        mu_t, sd_t = _top_k_stats(self.backend.score(t, self.cohort_), self.top_k_)
        # a standard deviation at rounding level of the scores would blow the normalised score up
        floor = 1e-9 * max(1.0, float(np.abs(raw).max()) if raw.size else 1.0)
        for what, sd in (("enrollment", sd_e), ("test", sd_t)):
            bad = np.flatnonzero(~(sd > floor))
            if bad.size:
                raise BackendError(f"AS-norm: {what} row {int(bad[0])} has (nearly) identical top-{self.top_k_} "
                                   f"cohort scores (standard deviation {float(sd[bad[0]]):.3g}); the normalisation "
                                   "is undefined (use a larger top_k or a cohort of distinct speakers)")
        return 0.5 * ((raw - mu_e[:, None]) / sd_e[:, None] + (raw - mu_t[None, :]) / sd_t[None, :])

    def describe(self) -> dict:
        """The wrapped back-end's settings, plus ``asnorm_top_k`` (the top-k in use, after the cap),
        ``asnorm_top_k_requested`` and ``asnorm_cohort`` (cohort speakers; ``None`` before fitting). When the
        cap applies (``top_k >= cohort``) every cohort score is used: plain symmetric S-norm."""
        cohort = getattr(self, "cohort_", None)
        return dict(self.backend.describe(), backend=self.name, asnorm_top_k=getattr(self, "top_k_", self.top_k),
                    asnorm_top_k_requested=self.top_k, asnorm_cohort=None if cohort is None else int(cohort.shape[0]),
                    training_speakers=self.n_training_speakers_)
