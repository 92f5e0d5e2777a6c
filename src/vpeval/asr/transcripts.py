"""Deprecated alias of :mod:`vpeval.audio.asr.transcripts` (moved there; this path still imports, with a warning)."""

from vpeval._deprecated import alias_module

alias_module(__name__)
