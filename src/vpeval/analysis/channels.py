"""The verdict per attack channel: the voice alone (what an anonymizer is asked to hide) and every channel together.

When an audit fields content or prosody attackers (:mod:`vpeval.pipeline.channels`), the system's verdict
(:func:`vpeval.analysis.families.audit_verdicts`) is decided over *every* attacker: all channels together.  This
module decides it a second time over the voice channel's attackers only, with the same rule and test settings,
and says which channel decides. The voice channel's test is the sub-family of the voice attackers' members in
the all-channel test (:func:`vpeval.analysis.secrecy.secrecy_test`'s ``subfamilies``): the same relabellings and
bootstrap draws, its own max-T over its own columns, so no second set of relabellings is computed (with speaker
relabelling it is bit for bit the test of the voice attackers alone). The decision: the channel of the attacker
behind the all-channel worst case when that worst case is above the voice channel's (otherwise the voice
decides), and whether the verdicts differ.
"""

from __future__ import annotations

from dataclasses import replace

from .families import audit_verdicts, channel_of, verdict_dict
from .verdict import DEFAULT_BUDGET_BITS, decide

__all__ = ["channel_verdicts", "channel_of", "has_channels", "voice_view"]


def has_channels(res) -> bool:
    """Whether a :class:`~vpeval.pipeline.audit.SystemAudit` has attackers outside the voice channel."""
    return any(channel_of(res, a) != "voice" for a in res.trials)


def voice_view(res):
    """The :class:`~vpeval.pipeline.audit.SystemAudit` restricted to its voice-channel attackers (a shallow copy)."""
    keep = {a for a in res.trials if channel_of(res, a) == "voice"}

    def sub(d):
        return {k: v for k, v in d.items() if k in keep}

    return replace(res, trials=sub(res.trials), type_metrics=sub(res.type_metrics), linkage=sub(res.linkage),
                   probe_speakers=sub(res.probe_speakers), matrices=sub(res.matrices),
                   attackers=sub(res.attackers))


def channel_verdicts(results: dict, verdicts: dict, *, n_perm: int = 999, n_boot: int = 200, seed: int = 0,
                     alpha: float = 0.05, budget_bits: float = DEFAULT_BUDGET_BITS,
                     tests: dict | None = None, delta: float | None = None) -> dict[str, dict]:
    """Per system with non-voice attackers: the voice-channel verdict beside the all-channel one.

    Parameters
    ----------
    results : dict system -> SystemAudit
    verdicts : dict system -> dict
        The all-channel verdicts (:func:`~vpeval.analysis.families.audit_verdicts`).
    n_perm, n_boot, seed, alpha, budget_bits, delta
        The settings the all-channel verdicts were decided with (the voice verdict uses the same).
    tests : dict system -> SecrecyTest, optional
        The all-channel tests (``audit_verdicts(..., tests=...)``): a system's voice verdict is then decided from
        its test's ``subfamilies["voice"]`` (the same relabellings); without it, or for a system whose test has no
        voice sub-family, the voice attackers are tested on their own with the same settings.

    Returns
    -------
    dict system -> dict
        ``voice``: the voice-channel verdict's dict (or None when it could not be decided, with ``voice_note``);
        ``all``: ``{verdict, worst_case_bits, attacker, channel}`` of the all-channel verdict; ``decides``: the
        channel of the all-channel worst case when the all-channel verdict differs from the voice-channel one or its
        worst case is above the voice's as shown (3 significant digits), else ``"voice"`` (a tie leaves the
        decision to the voice); ``channels``: attackers per channel; ``sentence``: one sentence
        saying which channel decides; ``caveat`` (only then): a sentence when at least half of the content
        channel's multi-utterance speakers read from one chapter each (:func:`vpeval.pipeline.channels
        .shared_chapters`). Systems with voice attackers only are left out.
    """
    out = {}
    for system, res in results.items():
        if system not in verdicts or not has_channels(res):
            continue
        full = verdicts[system]
        counts: dict[str, int] = {}
        for a in res.trials:
            counts[channel_of(res, a)] = counts.get(channel_of(res, a), 0) + 1
        entry = {"channels": dict(sorted(counts.items())), "voice": None}
        voice = voice_view(res)
        sub = getattr((tests or {}).get(system), "subfamilies", {}).get("voice")
        if sub is not None:
            entry["voice"] = verdict_dict(decide(sub, budget_bits, delta), voice)
        elif voice.trials:
            got, why = audit_verdicts({system: voice}, n_perm=n_perm, n_boot=n_boot, seed=seed, alpha=alpha,
                                      budget_bits=budget_bits, delta=delta)
            entry["voice"] = got.get(system)
            if system in why:
                entry["voice_note"] = why[system]
        worst = full["worst_case"]
        channel = channel_of(res, worst["attacker"])
        v = entry["voice"]
        # a channel decides only by raising the worst case above the voice's as the report shows it (3 significant
        # digits) or by changing the verdict; a tie (e.g. both at the ceiling of the trial counts) leaves it to
        # the voice
        above = v is None or v["verdict"] != full["verdict"] or (
            worst["value_bits"] > v["worst_case"]["value_bits"] + 1e-9
            and f"{worst['value_bits']:.3g}" != f"{v['worst_case']['value_bits']:.3g}")
        decides = channel if above else "voice"
        entry["all"] = {"verdict": full["verdict"], "worst_case_bits": worst["value_bits"],
                        "attacker": worst["attacker"], "channel": channel}
        entry["decides"] = decides
        entry["sentence"] = _sentence(entry)
        caveat = _content_caveat(res)
        if caveat:
            entry["caveat"] = caveat
        out[system] = entry
    return out


