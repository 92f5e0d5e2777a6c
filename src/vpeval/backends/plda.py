r"""Two-covariance PLDA back-end with the usual centring / whitening / length-normalisation front end.

Model (two-covariance PLDA; Ioffe, ECCV 2006; Brummer & de Villiers, "The speaker partitioning problem",
Odyssey 2010, Sec. 4; Sizov, Lee & Kinnunen, S+SSPR 2014, Sec. 2.3): an embedding ``x`` of speaker ``s`` is

.. math:: x = y_s + \varepsilon, \quad y_s \sim N(\mu, S_b), \quad \varepsilon \sim N(0, S_w),

with between-speaker covariance ``S_b`` and within-speaker covariance ``S_w``. The verification score is the
log-likelihood ratio (natural log, nats) of "same speaker" against "different speakers" for a pair
``(x_1, x_2)``:

.. math::

   \mathrm{llr}(x_1, x_2) = \log N\!\left(\begin{bmatrix}x_1\\x_2\end{bmatrix};
       \begin{bmatrix}\mu\\\mu\end{bmatrix},
       \begin{bmatrix}S_b+S_w & S_b\\S_b & S_b+S_w\end{bmatrix}\right)
   - \log N\!\left(\begin{bmatrix}x_1\\x_2\end{bmatrix};
       \begin{bmatrix}\mu\\\mu\end{bmatrix},
       \begin{bmatrix}S_b+S_w & 0\\0 & S_b+S_w\end{bmatrix}\right).

Closed form (Ioffe 2006, Sec. 3): with ``A`` simultaneously diagonalising both covariances,
``A^T S_w A = I`` and ``A^T S_b A = diag(psi)``, and ``u = A^T (x - mu)``, the LLR is a sum over dimensions
``d`` of

.. math::

   \tfrac12 \left(\tfrac{1}{T_d} - \tfrac{T_d}{D_d}\right)(u_{1d}^2 + u_{2d}^2)
   + \tfrac{\psi_d}{D_d} u_{1d} u_{2d} - \tfrac12 \log \tfrac{D_d}{T_d^2},
   \qquad T_d = 1 + \psi_d,\; D_d = T_d^2 - \psi_d^2 = 1 + 2\psi_d,

so a matrix of scores costs one matrix product (:func:`two_covariance_llr`).

Training (:func:`two_covariance_em`): maximum likelihood by EM (Brummer & de Villiers 2010; Sizov et al.
2014, Alg. 2), started from the moment estimates (``S_w`` = pooled within-speaker covariance, ``S_b`` =
covariance of the speaker means) and run for a fixed number of iterations, so the result is deterministic.
The E-step uses the covariance form ``G_n = S_b (S_b + S_w / n)^{-1}``, ``E[y_s] = mu + G_n (xbar_s - mu)``,
``Cov[y_s] = S_b - G_n S_b`` for a speaker with ``n`` embeddings and mean ``xbar_s``, which stays valid when
``S_b`` is singular (fewer training speakers than dimensions).

Front end (the convention of the Kaldi x-vector recipe and of speechbrain's PLDA, after Garcia-Romero &
Espy-Wilson, "Analysis of i-vector length normalization", Interspeech 2011): each row scaled to unit length;
optionally projected by LDA to ``lda_dim`` dimensions (scikit-learn, as the Kaldi recipe does to 200);
centred on the training mean; whitened with the training total covariance (directions whose variance is
below ``1e-10`` times the largest, or whose standard deviation is at the rounding level of unit rows of the
input's dtype, :func:`~vpeval.backends.base.rounding_level`, are dropped: they carry no information in the
training data); scaled to
length ``sqrt(k)`` (``k`` the whitened dimension, as Kaldi's ``ivector-normalize-length``). PLDA is trained
on the training rows after this front end, and scores rows after the same front end.

Enrollment of ``n`` utterances, two named rules (``PLDABackend(enrollment=...)``,
:meth:`PLDABackend.score_enrollments`):

* ``"mean"`` (default, what the protocols use): the speaker's model is the normalised mean of its normalised
  enrollment embeddings (see ``docs/protocols.md``), scored as *one* embedding;
* ``"by-model"``: the LLR the model gives for ``n`` embeddings of one speaker against a test embedding
  (Kaldi's ``num_utts`` form). Each enrollment embedding goes through the front end; their mean ``xbar`` (in
  the PLDA space) is a sufficient statistic, ``xbar | y ~ N(y, S_w / n)``, so with ``a_d = psi_d + 1/n``,
  ``b_d = 1 + psi_d``, ``D_d = a_d b_d - psi_d^2`` and ``u = A^T (xbar - mu)``, ``v = A^T (x - mu)``
  the LLR is a sum over dimensions of

  .. math::

     \tfrac12\left(\tfrac{1}{a_d} - \tfrac{b_d}{D_d}\right)u_d^2
     + \tfrac12\left(\tfrac{1}{b_d} - \tfrac{a_d}{D_d}\right)v_d^2
     + \tfrac{\psi_d}{D_d} u_d v_d - \tfrac12 \log\tfrac{D_d}{a_d b_d}

  (:func:`two_covariance_llr_n`; ``n = 1`` is the single-pair formula above). It equals the LLR of all
  ``n + 1`` embeddings under "same speaker" against "enrollment and test from different speakers".
  After length normalisation the embeddings only approximately follow the model, which is why the
  protocols keep ``"mean"``; the two differ most for large ``n``.
"""

