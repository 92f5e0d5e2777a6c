"""The GE2E encoder's projection, retrained on top of frozen LSTM states (NumPy, no torch).

The resemblyzer GE2E encoder (``resemblyzer`` 0.1.4, read from its public code) forms an utterance embedding
in four steps: (1) the preprocessed waveform is cut into partial windows of 160 mel frames (1.6 s) at 1.3
windows per second (``VoiceEncoder.compute_partial_slices``; the last window is zero-padded when it covers at
least 75 % of its frames); (2) each window runs through a 3-layer LSTM (40 -> 256), whose *final hidden state
of the last layer* ``h_w`` (256 values) is the window's state; (3) a linear projection and a ReLU give the
window's embedding ``z_w = relu(W h_w + b)``, L2-normalised; (4) the utterance embedding is the mean of the
normalised window embeddings, L2-normalised again:

    e = m / ||m||,   m = mean_w  z_w / ||z_w||,   z_w = max(0, W h_w + b).

Only ``W`` (256 x 256) and ``b`` (256) act after the LSTM. The **head-only adaptation** keeps the LSTM frozen,
computes its window states once (:class:`StateSet`), and retrains ``W, b`` -- initialised at the pretrained
projection -- with an additive-margin softmax speaker classifier on the training speakers' anonymized speech
(AM-softmax: Wang et al., "Additive margin softmax for face verification", IEEE SPL 2018, Eq. 5):

    loss = -mean_i log( exp(s (cos_iy - m)) / (exp(s (cos_iy - m)) + sum_{k != y} exp(s cos_ik)) ),

``cos_ik`` = cosine of the utterance embedding ``e_i`` with class vector ``v_k``. Gradients are written out by
hand (:func:`loss_and_grad`; the tests check them against finite differences) and the parameters follow Adam
(Kingma and Ba, ICLR 2015, Algorithm 1) with an L2 pull towards the pretrained projection. With zero steps the
head *is* the pretrained projection, so :meth:`AdaptedHead.transform` then reproduces the frozen encoder's
embeddings from per-window states (exactly, up to float rounding).

Pooled states (one mean state per utterance, as in the bundled example) are an **approximation**: with
``counts == 1`` the head computes ``relu(W mean_w h_w + b)``, normalised, instead of the mean of the
normalised window embeddings; the two differ because the ReLU and the normalisation are not linear.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import VpevalError

__all__ = ["StateSet", "AdaptedHead", "head_embed", "loss_and_grad", "read_states", "write_states"]

_EPS = 1e-12


@dataclass(frozen=True)
class StateSet:
    """LSTM window states of utterances (the input of the adapted head).

    Attributes
    ----------
    states : ndarray of shape (n_windows, d), float64
        One row per window, the windows of each utterance contiguous and in utterance order.
    counts : ndarray of shape (n_utterances,), int64
        Windows per utterance (>= 1); ``counts.sum() == n_windows``. All ones for pooled states.
    utterance_id, speaker_id, condition : ndarray of shape (n_utterances,), str
    pooled : bool
        True when each utterance's row is the mean of its window states (an approximation; module doc).
    source : str
        What produced the states (e.g. ``resemblyzer-ge2e-lstm``).
    """

    states: np.ndarray
    counts: np.ndarray
    utterance_id: np.ndarray
    speaker_id: np.ndarray
    condition: np.ndarray
    pooled: bool = False
    source: str = "resemblyzer-ge2e-lstm"

    def __post_init__(self):
        s = np.asarray(self.states, dtype=np.float64)
        c = np.asarray(self.counts)
        if s.ndim != 2:
            raise VpevalError(f"states must be a 2-D array (windows x dimensions), got shape {s.shape}")
        if c.ndim != 1 or c.dtype.kind not in "iu" or (c.size and c.min() < 1):
            raise VpevalError("counts must be a 1-D array of positive integers (windows per utterance)")
        if int(c.sum()) != s.shape[0]:
            raise VpevalError(f"counts sum to {int(c.sum())} windows but states has {s.shape[0]} rows")
        if not np.isfinite(s).all():
            raise VpevalError("states hold NaN or infinite values")
        if self.pooled and c.size and c.max() != 1:
            raise VpevalError("pooled states must have one row per utterance (counts all 1)")
        object.__setattr__(self, "states", s)
        object.__setattr__(self, "counts", c.astype(np.int64))
        for name in ("utterance_id", "speaker_id", "condition"):
            a = np.asarray(getattr(self, name), dtype=str)
            if a.shape != c.shape:
                raise VpevalError(f"{name} has {a.size} entries, counts has {c.size}")
            object.__setattr__(self, name, a)
        keys = np.char.add(np.char.add(self.utterance_id, "\x00"), self.condition)
        if np.unique(keys).size != keys.size:
            raise VpevalError("states: an (utterance, condition) pair appears twice")

    def __len__(self) -> int:
        return int(self.counts.size)

    @property
    def owner(self) -> np.ndarray:
        """Utterance index of every window, shape (n_windows,)."""
        return np.repeat(np.arange(self.counts.size), self.counts)

    def select(self, mask) -> "StateSet":
        """The utterances where the boolean ``mask`` (shape (n_utterances,)) is true, with their windows."""
        mask = np.asarray(mask, dtype=bool)
        return StateSet(self.states[mask[self.owner]], self.counts[mask], self.utterance_id[mask],
                        self.speaker_id[mask], self.condition[mask], self.pooled, self.source)

    def pool(self) -> "StateSet":
        """One row per utterance: the mean of its window states (``pooled=True``)."""
        sums = np.add.reduceat(self.states, np.r_[0, np.cumsum(self.counts)[:-1]], axis=0) if len(self) else \
            self.states[:0]
        return StateSet(sums / self.counts[:, None], np.ones(len(self), np.int64), self.utterance_id,
                        self.speaker_id, self.condition, True, self.source)


def write_states(path, ss: StateSet, *, dtype=np.float16) -> None:
    """Write a :class:`StateSet` as a compressed ``.npz`` (states stored as ``dtype``, float16 by default)."""
    np.savez_compressed(path, states=ss.states.astype(dtype), counts=ss.counts.astype(np.int32),
                        utterance_id=ss.utterance_id, speaker_id=ss.speaker_id, condition=ss.condition,
                        pooled=np.bool_(ss.pooled), source=np.str_(ss.source))


def read_states(path) -> StateSet:
    """Read a file of :func:`write_states`.

    Raises
    ------
    VpevalError
        A missing array or inconsistent shapes (the message names the file).
    """
    with np.load(path, allow_pickle=False) as z:
        missing = {"states", "counts", "utterance_id", "speaker_id", "condition"} - set(z.files)
        if missing:
            raise VpevalError(f"{path}: not a states file (missing {', '.join(sorted(missing))})")
        arrays = {k: z[k] for k in z.files}
    try:
        return StateSet(arrays["states"], arrays["counts"], arrays["utterance_id"], arrays["speaker_id"],
                        arrays["condition"], bool(arrays.get("pooled", False)),
                        str(arrays.get("source", "resemblyzer-ge2e-lstm")))
    except VpevalError as exc:
        raise VpevalError(f"{path}: {exc}") from None


def _forward(states, counts, W, b):
    owner = np.repeat(np.arange(counts.size), counts)
    a = states @ W.T + b
    z = np.maximum(a, 0.0)
    nz = np.sqrt((z * z).sum(1)) + _EPS
    u = z / nz[:, None]
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    m = np.add.reduceat(u, starts, axis=0) / counts[:, None]
    nm = np.sqrt((m * m).sum(1)) + _EPS
    e = m / nm[:, None]
    return e, (owner, a, u, nz, m, nm)


def head_embed(ss: StateSet, W: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Utterance embeddings ``e = m/||m||, m = mean_w z_w/||z_w||, z_w = relu(W h_w + b)`` (module doc).

    Parameters
    ----------
    ss : StateSet
    W : ndarray of shape (k, d)
    b : ndarray of shape (k,)

    Returns
    -------
    ndarray of shape (n_utterances, k), float64, unit L2 rows (a row whose windows all map to zero stays 0).
    """
    if len(ss) == 0:
        return np.zeros((0, W.shape[0]))
    return _forward(ss.states, ss.counts, np.asarray(W, float), np.asarray(b, float))[0]


