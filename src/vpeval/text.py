"""Text normalisation before word error rates: the Whisper English normaliser.

WER depends as much on the text normalisation as on the recogniser ("Mr." vs "mister", "twenty five" vs
"25", "won't" vs "will not").  vpeval uses the English normaliser of Whisper (Radford et al., "Robust
Speech Recognition via Large-Scale Weak Supervision", ICML 2023, Appendix C), the de-facto standard for
reporting WER of Whisper-style recognisers, as packaged by ``whisper-normalizer`` (a maintained copy of
OpenAI's ``whisper.normalizers.EnglishTextNormalizer`` without torch).  It:

- lower-cases; removes text in brackets ``[...]`` / parentheses ``(...)``, and filler words
  (``hmm``, ``mm``, ``mhm``, ``mmm``, ``uh``, ``um``);
- expands contractions and titles (``won't`` -> ``will not``, ``it's`` -> ``it is``, ``I'd`` ->
  ``i would``, ``he'd gone`` -> ``he had gone``, ``Mr.`` -> ``mister``); every ``'s`` becomes ``is``,
  possessives included (``Smith's`` -> ``smith is``): harmless for WER, since both sides get the same rule;
- writes numbers as digits (``twenty five`` -> ``25``, ``one thousand`` and ``1,000`` -> ``1000``,
  ``one oh one`` -> ``101``), keeping suffixes (``1960s``);
- maps British to American spellings (``colour`` -> ``color``);
- replaces punctuation and symbols by spaces (so ``ill-disposed`` -> ``ill disposed``) and collapses
  whitespace.

One addition to Whisper's rules: tokens without any letter or digit are dropped at the end.  Whisper's
normaliser keeps ``. $ ¢ € £ %`` for numbers and leaves a stray ``.`` after a final ellipsis
(``"world..."`` -> ``"world ."``), which would count as a word.

The package is part of the ``vpeval[utility]`` extra (also pulled in by ``vpeval[asr]``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

__all__ = ["normalize_english", "get_normalizer", "NORMALIZERS"]

NORMALIZERS = ("whisper", "none")
"""Names accepted by :func:`get_normalizer`."""


@lru_cache(maxsize=1)
def _whisper_english():
    try:
        from whisper_normalizer.english import EnglishTextNormalizer
    except ImportError as exc:
        raise ImportError(
            "vpeval's text normalisation needs 'whisper-normalizer': pip install 'vpeval[utility]' "
            f"({exc})"
        ) from None
    return EnglishTextNormalizer()


def normalize_english(text: str) -> str:
    """Normalise English text with Whisper's English normaliser (see the module doc).

    Parameters
    ----------
    text : str

    Returns
    -------
    str
        Lower-case words separated by single spaces; may be empty (e.g. for ``"uh, hmm."``).

    Examples
    --------
    >>> normalize_english("I won't pay $1,000, it's twenty five!")
    'i will not pay $1000 it is 25'
    >>> normalize_english("Mr. Smith's colour")  # Whisper reads every "'s" as "is", possessives too
    'mister smith is color'
    """
    if not isinstance(text, str):
        raise TypeError(f"expected str, got {type(text).__name__}")
    return " ".join(t for t in _whisper_english()(text).split() if any(c.isalnum() for c in t))


def _identity(text: str) -> str:
    return " ".join(text.split())


def get_normalizer(name: str | Callable[[str], str] | None) -> Callable[[str], str]:
    """Resolve a normaliser: ``"whisper"`` -> :func:`normalize_english`, ``"none"`` or ``None`` -> only
    whitespace is collapsed (words compared exactly as written), a callable -> itself.

    Raises
    ------
    VpevalError
        An unknown name.
    """
    from .errors import VpevalError

    if callable(name):
        return name
    if name is None or name == "none":
        return _identity
    if name == "whisper":
        return normalize_english
    raise VpevalError(f"unknown text normaliser {name!r}; expected one of {NORMALIZERS} or a callable")
