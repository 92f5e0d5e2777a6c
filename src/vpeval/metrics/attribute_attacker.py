"""The attribute attacker of the soft-biometric leakage score: a scikit-learn logistic regression on
L2-normalised, standardised embeddings, trained on original speech and applied frozen (see
:mod:`vpeval.metrics.attributes`)."""

from __future__ import annotations

import numpy as np

from .attribute_parts import AttributeLeakageError, _labels

__all__ = ["AttributeAttacker"]


class AttributeAttacker:
    """Logistic-regression attribute classifier on embeddings (scikit-learn), trained once and frozen.

    Pipeline: L2-normalise each embedding, standardise each dimension (training mean and std), then
    :class:`sklearn.linear_model.LogisticRegression` (lbfgs, multinomial for K > 2, L2 penalty ``C``).

    Parameters
    ----------
    C : float, default 0.1
        Inverse L2 penalty. A moderate penalty because the training set of the bundled example (251
        utterances) is about as large as the embedding dimension (256), where an unpenalised fit separates
        the training data and extrapolates poorly.
    max_iter : int

    Attributes
    ----------
    classes_ : ndarray of str
        Column order of :meth:`predict_scores` (sorted labels).

    Notes
    -----
    Training rows are put in a canonical order (by label, then embedding values) before fitting, so the fit
    does not depend on row order. Requires scikit-learn.
    """

    def __init__(self, C: float = 0.1, max_iter: int = 5000):
        try:
            ok = bool(np.isfinite(C) and C > 0)
        except TypeError:
            ok = False
        if not ok:
            raise AttributeLeakageError(f"C (inverse L2 penalty) must be a positive finite number, got {C!r}")
        self.C = C
        self.max_iter = max_iter

    def fit(self, X, y) -> "AttributeAttacker":
        """Fit on embeddings ``X`` (n, d) with labels ``y`` (n,); at least 2 classes."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import Normalizer, StandardScaler

        X = np.asarray(X, dtype=np.float64)
        y = _labels(y, "training labels")
        if X.ndim != 2 or X.shape[0] != y.size:
            raise AttributeLeakageError(f"training embeddings have shape {X.shape}, labels {y.shape}")
        if not np.isfinite(X).all():
            raise AttributeLeakageError("training embeddings contain NaN or inf")
        if np.unique(y).size < 2:
            raise AttributeLeakageError(f"the attacker needs at least 2 training classes, got {np.unique(y).tolist()}")
        order = np.lexsort([X[:, j] for j in range(X.shape[1] - 1, -1, -1)] + [y])
        self.model_ = make_pipeline(Normalizer(), StandardScaler(),
                                    LogisticRegression(C=self.C, max_iter=self.max_iter))
        self.model_.fit(X[order], y[order])
        self.classes_ = np.asarray(self.model_.classes_).astype(str)
        self.n_train_ = int(y.size)
        return self

    def predict_scores(self, X) -> np.ndarray:
        """Class posteriors (n, K) under the training prior, columns in ``classes_`` order."""
        if not hasattr(self, "model_"):
            raise AttributeLeakageError("AttributeAttacker is not fitted; call fit(X, y) first")
        X = np.asarray(X, dtype=np.float64)
        if not np.isfinite(X).all():
            raise AttributeLeakageError("embeddings contain NaN or inf")
        return self.model_.predict_proba(X)
