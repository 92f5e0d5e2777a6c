"""Everything the CLI and the report compute from one evaluation matrix (:func:`linkage_analysis`): the LID
pipeline, closed-set identification and closed-set linkability."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..identification import closed_set_linkability, identification_rates
from .pipeline import LIDPipelineResult, lid_pipeline

__all__ = ["LinkageAnalysis", "linkage_analysis"]


@dataclass(frozen=True)
class LinkageAnalysis:
    """LID pipeline, closed-set identification and closed-set linkability of one evaluation matrix.

    Attributes
    ----------
    lid : LIDPipelineResult
    identification : vpeval.metrics.identification.IdentificationResult
    closed_set : vpeval.metrics.identification.ClosedSetLinkability
        For every candidate-set size N' = 1..N.
    n_probe_speakers : int or None
        Number of distinct enrolled speakers that are the true speaker of at least one evaluation probe (the
        other ``N - n_probe_speakers`` enrolled speakers are distractors); None when not known.
    """

    lid: LIDPipelineResult
    identification: object
    closed_set: object
    n_probe_speakers: int | None = None

    def to_dict(self) -> dict:
        return {
            "lid": self.lid.to_dict(),
            "identification": self.identification.to_dict(),
            "closed_set_linkability": self.closed_set.to_dict(),
        }


def linkage_analysis(
    eval_scores,
    eval_true_index,
    dev_scores=None,
    dev_true_index=None,
    *,
    ks=(1, 5, 10),
    ties: str = "fractional",
    chunk_rows: int | None = None,
    client=None,
    **pipeline_options,
) -> LinkageAnalysis:
    """Run :func:`lid_pipeline`, :func:`~vpeval.metrics.identification.identification_rates` and
    :func:`~vpeval.metrics.identification.closed_set_linkability` on one evaluation matrix.

    Ranks use the raw evaluation scores, counted in the pipeline's scan. Extra keyword
    arguments go to :func:`lid_pipeline` (``n_folds``, ``speaker_ids``, ``separable``, ``regularization``,
    ``seed``, ``strict_znorm``). With ``client`` (a ``distributed.Client``) every scan of the matrices runs
    on that Dask cluster (see :func:`lid_pipeline`); the results are identical. Raises what those functions
    raise.
    """
    lid_res = lid_pipeline(
        dev_scores, eval_scores, dev_true_index, eval_true_index, chunk_rows=chunk_rows, client=client,
        **pipeline_options
    )
    ident = identification_rates(lid_res.rank_counts, ks=ks, ties=ties)
    n_probe = int(np.unique(np.asarray(eval_true_index)).size)
    return LinkageAnalysis(lid_res, ident, closed_set_linkability(ident.gamma), n_probe_speakers=n_probe)
