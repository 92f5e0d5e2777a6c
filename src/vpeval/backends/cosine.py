"""Cosine-family back-ends: plain cosine, centred cosine, LDA + cosine.

All three score the cosine similarity of two vectors after a front end (each input row is first scaled to
unit length, see :mod:`vpeval.backends.base`):

* ``cosine``: no front end; nothing is learnt (the VoicePrivacy 2024 ASV_eval scoring of ECAPA embeddings).
* ``centred-cosine``: subtract the mean of the (unit) training embeddings, then cosine. The mean is the one
  statistic a lazy attacker can learn from unlabelled training data; it removes the component that all
  speakers (or all anonymized voices) share.
* ``lda``: Fisher linear discriminant analysis (scikit-learn ``LinearDiscriminantAnalysis``, ``solver="svd"``)
  fitted on the training speakers as classes, projection onto the ``n_components`` most discriminant
  directions (centred on the training mean), then cosine. This is the LDA step of the Kaldi x-vector recipe
  (Snyder et al., ICASSP 2018, Sec. 3.3) with cosine scoring instead of PLDA.
"""

from __future__ import annotations

import numpy as np

from .base import Backend, BackendError, check_spread, unit_rows, within_variation

__all__ = ["CosineBackend", "CentredCosineBackend", "LDABackend"]


def _cosine(e: np.ndarray, t: np.ndarray, what: str) -> np.ndarray:
    return unit_rows(e, f"{what} enrollment") @ unit_rows(t, f"{what} test").T


class CosineBackend(Backend):
    """Cosine similarity of the two unit vectors, in [-1, 1]; untrained (``fit`` only records the dimension).

    Examples
    --------
    >>> CosineBackend().score([[1.0, 0.0]], [[1.0, 1.0], [0.0, 2.0]]).round(4).tolist()
    [[0.7071, 0.0]]
    """

    name = "cosine"
    trained = False

    def _min_speakers(self) -> int:
        return 1

    def _fit(self, x, spk):
        pass

    def _score(self, e, t):
        return e @ t.T


class CentredCosineBackend(Backend):
    """Cosine after subtracting the training mean: ``cos(e - m, t - m)``, ``m`` the mean unit training row.

    Attributes
    ----------
    mean_ : ndarray, shape (d,)

    Raises
    ------
    BackendError
        (at scoring) an input equal to the training mean up to rounding (distance at most
        :func:`~vpeval.backends.base.rounding_level` of the training data after unit-length scaling), which has
        no direction after centring; the message names the row.

    Examples
    --------
    >>> b = CentredCosineBackend().fit([[1.0, 1.0], [1.0, -1.0], [-1.0, 1.0], [-1.0, -1.0]], ["a", "a", "b", "b"])
    >>> b.mean_.tolist()
    [0.0, 0.0]
    >>> b.score([[1.0, 0.0]], [[0.0, 1.0]]).tolist()
    [[0.0]]
    """

    name = "centred-cosine"

    def _fit(self, x, spk):
        self.mean_ = x.mean(axis=0)

    def _score(self, e, t):
        tol = self.rounding_
        for what, a in (("enrollment", e), ("test", t)):
            norm = np.sqrt(((a - self.mean_) ** 2).sum(axis=1))
            bad = np.flatnonzero(~(norm > tol))
            if bad.size:
                raise BackendError(
                    f"centred cosine: {what} row {int(bad[0])} equals the training mean up to rounding (distance "
                    f"{norm[bad[0]]:.3g} after unit-length scaling, rounding level {tol:.3g}); it has no direction "
                    "after centring")
        return _cosine(e - self.mean_, t - self.mean_, "centred")


