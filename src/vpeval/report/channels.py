"""The attack channels on the first screen: the voice-channel verdict beside the all-channel verdict, per system.

Rendered inside the verdict section (after the verdict table) when the audit fielded content or prosody attackers
(:func:`vpeval.analysis.channels.channel_verdicts`); report.json holds the same as ``channel_verdicts``.
"""

from __future__ import annotations

from .document import Paragraph, Table, merge_sentences

__all__ = ["channel_blocks", "CHANNELS_NOTE"]

#: What the channels are, said once under the table.
CHANNELS_NOTE = (
    "Channels: voice = speaker embeddings; content = what is said (word and character n-gram TF-IDF of the "
    "transcripts, fitted on the training speakers); prosody = how it is said (F0, energy, speaking-rate and pause "
    "statistics); fused = linear fusion of the trained attackers of every channel. An anonymizer is asked to hide "
    "the voice; the all-channel verdict says whether who speaks is hidden at all.")


def _decided_by(e: dict) -> str:
    """The table's "decided by" cell: the deciding channel, and the tie when another channel's attacker reaches
    the same worst case (the sentence below the table says so too)."""
    tied = e["decides"] == "voice" and e.get("voice") is not None and e["all"]["channel"] != "voice"
    return f"voice (tie with {e['all']['channel']})" if tied else e["decides"]


def channel_blocks(channels: dict[str, dict]) -> list:
    """The table (system, voice-channel verdict, all-channel verdict, deciding channel, attackers per channel)
    and, per system, the sentence saying which channel decides and the read-speech caveat (when given)."""
    if not channels:
        return []
    rows = []
    for system, e in channels.items():
        v = e.get("voice")
        rows.append([system, v["verdict"] if v else "not decided",
                     v["worst_case"]["value_bits"] if v else None, e["all"]["verdict"],
                     e["all"]["worst_case_bits"], _decided_by(e),
                     ", ".join(f"{c} {n}" for c, n in e["channels"].items())])
    blocks = [Table(["system", "voice channel", "worst case voice (bits)", "all channels",
                     "worst case all (bits)", "decided by", "attackers per channel"], rows, fmt="{:.3g}",
                    caption="The verdict twice: over the voice channel's attackers only, and over every channel's "
                            "(the verdict above); same rule, test and seed")]
    multi = len(channels) > 1
    # one paragraph for the systems' sentences, and a caveat shared by every system said once
    # (systems whose sentences differ in their numbers only share one, the numbers a / b / c)
    blocks.append(Paragraph(" ".join((f"{' / '.join(systems)}: " if multi else "") + text for systems, text in
                                     merge_sentences({s: e["sentence"] for s, e in channels.items()})), kind="p"))
    caveats = {system: e["caveat"] for system, e in channels.items() if e.get("caveat")}
    if multi and len(caveats) == len(channels) and len(set(caveats.values())) == 1:
        blocks.append(Paragraph("Every system: " + next(iter(caveats.values())), kind="warning"))
    else:
        for system, c in caveats.items():
            blocks.append(Paragraph((f"{system}: " if multi else "") + c, kind="warning"))
    blocks.append(Paragraph(CHANNELS_NOTE, kind="note"))
    return blocks
