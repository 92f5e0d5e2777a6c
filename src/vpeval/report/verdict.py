"""The verdict block the page opens with: per system the verdict, the privacy profile at delta that decides it
(lower bound, estimate, upper bound), the worst case at delta = 0 as evidence, the speakers behind it and the EER
as the average beside it. It only renders the verdicts that
:mod:`vpeval.analysis.verdict` decides (their ``to_dict()`` form); the rule is written there and in
``docs/report.md``.
"""

from __future__ import annotations

from ..analysis.verdict import (INCONCLUSIVE, LEAKS, PARTIAL, PROTECTS, VERDICT_RULE, VERDICTS, deciding_attacker,
                                exposed_names)
from .document import Draw, Figure, Paragraph, Section, Table, merge_sentences
from .units import UNITS_NOTE

__all__ = ["PROTECTS", "PARTIAL", "LEAKS", "INCONCLUSIVE", "VERDICTS", "VERDICT_RULE", "verdict_rows",
           "verdict_section", "profile_figure", "profile_reading", "MAX_PANELS"]

_CLASSES = {LEAKS: "leak", PARTIAL: "partial", PROTECTS: "chance", INCONCLUSIVE: "ok"}
VERDICT_HEADER = ["system", "verdict", "delta (%)", "eps low (bits)", "eps high (bits)",
                  "deciding attacker", "eps_max, noise floor (bits)", "p family-wise", "exposed speakers",
                  "lowest ROCCH-EER (%)"]


def _speakers(v: dict, short: bool = False) -> str:
    ex = v["exposed_speakers"]
    if not ex:
        return ("none" if short else "none above the family-wise threshold") \
            if v["units"] == "evaluation speakers" else "n/a (no speaker labels)"
    return f"{len(ex)} of {v['n_units']}" + ("" if short else f": {exposed_names(ex)}")


def _p_cell(v: dict):
    """The family-wise p-value, as ``"<= p"`` when it is the smallest the relabellings can give
    (``1 / (n_perm + 1)``: the data may support a smaller one)."""
    p = v["p_value_familywise"]
    n_perm = (v.get("test") or {}).get("n_perm")
    return f"≤ {p:.3g}" if n_perm and p <= 1.0 / (n_perm + 1) + 1e-12 else p


def verdict_rows(verdicts: dict[str, dict]) -> list[list]:
    """One row per system of :data:`VERDICT_HEADER` from the verdicts' ``to_dict()`` form."""
    rows = []
    for system, v in verdicts.items():
        w = v["worst_case"]
        avg = v.get("average")
        a, t = deciding_attacker(v)
        rows.append([
            system, v["verdict"], 100 * v["delta"], v["eps_low_bits"], v["eps_high_bits"],
            a + ("" if t == "scores" else f" ({t})"),
            f"{w['value_bits']:.3g}{' (ceiling)' if w['at_ceiling'] else ''}, {w['floor_bits']:.3g}", _p_cell(v),
            _speakers(v, short=True), float("nan") if avg is None else 100 * avg["eer_rocch"],
        ])
    return rows


def profile_reading(v: dict) -> str:
    """The profile at the verdict's delta in plain words (one short sentence)."""
    pr, b = v["profile"], v["budget_bits"]
    d = f"{100 * pr['delta']:.3g} %"

    def ratio(bits):
        return "unbounded" if bits == float("inf") else f"{2 ** min(bits, 1000):.3g}x"

    if v["verdict"] == PROTECTS:
        return (f"certified: beyond {d} of the trials no decision is more than {ratio(pr['eps_high_bits'])} likelier "
                f"for one speaker than for two (budget {ratio(b)}).")
    if v["verdict"] == LEAKS and v.get("decided_by") == "speaker":
        e = next(e for e in v["exposed_speakers"] if e["speaker"] == v["identified_speakers"][0])
        return (f"leaking: speaker {e['speaker']}'s own model ranks first for {e['rank1_hits']} of its "
                f"{e['n_probes']} probes, at least {ratio(e['rank1_ratio_low_bits'])} as often as a different "
                f"speaker's (budget {ratio(b)}); the profile at {d} does not show it on more than {d} of the trials.")
    if v["verdict"] == LEAKS:
        return (f"leaking: on more than {d} of the trials some decision is at least {ratio(pr['eps_low_bits'])} "
                f"likelier for one speaker than for two (budget {ratio(b)}).")
    high = pr["eps_high_bits"]
    bound = ("the data cannot bound how much likelier a decision is for one speaker than for two" if high == float("inf")
             else f"the data allow decisions up to {ratio(high)} likelier for one speaker than for two")
    return (f"not certified at {d}: {bound} (budget {ratio(b)})"
            + ("; no leak beyond the budget is shown." if v["verdict"] == PARTIAL else "."))


