"""
An auditor certifying a system: the verdict and the plan
========================================================

You are asked to sign off an anonymizer before release. An EER of 30 % or 50 % answers the wrong question: it
is an average over trials, and a weak attacker reads 50 % where a trained one reads 10 %. vpeval answers with
one word per system, ``protects``, ``inconclusive``, ``partial`` or ``leaks``, decided for **every attacker
fielded at once** by the attackers' *privacy profile* eps(delta) against a *budget* (see the
:doc:`../glossary`):

* ``protects``: the simultaneous 95 % upper bound of eps(delta) is within the budget for every attacker;
* ``leaks``: a family-wise permutation test rejects perfect secrecy and some attacker's lower bound exceeds the
  budget;
* ``partial``: the test rejects, but the data cannot show a leak beyond the budget;
* ``inconclusive``: nothing shown either way, with the amount of data that would certify.

This tutorial audits the example's McAdams system with the strongest attackers it has, reads the verdict and
the profile behind it, then plans how much data a certificate needs and checks the plan on simulated perfectly
secret scores.
"""

# %%
# The strongest attackers we have
# -------------------------------
# A certificate holds only against the attackers fielded, so field the strongest: every back-end (cosine,
# centred cosine, LDA, PLDA), trained on original speech and on speech anonymized by the system itself, and one
# linear fusion per training condition. The verdict's perfect-secrecy test relabels whole speakers 999 times
# (``verdict_perm``) and recomputes every statistic of every attacker on each relabelling.

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

import vpeval


def find_example() -> Path:
    """The bundled example of a clone of the repository (beside ``src/``, or above the working folder)."""
    here = [Path(vpeval.__file__).resolve().parents[2], Path.cwd(), *Path.cwd().parents]
    for root in here:
        if (root / "examples" / "librispeech-mini").is_dir():
            return root / "examples" / "librispeech-mini"
    raise FileNotFoundError("run this from a clone of the vpeval repository (examples/librispeech-mini)")


def one_run(es):
    """Keep the original rows and the (first) anonymized run of an embedding set."""
    return es.select(np.isin(es.condition, ["original", "anonymized"]))


EXAMPLE = find_example()
evaluation = one_run(vpeval.read_embeddings(EXAMPLE / "embeddings_mfcc.npz"))
training = one_run(vpeval.read_embeddings(EXAMPLE / "train" / "embeddings_mfcc.npz"))

result = vpeval.audit(
    {"mcadams": {"mfcc": evaluation}}, train={"mcadams": {"mfcc": training}}, types=("oa", "aa"),
    group_by=None, n_boot=50, n_perm=20, verdict_perm=999, seed=0,
)
verdict = result.verdicts["mcadams"]
print(verdict["verdict"].upper())
print(textwrap.fill(verdict["sentence"], 110))

# %%
# Reading the verdict
# -------------------
# The profile is taken at ``delta = 1 / (2 S)``: half of one speaker's share of the trials (S = 10 evaluation
# speakers here, so 5 %). A single speaker whose trials are all separable therefore always blocks ``protects``.
# Each row below is one attacker on one trial type, with its bounds at that delta in bits (``inf``: these trial
# counts cannot bound it). The family's lower bound, the largest ``eps_low``, is what makes the word ``leaks``.

profile = verdict["profile"]
members = pd.DataFrame(profile["members"])[
    ["attacker", "trial_type", "n_tar", "n_non", "eps_low_bits", "eps_bits", "eps_high_bits"]]
print(f"delta = {profile['delta']:.3g} ({profile['delta_rule']}); budget {verdict['budget_bits']:.3g} bits")
members.sort_values("eps_low_bits", ascending=False).head(8).round(2)

# %%
# The privacy profile over delta
# ------------------------------
# :class:`vpeval.plots.ProfileDisplay` draws the family's eps(delta) with its simultaneous band, the budget and
# the delta that decides. Where the band's upper edge reaches the top (triangles), the data cannot bound the
# profile: that is what more data buys.

import matplotlib.pyplot as plt

from vpeval.plots import ProfileDisplay

