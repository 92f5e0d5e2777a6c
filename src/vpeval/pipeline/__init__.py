"""Pipelines that turn embeddings and metadata into trials: protocols (oo/oa/aa and the multi-dimensional
trial types), 1-to-N score matrices, attackers (extractor x back-end x training condition, fusion); and the
analyses run on them: per-group breakdowns, paired comparisons of systems, the whole audit (:mod:`.audit`)."""

from .._lazy import lazy_module_attributes

# Each public name and the module it comes from, imported on first use (PEP 562): the command line imports this
# package for its allocator settings before every command, and the attackers, groups and audit modules bring in
# SciPy's statistics and scikit-learn (about a second), which a score file's `verify` never needs.
_SOURCES = {
    "protocols": ("TRIAL_TYPES", "OneToN", "Protocol", "ProtocolError", "TrialType", "build_trials",
                  "check_metadata", "make_protocol", "one_to_n", "speaker_models"),
    "attackers": ("TRAINED_ON", "Attacker", "attacker_class", "check_disjoint", "fuse_attackers", "make_attackers"),
    "groups": ("DEFAULT_GROUP_BY", "GroupResult", "GroupsError", "group_breakdown", "pooled_result",
               "speaker_groups", "trial_groups"),
    "compare": ("HEADLINE_METRICS", "PAIRED_METRICS", "AttackData", "Comparison", "compare_pair", "compare_systems"),
    "audit": ("SystemAudit", "audit_system", "field_attackers", "run_audits"),
}
__getattr__, __dir__ = lazy_module_attributes(__name__, _SOURCES, globals())


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
