"""Pipelines that turn embeddings and metadata into trials: protocols (oo/oa/aa and the multi-dimensional
trial types), 1-to-N score matrices, attackers (extractor x back-end x training condition, fusion); and the
analyses run on them: per-group breakdowns, paired comparisons of systems, the whole audit (:mod:`.audit`)."""

from .protocols import (
    TRIAL_TYPES,
    OneToN,
    Protocol,
    ProtocolError,
    TrialType,
    build_trials,
    check_metadata,
    make_protocol,
    one_to_n,
    speaker_models,
)
from .attackers import TRAINED_ON, Attacker, attacker_class, check_disjoint, fuse_attackers, make_attackers
from .groups import DEFAULT_GROUP_BY, GroupResult, GroupsError, group_breakdown, pooled_result, speaker_groups, trial_groups
from .compare import HEADLINE_METRICS, PAIRED_METRICS, AttackData, Comparison, compare_pair, compare_systems
from .audit import SystemAudit, audit_system, field_attackers, run_audits

__all__ = [
    "TRIAL_TYPES",
    "OneToN",
    "Protocol",
    "ProtocolError",
    "TrialType",
    "build_trials",
    "check_metadata",
    "make_protocol",
    "one_to_n",
    "speaker_models",
    "TRAINED_ON",
    "Attacker",
    "attacker_class",
    "check_disjoint",
    "fuse_attackers",
    "make_attackers",
    "DEFAULT_GROUP_BY",
    "GroupResult",
    "GroupsError",
    "group_breakdown",
    "pooled_result",
    "speaker_groups",
    "trial_groups",
    "HEADLINE_METRICS",
    "PAIRED_METRICS",
    "AttackData",
    "Comparison",
    "compare_pair",
    "compare_systems",
    "SystemAudit",
    "audit_system",
    "field_attackers",
    "run_audits",
]
