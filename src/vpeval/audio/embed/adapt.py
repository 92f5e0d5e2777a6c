"""Adapting the resemblyzer GE2E encoder to an anonymizer (torch part; optional ``embed`` extra).

Two modes, both on the training speakers' *anonymized* speech (the semi-informed attacker of VoicePrivacy
retrains its extractor on anonymized training speech; here the extractor is resemblyzer's GE2E encoder, see
:mod:`vpeval.pipeline.adapt_head` for how it forms an utterance embedding):

* **head-only** (cheap, the default): :func:`lstm_states` / :func:`states_folder` run the frozen LSTM once per
  partial window and keep its final hidden states; :class:`vpeval.pipeline.adapt_head.AdaptedHead` (NumPy)
  retrains the projection on them; :class:`AdaptedResemblyzerExtractor` then embeds audio with the frozen
  LSTM and the retrained projection.
* **full fine-tune** (opt-in): :func:`fine_tune_encoder` trains the LSTM and the projection together with the
  same additive-margin softmax head for ``epochs`` passes over the training windows.

Only resemblyzer's public API is used: ``VoiceEncoder`` and its ``lstm`` and ``linear`` modules,
``VoiceEncoder.compute_partial_slices`` and ``resemblyzer.audio.wav_to_mel_spectrogram``. Training is seeded
and deterministic on CPU (``torch.manual_seed``, ``torch.use_deterministic_algorithms(True)``, a fixed number
of intra-op threads; torch's global settings are restored afterwards).
"""

from __future__ import annotations

import copy
from contextlib import contextmanager

import numpy as np

from ...errors import InputFileError, VpevalError
from ...pipeline.adapt_head import AdaptedHead, StateSet, head_embed
from .base import Extractor, package_record
from .resemblyzer import _VAD_WINDOW, _import, preprocess

__all__ = ["lstm_states", "states_folder", "pretrained_projection", "AdaptedResemblyzerExtractor",
           "fine_tune_encoder", "RATE", "MIN_COVERAGE"]

#: Partial windows per second and the last window's minimum coverage (``VoiceEncoder.embed_utterance``'s defaults).
RATE, MIN_COVERAGE = 1.3, 0.75


def _encoder(device: str = "cpu"):
    from .resemblyzer import _encoders

    resemblyzer, _ = _import()
    if device not in _encoders:
        _encoders[device] = resemblyzer.VoiceEncoder(device=device, verbose=False)
    return _encoders[device]


@contextmanager
def _torch_settings(torch, threads: int, deterministic: bool = True):
    old_threads, old_det = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(int(threads))
    torch.use_deterministic_algorithms(deterministic)
    try:
        yield
    finally:
        torch.set_num_threads(old_threads)
        torch.use_deterministic_algorithms(old_det)


def _windows(wav: np.ndarray, encoder) -> np.ndarray:
    """Mel windows (n_windows, 160, 40) float32 of a preprocessed waveform, as ``embed_utterance`` cuts them."""
    from resemblyzer import audio

    wav_slices, mel_slices = encoder.compute_partial_slices(len(wav), RATE, MIN_COVERAGE)
    need = wav_slices[-1].stop
    if need >= len(wav):
        wav = np.pad(wav, (0, need - len(wav)), "constant")
    mel = audio.wav_to_mel_spectrogram(wav.astype(np.float32))
    return np.array([mel[s] for s in mel_slices], dtype=np.float32)


def lstm_states(x: np.ndarray, *, preprocessed: bool = False, encoder=None, threads: int = 1) -> np.ndarray:
    """Final hidden states of the LSTM's last layer, one per partial window of a 16 kHz waveform.

    Parameters
    ----------
    x : ndarray of shape (n_samples,)
        16 kHz waveform; preprocessed (volume, VAD) with :func:`vpeval.audio.embed.resemblyzer.preprocess`
        unless ``preprocessed``.
    encoder : resemblyzer.VoiceEncoder, optional
        Default: the pretrained encoder (loaded once per process).
    threads : int
        Torch intra-op threads for the call.

    Returns
    -------
    ndarray of shape (n_windows, 256), float32
        ``relu(linear(states))`` normalised and averaged per :func:`vpeval.pipeline.adapt_head.head_embed` gives
        ``encoder.embed_utterance(preprocessed x)``.
    """
    _, torch = _import()
    enc = encoder if encoder is not None else _encoder()
    wav = np.asarray(x, np.float32) if preprocessed else preprocess(x).astype(np.float32)
    mels = _windows(wav, enc)
    with _torch_settings(torch, threads), torch.no_grad():
        _, (hidden, _) = enc.lstm(torch.from_numpy(mels))
    return hidden[-1].numpy().astype(np.float32)


