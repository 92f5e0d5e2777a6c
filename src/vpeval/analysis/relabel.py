"""The permutation engine's per-member work (internal to :mod:`vpeval.analysis.secrecy`): each member's trials
sorted once into tie blocks in a canonical order, the relabelling schemes' designs (speaker, probe, trial), the
tie blocks of every relabelling's targets, and D_ECE and LID of many relabellings at once."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import VpevalError
from ..io.trials import Trials
from ..keys import sorted_codes
from .members import OneToNInput, TrialInput
from .pav_kernel import JIT_MIN_TARGETS, compiled_kept_blocks, compiled_pav_target_blocks

_LN2 = math.log(2.0)
#: Relabellings are evaluated in chunks of about this many target entries (rows x targets, at least one row):
#: small enough for the (rows, K) temporaries to stay in the CPU cache.
_CHUNK_TARGETS = 1 << 17


@dataclass
class _TrialPrep:
    inp: TrialInput
    order: np.ndarray | None  # trials in canonical order (score, then keys); None for a key-less input
    block: np.ndarray | None  # tie block of each trial in canonical order (None once a member is on cells)
    cum: np.ndarray  # [0, cumsum(block sizes)]
    is_tar: np.ndarray | None  # canonical order (None once a member is on cells)
    n_tar: int
    untied: bool = False  # every tie block holds one trial
    pair_block: np.ndarray | None = None  # speaker scheme: blocks of the trials grouped by (model, probe) pair
    pair_count: np.ndarray | None = None
    pair_start: np.ndarray | None = None
    model_idx: np.ndarray | None = None  # index in S or -1, canonical order
    probe_idx: np.ndarray | None = None
    group_start: np.ndarray | None = None  # probe scheme: per test key holding a target, first trial ...
    group_size: np.ndarray | None = None
    group_rows: np.ndarray | None = None  # ... in test-key-sorted canonical positions
    unit: np.ndarray | None = None  # bootstrap unit index of each trial, canonical order
    unit_names: np.ndarray | None = None
    fallback: str = ""  # why a finer relabelling scheme could not be used
    subsets: np.ndarray | None = None  # trial scheme, exact: every target subset once, row 0 observed
    key_codes: dict = field(default_factory=dict)  # kind -> sorted_codes of that key, input order (memo)
    values: np.ndarray | None = None  # the score of each tie block (ascending)
    cells: np.ndarray | None = None  # trial scheme, large: trials per cell (vpeval.analysis.cells) ...
    cell_tar: np.ndarray | None = None  # ... and the observed targets per cell

    @property
    def n(self) -> int:
        """The member's trials."""
        return int(self.cum[-1])

    def codes(self, kind: str) -> tuple[np.ndarray, np.ndarray]:
        """``sorted_codes`` of the member's ``model``/``probe`` speakers or its ``test``/``enroll`` keys (input
        order), hashed once per member however many steps of the test need them."""
        return _member_codes(self.inp, self.key_codes, kind)

    def index_of(self, kind: str, names: np.ndarray) -> np.ndarray:
        """Index in the sorted distinct ``names`` of every trial's ``kind`` key, canonical order (-1 where
        absent): one binary search per distinct key."""
        own, codes = self.codes(kind)
        return _lookup(names, own)[codes[self.order]]


