"""The words of the verdict block, defined a click away: a folded section at the end of the report's main page,
or of its appendix page where it has one (:func:`glossary_section`), linked from the verdict block. The documentation site's glossary
(``docs/glossary.md``) gives the same words with their papers; ``tests/test_report_pages.py`` checks that every
word here is there too.
"""

from __future__ import annotations

from .document import Links, Section, Table

__all__ = ["GLOSSARY", "glossary_section", "glossary_links"]

#: (word as the report writes it, definition in one or two sentences). Units: bits (log base 2).
GLOSSARY: tuple[tuple[str, str], ...] = (
    ("verdict", "protects / partial / inconclusive / leaks: the answer to 'does the anonymizer hide who is "
                "speaking?' for every attacker at once (the rule is under the verdict block)."),
    ("attacker", "A speaker-verification system that compares two recordings and scores how likely they are of "
                 "the same speaker: an extractor of speaker embeddings, a back-end that scores a pair, and what it "
                 "was trained on (original or anonymized speech)."),
    ("trial", "One comparison an attacker makes: a target trial pairs two recordings of the same speaker, a "
              "non-target trial of different speakers."),
    ("privacy profile eps(delta)", "The most an attacker's decisions can favour 'same speaker' over 'different "
                                   "speakers' (or the reverse), as a likelihood ratio of 2^eps, on all but a share "
                                   "delta of the trials. Hypothesis-testing differential privacy; in bits."),
    ("delta", "The share of trials the certificate may leave out. Its default, half of one speaker's share, keeps "
              "a certificate from holding while a single speaker is fully exposed."),
    ("budget", "The largest eps a system may show and still 'protect': default 3.32 bits, a likelihood ratio of "
               "10 (privacy-ZEBRA's tag A)."),
    ("eps low, eps high", "The 95 % bounds of eps(delta), holding for every attacker and delta at once: 'leaks' "
                          "needs eps low above the budget, 'protects' eps high within it."),
    ("eps_max", "The worst case at delta = 0: the largest likelihood ratio of any single decision, in bits "
                "(Laplace-smoothed PAV; privacy-ZEBRA). No finite sample bounds it from above: evidence only."),
    ("noise floor", "What eps_max reads on these trial counts when the scores carry no identity at all (the 95th "
                    "percentile under relabelling): eps_max near it is no evidence of a leak."),
    ("family-wise p", "The p-value of the test of perfect secrecy over every attacker, trial type and statistic at "
                      "once (max-T permutation test, speakers relabelled): small means the scores carry identity."),
    ("exposed speakers", "Evaluation speakers whose own trials reject perfect secrecy at the family-wise level: "
                         "individually linkable. In a 1-to-N search, one identified beyond the budget (its own model "
                         "ranking first often enough) makes the verdict 'leaks'."),
    ("EER", "Equal error rate: where misses and false alarms are equally frequent (ROCCH-EER unless named). An "
            "average over trials: 50 % can hide single speakers who leak."),
    ("oo, oa, aa", "The VoicePrivacy trial types: enrollment then probe condition, o original, a anonymized. oa: an "
                   "attacker holding original recordings (ignorant); aa: one comparing anonymized recordings "
                   "(lazy- or semi-informed); oo: the attacker's skill on original speech (reference)."),
    ("ALID", "Average local information disclosure over the probes of a 1-to-N search, in bits (at most log2 N): "
             "how much a search among N speakers tells about who spoke."),
    ("rank-1", "The share of probes whose own speaker scores highest among the N enrolled speakers; chance 1 / N."),
    ("cross-profile", "Beyond-EER's test of distinct pseudo-identities across profile keys (ideal EER 0 %); its "
                      "same-source subset asks whether a renewed key hides its predecessor."),
)


def glossary_section(page: str = "") -> Section:
    """The section ``glossary``: :data:`GLOSSARY` as a table, on ``page`` (``""``: the main page, folded there;
    open on an appendix page, so that the verdict block's link lands on the definitions)."""
    sec = Section("glossary", "Words used in the verdict", folded=not page, page=page)
    sec.blocks.append(Table(["word", "meaning"], [list(w) for w in GLOSSARY],
                            caption="Definitions with their papers: the documentation's glossary (docs/glossary.md)"))
    sec.data = {"words": dict(GLOSSARY)}
    return sec


def glossary_links() -> Links:
    """The verdict block's line to :func:`glossary_section`."""
    return Links("eps(delta), delta, budget, eps_max, noise floor, exposed speakers, oa/aa, ALID: see", [(
        "Words used in the verdict", "glossary")])
