"""Utility of anonymized speech: word error rate (WER) of a speech recogniser.

Definition (the standard one, e.g. NIST sclite; VoicePrivacy Challenge evaluation plans):

    WER = (S + D + I) / N

with S substitutions, D deletions and I insertions of the minimum-edit-distance (Levenshtein) word
alignment of hypothesis to reference, and N the number of reference words.  ``S + D + I`` is the
Levenshtein distance (unique); its split into S, D and I is the one of ``jiwer``'s alignment (rapidfuzz),
which picks one of possibly several equally short alignments.  A per-utterance WER can exceed 1
(insertions).

**Corpus WER** = sum of the edits over all utterances / sum of their reference words (every word weighs
the same; this is what sclite and the VoicePrivacy Challenge report).  The unweighted mean of the
per-utterance WERs is a different number (short utterances weigh more); it is returned as
``mean_utterance_wer`` and always labelled so.

Both texts are normalised first (default: Whisper's English normaliser, :mod:`vpeval.text`); the words are
then the whitespace-separated tokens.  WER is a proportion (0 = perfect); reports show it in percent.

Degenerate input: a reference that is empty after normalisation has no WER (division by N = 0) and raises
:class:`EmptyReferenceError`; an empty hypothesis is legal (all reference words deleted, WER = 1).
Results never depend on the order of the utterances (they are sorted by id).

:func:`transcript_similarity` complements WER with the meaning kept: the cosine similarity of sentence
embeddings of two transcripts of the same utterance (e.g. ASR output on original vs anonymized speech).

:func:`pitch_correlation` and :func:`pitch_correlations` measure intonation kept: the Pearson correlation
rho_F0 of the F0 contours of an original utterance and its anonymized version (VoicePrivacy 2020).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..errors import VpevalError

__all__ = ["pitch_correlation", "pitch_correlations", "PitchCorrelationResult", "EmptyReferenceError", "WordErrors", "WERResult", "word_errors", "wer", "SimilarityResult",
           "transcript_similarity"]


class EmptyReferenceError(VpevalError):
    """A reference transcript is empty (after normalisation), so its WER is undefined (N = 0)."""


class _EditCounts:
    """``errors`` and ``wer`` from the counts ``n_ref``, ``hits``, ``substitutions``, ``deletions`` and
    ``insertions`` (of one utterance, or summed over a corpus), shared by WordErrors and WERResult."""

    __slots__ = ()

    @property
    def errors(self) -> int:
        """S + D + I (the word-level Levenshtein distance, summed over the utterances of a WERResult)."""
        return self.substitutions + self.deletions + self.insertions

    @property
    def wer(self) -> float:
        """(S + D + I) / N, a proportion (may exceed 1); of a WERResult, the corpus WER: the sum of edits over
        the sum of reference words."""
        return self.errors / self.n_ref

    def _counts_dict(self) -> dict:
        return {"n_ref": self.n_ref, "hits": self.hits, "substitutions": self.substitutions,
                "deletions": self.deletions, "insertions": self.insertions, "errors": self.errors}


@dataclass(frozen=True)
class WordErrors(_EditCounts):
    """Word alignment counts of one utterance.

    Attributes
    ----------
    utterance_id : str
    reference, hypothesis : str
        The normalised texts that were aligned.
    n_ref : int
        Number of reference words N (> 0).
    hits, substitutions, deletions, insertions : int
        ``hits + substitutions + deletions == n_ref``.
    """

    utterance_id: str
    reference: str
    hypothesis: str
    n_ref: int
    hits: int
    substitutions: int
    deletions: int
    insertions: int

    def to_dict(self) -> dict:
        return {"utterance_id": self.utterance_id, "reference": self.reference, "hypothesis": self.hypothesis,
                **self._counts_dict(), "wer": self.wer}


def _summed(count: str) -> property:
    """A read-only property: the sum of the integer ``count`` of every WordErrors in ``self.utterances``."""
    return property(lambda self: sum(getattr(u, count) for u in self.utterances),
                    doc=f"Sum of the per-utterance ``{count}`` (an int).")


@dataclass(frozen=True)
class WERResult(_EditCounts):
    """Per-utterance counts and corpus-level WER of one system/condition.

    Attributes
    ----------
    utterances : tuple of WordErrors
        Sorted by utterance id.
    normalizer : str
        Name of the text normaliser applied to both sides.
    """

    utterances: tuple[WordErrors, ...]
    normalizer: str

    n_ref = _summed("n_ref")
    substitutions = _summed("substitutions")
    deletions = _summed("deletions")
    insertions = _summed("insertions")
    hits = _summed("hits")

    @property
    def mean_utterance_wer(self) -> float:
        """Unweighted mean of the per-utterance WERs (not the corpus WER)."""
        return sum(u.wer for u in self.utterances) / len(self.utterances)

    def to_dict(self) -> dict:
        return {"wer": self.wer, "mean_utterance_wer": self.mean_utterance_wer, "n_utterances": len(self.utterances),
                **self._counts_dict(), "normalizer": self.normalizer,
                "utterances": [u.to_dict() for u in self.utterances]}


def _jiwer():
    try:
        import jiwer
    except ImportError as exc:
        raise ImportError(f"vpeval's WER needs 'jiwer': pip install 'vpeval[utility]' ({exc})") from None
    return jiwer


def _resolve(normalizer) -> tuple[Callable[[str], str], str]:
    from ..text import get_normalizer

    fn = get_normalizer(normalizer)
    name = normalizer if isinstance(normalizer, str) else ("none" if normalizer is None
                                                           else getattr(fn, "__name__", "custom"))
    return fn, name


def _count(utt: str, ref: str, hyp: str, norm: Callable[[str], str]) -> WordErrors:
    if not isinstance(ref, str) or not isinstance(hyp, str):
        raise VpevalError(f"utterance {utt!r}: transcripts must be str, got {type(ref).__name__} and "
                          f"{type(hyp).__name__}")
    r, h = " ".join(norm(ref).split()), " ".join(norm(hyp).split())
    if not r:
        raise EmptyReferenceError(
            f"utterance {utt!r}: the reference is empty after normalisation (was {ref!r}); WER is undefined "
            "for N = 0 reference words: remove the utterance or fix its reference")
    n = len(r.split())
    if not h:  # every reference word deleted
        return WordErrors(utt, r, h, n, 0, 0, n, 0)
    o = _jiwer().process_words(r, h)
    return WordErrors(utt, r, h, n, int(o.hits), int(o.substitutions), int(o.deletions), int(o.insertions))


def word_errors(reference: str, hypothesis: str, *, normalizer: str | Callable[[str], str] | None = "whisper",
                utterance_id: str = "") -> WordErrors:
    """Align one hypothesis with its reference and count the word errors.

    Parameters
    ----------
    reference, hypothesis : str
        Raw texts; both go through ``normalizer`` first.
    normalizer : "whisper", "none", None or callable
        Text normalisation (see :func:`vpeval.text.get_normalizer`).
    utterance_id : str
        Used in error messages and stored in the result.

    Returns
    -------
    WordErrors

    Raises
    ------
    EmptyReferenceError
        The reference has no word after normalisation.

    Examples
    --------
    >>> e = word_errors("the cat sat on the mat", "the cat sat on a mat today", normalizer="none")
    >>> (e.substitutions, e.deletions, e.insertions, e.n_ref, round(e.wer, 4))
    (1, 0, 1, 6, 0.3333)
    >>> word_errors("It's twenty-five dollars.", "it is 25 dollars").wer
    0.0
    """
    fn, _ = _resolve(normalizer)
    return _count(str(utterance_id), reference, hypothesis, fn)


def _as_mapping(x, what: str) -> dict[str, str]:
    if isinstance(x, Mapping):
        return {str(k): v for k, v in x.items()}
    if isinstance(x, Sequence) and not isinstance(x, str):
        return {str(i): v for i, v in enumerate(x)}
    raise VpevalError(f"{what}: expected a mapping utterance_id -> text or a sequence of texts, "
                      f"got {type(x).__name__}")


def wer(references, hypotheses, *, normalizer: str | Callable[[str], str] | None = "whisper") -> WERResult:
    """Word error rate per utterance and over the corpus.

    Parameters
    ----------
    references, hypotheses : mapping utterance_id -> str, or sequences of str of equal length
        Both must cover exactly the same utterances (sequences are paired by position).  An empty
        hypothesis is legal.
    normalizer : "whisper" (default), "none", None or callable
        Applied to both sides (see :mod:`vpeval.text`).

    Returns
    -------
    WERResult
        ``.wer`` is the corpus WER (sum of edits / sum of reference words, a proportion);
        ``.mean_utterance_wer`` the unweighted mean over utterances; ``.utterances`` the per-utterance
        counts sorted by id.

    Raises
    ------
    VpevalError
        No utterances, or the two sides cover different utterances (the message lists some of them).
    EmptyReferenceError
        A reference is empty after normalisation (message names the utterance).

    Examples
    --------
    >>> r = wer({"a": "one two three four", "b": "five"}, {"a": "one two three four", "b": "six"},
    ...         normalizer="none")
    >>> r.wer, r.mean_utterance_wer  # 1 edit / 5 words vs mean(0/4, 1/1)
    (0.2, 0.5)
    """
    refs, hyps = _as_mapping(references, "references"), _as_mapping(hypotheses, "hypotheses")
    if not refs:
        raise VpevalError("references: no utterances")
    missing, extra = sorted(set(refs) - set(hyps)), sorted(set(hyps) - set(refs))
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"{len(missing)} reference utterance(s) have no hypothesis (e.g. {missing[:3]})")
        if extra:
            parts.append(f"{len(extra)} hypothesis utterance(s) have no reference (e.g. {extra[:3]})")
        raise VpevalError("references and hypotheses cover different utterances: " + "; ".join(parts))
    fn, name = _resolve(normalizer)
    rows = tuple(_count(u, refs[u], hyps[u], fn) for u in sorted(refs))
    return WERResult(rows, name)


@dataclass(frozen=True)
class SimilarityResult:
    """Per-utterance cosine similarities of two sets of transcripts.

    Attributes
    ----------
    utterance_ids : tuple of str
        Sorted.
    cosine : tuple of float
        Cosine similarity in [-1, 1] per utterance (same order).
    encoder : str
        Name of the sentence encoder.
    """

    utterance_ids: tuple[str, ...]
    cosine: tuple[float, ...]
    encoder: str

    @property
    def mean(self) -> float:
        """Unweighted mean cosine similarity over utterances."""
        return sum(self.cosine) / len(self.cosine)

    def to_dict(self) -> dict:
        return {"mean_cosine": self.mean, "encoder": self.encoder,
                "utterances": dict(zip(self.utterance_ids, self.cosine))}


def transcript_similarity(texts_a, texts_b, encode: Callable[[list[str]], object], *,
                          encoder_name: str | None = None) -> SimilarityResult:
    """Cosine similarity of sentence embeddings of paired transcripts (semantic utility).

    For each utterance, ``cos(e_a, e_b) = e_a . e_b / (|e_a| |e_b|)`` with ``e = encode(text)``, computed
    in float64 (the embeddings are normalised here, whatever the encoder returns).  1 = same direction
    (same meaning for a good encoder), about 0 = unrelated.  With all-MiniLM-L6-v2
    (:class:`vpeval.audio.asr.semantic.MiniLMEncoder`; Reimers & Gurevych, "Sentence-BERT", EMNLP 2019) two
    spellings of one sentence score above 0.9 and unrelated sentences below 0.2.

    Parameters
    ----------
    texts_a, texts_b : mapping utterance_id -> str, or sequences of equal length
        Must cover the same utterances.  Texts are passed to ``encode`` as written (no normalisation:
        sentence encoders read casing and punctuation); empty texts are encoded like any other.
    encode : callable
        ``encode(list of n str) -> array (n, d)``.  Must be deterministic.
    encoder_name : str, optional
        Stored in the result (default: ``encode.name`` or its type name).

    Returns
    -------
    SimilarityResult

    Raises
    ------
    VpevalError
        No utterances, different utterance sets, an encoder output of the wrong shape, non-finite, or a
        zero vector (cosine undefined).

    Examples
    --------
    >>> import numpy as np
    >>> bag = lambda texts: np.array([[t.count("a"), t.count("b")] for t in texts], dtype=float)
    >>> r = transcript_similarity({"u": "ab", "v": "aa"}, {"u": "ba", "v": "bb"}, bag, encoder_name="bag")
    >>> [round(c, 6) for c in r.cosine], round(r.mean, 6)
    ([1.0, 0.0], 0.5)
    """
    import numpy as np

    a, b = _as_mapping(texts_a, "texts_a"), _as_mapping(texts_b, "texts_b")
    if not a:
        raise VpevalError("texts_a: no utterances")
    if set(a) != set(b):
        diff = sorted(set(a) ^ set(b))
        raise VpevalError(f"the two transcript sets cover different utterances (e.g. {diff[:3]})")
    ids = sorted(a)
    for u in ids:
        if not isinstance(a[u], str) or not isinstance(b[u], str):
            raise VpevalError(f"utterance {u!r}: transcripts must be str")
    texts = [a[u] for u in ids] + [b[u] for u in ids]
    e = np.asarray(encode(texts), dtype=np.float64)
    if e.ndim != 2 or e.shape[0] != len(texts) or not np.isfinite(e).all():
        raise VpevalError(f"encoder returned an array of shape {e.shape} (or non-finite values); expected "
                          f"({len(texts)}, d) finite values")
    norms = np.linalg.norm(e, axis=1)
    if (norms == 0).any():
        i = int(np.flatnonzero(norms == 0)[0])
        raise VpevalError(f"utterance {ids[i % len(ids)]!r}: zero embedding, cosine undefined")
    e = e / norms[:, None]
    n = len(ids)
    cos = np.clip(np.einsum("ij,ij->i", e[:n], e[n:]), -1.0, 1.0)
    name = encoder_name or getattr(encode, "name", None) or type(encode).__name__
    return SimilarityResult(tuple(ids), tuple(float(c) for c in cos), str(name))


# ------------------------------------------------------------------------------------------ pitch correlation


def pitch_correlation(f0_original, f0_anonymized, *, max_length_difference: int = 2) -> float:
    """rho_F0: Pearson correlation of two F0 contours over the frames voiced in both.

    Parameters
    ----------
    f0_original, f0_anonymized : array_like of shape (n_frames,)
        F0 in Hz per frame on the same frame grid (e.g. :func:`vpeval.audio.pitch.f0_contour`), 0 for unvoiced
        frames. Contours may differ in length by at most ``max_length_difference`` frames (resynthesis can
        add or drop a frame at the end); frame ``i`` is compared with frame ``i`` over the common length.
    max_length_difference : int, default 2

    Returns
    -------
    float
        Pearson's r in [-1, 1] (dimensionless) over the frames where both contours are > 0, or NaN with an
        :class:`~vpeval.errors.UndefinedPitchCorrelationWarning` when it is undefined: fewer than two such
        frames, or one contour constant over them (zero variance).

    Raises
    ------
    VpevalError
        Not 1-D, negative or non-finite values, or lengths differing by more than ``max_length_difference``.

    Notes
    -----
    VoicePrivacy 2020 evaluation plan (Tomashenko et al., "The VoicePrivacy 2020 Challenge evaluation plan",
    2020, Sec. 3.3, "pitch correlation"): ``rho_F0 = cov(F0_o, F0_a) / (sigma_o sigma_a)`` computed over the
    frames voiced in both the original and the anonymized utterance; the challenge required rho_F0 > 0.3 on
    average. Pearson's r is invariant to scaling and shifting either contour, so a constant pitch-shift factor
    gives 1. It does not depend on the order of the frames as pairs (it is a function of the set of pairs).

    Examples
    --------
    >>> round(pitch_correlation([100, 110, 0, 120], [200, 220, 180, 240]), 12)
    1.0
    >>> round(pitch_correlation([100, 110, 120, 0], [120, 110, 100, 90]), 12)
    -1.0
    """
    import warnings

    import numpy as np

    from ..errors import UndefinedPitchCorrelationWarning

    a = np.asarray(f0_original, dtype=np.float64)
    b = np.asarray(f0_anonymized, dtype=np.float64)
    for name, x in (("f0_original", a), ("f0_anonymized", b)):
        if x.ndim != 1:
            raise VpevalError(f"{name} must be 1-D, got shape {x.shape}")
        if not np.isfinite(x).all() or (x < 0).any():
            raise VpevalError(f"{name} must hold finite F0 values >= 0 (0 = unvoiced)")
    if abs(a.size - b.size) > max_length_difference:
        raise VpevalError(f"F0 contours of {a.size} and {b.size} frames differ by more than "
                          f"{max_length_difference} frames: not the same utterance on the same frame grid?")
    n = min(a.size, b.size)
    a, b = a[:n], b[:n]
    both = (a > 0) & (b > 0)
    x, y = a[both], b[both]
    if x.size < 2:
        warnings.warn(f"pitch correlation undefined: {x.size} frame(s) voiced in both contours (need 2)",
                      UndefinedPitchCorrelationWarning, stacklevel=2)
        return float("nan")
    x = x - x.mean()
    y = y - y.mean()
    sxx, syy = float(x @ x), float(y @ y)
    if sxx == 0 or syy == 0:
        warnings.warn("pitch correlation undefined: a contour is constant over the frames voiced in both",
                      UndefinedPitchCorrelationWarning, stacklevel=2)
        return float("nan")
    # sqrt(sxx * syy), not sqrt(sxx) * sqrt(syy): for identical contours sqrt(fl(v * v)) == v exactly, so the
    # correlation of a contour with itself is exactly 1 (the product of two rounded roots can miss it by an ulp)
    return float(np.clip((x @ y) / np.sqrt(sxx * syy), -1.0, 1.0))


@dataclass(frozen=True)
class PitchCorrelationResult:
    """Per-utterance rho_F0 and their mean.

    Attributes
    ----------
    utterances : dict str -> float
        rho_F0 per utterance id (sorted), NaN where undefined.
    mean : float
        Mean over the defined values (NaN if none is defined).
    n_undefined : int
        Utterances whose rho_F0 is NaN (left out of the mean).
    """

    utterances: dict
    mean: float
    n_undefined: int

    def to_dict(self) -> dict:
        """JSON-ready: NaN written as None."""
        import math

        clean = lambda v: None if math.isnan(v) else v  # noqa: E731
        return {"mean": clean(self.mean), "n_utterances": len(self.utterances), "n_undefined": self.n_undefined,
                "utterances": {u: clean(v) for u, v in self.utterances.items()}}


def pitch_correlations(original: Mapping, anonymized: Mapping, **kw) -> PitchCorrelationResult:
    """rho_F0 of every utterance (by id) and the mean over those where it is defined.

    Parameters
    ----------
    original, anonymized : mapping utterance id -> F0 contour
        The same utterance ids on both sides.
    **kw
        Passed to :func:`pitch_correlation`.

    Returns
    -------
    PitchCorrelationResult
        The mean is the unweighted mean of the per-utterance values (the VoicePrivacy average), with undefined
        utterances left out and counted in ``n_undefined``.

    Raises
    ------
    VpevalError
        Different utterance ids, no utterance, or an error of :func:`pitch_correlation` (naming the utterance).
    """
    import math

    if set(original) != set(anonymized):
        only = sorted(set(original) ^ set(anonymized))
        raise VpevalError(f"original and anonymized contours cover different utterances (first: {only[0]!r})")
    if not original:
        raise VpevalError("no utterance to correlate")
    vals = {}
    for u in sorted(original):
        try:
            vals[u] = pitch_correlation(original[u], anonymized[u], **kw)
        except VpevalError as exc:
            raise VpevalError(f"utterance {u!r}: {exc}") from None
    ok = [v for v in vals.values() if not math.isnan(v)]
    return PitchCorrelationResult(vals, sum(ok) / len(ok) if ok else float("nan"), len(vals) - len(ok))
