"""Attack channels beyond the voice: what is said (content) and how it is said (prosody), and their fusion.

A voice anonymizer keeps the words and often the rhythm by design, so an attacker who reads the transcripts or
measures the prosody may still link utterances to their speaker (on the VoicePrivacy lists, a text-only
verifier reaches a mean EER of about 35 %).  vpeval treats each channel as a kind of "embedding" scored by
the same protocols, back-ends and verdict as the voice:

==========  ======================================================================================================
channel     feature rows (extractor names start with the channel's prefix)
==========  ======================================================================================================
voice       speaker embeddings (MFCC statistics, GE2E, ...): every other extractor name
content     ``content-*``: word + character n-gram TF-IDF of each utterance's transcript
            (:class:`vpeval.backends.text.TextVectorizer`, fitted on the training speakers' transcripts)
prosody     ``prosody-*``: per-utterance F0, energy, speaking-rate and pause statistics
            (:func:`vpeval.audio.prosody.prosody_features`), standardised with the training speakers' statistics
fused       ``fusion-channels/<trained_on>``: linear fusion (:func:`~vpeval.pipeline.fuse_attackers`) of the trained
            attackers of every channel in one training condition
==========  ======================================================================================================

Each non-voice channel is attacked with one back-end (:data:`CHANNEL_BACKENDS`), trained on every training
condition present, or plain cosine when the channel has no training rows: content with centred cosine (TF-IDF
rows have thousands of dimensions, more than the training segments, which LDA and PLDA cannot estimate), prosody
with LDA (a dozen statistics of very different informativeness).  Their attackers are scored on the verification
trials (oo, oa, aa, ...), not in 1-to-N searches, to keep an audit's cost close to the voice-only one (their
verification trials get intervals, chance floors and per-group rows like any attacker's).
A channel whose training rows lack a condition (e.g. transcripts of the training speakers' original speech
only) fields no attacker trained on that condition, with a note, instead of stopping the audit.

Caveat: in read speech such as LibriSpeech, one speaker's enrollment and trial utterances often come from one
chapter of one book, so the content channel links them much more easily than it would in conversational data
(:func:`shared_chapters` detects it; ``docs/channels.md`` explains how to build content-disjoint trials).
"""

from __future__ import annotations

import numpy as np

from ..backends.text import TextVectorizer
from ..errors import VpevalError
from ..io.embeddings import EmbeddingSet
from .attackers import Attacker, channel_of, fuse_attackers, make_attackers

__all__ = ["CHANNELS", "CHANNEL_BACKENDS", "channel_of", "content_sets", "feature_sets", "field_channel_attackers",
           "split_channels", "shared_chapters"]

#: The channels, in report order.
CHANNELS = ("voice", "content", "prosody", "fused")
#: The back-end fielded per non-voice channel (with training rows; plain cosine without).
CHANNEL_BACKENDS = {"content": "centred-cosine", "prosody": "lda"}


def split_channels(sets: dict) -> tuple[dict, dict]:
    """``(voice, other)``: the entries of a dict extractor -> anything whose extractor is of the voice channel,
    and the rest."""
    voice = {k: v for k, v in sets.items() if channel_of(k) == "voice"}
    return voice, {k: v for k, v in sets.items() if k not in voice}


def _rows(texts: dict[str, dict[str, str]], speaker_of) -> tuple[list, list, list, list]:
    utt, spk, cond, vals = [], [], [], []
    for c in sorted(texts):
        for u in sorted(texts[c]):
            utt.append(u)
            spk.append(speaker_of(u) if callable(speaker_of) else speaker_of[u])
            cond.append(c)
            vals.append(texts[c][u])
    return utt, spk, cond, vals


def content_sets(evaluation: dict[str, dict[str, str]], train: dict[str, dict[str, str]], speaker_of, *,
                 name: str = "content-tfidf", vectorizer: TextVectorizer | None = None
                 ) -> tuple[EmbeddingSet, EmbeddingSet]:
    """TF-IDF feature rows of transcripts, the vectorizer fitted on the training transcripts only.

    Parameters
    ----------
    evaluation, train : dict condition -> {utterance id: transcript}
        Conditions are the labels of the voice embeddings (``"original"``, ``"anonymized"``).
    speaker_of : dict or callable
        Utterance id -> speaker id.
    name : str
        Extractor name; must start with ``content``.
    vectorizer : TextVectorizer, optional
        Unfitted vectorizer with other settings (default :class:`TextVectorizer()`).

    Returns
    -------
    (EmbeddingSet, EmbeddingSet)
        Evaluation and training rows, sorted by condition then utterance id (the order of the inputs does not
        matter). The vectorizer's vocabulary and IDF come from every training transcript of every condition.

    Raises
    ------
    VpevalError
        A name outside the content channel, an utterance without speaker, too few training transcripts.
    """
    if channel_of(name) != "content":
        raise VpevalError(f"a content extractor's name must start with 'content', got {name!r}")
    ev, tr = _rows(evaluation, speaker_of), _rows(train, speaker_of)
    vec = (vectorizer or TextVectorizer()).fit(tr[3])
    return (EmbeddingSet(vec.transform(ev[3]), ev[0], ev[1], ev[2], name),
            EmbeddingSet(vec.transform(tr[3]), tr[0], tr[1], tr[2], name))