from __future__ import annotations

import numpy as np

from .base import Backend, BackendError, check_spread, speaker_means, unit_rows, warn_few_speakers

__all__ = ["PLDABackend", "two_covariance_em", "two_covariance_llr", "two_covariance_llr_n",
           "simultaneous_diagonalization", "scoring_terms", "ENROLLMENT_RULES"]

#: Enrollment rules of :class:`PLDABackend` (module docstring).
ENROLLMENT_RULES = ("mean", "by-model")


def _speaker_stats(x: np.ndarray, spk: np.ndarray):
    """Per-speaker counts, means and the pooled within-speaker scatter (rows sorted by speaker)."""
    _, inverse, counts, means = speaker_means(x, spk)
    dev = x - means[inverse]
    return counts, means, dev.T @ dev


def two_covariance_em(x, speaker_ids, *, n_iter: int = 10):
    """Maximum-likelihood two-covariance PLDA parameters by EM (module docstring).

    Parameters
    ----------
    x : array-like, shape (n, k)
        Training vectors (already through any front end).
    speaker_ids : array-like of str, shape (n,)
    n_iter : int, default 10
        EM iterations after the moment initialisation (0 returns the moment estimates).

    Returns
    -------
    mu : ndarray, shape (k,)
    between, within : ndarray, shape (k, k)
        ``S_b`` and ``S_w`` (symmetric; ``within`` positive definite).

    Raises
    ------
    BackendError
        Fewer than 2 speakers, or a within-speaker covariance that is not positive definite (fewer
        within-speaker degrees of freedom ``n - n_speakers`` than dimensions ``k``, or a direction in
        which no speaker varies).

    Examples
    --------
    With equal counts the maximum-likelihood estimates have a closed form (``S_w`` = within scatter over
    ``n_speakers (c - 1)``, ``S_b`` = variance of the speaker means minus ``S_w / c``); EM converges to it:

    >>> rng = np.random.default_rng(1)
    >>> y = rng.normal(scale=2.0, size=(400, 1))                 # S_b = 4
    >>> x = np.repeat(y, 5, axis=0) + rng.normal(size=(2000, 1))  # S_w = 1
    >>> mu, sb, sw = two_covariance_em(x, np.repeat(np.arange(400).astype(str), 5), n_iter=100)
    >>> m = x.reshape(400, 5).mean(axis=1)
    >>> sw_ml = ((x.reshape(400, 5) - m[:, None]) ** 2).sum() / (400 * 4)
    >>> bool(np.isclose(sw[0, 0], sw_ml) and np.isclose(sb[0, 0], m.var() - sw_ml / 5))
    True
    """
    x = np.asarray(x, dtype=np.float64)
    spk = np.asarray(speaker_ids, dtype=str)
    if x.ndim != 2 or spk.shape != (x.shape[0],):
        raise BackendError(f"PLDA training: x {x.shape} and speaker_ids {spk.shape} do not match")
    counts, means, scatter = _speaker_stats(x, spk)
    n, k = x.shape
    if counts.size < 2:
        raise BackendError(f"PLDA training needs at least 2 speakers, got {counts.size}")
    sw = scatter / n
    evals = np.linalg.eigvalsh(sw)
    if not evals[-1] > 1e-12 * max(float(np.trace(np.cov(x, rowvar=False, bias=True).reshape(k, k))), 1e-300):
        raise BackendError("PLDA training: the training speakers' embeddings have no within-speaker variation "
                           "(each speaker's embeddings are identical up to rounding)")
    if not evals[0] > 1e-10 * evals[-1]:
        raise BackendError(
            f"PLDA training: the within-speaker covariance is singular ({n - counts.size} within-speaker degrees "
            f"of freedom for {k} dimensions, or directions in which no speaker varies): give more embeddings per "
            "training speaker, or reduce the dimension (in Python: PLDABackend(lda_dim=...)); on the command line, "
            "where no such option exists, attack with --backend lda or centred-cosine instead")
    mu = means.mean(axis=0)
    sb = np.cov(means, rowvar=False, bias=True).reshape(k, k)
    sizes = np.unique(counts)
    for _ in range(int(n_iter)):
        m = np.empty_like(means)
        cov_b = np.zeros((k, k))  # sum over speakers of Cov[y_s]
        cov_w = np.zeros((k, k))  # sum over speakers of n_s Cov[y_s]
        for c in sizes:
            rows = counts == c
            r = int(rows.sum())
            g = np.linalg.solve((sb + sw / c).T, sb.T).T  # S_b (S_b + S_w / c)^-1
            m[rows] = mu + (means[rows] - mu) @ g.T
            post = sb - g @ sb
            cov_b += r * post
            cov_w += c * r * post
        mu = m.mean(axis=0)
        dm = m - mu
        sb = (cov_b + dm.T @ dm) / counts.size
        dx = means - m
        sw = (scatter + (dx * counts[:, None]).T @ dx + cov_w) / n
        sb, sw = (sb + sb.T) / 2, (sw + sw.T) / 2
    return mu, sb, sw