class LDABackend(Backend):
    """Linear discriminant analysis projection of the training speakers, then cosine.

    Parameters
    ----------
    n_components : int, optional
        Output dimension. Default ``min(n_speakers - 1, d, 150)``; a larger request than
        ``min(n_speakers - 1, d)`` (the rank of the between-speaker scatter) is an error, and so is an output
        of one dimension (where every cosine is +-1), i.e. fewer than 3 training speakers.

    Attributes
    ----------
    lda_ : sklearn.discriminant_analysis.LinearDiscriminantAnalysis
        The fitted model (``solver="svd"``, which needs no covariance inversion and is deterministic).
    n_components_ : int
        The dimension the fitted projection really has: the one asked for (or the default), or fewer when the
        training embeddings' numerical rank allows fewer discriminant directions (scikit-learn's SVD solver
        drops the others).

    Notes
    -----
    Fisher (1936); Snyder et al., "X-vectors: robust DNN embeddings for speaker recognition", ICASSP 2018
    (LDA to 150-200 dimensions before the back-end). Every training speaker is one class; speakers with a
    single embedding contribute to the between-speaker but not to the within-speaker scatter.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> centres = rng.normal(size=(5, 8))
    >>> x = np.repeat(centres, 4, axis=0) + 0.1 * rng.normal(size=(20, 8))
    >>> b = LDABackend().fit(x, np.repeat(list("abcde"), 4))
    >>> b.n_components_
    4
    >>> s = b.score(centres, x)
    >>> bool((s.argmax(axis=0) == np.repeat(np.arange(5), 4)).all())
    True
    """

    name = "lda"

    def __init__(self, n_components: int | None = None):
        super().__init__()
        self.n_components = n_components

    def _needs_repeats(self) -> bool:
        return True

    def _params(self) -> dict:
        return {"n_components": self.n_components}

    def _fit(self, x, spk):
        from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

        cap = min(int(np.unique(spk).size) - 1, x.shape[1])
        if cap < 2:
            raise BackendError(f"LDA + cosine needs at least 2 output dimensions, i.e. at least 3 training speakers "
                               f"and 2 embedding dimensions (got {np.unique(spk).size} speakers, dimension "
                               f"{x.shape[1]}): in one dimension every cosine is +1 or -1")
        check_spread(x, spk, self.rounding_, "LDA")
        if within_variation(x, spk) < 1e-10:
            raise BackendError("LDA: the training speakers' embeddings have no within-speaker variation (each "
                               "speaker's embeddings are identical up to rounding); the discriminant directions "
                               "would be fitted to rounding noise")
        k = self.n_components
        if k is None:
            k = min(cap, 150)
        elif isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 2 <= k <= cap:
            raise BackendError(f"LDA dimension must be an integer in [2, {cap}] (n_speakers - 1 and the "
                               f"embedding dimension bound it), got {k!r}")
        try:
            self.lda_ = LinearDiscriminantAnalysis(n_components=int(k), solver="svd").fit(x, spk)
        except (ValueError, IndexError, np.linalg.LinAlgError) as exc:  # degenerate scatter inside scikit-learn
            raise BackendError(f"LDA cannot be fitted on these training embeddings ({exc})") from None
        # scikit-learn's SVD solver keeps only the directions of the data's numerical rank: the projection
        # may have fewer dimensions than asked for, and the real number is the one reported
        self.n_components_ = int(self.lda_.transform(x[:1]).shape[1])
        if self.n_components_ < 2:
            raise BackendError(f"LDA: the training embeddings span {self.n_components_} discriminant direction(s) "
                               "(numerical rank); LDA + cosine needs at least 2 (in one every cosine is +1 or -1)")

    def _score(self, e, t):
        return _cosine(self.lda_.transform(e), self.lda_.transform(t), "LDA-projected")

    def describe(self) -> dict:
        """Settings: ``n_components`` the dimension the fitted LDA really projects to (``n_components`` as
        asked before fitting), ``n_components_requested`` the setting (``None``: the default)."""
        return dict(super().describe(), n_components=getattr(self, "n_components_", self.n_components),
                    n_components_requested=self.n_components)
