"""Speaker-verification back-ends (the attacker's scoring model): cosine, centred cosine, LDA, PLDA, AS-norm.

See :mod:`vpeval.backends.base` for the interface and :func:`get_backend` for names used by the CLI.
"""

from .asnorm import ASNorm
from .base import Backend, BackendError
from .cosine import CentredCosineBackend, CosineBackend, LDABackend
from .plda import (
    PLDABackend,
    simultaneous_diagonalization,
    two_covariance_em,
    two_covariance_llr,
    two_covariance_llr_n,
)

__all__ = [
    "Backend", "BackendError", "CosineBackend", "CentredCosineBackend", "LDABackend", "PLDABackend", "ASNorm",
    "two_covariance_em", "two_covariance_llr", "two_covariance_llr_n", "simultaneous_diagonalization", "BACKENDS",
    "get_backend",
]

#: Back-end names accepted by :func:`get_backend` and the CLI, in report order.
BACKENDS = ("cosine", "centred-cosine", "lda", "plda")


def get_backend(name: str, *, asnorm: bool = False, top_k: int = 200) -> Backend:
    """A new, unfitted back-end by name (one of :data:`BACKENDS`), optionally wrapped in AS-norm.

    Raises
    ------
    BackendError
        Unknown name.
    """
    classes = {"cosine": CosineBackend, "centred-cosine": CentredCosineBackend, "lda": LDABackend,
               "plda": PLDABackend}
    if name not in classes:
        raise BackendError(f"unknown back-end {name!r}; expected one of {', '.join(BACKENDS)}")
    b = classes[name]()
    return ASNorm(b, top_k=top_k) if asnorm else b
