"""vpeval: how well does a voice anonymizer hide who is speaking?

The public API is re-exported here; the implementations live in the layer packages
(:mod:`vpeval.io`, :mod:`vpeval.calibration`, :mod:`vpeval.metrics`, :mod:`vpeval.report`).
"""

from ._version import __version__
from ._lazy import lazy_module_attributes

# Public names and the module (below vpeval) each comes from. They are imported on first use (PEP 562), so
# ``import vpeval`` (and the CLI, which imports only what its command needs) does not load SciPy's statistics,
# scikit-learn, matplotlib or the other heavy optional parts; ``from vpeval import X`` and ``vpeval.X`` work
# as before, and ``dir(vpeval)`` lists every name.
_SOURCES = {
    "calibration": ("LogisticCalibrator", "PAVCalibrator", "ScoreCalibrator", "pav_llr"),
    "errors": ("InputFileError", "InvalidScoresError", "SeparableScoresError", "VpevalError", "VpevalWarning"),
    "io": (
        "EmbeddingSet", "Trials", "read_columns", "read_embeddings", "read_score_label", "read_trials_scores",
        "write_embeddings",
    ),
    "io.matrix": ("ScoreMatrix", "read_kaldi_score_matrix", "read_score_matrix", "score_matrix_from_table"),
    "metrics.identification": (
        "closed_set_linkability", "cmc", "identification_rates", "rank_histogram", "true_speaker_rank",
    ),
    "metrics.linkage": ("lid", "lid_pipeline", "lid_summary", "linkage_analysis", "znorm_rows"),
    "metrics.attributes": ("sbls", "soft_biometric_leakage"),
    "metrics.distinctiveness": ("deid", "gvd", "voice_distinctiveness"),
    "metrics.embedding": ("embedding_structure",),
    "stats": (
        "assess_one_to_n", "assess_trials", "bootstrap_ci", "chance_floor", "speaker_profile", "trial_speakers",
    ),
    "metrics.utility": ("EmptyReferenceError", "transcript_similarity", "wer", "word_errors"),
    "calibration.crossval": ("crossval_llr", "fit_apply"),
    "calibration.gaussian": ("GaussianCalibrator",),
    "calibration.pav_succession": ("PAVSuccessionCalibrator", "pav_llr_succession"),
    "calibration.rank": ("RankCalibrator", "rank_llr"),
    "calibration.student_t": ("StudentTCalibrator",),
    "disclosure": ("worst_case_disclosure",),
    "metrics.rank_disclosure": ("RankDisclosure", "rank_disclosure", "smooth_gamma"),
    "metrics.profile": ("privacy_profile_bits", "profile_bounds"),
    "pipeline": ("OneToN", "Protocol", "ProtocolError", "build_trials", "make_protocol", "one_to_n"),
    "pipeline.attackers": ("Attacker", "attacker_class", "check_disjoint", "fuse_attackers", "make_attackers"),
    "pipeline.vpc": ("VPCLists",),
    "backends": (
        "ASNorm", "Backend", "BackendError", "CentredCosineBackend", "CosineBackend", "LDABackend", "PLDABackend",
        "get_backend",
    ),
    "calibration.fusion": ("LinearFusion",),
    "analysis": ("secrecy_test", "SecrecyTest", "TrialInput", "OneToNInput"),
    "analysis.audit": ("AuditResult", "audit"),
    "analysis.comparison": ("compare_worst_cases",),
    "analysis.families": ("score_verdict", "one_to_n_verdict"),
    "analysis.verdict": ("Verdict", "decide"),
    "metrics": (
        "act_dcf", "cllr", "closest_eer", "d_ece", "det_curve", "eer", "interp_eer", "linkability", "min_cllr",
        "min_dcf",
        "rocch_eer", "zebra", "zebra_tag",
    ),
}
_SUBMODULES = ("simulate",)  # public modules listed in __all__
__getattr__, __dir__ = lazy_module_attributes(__name__, _SOURCES, globals(), _SUBMODULES)


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
    "zebra", "zebra_tag", "d_ece", "privacy_profile_bits", "profile_bounds",
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
    # the audit as data and the verdict (analysis); the VoicePrivacy lists an audit may score
    "audit", "AuditResult", "VPCLists", "secrecy_test", "SecrecyTest", "TrialInput", "OneToNInput", "score_verdict",
    "one_to_n_verdict", "Verdict", "decide", "compare_worst_cases",
    # errors
    "VpevalError", "InputFileError", "InvalidScoresError", "SeparableScoresError", "VpevalWarning",
]
