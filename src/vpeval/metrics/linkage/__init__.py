"""Local information disclosure (LID) of 1-to-N linkage.

Source: Sterns et al., "Local information disclosure" (LID) of speaker linkage: the attacker scores an
anonymized probe against N enrolled speakers and turns the scores into a posterior over the N speakers.
Per probe i, with true speaker t(i)::

    z_ij   = (s_ij - mean_j s_ij) / std_j s_ij              row-wise z-norm, sample std (ddof = 1)
    l_ij   = w z_ij + b                                       LLRs in nats, (w, b) from a logistic fit
    p_ij   = exp(l_ij) / sum_k exp(l_ik)                      posterior under a flat prior over speakers
    LID_i  = log2(N p_i,t(i))                                 bits

LID_i is the information (bits) the probe gives about its speaker over a uniform guess: 0 at chance,
log2 N when the posterior is certain and right, negative when the probe points away from its speaker.
Since the softmax is invariant to adding a constant to a row, the intercept b cancels: only the slope w
matters. Summaries: ALID = mean LID, PDR = share of probes with LID > 0, NDR = share with LID <= 0,
LID+ / LID- = mean LID over those two groups, LID_max = max LID; ALID = PDR LID+ + NDR LID-.

Everything here scans matrices in row blocks (see :mod:`vpeval.rowscan`), so the extra memory is bounded by a
few blocks of ``chunk_rows x N`` float64 whatever the number of probes; dask arrays are accepted by
:func:`lid` and :func:`lid_pipeline`.

Modules: :mod:`.posterior` (z-norm, softmax posterior, LID per probe), :mod:`.summary` (ALID and the other
summaries), :mod:`.pipeline` (:func:`lid_pipeline`: calibration fitted on a development matrix or by
cross-fitting, then LID), :mod:`.histogram` (the pipeline's one scan into moment histograms),
:mod:`.binned_fit` (Newton on the histograms with Taylor bounds), :mod:`.streaming_fit` (the exact
streaming fit it falls back to), :mod:`.analysis` (:func:`linkage_analysis`, everything at once),
:mod:`.speaker` (per-speaker statistics, free of the other speakers: the speaker LID of the verdict of a 1-to-N
table and the rank-1 likelihood ratio's lower bound), :mod:`.population` (rank-1 identification, ALID and LID_max
against the population size, measured up to N and extrapolated beyond it). Every
public name is importable from this package. A module switch is set where it is read, so that setting it
acts: the numba threshold is :data:`vpeval.metrics.linkage.histogram.JIT_MIN_SCORES`.
"""

from __future__ import annotations

from .analysis import LinkageAnalysis, linkage_analysis
from .pipeline import DEFAULT_REGULARIZATION, LIDPipelineResult, lid_pipeline
from .population import PopulationCurves, default_population_sizes, population_curves
from .posterior import lid, softmax_posteriors, znorm_rows
from .speaker import rank1_hits, rank1_ratio_lower_bits, speaker_lid_table
from .summary import LIDSummary, lid_ccdf, lid_summary

__all__ = [
    "znorm_rows",
    "softmax_posteriors",
    "lid",
    "LIDSummary",
    "lid_summary",
    "lid_ccdf",
    "LIDPipelineResult",
    "lid_pipeline",
    "DEFAULT_REGULARIZATION",
    "LinkageAnalysis",
    "linkage_analysis",
    "speaker_lid_table",
    "rank1_hits",
    "rank1_ratio_lower_bits",
    "PopulationCurves",
    "population_curves",
    "default_population_sizes",
]

