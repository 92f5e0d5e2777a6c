"""The null statistics of a family (internal to :mod:`vpeval.analysis.secrecy`): every statistic of every member
on the same relabellings, row 0 the observed labels, and every member's bootstrap replicates on the same draws.

:func:`null_family_steps` does the work once; :func:`vpeval.analysis.secrecy.secrecy_test` then decides over the whole
family and over any sub-family (e.g. the voice channel's attackers) from the same columns and replicates: a
sub-family's max-T over its own columns of the same relabellings is a valid family-wise test of its own null
(its columns' joint law is invariant under relabelling whenever its members carry no information, whatever the
other members do), so no second set of relabellings is drawn.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ..errors import VpevalError
from . import cells as _cells
from .cells import cell_statistics, cell_target_rows, member_cells
from .enumerate import all_k_subsets, k_subsets_at_most
from .relabel import (
    _CHUNK_TARGETS, _choose_scheme, _d_ece_rows, _evaluation_speakers, _lid_rows, _prep_trials, _probe_design,
    _pair_index, _row_choices, _speaker_design, _speaker_perms, _TrialPrep, _trial_target_blocks, index_in,
    row_design,
)
from .resample import _bootstrap_worst
from .worst_case import PRUNE_MIN_TARGETS, eps_max_from_target_blocks

_LN2 = math.log(2.0)


@dataclass
class NullFamily:
    """Everything a decision over (a subset of) the family needs.

    ``cols[k]``: statistic ``k`` per relabelling (bits, shape ``(n_perm + 1,)``, row 0 observed), described by
    ``meta[k] = (attacker, trial_type, statistic, eer_rocch)`` and owned by member ``owner[k]`` (``("t", i)``:
    ``preps[i]``; ``("l", j)``: ``lid_obs[j]``). ``t_reps``/``l_reps``: the bootstrap replicates of :func:`~vpeval.analysis.resample._bootstrap_worst`.
    """

    preps: list
    one_to_n: list
    scheme: str
    scheme_reason: str
    S: np.ndarray | None
    n_perm: int
    exact: bool
    cols: list
    meta: list
    owner: list
    lid_obs: list
    t_reps: list
    l_reps: list
    n_units: int
    boot_units: tuple
    rows: object = None  # speaker-row: the RowDesign
    tested: float = 1.0  # share of the members' trials in the test (speaker-row: probes left out)
    #: per 1-to-N member with ``speaker_lid``: ``(j, speakers, values, hits, probes, N)``, the observed speaker LID
    #: (bits) and rank-1 hits of its evaluation speakers (:mod:`vpeval.metrics.linkage.speaker`)
    speaker_obs: list = dataclasses.field(default_factory=list)


#: A member's relabellings are shared among the workers when they hold at least this many target entries
#: (relabellings x targets: a few seconds of work; below it, shipping the member costs more than it saves).
PARALLEL_TARGET_ENTRIES = 50_000_000


def null_family_steps(trials, one_to_n, n_perm: int, n_boot: int, seed: int, t_stats, l_stats, jobs=None):
    """The null statistics and bootstrap replicates of every member (options already checked by the caller), in
    two steps (a generator, driven by :func:`vpeval.pipeline.jobs.drive`): the first ``next`` sorts the members
    and hands the relabellings of every large member to ``jobs``' workers (a running
    :class:`~vpeval.pipeline.jobs.Jobs`; None: this process), in parts of whole chunks; the second computes the
    rest here and returns the :class:`NullFamily`. Each relabelling's draw depends on the seed and its row
    alone, and each chunk is computed as in one process, so the family is the same for any number of jobs."""
    from ..pipeline.jobs import Jobs

    jobs = jobs if jobs is not None else Jobs(1)
    preps = [_prep_trials(i) for i in trials]
    scheme = _choose_scheme(trials, one_to_n)
    S = None
    if scheme == "speaker":
        S = _evaluation_speakers(preps, one_to_n)
        if not all([_speaker_design(p, S) for p in preps]):  # every member indexed (no short circuit)
            if one_to_n:
                raise VpevalError("trials of a family with 1-to-N members need a complete design (every probe "
                                  "scored against every evaluation speaker's model)")
            scheme = "speaker-row" if all(i.trials.test is not None for i in trials) else "trial"
    scheme_reason = ""
    tested = 1.0
    if scheme == "trial" and S is not None:
        scheme_reason = ("the speakers are known but not which trials share a probe, so the design cannot be "
                         "checked for complete rows")
    rows = None
    if scheme == "speaker-row":
        rows = row_design(preps, S)
        n_all = sum(p.block.size for p in preps)
        trials = [dataclasses.replace(i, trials=i.trials.select(k), model_speaker=np.asarray(i.model_speaker)[k],
                                      probe_speaker=np.asarray(i.probe_speaker)[k]) for i, k in zip(trials, rows.keep)]
        preps = [_prep_trials(i) for i in trials]
        for p in preps:
            if not _speaker_design(p, S):  # indexes the speakers; the pairs the relabellings gather
                _pair_index(p, S.size, (p.model_idx >= 0) & (p.probe_idx >= 0))
        tested = sum(p.block.size for p in preps) / n_all
        scheme_reason = (f"not every probe of an evaluation speaker is scored exactly once against every evaluation "
                         f"speaker's model: {rows.moved} probes move with their speaker, "
                         f"{rows.dropped} that missed a model their speaker's other probes met are left out of the "
                         f"test ({100 * tested:.3g} % of the trials tested)")
    if scheme == "probe" and not all(_probe_design(p) for p in preps):
        scheme = "trial"
        scheme_reason = next(p.fallback for p in preps if p.fallback)
    rng = np.random.default_rng(seed)
    sig = (_speaker_perms(rng, S.size, n_perm) if scheme == "speaker" else
           _row_choices(rng, rows, n_perm) if scheme == "speaker-row" else None)
    exact = sig is not None and sig.shape[0] < n_perm + 1
    if exact:  # every permutation of the evaluation speakers listed once: an exact test
        n_perm = sig.shape[0] - 1
    if scheme == "trial" and len({(p.block.size, p.n_tar) for p in preps}) == 1:
        n_all, k_all = preps[0].block.size, preps[0].n_tar
        if k_subsets_at_most(n_all, k_all, n_perm + 1):  # every target subset listed once: an exact test
            for p in preps:
                p.subsets = all_k_subsets(n_all, k_all, first=np.flatnonzero(p.is_tar))
            n_perm = preps[0].subsets.shape[0] - 1
            exact = True

    # ---- null statistics: columns = members x statistics, row 0 = observed; large members' rows on the workers
    rows_needed = n_perm + 1
    for p in preps:  # large members of trial relabelling: tested on cells of the score axis (vpeval.analysis.cells)
        if scheme == "trial" and p.subsets is None and _cells.CELLS_FROM_TRIALS <= p.n < _cells.CELLS_BELOW_TRIALS:
            p.cells, p.cell_tar = member_cells(p.cum, p.is_tar)
            if p.order is None:  # nothing reads them any more (memory: 5 bytes a trial, 8 a tie block)
                p.block, p.is_tar, p.cum = None, None, p.cum[[0, -1]]  # the class counts, as _cell_slim sends
    # a member on cells stays in this process (its relabellings and bootstrap cost about a second at 1e7 trials,
    # less than starting the workers); its cells alone are sent when the workers draw a family's bootstrap
    large = [jobs.parallel and p.cells is None and rows_needed * p.n_tar >= PARALLEL_TARGET_ENTRIES for p in preps]
    # what the workers are sent of each large member: its arrays written once for all its calls (Jobs.share),
    # not pickled with each
    ship = [big or (scheme == "trial" and any(large)) for big in large]
    slims = [(_cell_slim(p) if p.cells is not None else _slim(p, jobs)) if s else p for p, s in zip(preps, ship)]
    for p, slim in zip(preps, slims):
        if slim is not p and p.cells is None:
            _map_shared(p, slim)
    boot = None  # trial scheme: the bootstrap reads the tie blocks alone, so a worker can draw it too (first)
    if scheme == "trial" and any(large):
        boot = jobs.submit(_trial_bootstrap, slims, n_boot, seed, t_stats)
    started = []
    for p, big, slim in zip(preps, large, slims):
        if p.cells is not None:  # O(cells) a relabelling: here, after the workers' parts are out
            started.append(None)
            continue
        chunk = max(1, min(rows_needed, _CHUNK_TARGETS // max(1, p.n_tar)))
        bounds = [(lo, min(rows_needed, lo + chunk)) for lo in range(0, rows_needed, chunk)]
        # three parts per worker, so that the workers that also draw the bootstrap or other sections are not
        # left to finish alone (one part per worker measured the same on 1e7 trials, within the noise)
        n_parts = 3 * jobs.n if big else 1
        started.append([jobs.submit(_member_rows, slim, scheme, sig, seed, part, t_stats)
                        for part in np.array_split(np.array(bounds), n_parts) if len(part)])
    yield

    cols, meta, owner = [], [], []
    for i, (p, parts) in enumerate(zip(preps, started)):
        eer = _rocch_eer_of(p)
        if parts is None:
            eps, dec = _member_rows(p, scheme, sig, seed, [(0, rows_needed)], t_stats)
        else:
            eps, dec = (np.concatenate(c) for c in zip(*(part.get() for part in parts)))
        if "eps_max" in t_stats:
            cols.append(eps)
            meta.append((p.inp.attacker, p.inp.trial_type, "eps_max", eer))
            owner.append(("t", i))
        if "d_ece" in t_stats:
            cols.append(dec)
            meta.append((p.inp.attacker, p.inp.trial_type, "d_ece", eer))
            owner.append(("t", i))
    lid_obs, speaker_obs = [], []
    for j, i in enumerate(one_to_n):
        from ..metrics.linkage import znorm_rows  # 1-to-N members only: it brings in SciPy's statistics

        m = i.matrix
        order = np.argsort(np.asarray(m.probe_id, dtype=str), kind="stable")
        z = znorm_rows(np.asarray(m.scores, dtype=np.float64)[order])
        enrolled = np.asarray(getattr(m, "enrolled_speaker", None) if hasattr(m, "enrolled_speaker") else
                              m.speaker_ids, dtype=str)
        col_of = {s: k for k, s in enumerate(enrolled.tolist())}
        missing = [s for s in S.tolist() if s not in col_of]
        if missing:
            raise VpevalError(f"1-to-N matrix of {i.attacker} ({i.trial_type}): evaluation speaker {missing[0]!r} "
                              "is not enrolled")
        col_s = np.array([col_of[s] for s in S.tolist()], dtype=np.int64)
        pspk = np.asarray(m.probe_speaker, dtype=str)[order]
        pidx = index_in(S, pspk)
        inv = np.argsort(sig, axis=1)  # inv[r, p] = model given identity p
        L = _lid_rows(z, col_s[inv[:, pidx]])  # all labellings at once: the slope grid sees them all
        lid_obs.append((i, L[0], pspk))
        if "lid_max" in l_stats:
            cols.append(L.max(axis=1))
            meta.append((i.attacker, i.trial_type, "lid_max", None))
            owner.append(("l", j))
        if "alid" in l_stats:
            cols.append(L.mean(axis=1))
            meta.append((i.attacker, i.trial_type, "alid", None))
            owner.append(("l", j))
        if "speaker_lid" in l_stats:
            vals, obs = _speaker_lid_rows(z, pidx, col_s, inv)
            cols.append(vals)
            meta.append((i.attacker, i.trial_type, "speaker_lid", None))
            owner.append(("l", j))
            speaker_obs.append((j, S[obs[0]], *obs[1:]))
    if boot is not None:
        t_reps, l_reps, n_units, boot_units = boot.get()
    else:
        t_reps, l_reps, n_units, boot_units = _bootstrap_worst(preps, lid_obs, scheme, S, n_boot, seed, t_stats,
                                                               l_stats)
    if scheme == "speaker":
        n_units = int(S.size)
    return NullFamily(preps, list(one_to_n), scheme, scheme_reason, S, n_perm, exact, cols, meta, owner,
                      lid_obs, t_reps, l_reps, n_units, boot_units, rows, tested, speaker_obs)


def _speaker_lid_rows(z: np.ndarray, pidx: np.ndarray, col_s: np.ndarray, inv: np.ndarray):
    """The family maximum of the speaker LID over the evaluation speakers of one 1-to-N member, per relabelling
    (bits, shape ``(R,)``), and the observed ``(speaker indices in S, speaker LIDs, rank-1 hits, probes, N)``.

    Speaker ``s``'s value depends on its own probe rows and the model it is given alone
    (:func:`~vpeval.metrics.linkage.speaker.speaker_lid_table`), so the table of every speaker against every
    evaluation model is computed once and each relabelling reads ``T[s, inv[r, s]]``: relabelling ``r`` gives the
    probes of speaker ``s`` the model ``col_s[inv[r, s]]``, as for the LID (row 0 observed)."""
    from ..metrics.linkage.speaker import rank1_hits, speaker_lid_table

    present, g = np.unique(pidx, return_inverse=True)
    g = g.reshape(-1)
    T = speaker_lid_table(z, g, col_s, present.size)  # (speakers with probes, |S|)
    vals = T[np.arange(present.size)[None, :], inv[:, present]].max(axis=1)
    hits, n = rank1_hits(z, g, col_s[present], present.size)
    return vals, (present, T[np.arange(present.size), present], hits, n, int(z.shape[1]))


def _rocch_eer_of(p: _TrialPrep) -> float:
    """:func:`vpeval.rocch_eer` of a member, from its tie blocks (no second sort): the same blocks as
    :func:`vpeval.blocks.tie_blocks` of its targets and non-targets, so the same value. A key-less member's are
    its trials' own (:meth:`vpeval.io.trials.Trials.tie_blocks`, kept since the prep read them): no per-block
    counts are made again (three arrays of the blocks' size, at the main process's peak of ``vpeval verify``)."""
    from ..blocks import TieBlocks, compress_runs
    from ..metrics.verification import _rocch_eer, _rocch_points

    if p.order is None:  # PAV of the one-class runs pooled (the same bins: compress_runs), a third of the blocks
        return float(_rocch_eer(*_rocch_points(compress_runs([p.inp.trials.tie_blocks()]))))
    size = np.diff(p.cum)
    n_tar = np.bincount(p.block[p.is_tar], minlength=size.size).astype(np.int64)
    return float(_rocch_eer(*_rocch_points(TieBlocks(p.values, n_tar, size - n_tar))))


def _slim(p: _TrialPrep, jobs) -> _TrialPrep:
    """``p`` without what the relabellings do not read (the input, its order, keys and bootstrap units), its
    arrays of at least :data:`_SHARE_BYTES` shared with ``jobs``' workers (:meth:`~vpeval.pipeline.jobs.Jobs.share`:
    written once, read by each call instead of pickled with it): what a worker is sent. :func:`_opened` undoes
    the sharing."""
    q = dataclasses.replace(p, inp=None, order=None, model_idx=None, probe_idx=None, unit=None, unit_names=None,
                            key_codes={}, values=None)
    for f in dataclasses.fields(q):
        v = getattr(q, f.name)
        if isinstance(v, np.ndarray) and v.nbytes >= _SHARE_BYTES:
            setattr(q, f.name, jobs.share(v))
    return q


#: Arrays of at least this many bytes are shared with the workers rather than pickled with each call.
_SHARE_BYTES = 1 << 20


#: The per-trial arrays of a shipped member that the main process reads through the shared file afterwards.
_MAPPED = ("block", "is_tar")


def _cell_slim(p: _TrialPrep) -> _TrialPrep:
    """What a worker is sent of a member tested on cells: the cells and the class counts (``cum`` reduced to
    ``[0, n]``), none of its per-trial arrays (a keyed member keeps them here, for its ROCCH EER)."""
    return dataclasses.replace(p, inp=None, order=None, block=None, is_tar=None, cum=p.cum[[0, -1]], model_idx=None,
                               probe_idx=None, unit=None, unit_names=None, key_codes={}, values=None)


def _map_shared(p: _TrialPrep, slim: _TrialPrep) -> None:
    """Point ``p``'s per-trial arrays (:data:`_MAPPED`) at the files :func:`_slim` shared them in, read-only and
    mapped, instead of this process's own copy: the main process reads no more than their sizes once the
    relabellings and the bootstrap are on the workers (and a keyed member's ROCCH EER reads them once), so at
    1e8 trials half a gigabyte of its memory is left to the page cache, which the kernel can reclaim. Arrays the
    file holds in the same dtype only (never a narrowed one)."""
    from ..pipeline.jobs import SharedArray

    for name in _MAPPED:
        v = getattr(slim, name)
        if isinstance(v, SharedArray) and v.dtype is None:
            mapped = np.load(v.path, mmap_mode="r", allow_pickle=False)
            if mapped.dtype == getattr(p, name).dtype and mapped.shape == getattr(p, name).shape:
                setattr(p, name, mapped)


def _opened(p: _TrialPrep) -> _TrialPrep:
    """``p`` with the arrays :func:`_slim` shared read here (in the worker); ``p`` itself when none is."""
    from ..pipeline.jobs import SharedArray, opened

    shared = {f.name: opened(getattr(p, f.name)) for f in dataclasses.fields(p)
              if isinstance(getattr(p, f.name), SharedArray)}
    return dataclasses.replace(p, **shared) if shared else p


def _member_rows(p: _TrialPrep, scheme: str, sig, seed: int, bounds, t_stats):
    """eps_max and D_ECE (bits; empty where not asked) of one member's relabellings in the chunks ``bounds``
    (``(lo, hi)`` row ranges, each computed as one chunk)."""
    if p.cells is not None:  # rows in chunks of about 2**19 cell counts (arrays of a few MB)
        eps, dec = [np.empty(0)], [np.empty(0)]
        step = max(1, (1 << 19) // p.cells.size)
        for lo, hi in bounds:
            for a in range(int(lo), int(hi), step):
                tc = cell_target_rows(p.cells, p.cell_tar, seed, slice(a, min(int(hi), a + step)))
                e, d = cell_statistics(tc, p.cells, t_stats)
                eps.append(e)
                dec.append(d)
        return np.concatenate(eps), np.concatenate(dec)
    p = _opened(p)
    # float cum saves a conversion per gather of the vectorised eps_max; a large member's (pruned, a few
    # gathers a row) is read as it is, without a float copy of every block boundary
    cum_f = p.cum.astype(np.float64) if p.n_tar <= PRUNE_MIN_TARGETS else p.cum
    eps, dec = [np.empty(0)], [np.empty(0)]
    for lo, hi in bounds:
        tb = _trial_target_blocks(p, scheme, sig, seed, slice(int(lo), int(hi)))
        if "eps_max" in t_stats:
            eps.append(eps_max_from_target_blocks(tb, cum_f) / _LN2)
        if "d_ece" in t_stats:
            dec.append(_d_ece_rows(p, tb))
    return np.concatenate(eps), np.concatenate(dec)


def _trial_bootstrap(preps, n_boot: int, seed: int, t_stats):
    """:func:`~vpeval.analysis.resample._bootstrap_worst` of a trial-scheme family (no 1-to-N members), from the
    members' tie blocks alone (:func:`_slim` preps): what a worker is given."""
    preps = [_opened(p) for p in preps]
    return _bootstrap_worst(preps, [], "trial", None, n_boot, seed, t_stats, [])


def log10_distinct(scheme: str, S, preps, rows=None) -> float:
    """log10 of the number of distinct relabellings of ``scheme`` (:mod:`vpeval.analysis.secrecy`'s docstring)."""
    if scheme == "speaker":
        return math.lgamma(S.size + 1) / math.log(10)
    if scheme == "speaker-row":
        return float(np.log10(rows.n_cand).sum())
    if scheme == "probe":
        return min(float(np.log10(p.group_size).sum()) for p in preps)
    return min((math.lgamma(p.n + 1) - math.lgamma(p.n_tar + 1) - math.lgamma(p.n - p.n_tar + 1))
               / math.log(10) for p in preps)