def feature_sets(evaluation: dict[str, dict[str, np.ndarray]], train: dict[str, dict[str, np.ndarray]], speaker_of,
                 *, name: str = "prosody-stats") -> tuple[EmbeddingSet, EmbeddingSet]:
    """Per-utterance statistics (e.g. prosody) as feature rows, standardised with the training rows' mean and
    standard deviation (features of very different scales would otherwise make the cosine follow the largest).

    Parameters
    ----------
    evaluation, train : dict condition -> {utterance id: 1-D array}
        All vectors of one length.
    speaker_of : dict or callable
    name : str
        Extractor name; must not be of the voice channel (``prosody-*`` or ``content-*``).

    Returns
    -------
    (EmbeddingSet, EmbeddingSet)
        Sorted by condition then utterance id. A training feature with zero spread is left unscaled.

    Raises
    ------
    VpevalError
        Vectors of different lengths, non-finite values, no training row, a voice-channel name.
    """
    if channel_of(name) == "voice":
        raise VpevalError(f"a feature channel's name must start with 'prosody' or 'content', got {name!r}")
    ev, tr = _rows(evaluation, speaker_of), _rows(train, speaker_of)
    if not tr[3]:
        raise VpevalError(f"{name}: no training rows to standardise the features with")
    try:
        xe = np.array(ev[3], dtype=np.float64).reshape(len(ev[3]), -1)
        xt = np.array(tr[3], dtype=np.float64)
    except ValueError:
        raise VpevalError(f"{name}: feature vectors of different lengths") from None
    if xt.ndim != 2 or (xe.size and xe.shape[1] != xt.shape[1]):
        raise VpevalError(f"{name}: feature vectors of different lengths")
    if not (np.isfinite(xe).all() and np.isfinite(xt).all()):
        raise VpevalError(f"{name}: non-finite feature values")
    mu, sd = xt.mean(axis=0), xt.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    return (EmbeddingSet((xe - mu) / sd, ev[0], ev[1], ev[2], name),
            EmbeddingSet((xt - mu) / sd, tr[0], tr[1], tr[2], name))


def field_channel_attackers(sets: dict[str, EmbeddingSet], train: dict[str, EmbeddingSet] | None,
                            voice_attackers: list[Attacker], *, backends, fusion: bool = True, seed: int = 0,
                            fits: dict | None = None, voice_train: dict | None = None
                            ) -> tuple[list[Attacker], list[str]]:
    """The attackers of the non-voice channels and the cross-channel fusions.

    Parameters
    ----------
    sets, train : dict extractor -> EmbeddingSet
        Non-voice feature rows (:func:`split_channels`) and their training rows.
    voice_attackers : list of Attacker
        The voice channel's attackers (members of the cross-channel fusion).
    backends : iterable of str
        Requested back-ends: a channel's back-end (:data:`CHANNEL_BACKENDS`) is fielded when requested (else the
        requested ones are), cosine when the channel has no training rows.
    fusion : bool
        Field ``fusion-channels/<trained_on>`` for each training condition with trained attackers of at least
        two channels.
    seed : int
        Seed of the fusion's cross-fitting folds.
    fits : dict, optional
        Shared cache of fitted back-ends (:func:`~vpeval.pipeline.make_attackers`).
    voice_train : dict extractor -> EmbeddingSet, optional
        The voice channel's training rows (the fusion's cross-fitting needs every member's).

    Returns
    -------
    (list of Attacker, list of str)
        The attackers and notes on what could not be fielded.
    """
    train = train or {}
    out, notes = [], []
    for ext, es in sets.items():
        tr = train.get(ext)
        conds = [] if tr is None else [c for c in ("original", "anonymized") if (tr.condition == c).any()]
        own = CHANNEL_BACKENDS.get(channel_of(ext))
        bs = ["cosine"] if not conds else [own] if own in backends else [b for b in backends if b != "cosine"]
        if not bs:
            bs = ["cosine"]
        missing = [c for c in ("original", "anonymized") if c not in conds]
        if tr is not None and missing and any(b != "cosine" for b in bs):
            notes.append(f"{ext}: no training rows of {' or '.join(missing)} speech; no {ext} attacker trained on it")
        out += make_attackers({ext: es}, {ext: tr.select(np.isin(tr.condition, conds))} if conds else None,
                              backends=bs, conditions=conds, fits=fits)
    if fusion:
        all_train = {**(voice_train or {}), **train}
        for cond in ("original", "anonymized"):
            members = [a for a in voice_attackers + out if a.trained_on == cond and not a.members
                       and not a.backend.endswith("+asnorm")]
            if len({a.channel for a in members}) < 2:
                continue
            try:
                out.append(fuse_attackers(members, all_train, seed=seed, fits=fits))
            except VpevalError as exc:
                notes.append(f"fusion-channels/{cond} not fielded: {exc}")
    return out, notes


def shared_chapters(es: EmbeddingSet) -> tuple[int, int]:
    """LibriSpeech-like data: how many evaluation speakers have all their utterances in one chapter.

    Utterance ids of the form ``<speaker>-<chapter>-<index>`` (LibriSpeech, LibriTTS) are read; a speaker with two
    or more such utterances all of one chapter counts.

    Returns
    -------
    (int, int)
        Speakers with >= 2 utterances whose ids have this form, and how many of them read one chapter only.
        ``(0, 0)`` when no id has the form.
    """
    chapters: dict[str, set] = {}
    count: dict[str, int] = {}
    for u, s in sorted(set(zip(es.utterance_id.tolist(), es.speaker_id.tolist()))):
        parts = u.split("-")
        if len(parts) < 3 or parts[0] != s or not parts[1].isdigit():
            continue
        chapters.setdefault(s, set()).add(parts[1])
        count[s] = count.get(s, 0) + 1
    multi = [s for s in count if count[s] >= 2]
    return len(multi), sum(len(chapters[s]) == 1 for s in multi)