def states_folder(folder, *, condition: str = "anonymized", metadata=None, encoder=None, threads: int = 1,
                  pool: bool = False) -> StateSet:
    """:func:`lstm_states` of every utterance of an audio folder (read as in :func:`~vpeval.audio.embed.embed_folder`).

    Returns
    -------
    StateSet
        Utterances sorted by id, windows per utterance in time order; ``pool=True`` keeps the mean state of each
        utterance only (an approximation for the head; :mod:`vpeval.pipeline.adapt_head`).
    """
    from ...errors import InputFileError
    from ..io import read_item_audio_rate, scan_audio_folder

    items = scan_audio_folder(folder, metadata=metadata)
    blocks, counts = [], []
    for it in items:
        x, _ = read_item_audio_rate(it)
        try:
            s = lstm_states(x, encoder=encoder, threads=threads)
        except VpevalError as exc:
            raise InputFileError(it.path, None, str(exc)) from None
        blocks.append(s)
        counts.append(s.shape[0])
    ss = StateSet(np.vstack(blocks), np.asarray(counts, np.int64), [it.utterance_id for it in items],
                  [it.speaker_id for it in items], [condition] * len(items))
    return ss.pool() if pool else ss


def pretrained_projection(encoder=None) -> tuple[np.ndarray, np.ndarray]:
    """``(W, b)`` of the encoder's projection (``VoiceEncoder.linear``), float64, shapes (256, 256) and (256,)."""
    enc = encoder if encoder is not None else _encoder()
    return (enc.linear.weight.detach().numpy().astype(np.float64),
            enc.linear.bias.detach().numpy().astype(np.float64))


class AdaptedResemblyzerExtractor(Extractor):
    """resemblyzer's GE2E encoder with an adapted projection (and, after a full fine-tune, adapted LSTM).

    Parameters
    ----------
    W, b : ndarray of shape (256, 256) and (256,)
        The projection (e.g. ``AdaptedHead.W_``, ``.b_``).
    lstm_state : dict, optional
        A state dict of the LSTM (a full fine-tune); None keeps the pretrained LSTM.
    threads : int, default 1

    Embeds like ``VoiceEncoder.embed_utterance`` with the given weights; with the pretrained ``W, b`` and no
    ``lstm_state`` it gives the frozen encoder's embeddings.
    """

    name = "resemblyzer-ge2e-adapted"
    dim = 256
    min_samples = _VAD_WINDOW
    min_frame = "one voice-activity (VAD) window"

    def __init__(self, W, b, lstm_state=None, threads: int = 1):
        _, torch = _import()
        self.W, self.b = np.asarray(W, np.float64), np.asarray(b, np.float64)
        self.threads = int(threads)
        self.lstm_state = lstm_state
        self._enc = _encoder()
        if lstm_state is not None:
            self._enc = copy.deepcopy(self._enc)
            self._enc.lstm.load_state_dict(lstm_state)
        self._package = package_record("resemblyzer")

    def _identity(self) -> dict:
        """The package of the frozen parts and the sha256 of the adapted weights: ``W`` and ``b`` as float64
        little-endian bytes, then (full fine-tune) each LSTM tensor by name in sorted order, its name and its
        float64 little-endian bytes."""
        import hashlib

        h = hashlib.sha256()
        h.update(np.ascontiguousarray(self.W, "<f8").tobytes())
        h.update(np.ascontiguousarray(self.b, "<f8").tobytes())
        for k in sorted(self.lstm_state or {}):
            h.update(k.encode("utf-8") + b"\0")
            h.update(np.ascontiguousarray(self.lstm_state[k].detach().cpu().double().numpy(), "<f8").tobytes())
        return {"kind": "resemblyzer-adapted", "package": self._package, "weights_sha256": h.hexdigest()}

    def __reduce__(self):
        return (type(self), (self.W, self.b, self.lstm_state, self.threads))

    @classmethod
    def from_head(cls, head: AdaptedHead, threads: int = 1) -> "AdaptedResemblyzerExtractor":
        """The frozen LSTM with a fitted :class:`~vpeval.pipeline.adapt_head.AdaptedHead`."""
        return cls(head.W_, head.b_, None, threads)

    def _embed(self, x: np.ndarray) -> np.ndarray:
        s = lstm_states(x, encoder=self._enc, threads=self.threads)
        ss = StateSet(s, np.array([s.shape[0]]), ["u"], ["s"], ["c"])
        return head_embed(ss, self.W, self.b)[0]


