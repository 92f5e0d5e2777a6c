"""Pipelines that turn embeddings and metadata into trials: protocols (oo/oa/aa and the multi-dimensional
trial types), 1-to-N score matrices."""

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
]