fig, ax = plt.subplots(figsize=(6, 3.2))
ProfileDisplay(
    delta=profile["delta_grid"], eps=profile["eps_grid_bits"], eps_low=profile["eps_low_grid_bits"],
    eps_high=profile["eps_high_grid_bits"], budget_bits=verdict["budget_bits"], delta_decides=profile["delta"],
    label="mcadams: every attacker",
).plot(ax)
fig.tight_layout()

# %%
# The budget is a policy, not a measurement
# -----------------------------------------
# The default budget, log2(10) = 3.32 bits, allows no decision more than 10 times likelier for the same speaker
# than for different ones (privacy-ZEBRA's tag A). :func:`vpeval.decide` re-reads the same test under another
# budget or delta without computing anything again; ``vpeval audit --budget-bits B --delta D`` is the same from
# the command line.

test = result.tests["mcadams"]
rows = []
for budget_bits in (np.log2(10), np.log2(100), 10.0):
    v = vpeval.decide(test, budget_bits=budget_bits)
    rows.append({"budget (bits)": round(budget_bits, 2), "likelihood ratio": round(2 ** budget_bits),
                 "verdict": v.verdict, "eps_low (bits)": round(v.profile.eps_low, 2),
                 "eps_high (bits)": v.profile.eps_high})
pd.DataFrame(rows)

# %%
# With a looser budget the word becomes ``partial``: the test still rejects perfect secrecy, but the lower bound
# no longer exceeds the budget, and the upper bound (infinite with 50 target trials at 5 %) cannot certify it.
#
# How much data would certify?
# ----------------------------
# ``vpeval plan`` answers before any audio is recorded: from the verdict's own bound on a *typical perfectly
# secret* sample, how many probes (or speakers, or trials) a system that leaks nothing needs for ``protects``.
# Its Python function is :func:`vpeval.analysis.profiles.plan_design`; the counts are lower bounds (real scores
# need a little more, and trials that share a speaker are worth less than independent ones: ``deff=4``, or
# ``vpeval plan --design-effect 4``, :doc:`../verdict_calibration`).

from vpeval.analysis.profiles import plan_design
from vpeval.analysis.verdict import DEFAULT_BUDGET_BITS

designs = {
    "this example": dict(speakers=10, probes=5, distractors=101),
    "VoicePrivacy-sized": dict(speakers=29, probes=10),
    "a larger audit": dict(speakers=100, probes=10),
}
for name, design in designs.items():
    plan = plan_design(**design, budget_bits=DEFAULT_BUDGET_BITS)
    print(f"{name}:\n" + textwrap.fill(plan["sentence"], 110, initial_indent="  ", subsequent_indent="  "))

# %%
# A score file has no speakers, so its delta defaults to 1 % and the plan counts trials:

plan = plan_design(n_tar=200, n_non=2_000, budget_bits=DEFAULT_BUDGET_BITS)
print(textwrap.fill(plan["sentence"], 110))

# %%
# Checking the plan on a perfectly secret system
# ----------------------------------------------
# Scores that carry no identity at all: targets and non-targets from one distribution. With 200 target trials
# the verdict can only say ``inconclusive``, and says how much data would do; with the planned counts it
# certifies. :func:`vpeval.score_verdict` decides for one score input (the attacker is the scores as given).

rng = np.random.default_rng(7)


def secret_scores(n_tar: int, n_non: int) -> vpeval.Trials:
    """Scores of a perfectly secret system: both classes from the same normal distribution."""
    scores = rng.standard_normal(n_tar + n_non)
    labels = np.r_[np.ones(n_tar, dtype=bool), np.zeros(n_non, dtype=bool)]
    return vpeval.Trials(scores=scores, is_target=labels, source=f"{n_tar} + {n_non} secret trials")


small = vpeval.score_verdict(secret_scores(200, 2_000))
print(small.verdict, "-", small.plan)

# %%
large = vpeval.score_verdict(secret_scores(small.plan["n_tar"], small.plan["n_non"]))
print(large.verdict)
print(textwrap.fill(large.sentence, 110))

# %%
# The certificate says: on all but 1 % of the trials, no decision this attacker can make is more than
# ``2 ** eps_high`` times likelier for one speaker than for two. It holds for the attackers fielded; a stronger
# attacker is a new audit. How often each word is wrong (size, power, coverage) is measured by simulation in
# :doc:`../verdict_calibration`.
