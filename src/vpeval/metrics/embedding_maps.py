"""The two maps between original and anonymized embeddings that
:func:`vpeval.metrics.embedding.embedding_structure` measures: CCA on PCA-reduced, ridge-whitened views
(:func:`cca_fit`, :func:`cca_heldout`) and orthogonal Procrustes after centring and L2 normalisation
(:func:`procrustes_fit`, :func:`procrustes_heldout`), with the input checks of the embedding pairs
(:class:`EmbeddingStructureError`). Formulation in the docstring of :mod:`vpeval.metrics.embedding`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import VpevalError

__all__ = ["EmbeddingStructureError", "CCAModel", "cca_fit", "cca_heldout", "procrustes_fit", "procrustes_heldout"]


class EmbeddingStructureError(VpevalError):
    """Embedding pairs cannot be analysed (shape mismatch, too few pairs or speakers, bad options)."""


def _as_views(X, Y, same_dim: bool = False) -> tuple[np.ndarray, np.ndarray]:
    try:
        X = np.asarray(X, dtype=np.float64)
        Y = np.asarray(Y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise EmbeddingStructureError(f"embeddings must be numeric arrays ({exc})") from None
    if X.ndim != 2 or Y.ndim != 2:
        raise EmbeddingStructureError(f"X and Y must be 2-D (n, d), got shapes {X.shape} and {Y.shape}")
    if X.shape[0] != Y.shape[0]:
        raise EmbeddingStructureError(
            f"X and Y must hold the same number of pairs (rows), got {X.shape[0]} and {Y.shape[0]}")
    if X.shape[0] == 0 or X.shape[1] == 0 or Y.shape[1] == 0:
        raise EmbeddingStructureError(f"empty embeddings: shapes {X.shape} and {Y.shape}")
    if same_dim and X.shape[1] != Y.shape[1]:
        raise EmbeddingStructureError(
            f"orthogonal Procrustes needs views of equal dimension, got {X.shape[1]} and {Y.shape[1]}")
    for name, a in (("X", X), ("Y", Y)):
        if not np.isfinite(a).all():
            raise EmbeddingStructureError(f"{name} contains NaN or inf")
    return X, Y



def _inv_sqrt_psd(C: np.ndarray) -> np.ndarray:
    w, V = np.linalg.eigh(C)
    return (V / np.sqrt(w)) @ V.T


def _pca_basis(Xc: np.ndarray, p: int) -> np.ndarray:
    """First ``p`` principal directions (d, p) of centred data, from the eigenvectors of ``Xc^T Xc``.

    The sign of each direction is fixed (largest-magnitude coordinate positive) for reproducibility."""
    w, V = np.linalg.eigh(Xc.T @ Xc)
    V = V[:, np.argsort(w)[::-1][:p]]
    signs = np.sign(V[np.argmax(np.abs(V), axis=0), np.arange(V.shape[1])])
    signs[signs == 0] = 1.0
    return V * signs


@dataclass
class _Whitener:
    """Centring, PCA and ridge whitening of one view, fitted on training data."""

    mean: np.ndarray
    M: np.ndarray  # (d, p): centred input -> whitened coordinates

    @classmethod
    def fit(cls, X: np.ndarray, p: int, ridge: float) -> "_Whitener":
        n = X.shape[0]
        mean = X.mean(axis=0)
        Xc = X - mean
        P = _pca_basis(Xc, p)
        Z = Xc @ P
        C = Z.T @ Z / (n - 1)
        t = np.trace(C) / p
        if not t > 0:
            raise EmbeddingStructureError("a view is constant on the training pairs; CCA is undefined")
        return cls(mean, P @ _inv_sqrt_psd(C + ridge * t * np.eye(p)))

    def __call__(self, X: np.ndarray) -> np.ndarray:
        return (X - self.mean) @ self.M


@dataclass
class CCAModel:
    """A fitted CCA map (see :func:`cca_fit`).

    Attributes
    ----------
    mean_x, mean_y : ndarray
        Training means.
    A, B : ndarray of shape (d_x, k), (d_y, k)
        Canonical directions: ``(X - mean_x) @ A`` and ``(Y - mean_y) @ B`` are the canonical variates.
    train_corr : ndarray of shape (k,)
        Canonical correlations on the training pairs, descending (the singular values).
    n_pca : int
        Principal directions kept (the smaller of the two views).
    """

    mean_x: np.ndarray
    mean_y: np.ndarray
    A: np.ndarray
    B: np.ndarray
    train_corr: np.ndarray
    n_pca: int

    def transform(self, X, Y) -> tuple[np.ndarray, np.ndarray]:
        """Canonical variates of ``X`` (n, d_x) and ``Y`` (n, d_y): arrays of shape (n, k)."""
        return (np.asarray(X) - self.mean_x) @ self.A, (np.asarray(Y) - self.mean_y) @ self.B


def _rank(A: np.ndarray) -> int:
    """Numerical rank of the centred rows of ``A`` (singular values above ``s_max * max(n, d) * eps``, the
    tolerance of ``numpy.linalg.matrix_rank``)."""
    s = np.linalg.svd(A - A.mean(axis=0), compute_uv=False)
    if not (s.size and s[0] > 0):
        return 0
    return int((s > s[0] * max(A.shape) * np.finfo(np.float64).eps).sum())


def _cca_setup(X, Y, n_components, n_components_pca, ridge) -> tuple[_Whitener, _Whitener, int]:
    """Whiteners of both views and the number of canonical components to use.

    The principal directions of each view are capped at its numerical rank on these pairs: directions beyond
    it hold rounding residue, which whitening would scale up to unit variance and CCA would fit as signal
    (identical views of rank 3 read a mean top-10 correlation of 0.81). When that cap leaves fewer directions
    than ``n_components``, the components are capped too, with a
    :class:`~vpeval.errors.DegenerateInputWarning`."""
    X, Y = _as_views(X, Y)
    n = X.shape[0]
    if n < 3:
        raise EmbeddingStructureError(f"CCA needs at least 3 training pairs, got {n}")
    if not ridge >= 0:
        raise EmbeddingStructureError(f"ridge must be >= 0, got {ridge!r}")
    p_req = n // 4 if n_components_pca is None else int(n_components_pca)
    p_x = min(p_req, X.shape[1], n - 1)
    p_y = min(p_req, Y.shape[1], n - 1)
    if n_components < 1 or min(p_x, p_y) < n_components:
        raise EmbeddingStructureError(
            f"CCA with {n_components} components needs at least that many principal directions per view; "
            f"got {p_x} and {p_y} (from {n} training pairs, dimensions {X.shape[1]} and {Y.shape[1]}, "
            f"n_components_pca={p_req})")
    r_x, r_y = _rank(X), _rank(Y)
    if min(r_x, r_y) < 1:
        raise EmbeddingStructureError("a view is constant on the training pairs; CCA is undefined")
    p_x, p_y = min(p_x, r_x), min(p_y, r_y)
    k = int(n_components)
    if min(p_x, p_y) < k:
        import warnings

        from ..errors import DegenerateInputWarning

        k = min(p_x, p_y)
        warnings.warn(f"CCA: the embeddings have rank {r_x} (original) and {r_y} (anonymized) on {n} pairs, so only "
                      f"{k} canonical components are estimable; {n_components} were asked for and the mean is over "
                      f"{k} (components beyond the rank would fit rounding noise)", DegenerateInputWarning,
                      stacklevel=4)
    return _Whitener.fit(X, p_x, ridge), _Whitener.fit(Y, p_y, ridge), k


def _cca_directions(Tx: np.ndarray, Ty: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    U, S, Vt = np.linalg.svd(Tx.T @ Ty / (Tx.shape[0] - 1))
    return U[:, :k], Vt[:k].T, S[:k]


def cca_fit(X, Y, *, n_components: int = 10, n_components_pca: int | None = None,
            ridge: float = 1e-3) -> CCAModel:
    """Fit CCA by SVD of the cross-covariance of PCA-reduced, ridge-whitened views (:mod:`~vpeval.metrics.embedding`).

    Parameters
    ----------
    X, Y : array_like of shape (n, d_x), (n, d_y)
        Training pairs.
    n_components : int
        Canonical pairs kept (at most the reduced dimension); capped, with a
        :class:`~vpeval.errors.DegenerateInputWarning`, at the smaller numerical rank of the two views.
    n_components_pca : int, optional
        Principal directions kept per view; default ``floor(n / 4)``; capped at ``min(d, n - 1)`` and at the
        view's numerical rank (directions beyond it are rounding residue).
    ridge : float >= 0
        Ridge added to each covariance, relative to its mean eigenvalue.

    Returns
    -------
    CCAModel

    Raises
    ------
    EmbeddingStructureError
        Fewer than 3 pairs, a reduced dimension below ``n_components``, a constant view, negative ridge.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 6))
    >>> m = cca_fit(X, X[:, ::-1] * 3.0, n_components=2, n_components_pca=6)
    >>> bool(np.allclose(m.train_corr, 1.0, atol=1e-2))
    True
    """
    X, Y = _as_views(X, Y)
    wx, wy, k = _cca_setup(X, Y, n_components, n_components_pca, ridge)
    U, V, S = _cca_directions(wx(X), wy(Y), k)
    return CCAModel(wx.mean, wy.mean, wx.M @ U, wy.M @ V, S, min(wx.M.shape[1], wy.M.shape[1]))


def _columnwise_corr(U: np.ndarray, V: np.ndarray) -> np.ndarray:
    Uc, Vc = U - U.mean(axis=0), V - V.mean(axis=0)
    den = np.sqrt((Uc * Uc).sum(axis=0) * (Vc * Vc).sum(axis=0))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (Uc * Vc).sum(axis=0) / den
    return np.where(den > 0, r, 0.0)


def cca_heldout(X_train, Y_train, X_test, Y_test, **kwargs) -> np.ndarray:
    """Held-out canonical correlations, one per component in training order (:mod:`~vpeval.metrics.embedding`, step 5).

    ``kwargs`` go to :func:`cca_fit`. A component that is constant on the held-out pairs gets correlation 0.
    Returns an array of shape ``(n_components,)``, values in [-1, 1].
    """
    X_test, Y_test = _as_views(X_test, Y_test)
    if X_test.shape[0] < 2:
        raise EmbeddingStructureError(f"held-out correlations need at least 2 pairs, got {X_test.shape[0]}")
    m = cca_fit(X_train, Y_train, **kwargs)
    return _columnwise_corr(*m.transform(X_test, Y_test))


# --------------------------------------------------------------------------------------------- Procrustes


def _centre_normalise(A: np.ndarray, mean: np.ndarray) -> np.ndarray:
    C = A - mean
    norms = np.linalg.norm(C, axis=1, keepdims=True)
    if not (norms > 0).all():
        raise EmbeddingStructureError("a centred embedding is the zero vector; cosine similarity is undefined")
    return C / norms


def procrustes_fit(X, Y) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Orthogonal Procrustes after centring and L2 normalisation: returns ``(R, mean_x, mean_y)``.

    ``R`` (d, d) is orthogonal and minimises ``||Xn R - Yn||_F`` over the centred, row-normalised training
    views ``Xn``, ``Yn`` (:func:`scipy.linalg.orthogonal_procrustes`).
    """
    from scipy.linalg import orthogonal_procrustes

    X, Y = _as_views(X, Y, same_dim=True)
    mx, my = X.mean(axis=0), Y.mean(axis=0)
    R, _ = orthogonal_procrustes(_centre_normalise(X, mx), _centre_normalise(Y, my))
    return R, mx, my


def procrustes_heldout(X_train, Y_train, X_test, Y_test) -> np.ndarray:
    """Cosine similarity of ``X_test R`` and ``Y_test`` per held-out pair (centred with the training means).

    Returns an array of shape ``(n_test,)``, values in [-1, 1].

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 4))
    >>> Q = np.linalg.qr(rng.normal(size=(4, 4)))[0]
    >>> bool(np.allclose(procrustes_heldout(X[:40], X[:40] @ Q, X[40:], X[40:] @ Q), 1.0))
    True
    """
    R, mx, my = procrustes_fit(X_train, Y_train)
    X_test, Y_test = _as_views(X_test, Y_test, same_dim=True)
    A = _centre_normalise(X_test, mx) @ R
    B = _centre_normalise(Y_test, my)
    return np.einsum("ij,ij->i", A, B)
