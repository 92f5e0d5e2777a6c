"""Fielding the extractor-adapted attacker, and the saturation check (learning curves).

**The extractor-adapted attacker** (attacker class ``"semi-informed (extractor adapted)"``) retrains part of the
speaker extractor itself on the training speakers' speech anonymized by the audited system -- here the
projection of resemblyzer's GE2E encoder on top of its frozen LSTM (:mod:`vpeval.pipeline.adapt_head`; the
whole encoder with :func:`vpeval.audio.embed.adapt.fine_tune_encoder`) -- and scores with cosine similarity.
The back-end-only attackers trained on anonymized speech (LDA, PLDA, centred cosine on a *frozen* extractor)
are ``"semi-informed (back-end)"``. The VoicePrivacy Challenge's semi-informed attacker goes further than
either: it trains a whole ECAPA-TDNN extractor on anonymized LibriSpeech train-clean-360 (2024; 921 speakers,
about 363 h); vpeval's adapted attacker is the same idea at the size this library can afford on a CPU (the
training speakers of the audit, a 256 x 256 projection or a 1.4 M-parameter LSTM), so it is a *lower* bound
on what that attacker achieves, and a stronger one than a back-end on a frozen extractor can be.

**Saturation check** (:func:`learning_curve`): the strongest attacker is refitted on nested subsets of its
training data -- speakers (a quarter, half, all, in a seeded order), segments per speaker (2, 3, all) and,
for the adapted head, training steps -- and its aa ROCCH-EER and worst-case disclosure (eps_max, Laplace PAV,
bits) are measured on the same evaluation trials at each point. If the last step of the speakers or segments
axis still improves a metric beyond its 95 % paired speaker-bootstrap interval (the interval of the change
excludes zero), the attacker is flagged **not saturated**: more training data would likely make it stronger.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..errors import VpevalError
from ..io.embeddings import EmbeddingSet
from ..blocks import pav_bin_llr, tie_blocks
from ..metrics.verification import _rocch_eer, _rocch_points
from .adapt_head import AdaptedHead, StateSet, head_embed
from .attackers import Attacker, check_disjoint
from .protocols import ProtocolError, build_trials, make_protocol

__all__ = ["ADAPTED_CLASS", "BACKEND_CLASS", "field_adapted", "learning_curve", "curve_of_attacker",
           "NOT_SATURATED", "states_as_embeddings"]

ADAPTED_CLASS = "semi-informed (extractor adapted)"
BACKEND_CLASS = "semi-informed (back-end)"
#: The sentence the report prints beside the verdict when the strongest attacker is not saturated.
NOT_SATURATED = "the attacker may not be saturated: more training data would likely make it stronger"


def states_as_embeddings(ss: StateSet, name: str) -> EmbeddingSet:
    """One row per utterance (the mean window state) as an :class:`EmbeddingSet` (for the overlap check)."""
    p = ss if ss.pooled else ss.pool()
    return EmbeddingSet(p.states, p.utterance_id, p.speaker_id, p.condition, name)


def field_adapted(states: StateSet, train: StateSet, W0, b0, *, extractor: str = "resemblyzer-ge2e",
                  steps: int = 50, seed: int = 0, repeats: int = 1, evaluation=(), anonymized: str = "anonymized",
                  **head_options) -> Attacker:
    """Fit the adapted head on ``train``'s anonymized rows and field the attacker on ``states``.

    Parameters
    ----------
    states : StateSet
        Frozen LSTM states of the evaluation utterances (original and anonymized rows).
    train : StateSet
        States of the training speakers' anonymized speech (rows of condition ``anonymized`` are used).
    W0, b0 : ndarray
        The pretrained projection.
    extractor : str
        Name of the frozen extractor; the attacker's extractor is ``<extractor>+adapted``.
    steps, seed, head_options
        :class:`~vpeval.pipeline.adapt_head.AdaptedHead` settings.
    repeats : int
        K, the number of anonymized versions of each training utterance (recorded, see ``vpeval anonymize
        --repeats``).
    evaluation : iterable of EmbeddingSet
        Further evaluation-side sets whose speakers the training speakers must avoid.

    Returns
    -------
    Attacker
        ``name = "<extractor>+adapted/cosine/anonymized"``, ``trained_on = "anonymized"``, ``adapted`` = the
        head's description with the training data (speakers, segments, K, epochs, mode), ``model`` = None
        (cosine on the adapted embeddings), ``head`` = the fitted head.

    Raises
    ------
    ProtocolError
        Training speakers on the evaluation side (or evaluation states copied into the training data), or no
        anonymized training rows.
    """
    tr = train.select(train.condition == anonymized)
    if len(tr) == 0:
        raise ProtocolError(f"the adapted attacker needs training states of condition {anonymized!r}")
    name = f"{extractor}+adapted"
    check_disjoint(states_as_embeddings(tr, name), [states_as_embeddings(states, name), *evaluation],
                   what="adaptation")
    head_options.setdefault("snapshots", (steps // 3, 2 * steps // 3))
    head = AdaptedHead(W0, b0, steps=steps, seed=seed, **head_options).fit(tr)
    es = EmbeddingSet(head.transform(states), states.utterance_id, states.speaker_id, states.condition, name)
    info = dict(head.describe(), training_speakers=head.n_training_speakers_,
                training_segments=int(len(tr)), repeats_K=int(repeats), epochs=0, pooled_states=bool(states.pooled),
                attacker_class=ADAPTED_CLASS)
    att = Attacker(f"{name}/cosine/anonymized", name, "cosine", "anonymized", head.n_training_speakers_, es, None,
                   adapted=info)
    att.head, att.states = head, states  # for its learning curve (curve_of_attacker)
    return att


def _subsets(speakers: np.ndarray, segment_rank: np.ndarray, seed: int, steps: int | None):
    """(axis, value, row mask, steps) of the nested training subsets."""
    names = np.unique(speakers)
    order = names[np.random.default_rng(seed).permutation(names.size)]
    n = names.size
    out = []
    for frac in (0.25, 0.5, 1.0):
        k = max(2, int(round(frac * n)))
        keep = np.isin(speakers, order[:k])
        out.append(("speakers", k, keep, steps))
    for cap in (2, 3, None):  # a back-end (LDA, PLDA) needs at least two segments per speaker
        keep = np.ones(speakers.size, bool) if cap is None else segment_rank < cap
        out.append(("segments_per_speaker", "all" if cap is None else cap, keep, steps))
    if steps:
        for s in (steps // 3, 2 * steps // 3, steps):
            out.append(("steps", s, np.ones(speakers.size, bool), s))
    return out


def _rank_within(speakers: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Rank (0, 1, ...) of each row among its speaker's rows, in ``keys`` order."""
    order = np.lexsort((keys, speakers))
    rank = np.empty(speakers.size, np.int64)
    s = speakers[order]
    start = np.r_[0, np.flatnonzero(s[1:] != s[:-1]) + 1]
    pos = np.arange(s.size) - np.repeat(start, np.diff(np.r_[start, s.size]))
    rank[order] = pos
    return rank