def _draw_profiles(fig, panels):
    from ..plots.displays import legend_label
    from ..plots.profile import ProfileDisplay

    top = max(ProfileDisplay(*p[:6], p[7]).top_bits() for p in panels)
    cols = min(len(panels), PANELS_PER_ROW)
    rows = -(-len(panels) // cols)
    for k, (delta, eps, lo, hi, budget, d, at, label) in enumerate(panels):
        ax = fig.add_subplot(rows, cols, k + 1)
        ProfileDisplay(delta, eps, lo, hi, budget, d, label).plot(ax, top=top, legend=False)
        lo_d, est_d, hi_d = (min(x, top) for x in at)
        ax.plot([d], [est_d], "o", color="k", ms=5)
        ax.plot([d, d], [lo_d, hi_d], "-", color="k", lw=2.5)
        ax.set_title(legend_label(label), fontsize=9)  # a name is shown literally ($ would start mathtext)
        if k % cols:
            ax.set_ylabel("")


def profile_figure(verdicts: dict[str, dict]) -> Figure | None:
    """One figure of the systems' privacy profiles, a panel each (at most :data:`MAX_PANELS`, in input order):
    the family maxima over the delta grid, the band, the budget and the verdict's delta with its three numbers,
    captioned with each system's :func:`profile_reading`; None without a profile."""
    shown = [(s, v) for s, v in verdicts.items() if v.get("profile")][:MAX_PANELS]
    if not shown:
        return None
    panels = []
    for system, v in shown:
        pr = v["profile"]
        panels.append((pr["delta_grid"], pr["eps_grid_bits"], pr["eps_low_grid_bits"], pr["eps_high_grid_bits"],
                       v["budget_bits"], pr["delta"], (v["eps_low_bits"], v["eps_bits"], v["eps_high_bits"]),
                       system))
    n = len(panels)
    more = len([v for v in verdicts.values() if v.get("profile")]) - n
    return Figure("profile", Draw(_draw_profiles, panels),
                  caption="eps(delta) over every attacker (triangles: infinite), its 95 % band, the budget (red) and the "
                          "verdict's delta (dotted; its bounds in black). "
                          + " ".join(f"{s}: {profile_reading(v)}" for s, v in shown)
                          + (f" ({more} more systems: report.json, verdicts.*.profile.)" if more > 0 else ""),
                  size=(min(4.0 * n, 4.0 * PANELS_PER_ROW) if n > 1 else 5.0, 2.5 * -(-n // PANELS_PER_ROW)))


#: Panels of the profile figure on the main page (more systems: their profiles are in report.json), in rows of
#: :data:`PANELS_PER_ROW`.
MAX_PANELS = 6
PANELS_PER_ROW = 3


def verdict_section(verdicts: dict[str, dict], scorecard_rows: list[list] | None = None,
                    n_attackers: dict[str, int] | None = None, *, empty_note: str | None = None,
                    undecided: dict[str, str] | None = None) -> Section:
    """The block the page opens with: the verdict table (one row per system), then per system its sentence, the
    warnings, the scorecard of headline numbers (audits) and the rule; ``undecided`` names systems without a
    verdict and why."""
    multi = len(verdicts) + len(undecided or {}) > 1
    sec = Section("verdict", "Verdict: does the anonymizer hide who is speaking?")
    if verdicts:  # the numbers of every system first (one row each), then each system's sentence
        budgets = sorted({v["budget_bits"] for v in verdicts.values()})
        sec.blocks.append(Table(
            VERDICT_HEADER, verdict_rows(verdicts), fmt="{:.3g}",
            caption="eps low, eps high: 95 % bounds of eps(delta), the privacy profile of all attackers (no "
                    "decision over 2^eps times likelier for one speaker than for two, but on a share delta); "
                    "'protects': eps high within the budget (" + " / ".join(f"{b:.3g}" for b in budgets)
                    + " bits); 'leaks': test rejected, eps low above it (or a speaker identified); "
                    "'partial': rejected only; 'inconclusive': not rejected, not certified; eps_max, EER: evidence "
                    "(rule below)",
            cell_classes=_CLASSES))
    for system, v in verdicts.items():  # in plain words first, then the numbers behind them
        lead = f"{system}: {v['verdict']}. " if multi else f"Verdict: {v['verdict']}. "
        sec.blocks.append(Paragraph(lead + (v.get("plain") or v["sentence"]), kind=f"verdict-{v['verdict']}"))
        if v.get("plain"):  # folded under one line: the table above holds them too
            sec.blocks.append(Paragraph(v["sentence"], kind="note", summary=(
                "The numbers behind it" if not multi else f"{system}: the numbers behind it")))
    if verdicts:
        from .glossary import glossary_links

        sec.blocks.append(glossary_links())
    fig = profile_figure(verdicts)
    if fig is not None:
        sec.blocks.append(fig)
    for system, why in (undecided or {}).items():
        sec.blocks.append(Paragraph(f"{system}: no verdict: {why}.", kind="warning"))
    if not verdicts and not undecided:
        sec.blocks.append(Paragraph(empty_note or "No attack trial type (oa, aa) was computed, so there is no "
                                    "verdict.", kind="warning"))
    # a warning that differs between systems in its numbers only is said once, the numbers a / b / c
    for systems, w in merge_sentences((system, w) for system, v in verdicts.items() for w in v.get("warnings", [])):
        sec.blocks.append(Paragraph((f"{' / '.join(systems)}: " if multi else "") + w, kind="note"))
    if scorecard_rows:
        counts = sorted(set((n_attackers or {}).values())) or [0]
        n = str(counts[0]) if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"
        sec.blocks.append(Table(
            ["system", "verdict", "lowest ROCCH-EER oa (%)", "lowest ROCCH-EER aa (%)", "highest eps_max (bits)",
             "highest ALID (bits)", "highest rank-1 (%)", "rank-1 chance (%)"],
            scorecard_rows, fmt="{:.3g}",
            caption=f"Scorecard: headline numbers over the {n} attackers per system (lowest ROCCH-EER, ideal 50 %; "
                    "highest disclosure, ideal 0), each from whichever attacker reaches it; the attacker behind "
                    "each number is in report.json (verdicts, scorecard)",
            cell_classes=_CLASSES))
    sec.blocks.append(Paragraph(VERDICT_RULE, kind="note"))
    sec.blocks.append(Paragraph(UNITS_NOTE, kind="note"))
    sec.data = {"verdicts": verdicts, "not_decided": dict(undecided or {}), "rule": VERDICT_RULE,
                "vocabulary": list(VERDICTS), "units": UNITS_NOTE}
    return sec
