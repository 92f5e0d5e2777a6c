"""Speaker-embedding extractors and batch extraction over audio folders.

Two extractors:

=============== ======================= ====== =============================================
``--extractor``  class                   dim    needs
=============== ======================= ====== =============================================
``mfcc``         :class:`MfccStatsExtractor`  40  nothing beyond librosa (model-free)
``resemblyzer``  ``ResemblyzerExtractor``    256  the ``embed`` extra (torch, resemblyzer)
=============== ======================= ====== =============================================

``vpeval.audio.embed.resemblyzer`` imports torch and resemblyzer only when an extractor is created.
"""

from __future__ import annotations

from .base import Extractor, ExtractorUnavailableError, embed_folder
from .mfcc import MfccStatsExtractor

__all__ = [
    "Extractor",
    "ExtractorUnavailableError",
    "MfccStatsExtractor",
    "EXTRACTORS",
    "get_extractor",
    "embed_folder",
]

EXTRACTORS = ("mfcc", "resemblyzer")
"""Names accepted by :func:`get_extractor` (and ``vpeval embed --extractor``)."""


def get_extractor(name: str) -> Extractor:
    """Create an extractor by its short name (``mfcc`` or ``resemblyzer``).

    Raises
    ------
    VpevalError
        Unknown name.
    ExtractorUnavailableError
        ``resemblyzer`` requested but its optional dependencies are missing.

    Examples
    --------
    >>> get_extractor("mfcc")
    MfccStatsExtractor(name='mfcc-stats', dim=40)
    """
    from ...errors import VpevalError

    if name == "mfcc":
        return MfccStatsExtractor()
    if name == "resemblyzer":
        from .resemblyzer import ResemblyzerExtractor

        return ResemblyzerExtractor()
    raise VpevalError(f"unknown extractor {name!r}; choose one of {', '.join(EXTRACTORS)}")