def _member_codes(inp: TrialInput, memo: dict, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """``sorted_codes`` of one key column of a member, computed once into ``memo``."""
    if kind not in memo:
        src = {"model": inp.model_speaker, "probe": inp.probe_speaker, "test": inp.trials.test,
               "enroll": inp.trials.enroll}[kind]
        memo[kind] = sorted_codes(src)
    return memo[kind]


def _canonical_order(t: Trials, codes) -> np.ndarray:
    """Trials by score, then keys, then label: tied trials of a key-less input (score label files) are ordered
    by label, so the order (and every draw made over it) depends on the input only as a set. ``codes(kind)``:
    the ``sorted_codes`` of the ``test``/``enroll`` keys (codes keep the keys' order)."""
    keys = [t.is_target, t.scores]
    if t.test is not None:
        keys.insert(0, codes("test")[1])
    if t.enroll is not None:
        keys.insert(0, codes("enroll")[1])
    return np.lexsort(keys)  # last key (score) primary


def _targets_last(cum: np.ndarray, n_tar: np.ndarray) -> np.ndarray:
    """The class of every trial when each tie block holds its non-targets first, then its targets: bool, shape
    ``(cum[-1],)``; block ``k`` spans ``cum[k]:cum[k + 1]`` and holds ``n_tar[k]`` targets. The runs of targets
    are marked by +1 at their starts and -1 at their ends and summed up (int8 partial sums, each 0 or 1): no
    per-trial array of counts or flags besides the result."""
    n = int(cum[-1])
    has = np.flatnonzero(n_tar)
    mark = np.zeros(n + 1, dtype=np.int8)
    mark[cum[has + 1] - n_tar[has]] = 1  # a run's start; distinct, and never another run's end
    mark[cum[has + 1]] -= 1  # its end (the next block's start, where a run may start again: 1 - 1 = 0)
    return np.cumsum(mark[:n], dtype=np.int8).view(bool)


def _prep_trials(inp: TrialInput) -> _TrialPrep:
    t = inp.trials
    if len(t) == 0:
        raise VpevalError(f"{t.source}: no trials")
    if np.isnan(t.scores).any():
        raise VpevalError(f"{t.source}: scores contain NaN")
    memo: dict = {}
    n = len(t)
    if t.test is None and t.enroll is None and inp.model_speaker is None and inp.probe_speaker is None:
        # no keys: the canonical order is by score, then label, and trials alike in both are interchangeable,
        # so the blocks come from one sort per class and a merge, without the order itself
        if not 0 < int(t.is_target.sum()) < n:
            raise VpevalError(f"{t.source}: needs at least one target and one non-target trial")
        b = t.tie_blocks()
        size = b.n_tar + b.n_non
        cum = np.r_[0, np.cumsum(size)]
        # int32 below 2**31 blocks: the one per-trial array of the prep (half the memory at 1e8 trials)
        block = np.repeat(np.arange(size.size, dtype=np.int32 if size.size < 2 ** 31 else np.int64), size)
        return _TrialPrep(inp, None, block, cum, _targets_last(cum, b.n_tar), int(b.total_tar), bool(size.size == n),
                          values=b.values)
    order = _canonical_order(t, lambda kind: _member_codes(inp, memo, kind))
    s = t.scores[order]
    new = np.empty(s.size, dtype=bool)
    new[0] = True
    np.not_equal(s[1:], s[:-1], out=new[1:])
    block = np.cumsum(new) - 1
    cum = np.r_[np.flatnonzero(new), s.size]
    is_tar = t.is_target[order]
    k = int(is_tar.sum())
    if not 0 < k < s.size:
        raise VpevalError(f"{t.source}: needs at least one target and one non-target trial")
    return _TrialPrep(inp, order, block, cum, is_tar, k, bool(cum.size - 1 == s.size), key_codes=memo,
                      values=s[cum[:-1]])


def _choose_scheme(trials: list[TrialInput], one_to_n: list[OneToNInput]) -> str:
    if trials and all(i.model_speaker is not None and i.probe_speaker is not None for i in trials):
        return "speaker"
    if trials and not one_to_n and all(i.trials.test is not None for i in trials):
        return "probe"
    if not trials:
        return "speaker"
    if one_to_n:
        raise VpevalError("1-to-N members need trials with known speakers in the same family")
    return "trial"


def _evaluation_speakers(preps: list[_TrialPrep], one_to_n: list[OneToNInput]) -> np.ndarray:
    sets = []
    for p in preps:
        sets.append(set(p.codes("probe")[0].tolist()) & set(p.codes("model")[0].tolist()))
    for i in one_to_n:
        m = i.matrix
        sets.append(set(sorted_codes(m.probe_speaker)[0].tolist()))
    S = sets[0]
    for other in sets[1:]:
        if other != S:
            raise VpevalError("the members of one family have different evaluation speakers (probe speakers that "
                              "are enrolled); test them as separate systems")
    if len(S) < 2:
        raise VpevalError(f"the perfect-secrecy test needs at least 2 evaluation speakers, got {len(S)}")
    return np.array(sorted(S), dtype=str)


def index_in(names: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Index of every entry of ``values`` in ``names`` (-1 where absent).

    ``names``: sorted, distinct strings, shape (U,); ``values``: strings, shape (n,). Returns int64, shape (n,),
    by hashing the entries (:func:`vpeval.keys.sorted_codes`) and one binary search per distinct value (no Python
    loop over the entries). Raises nothing; an unsorted
    ``names`` gives wrong indices (the callers pass ``np.unique`` output or a sorted speaker list)."""
    u, inv = sorted_codes(values)
    return _lookup(names, u)[inv]


def _lookup(names: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Index of each of the distinct strings ``u`` in the sorted distinct ``names`` (-1 where absent)."""
    at = np.clip(np.searchsorted(names, u), 0, max(names.size - 1, 0))
    hit = names[at] == u if names.size else np.zeros(u.size, dtype=bool)
    return np.where(hit, at, -1).astype(np.int64)


def _speaker_design(p: _TrialPrep, S: np.ndarray) -> bool:
    """Index model/probe speakers into S; True iff the design is complete (every probe of a speaker in S has
    exactly one trial against every model in S) and labels agree with the speakers."""
    inp, t = p.inp, p.inp.trials
    if np.shape(inp.model_speaker) != (len(t),) or np.shape(inp.probe_speaker) != (len(t),):
        raise VpevalError(f"{t.source}: model_speaker and probe_speaker need one entry per trial")
    # both speakers as indices into the union of their names: equal index <=> equal name
    m_names, p_names = p.codes("model")[0], p.codes("probe")[0]
    both = np.union1d(m_names, p_names)
    m_all, p_all = p.index_of("model", both), p.index_of("probe", both)
    bad = np.flatnonzero(p.is_tar != (m_all == p_all))
    if bad.size:
        i = p.order[bad[0]]
        raise VpevalError(f"{t.source}: trial {i} is labelled {'target' if t.is_target[i] else 'nontarget'} but "
                          f"its model speaker {both[m_all[bad[0]]]!r} and probe speaker {both[p_all[bad[0]]]!r} "
                          "say otherwise")
    p.model_idx = p.index_of("model", S)
    p.probe_idx = p.index_of("probe", S)
    inside = (p.model_idx >= 0) & (p.probe_idx >= 0)
    if t.test is None:
        return False
    _, pk = np.unique(p.codes("test")[1][p.order][inside], return_inverse=True)  # integers: dense probe index
    pairs = pk.reshape(-1) * S.size + p.model_idx[inside]
    n_pairs = np.unique(pairs).size
    n_probes = int(pk.max()) + 1 if pk.size else 0
    if pairs.size != n_pairs or n_pairs != n_probes * S.size:
        return False
    # every trial of a probe in S must be with the probe's model set complete; targets only inside S
    if not bool((p.is_tar <= inside).all()):
        return False
    _pair_index(p, S.size, inside)
    return True


def _pair_index(p: _TrialPrep, n_s: int, inside: np.ndarray) -> None:
    """The trials of each (model, probe speaker) pair of evaluation speakers (``inside``: both in S), grouped by
    pair, for the O(K) gather of a relabelling's targets (:func:`_trial_target_blocks`)."""
    pos = np.flatnonzero(inside)
    code = p.model_idx[pos] * n_s + p.probe_idx[pos]
    o = np.argsort(code, kind="stable")
    p.pair_block = p.block[pos[o]]
    p.pair_count = np.bincount(code, minlength=n_s * n_s)
    p.pair_start = np.r_[0, np.cumsum(p.pair_count)[:-1]]


def _probe_design(p: _TrialPrep) -> bool:
    t = p.inp.trials
    keys = t.test[p.order]
    gorder = np.lexsort((np.arange(keys.size), p.codes("test")[1][p.order]))  # canonical positions grouped by key
    kg = keys[gorder]
    new = np.empty(kg.size, dtype=bool)
    new[0] = True
    np.not_equal(kg[1:], kg[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    sizes = np.diff(np.r_[starts, kg.size])
    gid = np.cumsum(new) - 1
    n_t = np.bincount(gid[p.is_tar[gorder]], minlength=starts.size)
    if (n_t > 1).any():
        g = int(np.flatnonzero(n_t > 1)[0])
        p.fallback = (f"{t.source}: probe {str(kg[starts[g]])!r} is a target of {int(n_t[g])} models, so its "
                      "target cannot be moved within its row")
        return False
    has = n_t == 1
    p.group_start, p.group_size, p.group_rows = starts[has], sizes[has], gorder
    return True


@dataclass(frozen=True)
class RowDesign:
    """The ``"speaker-row"`` relabelling of an incomplete keyed design (:func:`row_design`).

    ``cand[s, :n_cand[s]]``: the models (indices into S) speaker ``s``'s probes may move to, ``s`` itself first;
    ``keep[i]``: member ``i``'s trials (input order) that enter the test; ``moved``/``dropped``: probes that move
    with their speaker / probes left out of the test (they miss a model their speaker's other probes met)."""

    cand: np.ndarray
    n_cand: np.ndarray
    keep: list
    moved: int
    dropped: int


def row_design(preps: list[_TrialPrep], S: np.ndarray) -> RowDesign:
    """Which models each evaluation speaker's probes can move to together, in a keyed design where not every
    probe meets every model (members already indexed by :func:`_speaker_design`).

    All probes of a speaker share its voice, so a valid relabelling moves them together: speaker ``s``'s targets
    go to one model ``m`` only if every one of its probes was scored exactly once against ``m`` in every member.
    Per speaker, a set of models ``M_s`` (``s`` first) and the probes ``Q_s`` that met all of them are chosen from
    the design alone (never the scores): models are added in order of how many of the speaker's probes met them
    (ties: S order), and the prefix maximising ``|Q_s| (1 - 1 / |M_s|)``, the expected number of its targets a
    relabelling moves, is kept. A speaker's probes outside ``Q_s`` leave the test (kept, a fixed target would
    stand beside moving ones of the same voice, which no relabelling of a speaker can produce); a speaker whose
    best set is ``{s}`` keeps all its probes in place. Probes of speakers outside S (no target) always stay.
    Choosing from the design alone keeps the test exact: under perfect secrecy the scores of one speaker's probes
    against the models of ``M_s`` are exchangeable (models permuted jointly for all its probes).

    Raises
    ------
    VpevalError
        A probe key whose speaker differs between trials or members.
    """
    n_s = S.size
    names = np.unique(np.concatenate([p.codes("test")[0] for p in preps]))
    K = names.size
    spk = np.full(K, -1, dtype=np.int64)
    present = np.ones(K * n_s, dtype=bool)
    keys = []
    for p in preps:
        key = _lookup(names, p.codes("test")[0])[p.codes("test")[1][p.order]]  # canonical order
        keys.append(key)
        has = p.probe_idx >= 0
        k_has, s_has = key[has], p.probe_idx[has]
        seen = spk[k_has]
        clash = np.flatnonzero((seen >= 0) & (seen != s_has))
        pairs = np.unique(np.c_[k_has, s_has], axis=0)
        twice = pairs[np.r_[pairs[1:, 0] == pairs[:-1, 0], False], 0]  # a key with two speakers in this member
        if clash.size or twice.size:
            bad = k_has[clash[0]] if clash.size else twice[0]
            raise VpevalError(f"{p.inp.trials.source}: probe {str(names[bad])!r} has different speakers in different "
                              "trials or members")
        spk[k_has] = s_has
        inside = p.model_idx >= 0
        count = np.bincount(key[inside] * n_s + p.model_idx[inside], minlength=K * n_s)
        present &= count == 1
    present = present.reshape(K, n_s)
    cand = [np.array([s]) for s in range(n_s)]
    drop = np.zeros(K, dtype=bool)
    moved = 0
    for s in range(n_s):
        rows = np.flatnonzero(spk == s)
        q0 = rows[present[rows, s]]
        if q0.size == 0:
            continue
        others = np.delete(np.arange(n_s), s)
        pres = present[np.ix_(q0, others)]
        order = np.lexsort((others, -pres.sum(axis=0)))  # most-met model first; ties in S order
        acc = np.logical_and.accumulate(pres[:, order], axis=1)
        count = acc.sum(axis=0)
        score = count * (1.0 - 1.0 / np.arange(2, n_s + 1))
        j = int(np.argmax(score))
        if score[j] <= 0:
            continue
        cand[s] = np.r_[s, others[order[: j + 1]]]
        drop[rows] = True
        drop[q0[acc[:, j]]] = False
        moved += int(count[j])
    keep = []
    for p, key in zip(preps, keys):
        k = np.empty(key.size, dtype=bool)
        k[p.order] = ~drop[key]
        keep.append(k)
    n_cand = np.array([c.size for c in cand], dtype=np.int64)
    padded = np.zeros((n_s, int(n_cand.max())), dtype=np.int64)
    for s, c in enumerate(cand):
        padded[s, : c.size] = c
    return RowDesign(padded, n_cand, keep, moved, int(drop.sum()))


def _row_choices(rng, design: RowDesign, n_perm: int) -> np.ndarray:
    """(n_perm + 1, |S|): ``tau[r, s]``, the model speaker ``s``'s probes are targets of in relabelling ``r``; row 0
    the observed (``tau = s``), then independent uniform choices from each speaker's candidates. When there are
    at most ``n_perm + 1`` distinct relabellings, every one is listed once instead (the identity first): exact;
    the identity twice when no speaker can move."""
    n_s = design.n_cand.size
    if float(np.log(design.n_cand.astype(np.float64)).sum()) <= math.log(n_perm + 1):  # (a product overflows)
        import itertools

        rows = itertools.product(*[design.cand[s, : design.n_cand[s]] for s in range(n_s)])
        tau = np.array(list(rows), dtype=np.int64).reshape(-1, n_s)
        # no speaker can move: the observed labelling twice, so the test is defined (p = 1; it cannot reject)
        return np.repeat(tau, 2, axis=0) if tau.shape[0] == 1 else tau
    u = rng.random((n_perm + 1, n_s))
    pick = np.minimum((u * design.n_cand).astype(np.int64), design.n_cand - 1)
    tau = design.cand[np.arange(n_s)[None, :], pick]
    tau[0] = np.arange(n_s)
    return tau


#: The schemes that relabel whole speakers (their probes move together): resampled by probe speaker, exposed
#: speakers named.
SPEAKER_SCHEMES = ("speaker", "speaker-row")


# ----------------------------------------------------------------------------------------- relabellings


def _speaker_perms(rng, n_s: int, n_perm: int) -> np.ndarray:
    """(n_perm + 1, |S|): row 0 the identity, then uniform permutations; ``sig[r, m]`` = identity of model m.

    When ``|S|! <= n_perm + 1`` every permutation is listed once instead (``|S|!`` rows, the identity first):
    the permutation distribution is then exact and the p-values do not depend on the seed."""
    if math.factorial(n_s) <= n_perm + 1:
        import itertools

        return np.array(list(itertools.permutations(range(n_s))), dtype=np.int64).reshape(-1, n_s)
    sig = np.empty((n_perm + 1, n_s), dtype=np.int64)
    sig[0] = np.arange(n_s)
    for r in range(1, n_perm + 1):
        sig[r] = rng.permutation(n_s)
    return sig


def _trial_target_blocks(p: _TrialPrep, scheme: str, sig, seed, rows: slice) -> np.ndarray:
    """Sorted tie blocks of the targets of relabellings ``rows`` (row 0 = observed), shape (R, K).

    Speaker and speaker-row schemes: relabelling ``r`` is ``sig[r]`` (:func:`_speaker_perms`,
    :func:`_row_choices`). Probe and trial schemes: relabelling ``r`` is drawn from
    its own stream, ``default_rng([seed, 1, r])``, so a row's draw depends on ``seed`` and ``r`` alone, not on
    which rows are computed together or by which worker process."""
    R = rows.stop - rows.start
    if scheme in SPEAKER_SCHEMES:
        # speaker: model m gets identity sig[m], so its trials with probes of that speaker are the targets;
        # speaker-row: speaker s's probes are targets of model sig[s]. Gather the blocks of those (model, probe
        # speaker) pairs pair by pair (O(K) per relabelling), then sort each row
        s = sig[rows]
        n_s = s.shape[1]
        if scheme == "speaker":
            codes = (np.arange(n_s)[None, :] * n_s + s).reshape(-1)
        else:
            codes = (s * n_s + np.arange(n_s)[None, :]).reshape(-1)
        lengths = p.pair_count[codes]
        starts = p.pair_start[codes]
        total = int(lengths.sum())
        offsets = np.cumsum(lengths) - lengths
        idx = np.repeat(starts - offsets, lengths) + np.arange(total)
        return np.sort(p.pair_block[idx].reshape(R, p.n_tar), axis=1)
    out = np.empty((R, p.n_tar), dtype=np.int64)
    kept = None
    if (scheme == "trial" and p.n_tar >= JIT_MIN_TARGETS and p.block.dtype in (np.int32, np.int64)
            and p.block.flags.c_contiguous):
        kept = compiled_kept_blocks()
    for i, r in enumerate(range(rows.start, rows.stop)):
        if r == 0:
            out[i] = p.block[p.is_tar]
            continue
        rng_trial = None if p.subsets is not None else np.random.default_rng([seed, 1, r])
        if scheme == "probe":
            u = rng_trial.random(p.group_start.size)
            pos = p.group_rows[p.group_start + np.minimum((u * p.group_size).astype(np.int64), p.group_size - 1)]
            out[i] = np.sort(p.block[pos])
        else:
            if p.subsets is not None:  # every k-subset listed once (an exact test)
                pos = p.subsets[r]
                out[i] = pos if p.untied else p.block[pos]
            elif kept is not None:  # the blocks of the drawn positions straight from the draw
                _k_of_n_sorted(rng_trial, p.block.size, p.n_tar, blocks=p.block, kept=kept, into=out[i])
            else:
                pos = _k_of_n_sorted(rng_trial, p.block.size, p.n_tar)  # ascending positions
                out[i] = pos if p.untied else p.block[pos]
    return out


def _k_of_n_sorted(rng, n: int, k: int, blocks=None, kept=None, into=None) -> np.ndarray:
    """A uniformly random ``k``-subset of ``0 .. n-1``, ascending (``0 < k <= n``), or ``blocks`` of it.

    Every position is kept independently with probability ``q`` (any ``q``: conditional on their number ``m``,
    the kept positions are a uniform ``m``-subset). A draw with ``m < k`` is rejected and redrawn (``q`` puts
    ``k`` about 4 standard deviations below the mean of ``m``, so this is rare); from ``m >= k`` a uniform
    ``m - k``-subset is removed, leaving a uniform ``k``-subset (exact: rejection on ``m`` keeps the
    conditional uniformity). Sparse (``q < 1/8``): geometric skips between kept positions, so they come out
    sorted, O(k). Dense: one uniform 16-bit integer per position, kept below ``ceil(q * 2**16)`` (probability
    exactly that over ``2**16``), O(n) but 3 ns a position against 20 ns a geometric skip (measured on 1e7
    positions, k = n / 2: 37 ms against 104 ms a draw). Replaces ``Generator.choice(n, k, replace=False)``
    followed by a sort (a partial shuffle of ``arange(n)``, O(n)).

    ``blocks`` (int64, shape (n,)): return ``blocks[subset]`` instead; with ``kept``
    (:func:`~vpeval.analysis.pav_kernel.compiled_kept_blocks`) a dense draw is turned into them in one compiled
    pass over the 16-bit draws, without the position arrays (the same values from the same random draws).
    ``into`` (int64, shape (k,)): written with the result, which is also returned.
    """
    q = min(1.0, (k + 4.0 * math.sqrt(k) + 10.0) / n)
    size = int(n * q + 6.0 * math.sqrt(n * q * (1.0 - q)) + 16.0)
    dense = q >= 0.125
    while True:
        if dense:
            u = _uniform_u16(rng, n)
            below = math.ceil(q * (1 << 16))
            if kept is not None and blocks is not None:
                m = int(np.count_nonzero(u < below))
            else:
                pos = np.flatnonzero(u < below)
                m = pos.size
        else:
            pos = np.cumsum(rng.geometric(q, size=size)) - 1
            while pos[-1] < n - 1:  # not yet past the end: more skips (rare)
                pos = np.concatenate([pos, pos[-1] + np.cumsum(rng.geometric(q, size=size))])
            m = int(np.searchsorted(pos, n))
        if m >= k:
            break
    drop = rng.choice(m, m - k, replace=False) if m > k else np.zeros(0, dtype=np.int64)
    out = np.empty(k, dtype=np.int64) if into is None else into
    if dense and kept is not None and blocks is not None:
        kept(u, below, np.sort(drop).astype(np.int64), blocks, out)
        return out
    pos = np.delete(pos[:m], drop)
    out[:] = pos if blocks is None else blocks[pos]
    return out


#: From this many positions on, a dense draw's 16-bit uniforms are cut from full-range 64-bit ones (below, as
#: before: ``integers(0, 2**16, dtype=uint16)``, so that small tests keep their draws).
_U16_FROM_U64_MIN = 1 << 20


def _uniform_u16(rng, n: int) -> np.ndarray:
    """``n`` independent uniform 16-bit integers (uint16) from ``rng``.

    From :data:`_U16_FROM_U64_MIN` on, each full-range uniform 64-bit integer (``integers(0, 2**64 - 1,
    endpoint=True)``: one output of the bit generator, no rejection) gives four: its four 16-bit parts are
    independent and uniform. The same law as ``integers(0, 2**16, n, dtype=uint16)``, which spends a 32-bit
    draw on each (about half the time: ``benchmarks/report_parts.py``); other values for the same seed."""
    if n < _U16_FROM_U64_MIN:
        return rng.integers(0, 1 << 16, n, dtype=np.uint16)
    words = rng.integers(0, np.iinfo(np.uint64).max, -(-n // 4), dtype=np.uint64, endpoint=True)
    return words.view(np.uint16)[:n]


def _d_ece_rows_loop(p: _TrialPrep, tb: np.ndarray) -> np.ndarray:
    """D_ECE (bits) of each labelling, one PAV fit per row (the slow, obvious oracle of :func:`_d_ece_rows`)."""
    from ..stats.metrics import BlockEval, _d_ece_blocks
    from ..stats.trial_bootstrap import _collapsed_blocks

    size = np.diff(p.cum)
    out = np.empty(tb.shape[0])
    for i, row in enumerate(tb):
        u, c = np.unique(row, return_counts=True)
        out[i] = _d_ece_blocks(BlockEval(_collapsed_blocks(u, c, size, p.cum)))
    return out


def _d_ece_rows(p: _TrialPrep, tb: np.ndarray) -> np.ndarray:
    """D_ECE (bits, plain PAV) of every labelling (row of ``tb``) with one isotonic fit for all rows.

    Each row becomes one *unit* per distinct block holding targets: the block's targets and non-targets pooled
    with the run of target-free blocks above it, up to the next block holding targets (or the top). PAV always
    pools a slot with a following slot of lower proportion (adjacent violators end in one block), and a
    target-free run (proportion 0) is lower than any slot holding a target, so the fit over the units is the
    fit over the ``2K + 1`` slots of :func:`vpeval.stats.trial_bootstrap._collapsed_blocks`. The run below
    the lowest target block is left out: it is a PAV block of its own with no targets (LLR ``-inf``), whose
    contribution to D_ECE is exactly 0. Row ``r``'s proportions are shifted by ``2 r``, so no pool can cross
    into another row (every value of row ``r + 1`` exceeds every value of row ``r``) and one call of scipy's
    isotonic regression fits all rows. Bins are re-counted from the integer unit counts, as in
    :func:`vpeval.blocks.pav_bins`.
    """
    R, K = tb.shape
    n = int(p.cum[-1])
    kernel = compiled_pav_target_blocks() if K >= JIT_MIN_TARGETS else None
    if kernel is not None:  # the same PAV blocks from one compiled pass (vpeval.analysis.pav_kernel)
        out_t, out_w, out_row = (np.empty(R * K, dtype=np.int64) for _ in range(3))
        m = kernel(np.ascontiguousarray(tb, dtype=np.int64), p.cum, n, out_t, out_w, out_row)
        bt = out_t[:m].astype(np.float64)
        return _d_ece_from_blocks(bt, out_w[:m] - bt, out_row[:m], R, K, n)
    if p.untied:  # no tied scores: each target is a block of its own, only the gaps between them vary
        return _d_ece_untied(tb, n, R, K)
    flat = tb.reshape(-1)
    first = np.empty(R * K, dtype=bool)
    first[0] = True
    np.not_equal(flat[1:], flat[:-1], out=first[1:])
    first[::K] = True  # every row starts a unit
    f = np.flatnonzero(first)
    if R == 1:  # one row (large K): the same values without the row bookkeeping
        mult = np.diff(f, append=K)
        b = flat[f]
        cb = p.cum[b]
        sn = np.empty(f.size, dtype=np.float64)
        np.subtract(p.cum[b[1:]], cb[:-1], out=sn[:-1])  # upper - cum[b]: the next target block's start
        sn[-1] = n - cb[-1]
        sn -= mult
        return _d_ece_slots(mult.astype(np.float64), sn, None, R, K, n)
    mult = np.diff(np.r_[f, R * K])  # targets of each distinct (row, block)
    b = flat[f]
    last = np.empty(f.size, dtype=bool)  # the unit is its row's highest
    last[-1] = True
    np.not_equal(f[1:] // K, f[:-1] // K, out=last[:-1])
    upper = np.where(last, n, p.cum[np.r_[b[1:], 0]])  # start of the next target block of the row (or n)
    sn = (upper - p.cum[b] - mult).astype(np.float64)
    return _d_ece_slots(mult.astype(np.float64), sn, f // K, R, K, n)


def _d_ece_slots(st, sn: np.ndarray, row: np.ndarray, R: int, K: int, n: int) -> np.ndarray:
    """D_ECE (bits) per row from the non-empty slots of all rows (targets ``st``, or None for one target per
    slot; non-targets ``sn``; row ids ascending, or None for one row): one isotonic fit with row ``r`` shifted by ``2 r``, bins
    re-counted from the slot counts (sums over the slots: exact for these integer counts)."""
    from scipy.optimize import isotonic_regression

    size = sn.size
    y = 1.0 / (1.0 + sn) if st is None else st / (st + sn)
    # a unit whose proportion exceeds the next one's (same row) ends in the same PAV block (adjacent violators
    # are always pooled): pool these runs before the fit, which then sees about half as many units
    new = np.empty(size, dtype=bool)
    new[0] = True
    np.less_equal(y[:-1], y[1:], out=new[1:])
    if row is not None:
        new[1:] |= row[1:] != row[:-1]
    g = np.flatnonzero(new)
    # counts of the pooled runs and then of the PAV blocks as sums over their slots (integer-valued floats below
    # 2**53, so every order of summation gives the same exact value)
    pt = np.diff(g, append=size).astype(np.float64) if st is None else np.add.reduceat(st, g)
    pn = np.add.reduceat(sn, g)
    w = pt + pn
    y = pt / w
    if row is not None:
        y += 2.0 * row[g]  # one row: + 0.0, which changes no value (pt / w >= +0)
    bl = np.asarray(isotonic_regression(y, weights=w, increasing=True).blocks[:-1], dtype=np.int64)
    bt, bn = np.add.reduceat(pt, bl), np.add.reduceat(pn, bl)
    brow = row[g[bl]] if row is not None else np.zeros(bl.size, dtype=np.int64)
    return _d_ece_from_blocks(*_merge_level_ties(bt, bn, brow), R, K, n)


def _merge_level_ties(bt: np.ndarray, bn: np.ndarray, brow: np.ndarray):
    """PAV blocks (targets ``bt``, non-targets ``bn``, rows ``brow``) with adjacent blocks of one row and equal
    proportions pooled: the fit's maximal level sets, the blocks :func:`~vpeval.analysis.pav_kernel.\
pav_target_blocks` returns (proportions compared exactly, as int64 cross-products)."""
    if bt.size < 2:
        return bt, bn, brow
    ti = bt.astype(np.int64)
    wi = ti + bn.astype(np.int64)
    tie = (ti[:-1] * wi[1:] == ti[1:] * wi[:-1]) & (brow[:-1] == brow[1:])
    if not tie.any():
        return bt, bn, brow
    g = np.flatnonzero(np.r_[True, ~tie])
    return np.add.reduceat(bt, g), np.add.reduceat(bn, g), brow[g]


def _d_ece_from_blocks(bt: np.ndarray, bn: np.ndarray, brow: np.ndarray, R: int, K: int, n: int) -> np.ndarray:
    """D_ECE (bits) per row from the PAV blocks of all rows: targets ``bt`` and non-targets ``bn`` (exact
    integer-valued float64) and row ``brow`` of each block, rows ascending; each row has ``K`` targets of
    ``n`` trials."""
    from ..metrics.zebra import _expected_ece_tar_nats

    with np.errstate(divide="ignore"):
        llr = (np.log(bt) - np.log(bn)) - (math.log(K) - math.log(n - K))
    et = np.where(bt > 0, bt * _expected_ece_tar_nats(np.where(bt > 0, llr, 0.0)), 0.0) / K
    en = np.where(bn > 0, bn * _expected_ece_tar_nats(np.where(bn > 0, -llr, 0.0)), 0.0) / (n - K)
    return (0.5 - np.bincount(brow, weights=et + en, minlength=R)) / _LN2


def _d_ece_untied(tb: np.ndarray, n: int, R: int, K: int) -> np.ndarray:
    """:func:`_d_ece_rows` when every block holds one trial: a unit is a target and the non-targets above it, up
    to the next target (or the top)."""
    sn = np.empty((R, K), dtype=np.float64)
    np.subtract(tb[:, 1:], tb[:, :-1], out=sn[:, :-1])
    sn[:, :-1] -= 1.0
    np.subtract(n - 1, tb[:, -1], out=sn[:, -1])
    row = np.repeat(np.arange(R), K) if R > 1 else None
    return _d_ece_slots(None, sn.reshape(-1), row, R, K, n)


def _lid_rows(z: np.ndarray, cols: np.ndarray) -> np.ndarray:
    from ..stats.one_to_n import LID_SLOPE_GRID, _null_lids  # the 1-to-N modules bring in SciPy's statistics

    return _null_lids(z, cols, grid=LID_SLOPE_GRID)