def fine_tune_encoder(train: list, *, epochs: int = 1, lr: float = 1e-4, batch_size: int = 32,
                      scale: float = 30.0, margin: float = 0.2, seed: int = 0, threads: int = 1,
                      progress=None, names_of=None) -> AdaptedResemblyzerExtractor:
    """Fine-tune the whole encoder (LSTM + projection) with an AM-softmax speaker head (opt-in full mode).

    Parameters
    ----------
    train : list of (waveform, speaker id)
        16 kHz waveforms of the training speakers' anonymized speech (preprocessed here); every partial
        window is one training example labelled with its speaker.
    epochs : int
        Passes over the windows (0: the pretrained encoder).
    lr, batch_size, scale, margin : training settings (Adam; windows per batch; AM-softmax s and m).
    seed : int
        Seeds the class-vector start (none: speaker centroids), the window order and torch.
    threads : int
        Torch intra-op threads.
    names_of : list of str, optional
        Where each utterance of ``train`` comes from (its file), named in the error of one that cannot be
        preprocessed.

    Returns
    -------
    AdaptedResemblyzerExtractor
        With the fine-tuned LSTM and projection; ``.loss_`` holds the mean loss of each epoch.

    Raises
    ------
    VpevalError
        Fewer than 2 speakers, or ``epochs`` not an integer >= 0; InputFileError (naming ``names_of[i]``) for an
        utterance that is silent or in which the voice activity detector finds no speech.
    """
    _, torch = _import()
    if isinstance(epochs, bool) or int(epochs) != epochs or epochs < 0:
        raise VpevalError(f"epochs must be an integer >= 0, got {epochs!r}")
    names, labels = np.unique([str(s) for _, s in train], return_inverse=True)
    if names.size < 2:
        raise VpevalError(f"fine-tuning needs at least 2 training speakers, got {names.size}")
    base = _encoder()
    enc = copy.deepcopy(base)
    # sort the utterances (by speaker, then content) so the result does not depend on the list's order
    wavs = []
    for i, (x, _) in enumerate(train):
        try:
            wavs.append(preprocess(x).astype(np.float32))
        except VpevalError as exc:  # e.g. a silent file: named, when the caller gave the names
            if names_of is None:
                raise
            raise InputFileError(names_of[i], None, f"training utterance: {exc}") from None
    keys = [(names[labels[i]], wavs[i].size, wavs[i][:64].tobytes()) for i in range(len(wavs))]
    order = sorted(range(len(wavs)), key=lambda i: keys[i])
    mels, ys = [], []
    for i in order:
        w = _windows(wavs[i], enc)
        mels.append(w)
        ys.append(np.full(w.shape[0], labels[i]))
    X = torch.from_numpy(np.concatenate(mels))
    y = torch.from_numpy(np.concatenate(ys).astype(np.int64))
    losses = []
    with _torch_settings(torch, threads):
        torch.manual_seed(seed)
        with torch.no_grad():
            _, (h, _) = enc.lstm(X)
            z = torch.relu(enc.linear(h[-1]))
            z = z / z.norm(dim=1, keepdim=True).clamp_min(1e-12)
            V0 = torch.zeros(names.size, z.shape[1]).index_add_(0, y, z)
        V = torch.nn.Parameter(V0 / V0.norm(dim=1, keepdim=True).clamp_min(1e-12))
        params = list(enc.lstm.parameters()) + list(enc.linear.parameters()) + [V]
        opt = torch.optim.Adam(params, lr=lr)
        gen = torch.Generator().manual_seed(seed)
        for _ in range(int(epochs)):
            perm = torch.randperm(X.shape[0], generator=gen)
            total, count = 0.0, 0
            for i in range(0, X.shape[0], batch_size):
                idx = perm[i:i + batch_size]
                _, (h, _) = enc.lstm(X[idx])
                z = torch.relu(enc.linear(h[-1]))
                e = z / z.norm(dim=1, keepdim=True).clamp_min(1e-12)
                cos = e @ (V / V.norm(dim=1, keepdim=True)).T
                logits = scale * (cos - margin * torch.nn.functional.one_hot(y[idx], names.size))
                loss = torch.nn.functional.cross_entropy(logits, y[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += float(loss.detach()) * idx.numel()
                count += idx.numel()
                if progress is not None:
                    progress(i + idx.numel(), X.shape[0])
            losses.append(total / count)
    W = enc.linear.weight.detach().numpy().astype(np.float64)
    b = enc.linear.bias.detach().numpy().astype(np.float64)
    state = {k: v.detach().clone() for k, v in enc.lstm.state_dict().items()}
    out = AdaptedResemblyzerExtractor(W, b, state if epochs else None, threads)
    out.loss_ = np.asarray(losses)
    out.n_training_speakers_ = int(names.size)
    out.epochs_ = int(epochs)
    return out
