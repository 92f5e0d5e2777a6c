"""vpeval: how well does a voice anonymizer hide who is speaking?

The public API is re-exported here; the implementations live in the layer packages
(:mod:`vpeval.io`, :mod:`vpeval.calibration`, :mod:`vpeval.metrics`, :mod:`vpeval.report`).
"""

__version__ = "0.1.0"

from .calibration import LogisticCalibrator, PAVCalibrator, ScoreCalibrator, pav_llr
from .errors import (
    InputFileError,
    InvalidScoresError,
    SeparableScoresError,
    VpevalError,
    VpevalWarning,
)
from .io import (
    EmbeddingSet,
    Trials,
    read_columns,
    read_embeddings,
    read_score_label,
    read_trials_scores,
    write_embeddings,
)
from .io.matrix import ScoreMatrix, read_kaldi_score_matrix, read_score_matrix, score_matrix_from_table
from .metrics.identification import (
    closed_set_linkability,
    cmc,
    identification_rates,
    rank_histogram,
    true_speaker_rank,
)
from .metrics.linkage import lid, lid_pipeline, lid_summary, linkage_analysis, znorm_rows
from .metrics.attributes import sbls, soft_biometric_leakage
from .metrics.distinctiveness import deid, gvd, voice_distinctiveness
from .metrics.embedding import embedding_structure
from .stats import assess_one_to_n, assess_trials, bootstrap_ci, chance_floor, speaker_profile, trial_speakers
from .metrics.utility import EmptyReferenceError, transcript_similarity, wer, word_errors
from . import simulate
from .calibration.crossval import crossval_llr, fit_apply
from .calibration.gaussian import GaussianCalibrator
from .calibration.pav_succession import PAVSuccessionCalibrator, pav_llr_succession
from .calibration.rank import RankCalibrator, rank_llr
from .calibration.student_t import StudentTCalibrator
from .disclosure import worst_case_disclosure
from .metrics.rank_disclosure import RankDisclosure, rank_disclosure, smooth_gamma
from .pipeline import OneToN, Protocol, ProtocolError, build_trials, make_protocol, one_to_n
from .pipeline.attackers import Attacker, attacker_class, check_disjoint, fuse_attackers, make_attackers
from .backends import (
    ASNorm,
    Backend,
    BackendError,
    CentredCosineBackend,
    CosineBackend,
    LDABackend,
    PLDABackend,
    get_backend,
)
from .calibration.fusion import LinearFusion
from .metrics import (
    act_dcf,
    cllr,
    d_ece,
    det_curve,
    eer,
    interp_eer,
    closest_eer,
    linkability,
    min_cllr,
    min_dcf,
    rocch_eer,
    zebra,
    zebra_tag,
)

__all__ = [
    "__version__",
    # io
    "Trials", "read_trials_scores", "read_score_label", "read_columns", "EmbeddingSet", "read_embeddings",
    "write_embeddings",
    # verification
    "eer", "rocch_eer", "interp_eer", "closest_eer", "det_curve", "min_dcf", "act_dcf", "cllr", "min_cllr", "linkability",
    # calibration
    "pav_llr", "PAVCalibrator", "LogisticCalibrator", "ScoreCalibrator",
    # disclosure
    "zebra", "zebra_tag", "d_ece",
    # 1-to-N linkage and identification
    "ScoreMatrix", "read_score_matrix", "read_kaldi_score_matrix", "score_matrix_from_table", "lid", "lid_summary",
    "lid_pipeline", "linkage_analysis", "znorm_rows", "cmc", "rank_histogram", "true_speaker_rank",
    "identification_rates", "closed_set_linkability",
    # beyond identity
    "embedding_structure", "soft_biometric_leakage", "sbls", "voice_distinctiveness", "deid", "gvd",
    # uncertainty and profiles
    "bootstrap_ci", "chance_floor", "assess_trials", "assess_one_to_n", "speaker_profile", "trial_speakers",
    # utility
    "wer", "word_errors", "transcript_similarity", "EmptyReferenceError",
    # LLR estimators and worst-case disclosure
    "GaussianCalibrator", "StudentTCalibrator", "RankCalibrator", "PAVSuccessionCalibrator", "pav_llr_succession",
    "rank_llr", "crossval_llr", "fit_apply", "worst_case_disclosure", "rank_disclosure", "RankDisclosure",
    "smooth_gamma", "simulate",
    # protocols
    "Protocol", "make_protocol", "build_trials", "one_to_n", "OneToN", "ProtocolError",
    # attackers: back-ends, AS-norm, fusion
    "Backend", "BackendError", "CosineBackend", "CentredCosineBackend", "LDABackend", "PLDABackend", "ASNorm",
    "get_backend", "LinearFusion", "Attacker", "make_attackers", "fuse_attackers", "attacker_class",
    "check_disjoint",
    # errors
    "VpevalError", "InputFileError", "InvalidScoresError", "SeparableScoresError", "VpevalWarning",
]