def simultaneous_diagonalization(between, within):
    """``A`` and ``psi`` with ``A^T within A = I`` and ``A^T between A = diag(psi)``, ``psi`` descending, >= 0.

    Raises
    ------
    BackendError
        ``within`` is not positive definite.
    """
    w_vals, w_vecs = np.linalg.eigh(within)
    if not w_vals[0] > 0:
        raise BackendError("PLDA: the within-speaker covariance is not positive definite")
    white = w_vecs / np.sqrt(w_vals)
    b = white.T @ between @ white
    psi, v = np.linalg.eigh((b + b.T) / 2)
    order = np.argsort(psi)[::-1]
    return white @ v[:, order], np.clip(psi[order], 0.0, None)


def two_covariance_llr(enroll, test, mu, between, within) -> np.ndarray:
    """Two-covariance PLDA log-likelihood ratio (nats) of every (enroll, test) pair (module docstring).

    Parameters
    ----------
    enroll : array-like, shape (n_enroll, k)
    test : array-like, shape (n_test, k)
    mu : array-like, shape (k,)
    between, within : array-like, shape (k, k)
        ``S_b`` (positive semi-definite) and ``S_w`` (positive definite).

    Returns
    -------
    ndarray of float64, shape (n_enroll, n_test)

    Examples
    --------
    One dimension, ``S_b = S_w = 1``, both vectors at the mean: ``-0.5 log(3/4)``.

    >>> bool(np.isclose(two_covariance_llr([[0.0]], [[0.0]], [0.0], [[1.0]], [[1.0]])[0, 0], -0.5 * np.log(0.75)))
    True
    """
    terms = scoring_terms(mu, between, within)
    return _llr(terms, np.asarray(enroll, dtype=np.float64), np.asarray(test, dtype=np.float64))


def two_covariance_llr_n(enroll_mean, n, test, mu, between, within) -> np.ndarray:
    """Two-covariance PLDA LLR (nats) of enrollments of ``n`` embeddings against test embeddings.

    Parameters
    ----------
    enroll_mean : array-like, shape (n_models, k)
        Mean of each model's ``n`` enrollment vectors (already through any front end).
    n : array-like of int, shape (n_models,)
        Number of enrollment vectors of each model (>= 1).
    test : array-like, shape (n_test, k)
    mu, between, within : PLDA parameters as in :func:`two_covariance_llr`.

    Returns
    -------
    ndarray of float64, shape (n_models, n_test)
        The by-the-model LLR (module docstring, ``"by-model"``); with ``n = 1`` exactly
        :func:`two_covariance_llr`.

    Raises
    ------
    BackendError
        ``n`` not integers >= 1 of the right shape.

    Examples
    --------
    One dimension, ``S_b = S_w = 1``, everything at the mean, ``n = 2``: ``a = 1.5``, ``b = 2``, ``D = 2``,
    LLR ``-0.5 log(2 / 3)``.

    >>> llr = two_covariance_llr_n([[0.0]], [2], [[0.0]], [0.0], [[1.0]], [[1.0]])
    >>> bool(np.isclose(llr[0, 0], -0.5 * np.log(2 / 3)))
    True
    """
    em = np.asarray(enroll_mean, dtype=np.float64)
    t = np.asarray(test, dtype=np.float64)
    counts = np.asarray(n)
    if counts.shape != (em.shape[0],) or not np.issubdtype(counts.dtype, np.integer) or (counts < 1).any():
        raise BackendError(f"n must be integers >= 1, one per enrollment model ({em.shape[0]}), got {counts!r}")
    a_mat, psi = simultaneous_diagonalization(np.asarray(between, float), np.asarray(within, float))
    mu = np.asarray(mu, dtype=np.float64)
    u, v = (em - mu) @ a_mat, (t - mu) @ a_mat
    b = 1.0 + psi
    out = np.empty((em.shape[0], t.shape[0]))
    for c in np.unique(counts):
        rows = counts == c
        a = psi + 1.0 / float(c)
        d = a * b - psi * psi
        q1, q2, pc = 0.5 * (1.0 / a - b / d), 0.5 * (1.0 / b - a / d), psi / d
        const = -0.5 * float(np.sum(np.log(d / (a * b))))
        ur = u[rows]
        out[rows] = (ur * ur) @ q1[:, None] + ((v * v) @ q2)[None, :] + (ur * pc) @ v.T + const
    return out