def _metrics(t):
    return _eer_eps(t.tar, t.non)


def _eer_eps(tar, non) -> tuple[float, float]:
    """ROCCH-EER (:func:`~vpeval.metrics.verification.rocch_eer`) and eps_max in bits
    (:func:`~vpeval.metrics.zebra.zebra`) from one set of tie blocks."""
    b = tie_blocks(np.asarray(tar, float), np.asarray(non, float))
    llr, n_t, n_n = pav_bin_llr(b, laplace=True)
    return _rocch_eer(*_rocch_points(b)), float(np.max(np.abs(llr[(n_t + n_n) > 0]))) / np.log(2)


def learning_curve(fit_score, speakers, utterance_ids, *, seed: int = 0, steps: int | None = None,
                   n_boot: int = 200, trial_type: str = "aa", speaker_of=None) -> dict:
    """Learning curve and saturation flag (module doc) of one attacker.

    Parameters
    ----------
    fit_score : callable (row mask, steps or None) -> Trials
        Refits the attacker on the training rows of the mask and scores the evaluation trials of
        ``trial_type`` (always the same trials, in the same order).
    speakers, utterance_ids : ndarray of shape (n_train,)
        Speaker and segment id of every training row (segments enter each speaker's subset in id order).
    steps : int, optional
        Training steps of an adapted head: adds the steps axis (a third, two thirds, all).
    n_boot : int
        Speaker-bootstrap replicates of the last steps' changes.
    speaker_of : Protocol, mapping or callable, optional
        Probe utterance -> speaker (:func:`vpeval.stats.trial_speakers`); default: the probe id's part before its
        first ``-`` (LibriSpeech ids).

    Returns
    -------
    dict
        ``points``: list of {axis, value, training_speakers, training_segments, eer_rocch, eps_max_bits};
        ``last_step``: per data axis, the change of each metric at the last step (positive = the attacker got
        stronger: EER down, eps_max up) with its 95 % paired bootstrap interval; ``saturated`` (bool) and
        ``sentence`` (:data:`NOT_SATURATED` or a saturation statement).
    """
    speakers = np.asarray(speakers, str)
    rank = _rank_within(speakers, np.asarray(utterance_ids, str))
    points, trials, memo = [], {}, {}
    for axis, value, keep, st in _subsets(speakers, rank, seed, steps):
        key = (keep.tobytes(), st)  # the full-data point is shared by the axes: fitted once
        if key not in memo:
            memo[key] = fit_score(keep, st)
        t = memo[key]
        eer, eps = _metrics(t)
        trials[(axis, value)] = t
        points.append({"axis": axis, "value": value, "training_speakers": int(np.unique(speakers[keep]).size),
                       "training_segments": int(keep.sum()), "eer_rocch": float(eer), "eps_max_bits": float(eps)})
    last = {}
    saturated = True
    for axis in ("speakers", "segments_per_speaker"):
        pts = [p for p in points if p["axis"] == axis]
        a, b = trials[(axis, pts[-2]["value"])], trials[(axis, pts[-1]["value"])]
        change = _paired_change(a, b, n_boot=n_boot, seed=seed, speaker_of=speaker_of)
        last[axis] = {"from": pts[-2]["value"], "to": pts[-1]["value"], **change}
        if change["eer_gain_ci"][0] > 0 or change["eps_gain_ci"][0] > 0:
            saturated = False
    return {"trial_type": trial_type, "points": points, "last_step": last, "saturated": saturated,
            "sentence": "the attacker looks saturated: the last step of training data did not improve it beyond "
                        "its interval" if saturated else NOT_SATURATED}


