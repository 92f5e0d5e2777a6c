"""Readers and writers: trials and scores, embeddings; strict validation with file:line errors."""

from .embeddings import EmbeddingSet, read_embeddings, write_embeddings
from .readers import read_columns, read_score_label, read_scores_any, read_trials_scores
from .trials import Trials

__all__ = [
    "Trials",
    "read_trials_scores",
    "read_score_label",
    "read_columns",
    "read_scores_any",
    "EmbeddingSet",
    "read_embeddings",
    "write_embeddings",
]
