"""The :class:`Backend` interface: a speaker-verification scorer over embeddings, optionally trained.

A back-end is fitted on *training speakers* (embeddings with speaker labels, disjoint from every speaker it
will score) and then scores every enrollment embedding against every test embedding. Every back-end starts
with the same step: each input row is scaled to unit L2 norm, so that single-utterance embeddings and
speaker-averaged enrollment models (which the protocol builds as the normalised mean of normalised
embeddings, see ``docs/protocols.md``) are on one scale.

Fitting is bit-for-bit independent of the order of the training rows: rows are put in a canonical order
(by speaker id, then by their values) before any sum is taken.
"""

from __future__ import annotations

import numpy as np

from ..errors import VpevalError

__all__ = ["Backend", "BackendError", "unit_rows", "check_training", "speaker_means", "within_variation",
           "rounding_level", "check_spread", "FEW_SPEAKERS", "warn_few_speakers"]

#: Below this many training speakers (PLDA) or cohort speakers (AS-norm) a back-end warns
#: (:class:`~vpeval.errors.FewTrainingSpeakersWarning`): its between-speaker statistics rest on too few speakers.
FEW_SPEAKERS = 10


class BackendError(VpevalError):
    """Training data or inputs that a back-end cannot use (message says what was expected)."""


def unit_rows(x: np.ndarray, what: str = "embedding") -> np.ndarray:
    """Rows of ``x`` scaled to unit L2 norm (float64); a zero or non-finite row is an error.

    The row is first divided by its largest magnitude so that the norm neither overflows nor underflows.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] == 0:
        raise BackendError(f"{what}s must be a 2-D array (n, d) with d >= 1, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise BackendError(f"{what}s contain NaN or inf (row {int(np.flatnonzero(~np.isfinite(x).all(1))[0])})")
    peak = np.abs(x).max(axis=1) if x.shape[0] else np.zeros(0)
    bad = np.flatnonzero(~(peak > 0))
    if bad.size:
        raise BackendError(f"{what} row {int(bad[0])} is the zero vector; it has no direction to score")
    y = x / peak[:, None]
    return y / np.sqrt(np.einsum("ij,ij->i", y, y))[:, None]


def rounding_level(dtype, d: int) -> float:
    """Distance below which two unit-length rows of dimension ``d`` are equal up to rounding.

    ``4 eps_in + 64 eps sqrt(d)``: ``eps_in`` the machine epsilon of ``dtype`` when it is a floating type
    narrower than float64 (float16, float32: a unit row stored in it is off by at most ``eps_in / 2`` in
    norm), else 0; ``eps`` that of float64, in which the back-ends compute (sums and scalings over ``d``
    coordinates). Every back-end works on unit rows (magnitude 1), so this is an absolute level there; a
    spread, a centred row or a whitened direction at or below it is rounding residue, not signal.
    """
    eps, eps_in = float(np.finfo(np.float64).eps), 0.0
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = np.dtype(np.float64)
    if np.issubdtype(dt, np.floating) and np.finfo(dt).eps > eps:
        eps_in = float(np.finfo(dt).eps)
    return 4.0 * eps_in + 64.0 * eps * float(np.sqrt(max(int(d), 1)))


def check_spread(x: np.ndarray, spk: np.ndarray, tol: float, who: str) -> None:
    """Refuse unit training rows ``x`` that are one vector up to rounding, or whose every speaker's rows are.

    Parameters
    ----------
    x : ndarray (n, d)
        Unit rows in canonical order (:func:`check_training`).
    spk : ndarray (n,) of str
    tol : float
        :func:`rounding_level` of the input.
    who : str
        The back-end, for the message.

    Raises
    ------
    BackendError
        Every row within ``tol`` of the mean row (the data has no direction to learn: its spread is rounding
        residue), or every speaker with two or more rows has its rows within ``tol`` of their mean (no
        within-speaker variation); the message gives the spread and names speakers.
    """
    dev = np.sqrt(((x - x.mean(axis=0)) ** 2).sum(axis=1))
    names = np.unique(spk)
    if not dev.max(initial=0.0) > tol:
        raise BackendError(
            f"{who}: the {x.shape[0]} training embeddings of {names.size} speakers (first: "
            f"{', '.join(repr(str(s)) for s in names[:3])}) are one vector up to rounding (largest distance from "
            f"their mean {dev.max(initial=0.0):.3g} after unit-length scaling, rounding level {tol:.3g}): there is "
            "nothing to learn from them")
    _, inverse, counts, means = speaker_means(x, spk)
    within = np.sqrt(((x - means[inverse]) ** 2).sum(axis=1))
    spread = np.zeros(names.size)
    np.maximum.at(spread, inverse, within)
    repeated = counts > 1
    if repeated.any() and not (spread[repeated] > tol).any():
        flat = names[repeated]
        raise BackendError(
            f"{who}: the training speakers' embeddings have no within-speaker variation (each of the "
            f"{flat.size} speakers with several embeddings, first {', '.join(repr(str(s)) for s in flat[:3])}, "
            f"has them identical up to rounding: largest distance from the speaker's mean "
            f"{spread[repeated].max():.3g}, rounding level {tol:.3g})")


def warn_few_speakers(n: int, what: str) -> None:
    """Warn (:class:`~vpeval.errors.FewTrainingSpeakersWarning`) when ``n < FEW_SPEAKERS``; ``what`` names the
    statistic and the back-end, e.g. ``"PLDA between-speaker covariance"``."""
    if n < FEW_SPEAKERS:
        import warnings

        from ..errors import FewTrainingSpeakersWarning

        warnings.warn(f"{what} estimated from {n} speaker(s) (fewer than {FEW_SPEAKERS}): the scores rest on too "
                      "few speakers to be reliable; give more training speakers", FewTrainingSpeakersWarning,
                      stacklevel=4)


def speaker_means(x: np.ndarray, spk: np.ndarray):
    """Per speaker: sorted ids, the index of each row's speaker, row counts and mean rows.

    Returns ``(names (S,), inverse (n,), counts (S,), means (S, d))``.
    """
    names, inverse, counts = np.unique(spk, return_inverse=True, return_counts=True)
    sums = np.zeros((names.size, x.shape[1]))
    np.add.at(sums, inverse, x)
    return names, inverse, counts, sums / counts[:, None]


def within_variation(x: np.ndarray, spk: np.ndarray) -> float:
    """Share of the total variance of the rows ``x`` that lies within speakers (0: each speaker's rows equal)."""
    _, inverse, _, means = speaker_means(x, spk)
    total = float(((x - x.mean(axis=0)) ** 2).sum())
    return float(((x - means[inverse]) ** 2).sum()) / total if total > 0 else 0.0


def check_training(embeddings, speaker_ids, *, min_speakers: int = 2, need_repeats: bool = False):
    """Validate training data; return (unit rows, speaker ids) in canonical order.

    Canonical order: sorted by speaker id, then lexicographically by the row values, so that any fit on the
    result is independent of the input order.

    Raises
    ------
    BackendError
        Shapes disagree, an empty speaker id, fewer than ``min_speakers`` speakers, or (``need_repeats``)
        no speaker with two or more embeddings (no within-speaker variation to learn from).
    """
    x = unit_rows(embeddings, "training embedding")
    spk = np.asarray(speaker_ids, dtype=str)
    if spk.shape != (x.shape[0],):
        raise BackendError(f"speaker_ids has shape {spk.shape}, expected ({x.shape[0]},) to match the embeddings")
    if spk.size and (np.char.str_len(spk) == 0).any():
        raise BackendError(f"empty speaker id at training row {int(np.flatnonzero(np.char.str_len(spk) == 0)[0])}")
    order = np.lexsort(tuple(x[:, j] for j in range(x.shape[1] - 1, -1, -1)) + (spk,))
    x, spk = x[order], spk[order]
    n_spk = np.unique(spk).size
    if n_spk < min_speakers:
        raise BackendError(f"training needs at least {min_speakers} speakers, got {n_spk}")
    if need_repeats and np.unique(spk).size == spk.size:
        raise BackendError("every training speaker has a single embedding: no within-speaker variation to learn "
                           "(give each training speaker several utterances or segments)")
    return x, spk


class Backend:
    """A scorer of (enrollment, test) embedding pairs; subclasses implement ``_fit`` and ``_score``.

    Attributes
    ----------
    name : str
        The back-end's name in reports (``cosine``, ``centred-cosine``, ``lda``, ``plda``; ``+asnorm`` suffix
        when wrapped in :class:`~vpeval.backends.ASNorm`).
    trained : bool
        False for back-ends that learn nothing from training data (plain cosine).
    n_training_speakers_ : int
        Set by :meth:`fit` (0 for an untrained back-end that was never fitted).
    dim_ : int or None
        Embedding dimension seen in :meth:`fit` (``None``: any dimension is accepted).
    rounding_ : float
        :func:`rounding_level` of the training embeddings (dtype and dimension), set by :meth:`fit`: the
        absolute level below which the degeneracy checks treat a spread or a centred row as rounding residue.
    """

    name = "backend"
    trained = True

    def __init__(self):
        self.dim_ = None
        self.n_training_speakers_ = 0
        self._fitted = False

    def fit(self, embeddings, speaker_ids) -> "Backend":
        """Fit on training embeddings, shape (n, d), with one speaker id per row; returns ``self``."""
        x, spk = check_training(embeddings, speaker_ids, min_speakers=self._min_speakers(),
                                need_repeats=self._needs_repeats())
        # a failed refit leaves no half-updated back-end: it is unfitted until _fit succeeds
        self._fitted, self.dim_, self.n_training_speakers_ = False, None, 0
        self.rounding_ = rounding_level(getattr(embeddings, "dtype", np.float64), x.shape[1])
        self._fit(x, spk)
        self.dim_ = x.shape[1]
        self.n_training_speakers_ = int(np.unique(spk).size)
        self._fitted = True
        return self

    def score(self, enroll, test) -> np.ndarray:
        """Score every enrollment row against every test row.

        Parameters
        ----------
        enroll : array-like, shape (n_enroll, d)
            Enrollment embeddings or speaker models (e.g. a speaker's averaged enrollment embeddings).
        test : array-like, shape (n_test, d)

        Returns
        -------
        ndarray of float64, shape (n_enroll, n_test)
            Higher means "more likely the same speaker". Units depend on the back-end: cosine similarity in
            [-1, 1] (cosine, centred-cosine, lda), a log-likelihood ratio in nats (plda), standardised scores
            (AS-norm). Each entry depends only on its own pair (and, for AS-norm, on the fixed training
            cohort), never on the other rows or their order.

        Raises
        ------
        BackendError
            Not fitted (trained back-ends), a dimension other than the fitted one, zero or non-finite rows.
        """
        if self.trained and not self._fitted:
            raise BackendError(f"back-end {self.name!r} must be fitted on training speakers before scoring "
                               "(or its last fit failed)")
        e, t = unit_rows(enroll, "enrollment embedding"), unit_rows(test, "test embedding")
        for what, arr in (("enrollment", e), ("test", t)):
            if self.dim_ is not None and arr.shape[1] != self.dim_:
                raise BackendError(f"{what} embeddings have dimension {arr.shape[1]}; {self.name} was fitted "
                                   f"on dimension {self.dim_}")
        if e.shape[1] != t.shape[1]:
            raise BackendError(f"enrollment dimension {e.shape[1]} != test dimension {t.shape[1]}")
        return self._score(e, t)

    def score_enrollments(self, enrollments, test) -> np.ndarray:
        """Score models of several enrollment embeddings each against every test row.

        The model of each enrollment is the normalised mean of its normalised rows (the protocols' speaker
        models, ``docs/protocols.md``), scored by :meth:`score`; :class:`~vpeval.backends.PLDABackend` with
        ``enrollment="by-model"`` replaces this by the PLDA LLR of ``n`` embeddings.

        Parameters
        ----------
        enrollments : sequence of array-like, each shape (n_i, d), n_i >= 1
        test : array-like, shape (n_test, d)

        Returns
        -------
        ndarray of float64, shape (n_models, n_test)

        Raises
        ------
        BackendError
            An empty enrollment, and the errors of :meth:`score`.
        """
        groups = [np.asarray(g, dtype=np.float64) for g in enrollments]
        if not groups or any(g.ndim != 2 or g.shape[0] == 0 for g in groups):
            raise BackendError("every enrollment needs at least one embedding (a 2-D array (n_i, d), n_i >= 1)")
        models = np.vstack([unit_rows(unit_rows(g, "enrollment embedding").mean(axis=0)[None, :],
                                      "enrollment mean") for g in groups])
        return self.score(models, test)

    def clone(self) -> "Backend":
        """A new, unfitted back-end with the same settings."""
        return type(self)(**self._params())

    def _params(self) -> dict:
        """Constructor arguments (settings) of this back-end."""
        return {}

    def describe(self) -> dict:
        """Settings and fitted sizes for reports (JSON-serialisable)."""
        return {"backend": self.name, "trained": self.trained, "training_speakers": self.n_training_speakers_}

    # subclass hooks
    def _min_speakers(self) -> int:
        return 2

    def _needs_repeats(self) -> bool:
        return False

    def _fit(self, x: np.ndarray, spk: np.ndarray) -> None:
        raise NotImplementedError

    def _score(self, e: np.ndarray, t: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