def _paired_change(a, b, *, n_boot: int, seed: int, speaker_of=None) -> dict:
    """Change from trials ``a`` to ``b`` (same trials): EER gain (a - b) and eps_max gain (b - a), with 95 %
    percentile intervals over probe speakers resampled with replacement (the same draw for both)."""
    if not (np.array_equal(a.enroll, b.enroll) and np.array_equal(a.test, b.test)):
        raise VpevalError("learning curve: the points score different trials")
    if speaker_of is None:
        spk = np.array([str(s).split("-")[0] for s in a.test])
    else:
        from ..stats import trial_speakers

        spk = trial_speakers(a, speaker_of)
    names, inv = np.unique(spk, return_inverse=True)
    groups = [np.flatnonzero(inv == i) for i in range(names.size)]
    ea, pa = _metrics(a)
    eb, pb = _metrics(b)
    rng = np.random.default_rng(seed)
    ge, gp = [], []
    for _ in range(int(n_boot)):
        idx = np.concatenate([groups[i] for i in rng.integers(0, names.size, names.size)])
        ta, tb = a.is_target[idx], b.is_target[idx]
        if ta.all() or not ta.any():
            continue
        sa, sb = a.scores[idx], b.scores[idx]
        (xa, ya), (xb, yb) = _eer_eps(sa[ta], sa[~ta]), _eer_eps(sb[tb], sb[~tb])
        ge.append(xa - xb)
        gp.append(yb - ya)
    ci = (lambda g: [float(np.percentile(g, 2.5)), float(np.percentile(g, 97.5))] if g else [float("nan")] * 2)
    return {"eer_gain": float(ea - eb), "eer_gain_ci": ci(ge), "eps_gain_bits": float(pb - pa),
            "eps_gain_ci": ci(gp), "n_boot": len(ge)}


