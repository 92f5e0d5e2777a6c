"""The :class:`Trials` container shared by readers, protocols and reports."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._checks import as_scores
from ..errors import InvalidScoresError

__all__ = ["Trials"]


@dataclass(frozen=True, repr=False)
class Trials:
    """A set of scored verification trials.

    Attributes
    ----------
    scores : ndarray of shape (n,), float64
        One score per trial, oriented so that higher means "more likely target".
    is_target : ndarray of shape (n,), bool
        True for target (same-speaker, mated) trials.
    enroll, test : ndarray of shape (n,), str, or None
        The trial key (enrollment model id, test utterance id) when the source had one.
    source : str
        Where the trials came from (a path or a protocol name), for messages and reports.
    """

    scores: np.ndarray
    is_target: np.ndarray
    enroll: np.ndarray | None = None
    test: np.ndarray | None = None
    source: str = "<arrays>"
    meta: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        s = np.asarray(self.scores)
        if s.size == 0:  # an empty selection is a legal (if useless) trial set
            s = s.astype(np.float64).reshape(-1)
        else:
            s = as_scores(s, f"{self.source}: scores")
        raw = np.asarray(self.is_target)
        if raw.dtype.kind == "b":
            t = raw
        elif raw.dtype.kind in "iu" and np.isin(raw, (0, 1)).all():
            t = raw.astype(bool)
        else:
            raise InvalidScoresError(
                f"{self.source}: is_target must be booleans (or 0/1 integers), got dtype {raw.dtype}")
        if s.ndim != 1 or t.shape != s.shape:
            raise InvalidScoresError(
                f"{self.source}: scores {s.shape} and is_target {t.shape} must be 1-D of equal length"
            )
        object.__setattr__(self, "scores", s)
        object.__setattr__(self, "is_target", t)
        for name in ("enroll", "test"):
            v = getattr(self, name)
            if v is not None:
                v = np.asarray(v, dtype=str)
                if v.shape != s.shape:
                    raise InvalidScoresError(f"{self.source}: {name} has shape {v.shape}, expected {s.shape}")
                object.__setattr__(self, name, v)

    @property
    def tar(self) -> np.ndarray:
        """Target scores, float64, shape (n_tar,)."""
        return self.scores[self.is_target]

    @property
    def non(self) -> np.ndarray:
        """Non-target scores, float64, shape (n_non,)."""
        return self.scores[~self.is_target]

    def __len__(self) -> int:
        return self.scores.shape[0]

    def __repr__(self) -> str:
        # a summary, not the arrays: a million-trial set must not flood a traceback or a notebook
        keys = "enroll+test" if self.enroll is not None and self.test is not None else (
            "enroll" if self.enroll is not None else "test" if self.test is not None else "none")
        n_tar = int(np.count_nonzero(self.is_target))
        return (f"Trials(n={len(self)}, targets={n_tar}, non_targets={len(self) - n_tar}, keys={keys}, "
                f"source={self.source!r})")

    def sorted_classes(self) -> tuple[np.ndarray, np.ndarray]:
        """``(np.sort(tar), np.sort(non))`` (:func:`vpeval.blocks.sorted_pair`), read-only, sorted on the first
        call and kept for the next ones: the reader's repeated-lines check, the verdict and the figures of one
        report read the same sorted classes instead of sorting millions of scores three times. Not pickled."""
        from ..blocks import sorted_pair

        return self._kept("_sorted", lambda: sorted_pair(self.tar, self.non))

    def tie_blocks(self):
        """:func:`vpeval.blocks.tie_blocks` of the trials (:class:`vpeval.blocks.TieBlocks`, int64 counts,
        read-only arrays), merged from :meth:`sorted_classes` on the first call and kept for the next ones: the
        verdict's relabellings and the report's DET and ECE figures read the same blocks instead of merging
        millions of scores twice. Not pickled."""
        from ..blocks import merge_sorted

        return self._kept("_blocks", lambda: merge_sorted(*self.sorted_classes()))

    def kept_tie_blocks(self):
        """The blocks :meth:`tie_blocks` made and kept, or None when nothing asked for them yet (a caller that
        can do with less memory, e.g. `vpeval verify --no-verdict`, then makes its own with int32 counts)."""
        return self.__dict__.get("_blocks")

    _KEPT = ("_sorted", "_blocks")  # the attributes _kept() fills: derived from the trials, never pickled

    def _kept(self, attr: str, make):
        """``make()`` on the first call for ``attr`` (one of :data:`_KEPT`), its arrays made read-only, and the
        same object afterwards (the instance is frozen: set through ``object.__setattr__``)."""
        kept = self.__dict__.get(attr)
        if kept is None:
            kept = make()
            for a in (kept if isinstance(kept, tuple) else (kept.values, kept.n_tar, kept.n_non)):
                a.flags.writeable = False
            object.__setattr__(self, attr, kept)
        return kept

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k not in self._KEPT}

    def select(self, mask) -> "Trials":
        """The trials where the boolean ``mask`` is true."""
        m = np.asarray(mask, dtype=bool)
        return Trials(
            self.scores[m], self.is_target[m],
            None if self.enroll is None else self.enroll[m],
            None if self.test is None else self.test[m],
            self.source, dict(self.meta),
        )
