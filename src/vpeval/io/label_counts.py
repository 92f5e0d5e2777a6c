"""What a label mapping did with the rows of a score file: how many rows each label had, which class it was read
as, and how many were ignored on purpose (``--ignore``): recorded by :func:`vpeval.io.readers.read_columns` in
``Trials.meta["label_counts"]`` and said on the terminal, in ``--json`` and in report.json, so that no row is
left out silently."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["label_counts", "label_counts_text"]


def label_counts(counts: Mapping[str, int], target, nontarget, ignore) -> dict:
    """The record of a label mapping.

    Parameters
    ----------
    counts : mapping str -> int
        Rows per label value, every row of the file (header and blank lines not counted).
    target, nontarget, ignore : set of str
        The label values read as target, as non-target, and ignored.

    Returns
    -------
    dict
        ``{"rows": n, "target": {label: n}, "nontarget": {label: n}, "ignored": {label: n}}``: every label the
        mapping names (0 for one that no row has), in sorted order; ``rows`` is the sum of all.

    Examples
    --------
    >>> label_counts({"target": 2, "spoof": 5, "nontarget": 3}, {"target"}, {"nontarget"}, {"spoof"})
    {'rows': 10, 'target': {'target': 2}, 'nontarget': {'nontarget': 3}, 'ignored': {'spoof': 5}}
    """
    def part(labels):
        return {str(lab): int(counts.get(lab, 0)) for lab in sorted(labels)}

    return {"rows": int(sum(counts.values())), "target": part(target), "nontarget": part(nontarget),
            "ignored": part(ignore)}


def _labelled(by_label: dict) -> str:
    """``'spoof'`` or ``'a' (3) or 'b' (4)``."""
    if len(by_label) == 1:
        return repr(next(iter(by_label)))
    return " or ".join(f"{lab!r} ({n:,})" for lab, n in by_label.items())


def label_counts_text(counts: dict, unit: str = "lines") -> str:
    """One sentence for the terminal and the report page: what was ignored, of how many ``unit`` (lines of a text
    file, rows of a table), and what was read as each class.

    Examples
    --------
    >>> c = label_counts({"target": 1484, "nontarget": 5768, "spoof": 22296}, {"target"}, {"nontarget"}, {"spoof"})
    >>> label_counts_text(c)
    "ignored 22,296 lines labelled 'spoof' (of 29,548); read 1,484 target trials (label 'target') and 5,768 non-target trials (label 'nontarget')"
    >>> label_counts_text(label_counts({"1": 2, "0": 3}, {"1"}, {"0"}, set()))
    "read 5 lines: 2 target trials (label '1') and 3 non-target trials (label '0')"
    """
    def cls(by_label, word):
        n = sum(by_label.values())
        return f"{n:,} {word} trials (label{'s' if len(by_label) > 1 else ''} {_labelled(by_label)})"

    read = f"{cls(counts['target'], 'target')} and {cls(counts['nontarget'], 'non-target')}"
    ignored = counts.get("ignored") or {}
    if not ignored:
        return f"read {counts['rows']:,} {unit}: {read}"
    n = sum(ignored.values())
    return f"ignored {n:,} {unit} labelled {_labelled(ignored)} (of {counts['rows']:,}); read {read}"