def curve_of_attacker(att: Attacker, train: StateSet | EmbeddingSet, *, seed: int = 0, n_boot: int = 200,
                      trial_type: str = "aa", anonymized: str = "anonymized") -> dict:
    """:func:`learning_curve` of an adapted attacker (``train``: its training states) or of a single trained
    back-end attacker (``train``: the extractor's training embeddings); fusions are not supported."""
    if att.members:
        raise VpevalError("learning curves of fusion attackers are not computed")
    protocol = make_protocol(att.es)
    if getattr(att, "adapted", None) is not None:
        tr = train.select(train.condition == anonymized)
        head = att.head
        states = att.states
        opts = dict(lr=head.lr, scale=head.scale, margin=head.margin, l2=head.l2, batch_size=head.batch_size,
                    seed=head.seed, dtype=head.dtype)
        # the attacker's own fit kept its projection after a third and two thirds of the steps (field_adapted)
        snaps = {**head.snapshots_, head.steps: (head.W_, head.b_)}

        def fit_score(keep, steps):
            if keep.all():
                if steps not in snaps:
                    snaps[steps] = (lambda h: (h.W_, h.b_))(AdaptedHead(head.W0, head.b0, steps=steps, **opts).fit(tr))
                W, b = snaps[steps]
            else:
                h = AdaptedHead(head.W0, head.b0, steps=steps, **opts).fit(tr.select(keep))
                W, b = h.W_, h.b_
            es = replace(att.es, embeddings=head_embed(states, W, b))
            return build_trials(es, [trial_type], protocol=protocol)[trial_type]
        return learning_curve(fit_score, tr.speaker_id, tr.utterance_id, seed=seed, steps=head.steps,
                              n_boot=n_boot, trial_type=trial_type, speaker_of=protocol)
    if att.model is None:
        raise VpevalError(f"attacker {att.name!r} is not trained: no learning curve")
    tr = train.select(train.condition == (anonymized if att.trained_on == "anonymized" else "original"))

    def fit_score(keep, steps):
        model = att.model.clone().fit(tr.embeddings[keep], tr.speaker_id[keep])
        return build_trials(att.es, [trial_type], protocol=protocol, backend=model)[trial_type]
    return learning_curve(fit_score, tr.speaker_id, tr.utterance_id, seed=seed, n_boot=n_boot, trial_type=trial_type,
                          speaker_of=protocol)


class AdaptInputs:
    """What fielding the adapted attacker for one system needs (:func:`read_adapt_folder` reads it).

    Parameters
    ----------
    states : StateSet
        Evaluation states (original and anonymized rows).
    train : StateSet
        Training speakers' anonymized states.
    W0, b0 : ndarray
        The pretrained projection.
    extractor : str, default "resemblyzer-ge2e"
    steps : int, default 50
        Adam steps of the head.
    repeats : int, default 1
        K anonymized versions per training utterance (recorded in the report).
    """

    def __init__(self, states: StateSet, train: StateSet, W0, b0, *, extractor: str = "resemblyzer-ge2e",
                 steps: int = 50, repeats: int = 1):
        self.states, self.train, self.W0, self.b0 = states, train, np.asarray(W0, float), np.asarray(b0, float)
        self.extractor, self.steps, self.repeats = extractor, int(steps), int(repeats)


STATES_FILE, PROJECTION_FILE = "ge2e_states.npz", "ge2e_projection.npz"


def read_adapt_folder(folder, *, projection=None, steps: int = 50) -> AdaptInputs | None:
    """The adaptation inputs of a system folder: ``ge2e_states.npz``, ``train/ge2e_states.npz`` and the
    projection ``ge2e_projection.npz`` (``projection``, else in the folder, else in its parent); None when the
    folder has no states file. An optional ``train/repeats.txt`` holding one integer K records that the training
    speech holds K anonymized copies of each utterance (``vpeval anonymize --repeats K``); it is reported as
    ``repeats_K`` (default 1).

    Raises
    ------
    VpevalError
        States without training states or without a projection file, or a malformed file.
    """
    from pathlib import Path

    from .adapt_head import read_states

    folder = Path(folder)
    if not (folder / STATES_FILE).is_file():
        return None
    if not (folder / "train" / STATES_FILE).is_file():
        raise VpevalError(f"{folder / STATES_FILE}: the adapted attacker also needs train/{STATES_FILE}")
    cands = [Path(projection)] if projection is not None else [folder / PROJECTION_FILE,
                                                               folder.parent / PROJECTION_FILE]
    proj = next((c for c in cands if c.is_file()), None)
    if proj is None:
        raise VpevalError(f"{folder / STATES_FILE}: no {PROJECTION_FILE} in {folder} or its parent")
    with np.load(proj, allow_pickle=False) as z:
        if not {"W", "b"} <= set(z.files):
            raise VpevalError(f"{proj}: a projection file holds arrays W and b")
        W0, b0 = z["W"], z["b"]
    train = read_states(folder / "train" / STATES_FILE)
    repeats = 1
    if (folder / "train" / "repeats.txt").is_file():
        repeats = int((folder / "train" / "repeats.txt").read_text().strip())
    return AdaptInputs(read_states(folder / STATES_FILE), train, W0, b0, steps=steps, repeats=repeats)


def add_adapted(fielded: tuple, inputs: AdaptInputs | None, sets: dict, *, seed: int = 0) -> tuple:
    """``(attackers, notes)`` of :func:`vpeval.pipeline.audit.field_attackers` with the adapted attacker added."""
    if inputs is None:
        return fielded
    attackers, notes = fielded
    att = field_adapted(inputs.states, inputs.train, inputs.W0, inputs.b0, extractor=inputs.extractor,
                        steps=inputs.steps, seed=seed, repeats=inputs.repeats, evaluation=list(sets.values()))
    return attackers + [att], notes