def loss_and_grad(states, counts, labels, W, b, V, *, scale: float = 30.0, margin: float = 0.2):
    """AM-softmax loss (module doc) of the head and its gradients.

    Parameters
    ----------
    states : ndarray (n_windows, d); counts : ndarray (n,) int; labels : ndarray (n,) int in [0, C)
    W : ndarray (k, d); b : ndarray (k,); V : ndarray (C, k) class vectors (normalised inside)
    scale, margin : float
        ``s`` and ``m`` of the loss.

    Returns
    -------
    loss : float (nats, mean over utterances); dW, db, dV : gradients of the same shapes as W, b, V.
    """
    e, (owner, a, u, nz, m, nm) = _forward(states, counts, W, b)
    nv = np.sqrt((V * V).sum(1)) + _EPS
    vn = V / nv[:, None]
    cos = e @ vn.T
    n = cos.shape[0]
    rows = np.arange(n)
    logits = scale * cos
    logits[rows, labels] -= scale * margin
    logits -= logits.max(1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(1, keepdims=True)
    loss = float(-np.log(np.maximum(p[rows, labels], 1e-300)).mean())
    g = p
    g[rows, labels] -= 1.0
    dcos = scale * g / n
    de = dcos @ vn
    dvn = dcos.T @ e
    dV = (dvn - vn * (dvn * vn).sum(1, keepdims=True)) / nv[:, None]
    dm = (de - e * (de * e).sum(1, keepdims=True)) / nm[:, None]
    du = dm[owner] / counts[owner][:, None]
    dz = (du - u * (du * u).sum(1, keepdims=True)) / nz[:, None]
    da = dz * (a > 0)
    return loss, da.T @ states, da.sum(0), dV


class AdaptedHead:
    """The GE2E projection retrained with an AM-softmax speaker head on frozen LSTM states (module doc).

    Parameters
    ----------
    W0, b0 : ndarray of shape (k, d) and (k,)
        The pretrained projection (``VoiceEncoder.linear.weight`` and ``.bias``); the starting point and the
        anchor of the L2 pull.
    steps : int, default 50
        Adam steps (0: the pretrained projection unchanged).
    lr : float, default 1e-3
        Adam step size.
    scale, margin : float, default 30 and 0.2
        AM-softmax ``s`` and ``m``.
    l2 : float, default 1e-2
        Weight of ``||W - W0||^2 + ||b - b0||^2`` in the objective (keeps the head near the encoder).
    batch_size : int or None, default 64
        Utterances per step (None: all, full-batch); batches follow a permutation drawn from ``seed`` each epoch
        (a last incomplete batch is dropped). Mini-batches of 64 cost a tenth of full-batch steps on the
        example's 634 segments (see BENCHMARKS.md).
    seed : int, default 0
    snapshots : iterable of int, default ()
        Steps after which the projection is kept in ``snapshots_`` (step -> (W, b)), e.g. for a learning curve
        over training steps at no extra cost.
    dtype : numpy dtype, default float32
        Precision of the training arithmetic (float32 halves the time; the parameters are kept in float64).

    Attributes
    ----------
    W_, b_ : the fitted projection; V_ : class vectors; loss_ : ndarray of the loss per step;
    snapshots_ : dict; n_training_speakers_, n_training_utterances_ : int.

    Notes
    -----
    Deterministic: the class vectors start at each speaker's normalised mean frozen embedding, the batches come
    from ``numpy.random.default_rng(seed)``, and every operation is a fixed NumPy reduction, so the same inputs
    and seed give the same bits on one machine and BLAS build. Training speakers enter in sorted order, so the
    result does not depend on the order of the rows.
    """

    def __init__(self, W0, b0, *, steps: int = 50, lr: float = 1e-3, scale: float = 30.0, margin: float = 0.2,
                 l2: float = 1e-2, batch_size: int | None = 64, seed: int = 0, snapshots=(), dtype=np.float32):
        W0, b0 = np.asarray(W0, np.float64), np.asarray(b0, np.float64)
        if W0.ndim != 2 or b0.shape != (W0.shape[0],):
            raise VpevalError(f"W0 must be (k, d) and b0 (k,), got {W0.shape} and {b0.shape}")
        if isinstance(steps, bool) or int(steps) != steps or steps < 0:
            raise VpevalError(f"steps must be an integer >= 0, got {steps!r}")
        for name, v in (("lr", lr), ("scale", scale)):
            if not v > 0:
                raise VpevalError(f"{name} must be > 0, got {v!r}")
        if not (margin >= 0 and l2 >= 0):
            raise VpevalError(f"margin and l2 must be >= 0, got {margin!r} and {l2!r}")
        if batch_size is not None and (int(batch_size) != batch_size or batch_size < 2):
            raise VpevalError(f"batch_size must be an integer >= 2 or None, got {batch_size!r}")
        self.W0, self.b0 = W0, b0
        self.steps, self.lr, self.scale, self.margin, self.l2 = int(steps), float(lr), float(scale), float(margin), \
            float(l2)
        self.batch_size, self.seed = batch_size, int(seed)
        self.snapshots, self.dtype = tuple(int(k) for k in snapshots), np.dtype(dtype)
        self.W_, self.b_ = W0.copy(), b0.copy()

    def fit(self, train: StateSet) -> "AdaptedHead":
        """Train on ``train`` (all its utterances; its speakers are the classes).

        Raises
        ------
        VpevalError
            Fewer than 2 training speakers, or states of another dimension than ``W0``.
        """
        if train.states.shape[1] != self.W0.shape[1]:
            raise VpevalError(f"states have {train.states.shape[1]} dimensions, the projection expects "
                              f"{self.W0.shape[1]}")
        from ..metrics.embedding import _one_blas_thread

        with _one_blas_thread():
            return self._fit(train)

    def _fit(self, train: StateSet) -> "AdaptedHead":
        order = np.lexsort((train.condition, train.utterance_id, train.speaker_id))
        tr = _reorder(train, order)
        names, labels = np.unique(tr.speaker_id, return_inverse=True)
        if names.size < 2:
            raise VpevalError(f"the adapted head needs at least 2 training speakers, got {names.size}")
        e0 = head_embed(tr, self.W0, self.b0)
        V = np.zeros((names.size, e0.shape[1]))
        np.add.at(V, labels, e0)
        V /= np.sqrt((V * V).sum(1, keepdims=True)) + _EPS
        dt = self.dtype
        W, b, V = self.W0.astype(dt), self.b0.astype(dt), V.astype(dt)
        W0, b0, X = self.W0.astype(dt), self.b0.astype(dt), tr.states.astype(dt)
        params = [W, b, V]
        snaps = {0: (self.W0.copy(), self.b0.copy())} if 0 in self.snapshots else {}
        mom = [np.zeros_like(x) for x in params]
        vel = [np.zeros_like(x) for x in params]
        b1, b2, eps = 0.9, 0.999, 1e-8
        rng = np.random.default_rng(self.seed)
        n = len(tr)
        bs = n if self.batch_size is None else min(int(self.batch_size), n)
        starts = np.r_[0, np.cumsum(tr.counts)]
        losses = []
        batches: list = []
        for t in range(1, self.steps + 1):
            if not batches:
                perm = np.arange(n) if bs == n else rng.permutation(n)
                batches = [np.sort(perm[i:i + bs]) for i in range(0, n - bs + 1, bs)] or [np.arange(n)]
            idx = batches.pop(0)
            rows = np.concatenate([np.arange(starts[i], starts[i + 1]) for i in idx]) if bs < n else slice(None)
            loss, dW, db, dV = loss_and_grad(X[rows], tr.counts[idx], labels[idx], W, b, V,
                                             scale=self.scale, margin=self.margin)
            loss += self.l2 * (float(((W - W0) ** 2).sum()) + float(((b - b0) ** 2).sum()))
            dW = dW + dt.type(2 * self.l2) * (W - W0)
            db = db + dt.type(2 * self.l2) * (b - b0)
            losses.append(loss)
            for x, g, m1, m2 in zip(params, (dW, db, dV), mom, vel):
                m1 *= b1
                m1 += (1 - b1) * g
                m2 *= b2
                m2 += (1 - b2) * g * g
                x -= (self.lr * (m1 / (1 - b1 ** t)) / (np.sqrt(m2 / (1 - b2 ** t)) + eps)).astype(dt)
            if t in self.snapshots:
                snaps[t] = (W.astype(np.float64), b.astype(np.float64))
        if self.steps == 0:  # untouched: exactly the pretrained projection (no round trip through dtype)
            W, b = self.W0, self.b0
        self.W_, self.b_, self.V_ = W.astype(np.float64), b.astype(np.float64), V.astype(np.float64)
        self.snapshots_ = snaps
        self.loss_ = np.asarray(losses)
        self.n_training_speakers_ = int(names.size)
        self.n_training_utterances_ = n
        return self

    def transform(self, ss: StateSet) -> np.ndarray:
        """Embeddings of ``ss`` with the fitted projection, shape (n_utterances, k), unit rows."""
        if ss.states.shape[1] != self.W_.shape[1]:
            raise VpevalError(f"states have {ss.states.shape[1]} dimensions, the projection expects "
                              f"{self.W_.shape[1]}")
        return head_embed(ss, self.W_, self.b_)

    def describe(self) -> dict:
        """Settings and training size for report.json."""
        out = {"mode": "head-only (frozen LSTM)", "loss": "additive-margin softmax", "scale": self.scale,
               "margin": self.margin, "steps": self.steps, "lr": self.lr, "l2_to_pretrained": self.l2,
               "batch_size": self.batch_size, "seed": self.seed}
        if hasattr(self, "loss_"):
            out.update(training_speakers=self.n_training_speakers_, training_segments=self.n_training_utterances_,
                       final_loss=None if self.loss_.size == 0 else round(float(self.loss_[-1]), 6))
        return out


def _reorder(ss: StateSet, order: np.ndarray) -> StateSet:
    starts = np.r_[0, np.cumsum(ss.counts)]
    rows = np.concatenate([np.arange(starts[i], starts[i + 1]) for i in order]) if order.size else \
        np.zeros(0, np.int64)
    return StateSet(ss.states[rows], ss.counts[order], ss.utterance_id[order], ss.speaker_id[order],
                    ss.condition[order], ss.pooled, ss.source)
