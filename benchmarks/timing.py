"""The per-name stopwatch the small benchmark scripts share (profile_cost.py, relabel_kernel.py): every call of
``timings(name, fn)`` runs ``fn``, adds its wall time to ``timings.times[name]`` and returns its result, so the
floor and the operations can be interleaved in one loop and their medians compared."""

from __future__ import annotations

import time


class Timings:
    """``times``: name -> list of seconds, in call order."""

    def __init__(self):
        self.times: dict[str, list[float]] = {}

    def __call__(self, name: str, fn):
        t = time.perf_counter()
        out = fn()
        self.times.setdefault(name, []).append(time.perf_counter() - t)
        return out