#: Speaker-bootstrap replicates of a learning curve's last steps in an audit (each replicate refits nothing, but
#: two metrics on two score sets; 100 keep the demo's cost small, and the flag needs only the interval's end).
CURVE_BOOT = 100


def attach_curve(res, train: dict | None, inputs: AdaptInputs | None, *, seed: int = 0, n_boot: int = CURVE_BOOT,
                 trial_type: str = "aa") -> str | None:
    """Compute the learning curve of the system's strongest single trained attacker on anonymized speech
    (lowest ``trial_type`` ROCCH-EER; fusions and AS-norm variants excluded, ties by name) and attach it to
    that attacker (``Attacker.learning_curve``, with ``strongest: true``); the adapted attacker gets its own curve too
    (``strongest: false`` unless it is the strongest). Returns the strongest one's name, or None when no such
    attacker exists. :func:`start_curves` and :func:`finish_curves` do the same in two steps, on worker
    processes."""
    from .jobs import Jobs

    with Jobs(1) as pool:
        started = start_curves(res.attackers, res.type_metrics, train, inputs, seed=seed, n_boot=n_boot,
                               trial_type=trial_type, jobs=pool)
    return finish_curves(res.attackers, started)


def start_curves(attackers: dict, type_metrics: dict, train: dict | None, inputs: AdaptInputs | None, *, jobs,
                 seed: int = 0, n_boot: int = CURVE_BOOT, trial_type: str = "aa"):
    """Choose the attackers of :func:`attach_curve` (``attackers``: name -> Attacker; ``type_metrics``: name ->
    trial type -> the metrics of :func:`vpeval.pipeline.audit._type_metrics`) and start their learning curves on
    ``jobs`` (a running :class:`~vpeval.pipeline.jobs.Jobs`). Returns what :func:`finish_curves` takes."""
    cands = []
    for name, att in attackers.items():
        if att.members or att.trained_on != "anonymized" or att.backend.endswith("+asnorm"):
            continue
        m = type_metrics.get(name, {}).get(trial_type)
        if m is None:
            continue
        if att.adapted is None and (att.model is None or not train or att.extractor not in train):
            continue
        cands.append((m["eer_rocch"], name))
    if not cands:
        return None, {}, trial_type
    best = min(cands)[1]
    adapted = [n for n, a in attackers.items() if a.adapted is not None]
    running = {}
    for name in [best] + [n for n in adapted if n != best]:
        att = attackers[name]
        data = inputs.train if att.adapted is not None else train[att.extractor]
        running[name] = jobs.submit(curve_of_attacker, att, data, seed=seed, n_boot=n_boot, trial_type=trial_type)
    return best, running, trial_type


def finish_curves(attackers: dict, started) -> str | None:
    """Attach the curves of :func:`start_curves` (taken from its jobs) to their attackers; returns the strongest
    attacker's name, or None."""
    best, running, trial_type = started
    for name, result in running.items():
        att = attackers[name]
        try:
            att.learning_curve = result.get()
        except VpevalError as exc:  # e.g. a subset a back-end cannot be fitted on: said in the report, not fatal
            att.learning_curve = {"trial_type": trial_type, "error": str(exc), "saturated": None}
        att.learning_curve["strongest"] = name == best
    return best


def flag_saturation(verdicts: dict, results: dict) -> None:
    """Add the saturation check to each system's verdict dict (in place): ``attacker_saturated`` (bool, or None
    when no learning curve was computed), ``saturation`` ({attacker, sentence, trial_type}) and, when the
    strongest attacker is not saturated, :data:`NOT_SATURATED` among the verdict's ``warnings`` (printed beside
    the verdict in the terminal and the report)."""
    for system, v in verdicts.items():
        res = results.get(system)
        curves = [] if res is None else [(n, a.learning_curve) for n, a in res.attackers.items()
                                         if a.learning_curve is not None and a.learning_curve.get("strongest")]
        if not curves:
            continue
        name, c = curves[0]
        v["attacker_saturated"] = c.get("saturated")
        v["saturation"] = {"attacker": name, "trial_type": c.get("trial_type"),
                           "sentence": c.get("sentence", c.get("error"))}
        if c.get("saturated") is False:
            v.setdefault("warnings", []).append(f"{NOT_SATURATED} ({name}: learning curve on "
                                                f"{c.get('trial_type')} trials in report.json)")
