"""Docstring sections that many score functions repeat word for word, written once (internal).

A docstring line holding nothing but ``{name}`` (indented like the section around it) stands for the section
``name`` of :data:`SECTIONS`; :func:`fill_doc` puts the text in its place when the function is defined, so
``help()``, the rendered documentation and the doctests read the full docstring. No other braces are
touched: a docstring may hold ``{"a", "b"}`` option sets and dict literals as before.
"""

from __future__ import annotations

import re

SECTIONS = {
    # the (tar, non) parameters of the verification metrics
    "parameters_tar_non": """\
Parameters
----------
tar, non : array_like of shape (n_tar,), (n_non,)
    Target and non-target scores.""",
    # the inputs of the rank summaries of vpeval.ranks (a score matrix, or its RankCounts)
    "parameters_rank_matrix": """\
Parameters
----------
score_matrix : array_like or dask.array of shape (n_probes, N), or RankCounts
true_index : array_like of int, shape (n_probes,) (None with RankCounts)
ties : {"fractional", "optimistic", "pessimistic"}
chunk_rows : int, optional""",
    "raises_rank_matrix": """\
Raises
------
InvalidScoresError
    As :func:`rank_counts`; unknown tie rule.""",
    # what as_tar_non refuses (vpeval._checks)
    "raises_empty_nan": """\
Raises
------
InvalidScoresError
    Empty arrays or NaN.""",
    # what every anonymizer of vpeval.audio.anonymize returns (the level rule of its base module)
    "returns_anonymized_waveform": """\
Returns
-------
ndarray of shape (n_samples,), float64
    The anonymized samples at the input's RMS level, peak at most 32767/32768.""",
}

_PLACEHOLDER = re.compile(r"^([ \t]*)\{(\w+)\}[ \t]*$", re.MULTILINE)


def fill_doc(obj):
    """Decorator: replace every placeholder line ``{name}`` of ``obj.__doc__`` by ``SECTIONS[name]``, each of
    its lines indented like the placeholder; ``obj`` itself is returned. An unknown name raises KeyError (at
    import, so a typo cannot ship)."""

    def section(m: re.Match) -> str:
        indent, name = m.group(1), m.group(2)
        return "\n".join(indent + line if line else line for line in SECTIONS[name].splitlines())

    if obj.__doc__:
        obj.__doc__ = _PLACEHOLDER.sub(section, obj.__doc__)
    return obj
