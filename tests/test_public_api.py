"""The public API: every name ``vpeval`` exports, and every import path the README and docs name, still imports.

A name removed or moved without an alias fails here; a new public name is added to :data:`PUBLIC` on purpose.
"""

from __future__ import annotations

import importlib

import pytest

import vpeval

#: ``vpeval.__all__``, sorted.
PUBLIC = [
    'ASNorm', 'Attacker', 'AuditResult', 'Backend', 'BackendError', 'CentredCosineBackend', 'CosineBackend',
    'EmbeddingSet', 'EmptyReferenceError', 'GaussianCalibrator', 'InputFileError', 'InvalidScoresError',
    'LDABackend', 'LinearFusion', 'LogisticCalibrator', 'OneToN', 'OneToNInput', 'PAVCalibrator',
    'PAVSuccessionCalibrator', 'PLDABackend', 'Protocol', 'ProtocolError', 'RankCalibrator', 'RankDisclosure',
    'ScoreCalibrator', 'ScoreMatrix', 'SecrecyTest', 'SeparableScoresError', 'StudentTCalibrator', 'TrialInput',
    'Trials', 'VPCLists', 'Verdict', 'VpevalError', 'VpevalWarning', '__version__', 'act_dcf', 'assess_one_to_n',
    'assess_trials', 'attacker_class', 'audit', 'bootstrap_ci', 'build_trials', 'chance_floor',
    'check_disjoint', 'cllr', 'closed_set_linkability', 'closest_eer', 'cmc', 'compare_worst_cases',
    'crossval_llr', 'd_ece', 'decide', 'deid', 'det_curve', 'eer', 'embedding_structure', 'fit_apply',
    'fuse_attackers', 'get_backend', 'gvd', 'identification_rates', 'interp_eer', 'lid', 'lid_pipeline',
    'lid_summary', 'linkability', 'linkage_analysis', 'make_attackers', 'make_protocol', 'min_cllr', 'min_dcf',
    'one_to_n', 'one_to_n_verdict', 'pav_llr', 'pav_llr_succession', 'privacy_profile_bits', 'profile_bounds',
    'rank_disclosure', 'rank_histogram',
    'rank_llr', 'read_columns', 'read_embeddings', 'read_kaldi_score_matrix', 'read_score_label',
    'read_score_matrix', 'read_trials_scores', 'rocch_eer', 'sbls', 'score_matrix_from_table', 'score_verdict',
    'secrecy_test', 'simulate', 'smooth_gamma', 'soft_biometric_leakage', 'speaker_profile',
    'transcript_similarity', 'trial_speakers', 'true_speaker_rank', 'voice_distinctiveness', 'wer',
    'word_errors', 'worst_case_disclosure', 'write_embeddings', 'zebra', 'zebra_tag', 'znorm_rows',
]

#: ``module: names`` the README, docs/ and examples import from (paths users write in their code).
DOCUMENTED = {
    "vpeval.pipeline.cluster": ["cluster", "score_matrix"],
    "vpeval.analysis": ["secrecy_test", "TrialInput", "OneToNInput", "SecrecyTest"],
    "vpeval.analysis.audit": ["audit", "AuditResult"],
    "vpeval.analysis.verdict": ["decide", "Verdict", "VERDICTS", "DEFAULT_BUDGET_BITS"],
    "vpeval.analysis.families": ["score_verdict", "one_to_n_verdict", "audit_verdicts"],
    "vpeval.analysis.comparison": ["compare_worst_cases"],
    "vpeval.analysis.worst_case": ["eps_max_ceiling_nats"],
    "vpeval.metrics.profile": ["privacy_profile_bits", "profile_bounds", "ProfileCounts", "design_effect"],
    "vpeval.analysis.profiles": ["profile_family", "member_profiles", "default_delta", "plan", "plan_design"],
    "vpeval.plots": ["ProfileDisplay", "DETDisplay"],
    "vpeval.report.audit": ["audit_systems", "render_audit", "audit_embeddings"],
    "vpeval.metrics.linkage": ["lid", "lid_pipeline", "linkage_analysis", "znorm_rows", "lid_summary",
                               "population_curves", "PopulationCurves", "default_population_sizes"],
    "vpeval.metrics.linkage.population": ["row_zscores"],
    "vpeval.metrics.linkage.combine": ["combined_probes", "CombinedProbes", "COMBINE_RULES"],
    "vpeval.analysis.population": ["population_reading", "PopulationReading"],
    "vpeval.io.matrix": ["ScoreMatrix", "read_score_matrix"],
    "vpeval.pipeline": ["build_trials", "one_to_n", "OneToN", "compare_systems", "HEADLINE_METRICS"],
    "vpeval.stats.results": ["order_statistic"],
}


def test_public_names_are_exactly_the_listed_ones():
    assert sorted(vpeval.__all__) == PUBLIC


@pytest.mark.parametrize("name", PUBLIC)
def test_public_name_resolves(name):
    assert getattr(vpeval, name) is not None


@pytest.mark.parametrize("module", sorted(DOCUMENTED))
def test_documented_paths_import(module):
    m = importlib.import_module(module)
    for name in DOCUMENTED[module]:
        assert getattr(m, name) is not None, f"{module}.{name}"
