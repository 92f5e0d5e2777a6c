"""Small helpers that several test files share (imported as ``from helpers import ...``; tests/ is on sys.path)."""

from __future__ import annotations


def shuffled(rnd, *seqs) -> tuple[list, ...]:
    """Each of ``seqs`` as a new list, shuffled by ``rnd`` (a ``random.Random``, e.g. hypothesis' ``st.randoms()``)
    one after the other: the order-invariance tests' second input."""
    out = tuple(list(s) for s in seqs)
    for s in out:
        rnd.shuffle(s)
    return out


def count_calls(monkeypatch, owner, name: str) -> list:
    """Replace ``owner.name`` (a module attribute) for the test by a wrapper that appends ``1`` to the returned list
    on every call and then calls the original with the same arguments: ``len(calls)`` counts the calls, and
    ``calls.clear()`` starts a new count."""
    calls: list = []
    original = getattr(owner, name)

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls
