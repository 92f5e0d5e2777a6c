"""Deprecated alias of :mod:`vpeval.audio.anonymize` (moved there; this path still imports, with a warning)."""

from vpeval._deprecated import alias_module

alias_module(__name__)
