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

Two additions to Whisper's rules:

- the text is normalised **clause by clause**: after removing bracketed and parenthesised text, it is split
  after every ``, . ! ? ; :`` followed by whitespace, and each clause goes through Whisper's rules on its own.
  Whisper's number rules would otherwise merge spelled-out numbers across clause and sentence boundaries
  (``"He scored two hundred. Twelve players left."`` -> ``"he scored 212 players left"``, ``"room five, six
  people"`` -> ``"room 56 people"``), while the same words written in digits stay apart, so a transcript in
  words and one in digits of the same speech would disagree. Punctuation inside numbers (``1,000``, ``3.14``,
  ``10:30``) is not followed by whitespace and does not split;
- tokens without any letter or digit are dropped at the end.  Whisper's normaliser keeps ``. $ ¢ € £ %``
  for numbers and leaves a stray ``.`` after a final ellipsis (``"world..."`` -> ``"world ."``), which would
  count as a word.

The package is part of the ``vpeval[utility]`` extra (also pulled in by ``vpeval[asr]``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

__all__ = ["normalize_english", "get_normalizer", "NORMALIZERS"]

NORMALIZERS = ("whisper", "none")
"""Names accepted by :func:`get_normalizer`."""

# Whisper's own first two rules (text in brackets / parentheses is dropped), applied before the clause split
# so that a bracketed aside containing a comma is still removed whole
_BRACKETED = (re.compile(r"[<\[][^>\]]*[>\]]"), re.compile(r"\(([^)]+?)\)"))
_CLAUSE_END = re.compile(r"(?<=[,.!?;:])\s+")


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
    >>> normalize_english("He scored two hundred. Twelve players left.")  # numbers never span clauses
    'he scored 200 12 players left'
    """
    if not isinstance(text, str):
        raise TypeError(f"expected str, got {type(text).__name__}")
    for pattern in _BRACKETED:
        text = pattern.sub("", text)
    whisper = _whisper_english()
    return " ".join(t for clause in _CLAUSE_END.split(text) for t in whisper(clause).split()
                    if any(c.isalnum() for c in t))


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