def scoring_terms(mu, between, within) -> tuple:
    """``(mu, A, q, p, const)`` of the closed-form LLR (module docstring), computed once per model."""
    a, psi = simultaneous_diagonalization(np.asarray(between, float), np.asarray(within, float))
    t = 1.0 + psi
    d = 1.0 + 2.0 * psi
    return (np.asarray(mu, dtype=np.float64), a, 0.5 * (1.0 / t - t / d), psi / d,
            -0.5 * float(np.sum(np.log(d / (t * t)))))


def _llr(terms, enroll: np.ndarray, test: np.ndarray) -> np.ndarray:
    mu, a, q, p, const = terms
    u1 = (enroll - mu) @ a
    u2 = (test - mu) @ a
    return (u1 * u1) @ q[:, None] + ((u2 * u2) @ q)[None, :] + (u1 * p) @ u2.T + const


class PLDABackend(Backend):
    """Two-covariance PLDA (module docstring): front end, EM training, closed-form LLR scoring.

    Parameters
    ----------
    lda_dim : int, optional
        Project by LDA to this many dimensions first (at most ``n_speakers - 1``); default no LDA.
    n_iter : int, default 10
        EM iterations.
    enrollment : {"mean", "by-model"}, default "mean"
        How :meth:`score_enrollments` scores an enrollment of several embeddings (module docstring):
        ``"mean"`` scores the normalised mean of the normalised embeddings as one embedding (today's rule,
        the protocols' speaker models), ``"by-model"`` gives the model's LLR for ``n`` embeddings (Kaldi
        ``num_utts``). :meth:`score` (one embedding per model) is the same under both.

    Attributes
    ----------
    mean_ : ndarray, shape (d',)
        Training mean (after the optional LDA).
    whiten_ : ndarray, shape (d', k)
        Whitening by the training total covariance.
    mu_, between_, within_ : PLDA parameters in the front end's space (shape (k,), (k, k), (k, k)).

    Notes
    -----
    The scores are LLRs under the PLDA model, in nats; on real embeddings they are not well calibrated (the
    model is only approximately right), so read them as scores (the reports calibrate with PAV).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> centres = rng.normal(size=(20, 6))
    >>> x = np.repeat(centres, 5, axis=0) + 0.3 * rng.normal(size=(100, 6))
    >>> b = PLDABackend().fit(x, np.repeat(np.arange(20).astype(str), 5))
    >>> s = b.score(centres[:3], x[:15])
    >>> bool((s.argmax(axis=0) == np.repeat(np.arange(3), 5)).all())
    True
    """

    name = "plda"

    def __init__(self, lda_dim: int | None = None, n_iter: int = 10, enrollment: str = "mean"):
        super().__init__()
        if enrollment not in ENROLLMENT_RULES:
            raise BackendError(f"PLDA enrollment must be one of {', '.join(ENROLLMENT_RULES)}, got {enrollment!r}")
        self.lda_dim = lda_dim
        self.n_iter = n_iter
        self.enrollment = enrollment

    def _needs_repeats(self) -> bool:
        return True

    def _params(self) -> dict:
        return {"lda_dim": self.lda_dim, "n_iter": self.n_iter, "enrollment": self.enrollment}

    def score_enrollments(self, enrollments, test) -> np.ndarray:
        """Score models of several enrollment embeddings each against every test row, by ``self.enrollment``.

        Parameters
        ----------
        enrollments : sequence of array-like, each shape (n_i, d), n_i >= 1
            The enrollment embeddings of each model.
        test : array-like, shape (n_test, d)

        Returns
        -------
        ndarray of float64, shape (n_models, n_test)
            ``"mean"``: :meth:`score` of each model's normalised mean of normalised rows; ``"by-model"``: the
            LLR for ``n_i`` embeddings (:func:`two_covariance_llr_n`) of the front-ended rows' mean.

        Raises
        ------
        BackendError
            Not fitted, an empty enrollment, wrong dimension, zero or non-finite rows.
        """
        groups = [np.asarray(g, dtype=np.float64) for g in enrollments]
        if not groups or any(g.ndim != 2 or g.shape[0] == 0 for g in groups):
            raise BackendError("every enrollment needs at least one embedding (a 2-D array (n_i, d), n_i >= 1)")
        if self.enrollment == "mean":
            return super().score_enrollments(groups, test)
        if not self._fitted:
            raise BackendError("back-end 'plda' must be fitted on training speakers before scoring")
        for g in groups + [np.asarray(test, dtype=np.float64)]:
            if g.ndim != 2 or g.shape[1] != self.dim_:
                raise BackendError(f"embeddings have dimension {g.shape[-1]}; plda was fitted on dimension "
                                   f"{self.dim_}")
        means = np.vstack([self._front(unit_rows(g, "enrollment embedding")).mean(axis=0) for g in groups])
        counts = np.array([g.shape[0] for g in groups], dtype=np.int64)
        t = self._front(unit_rows(test, "test embedding"))
        return two_covariance_llr_n(means, counts, t, self.mu_, self.between_, self.within_)

    def _front(self, x: np.ndarray) -> np.ndarray:
        if self.lda_ is not None:
            x = self.lda_.transform(x)
        z = (x - self.mean_) @ self.whiten_
        return np.sqrt(z.shape[1]) * unit_rows(z, "whitened embedding")

    def _fit(self, x, spk):
        if isinstance(self.n_iter, bool) or not isinstance(self.n_iter, (int, np.integer)) or self.n_iter < 0:
            raise BackendError(f"plda n_iter must be an integer >= 0, got {self.n_iter!r}")
        check_spread(x, spk, self.rounding_, "PLDA")
        self.lda_ = None
        if self.lda_dim is not None:
            from .cosine import LDABackend

            try:
                self.lda_ = LDABackend(self.lda_dim).fit(x, spk).lda_
            except BackendError as exc:
                raise BackendError(f"PLDA lda_dim: {exc}") from None
            x = self.lda_.transform(x)
        self.mean_ = x.mean(axis=0)
        xc = x - self.mean_
        vals, vecs = np.linalg.eigh(xc.T @ xc / xc.shape[0])
        # directions whose spread is below 1e-10 of the largest, or at the rounding level of unit rows, carry
        # no information: whitening them would blow rounding residue up to unit variance
        # (after LDA, rounding residue of the unit rows reaches direction v amplified by |scalings v|)
        gain = (1.0 if self.lda_ is None else
                np.sqrt(((self.lda_.scalings_[:, :x.shape[1]] @ vecs) ** 2).sum(axis=0)))
        keep = (vals > 1e-10 * vals[-1]) & (np.sqrt(np.clip(vals, 0.0, None)) > self.rounding_ * gain)
        if not keep.any():
            raise BackendError("PLDA training: every direction of the training embeddings has a spread at rounding "
                               f"level ({np.sqrt(max(vals[-1], 0.0)):.3g}); there is nothing to learn from them")
        self.whiten_ = vecs[:, keep] / np.sqrt(vals[keep])
        z = xc @ self.whiten_
        z = np.sqrt(z.shape[1]) * unit_rows(z, "whitened training embedding")
        self.mu_, self.between_, self.within_ = two_covariance_em(z, spk, n_iter=self.n_iter)
        self._terms = scoring_terms(self.mu_, self.between_, self.within_)
        warn_few_speakers(int(np.unique(spk).size), "PLDA: the between-speaker covariance is")

    def _score(self, e, t):
        return _llr(self._terms, self._front(e), self._front(t))

    def describe(self) -> dict:
        return dict(super().describe(), lda_dim=self.lda_dim, n_iter=self.n_iter, enrollment=self.enrollment,
                    plda_dim=None if not self._fitted else int(self.mu_.size))