def _content_caveat(res) -> str | None:
    """The LibriSpeech-like-data caveat when the content channel's speakers read one chapter each."""
    from ..pipeline.channels import shared_chapters

    for att in res.attackers.values():
        if getattr(att, "channel", "") == "content" and att.es is not None:
            n, one = shared_chapters(att.es)
            if n and one >= n / 2:
                return (f"Read speech: {one} of the {n} evaluation speakers with several utterances read them all "
                        "from one chapter (LibriSpeech-like ids <speaker>-<chapter>-<n>), so their enrollment and "
                        "trial utterances share a book's names and topic; the content channel links them much more "
                        "easily than it would in conversational speech (docs/channels.md: content-disjoint trials).")
    return None


def _sentence(e: dict) -> str:
    a, v = e["all"], e["voice"]
    others = ", ".join(c for c in e["channels"] if c != "voice") or "no other channel"
    if v is None:
        return (f"All channels together: {a['verdict']} (worst case {a['worst_case_bits']:.3g} bits, "
                f"{a['attacker']}, {a['channel']} channel); the voice channel alone could not be decided.")
    vb = v["worst_case"]["value_bits"]
    if e["decides"] == "voice" and a["channel"] != "voice":
        # a tie (e.g. both at the ceiling the trial counts set): the worst case names the other channel's attacker,
        # so the sentence does too rather than crediting the voice alone
        return (f"The voice and {a['channel']} channels tie: voice alone {v['verdict']} (worst case {vb:.3g} bits); "
                f"all channels together {a['verdict']}, the same worst case reached by {a['attacker']} "
                f"({a['channel']} channel, the attacker of the worst case); the {others} attackers reach no more "
                "than the voice attackers.")
    if e["decides"] == "voice":
        return (f"The voice channel decides: voice alone {v['verdict']} (worst case {vb:.3g} bits), all channels "
                f"together {a['verdict']}; the {others} attackers reach no more than the voice attackers.")
    if v["verdict"] == a["verdict"]:
        return (f"The {a['channel']} channel raises the worst case: voice alone {v['verdict']} (worst case "
                f"{vb:.3g} bits); with the {others} attackers the same verdict, worst case {a['worst_case_bits']:.3g} "
                f"bits ({a['attacker']}).")
    return (f"The {a['channel']} channel decides: voice alone {v['verdict']} (worst case {vb:.3g} bits); with "
            f"the {others} attackers, {a['verdict']} instead (worst case {a['worst_case_bits']:.3g} bits, "
            f"{a['attacker']}), so what is said or how it is said discloses more than the voice.")
