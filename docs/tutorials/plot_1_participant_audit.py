"""
A VoicePrivacy participant: how much does each anonymizer hide?
===============================================================

You built an anonymizer and want the numbers the VoicePrivacy Challenge asks for: the EER of an ASV attacker on
**oa** trials (original enrollment, anonymized probes: the *ignorant* attacker) and on **aa** trials (both sides
anonymized: the *lazy-informed* attacker, or *semi-informed* when its back-end was trained on anonymized speech),
per gender, next to the systems you compare against.

This tutorial audits the three systems of the bundled example (McAdams, WORLD/VTLN warping and resampling) from
their MFCC-statistics embeddings with two attackers per training condition, all in Python and without writing a
file. ``vpeval demo`` (or ``vpeval audit mcadams/ vtln/ resample/ --vpc-table results.csv``) does the same with
every extractor, back-end, fusion and channel and writes the HTML report; here we keep to the cheapest real path.
"""

# %%
# The example's folders
# ---------------------
# A system folder holds ``embeddings_<extractor>.npz`` with an ``original`` and an ``anonymized`` row per
# evaluation utterance, ``metadata.csv`` (speaker, sex, ...) and ``train/``: 150 further speakers, disjoint from the
# evaluation ones, on which an attacker may train its back-end. The McAdams system sits at the top of the example,
# the other two in subfolders.

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


EXAMPLE = find_example()
FOLDERS = {"mcadams": EXAMPLE, "vtln": EXAMPLE / "vtln", "resample": EXAMPLE / "resample"}


def one_run(es):
    """Keep the original rows and the (first) anonymized run of an embedding set."""
    return es.select(np.isin(es.condition, ["original", "anonymized"]))


systems = {name: {"mfcc": one_run(vpeval.read_embeddings(d / "embeddings_mfcc.npz"))}
           for name, d in FOLDERS.items()}
train = {name: {"mfcc": one_run(vpeval.read_embeddings(d / "train" / "embeddings_mfcc.npz"))}
         for name, d in FOLDERS.items()}
metadata = {name: pd.read_csv(d / "metadata.csv", dtype=str) for name, d in FOLDERS.items()}

es = systems["mcadams"]["mfcc"]
conditions = sorted(map(str, set(es.condition)))
print(f"{es.embeddings.shape[0]} rows of {es.embeddings.shape[1]} dimensions, conditions {conditions}, "
      f"{len(set(es.speaker_id))} speakers")

# %%
# Audit the three systems
# -----------------------
# :func:`vpeval.audit` builds the trials of every attacker, computes every metric with speaker-bootstrap
# intervals and returns the audit as data (:class:`vpeval.AuditResult`). The attackers here: plain cosine scoring
# (nothing trained) and a PLDA back-end trained once on the training speakers' original speech and once on their
# speech anonymized by the same system. The verdict (tutorial 2) is skipped with ``verdict_perm=None``; the
# number of bootstrap replicates is kept small to stay fast.

result = vpeval.audit(
    systems, train=train, metadata=metadata, types=("oa", "aa"), backends=("cosine", "plda"), fusion=False,
    attributes=(), group_by="sex", n_boot=50, n_perm=20, verdict_perm=None, compare=False,
)
print(sorted(result.systems), "attackers:", list(result.systems["mcadams"].type_metrics))

# %%
# The VoicePrivacy table
# ----------------------
# ``type_metrics`` holds, per attacker and trial type, the headline numbers: the ROCCH-EER (the BOSARIS convex-hull
# EER, the default of vpeval; ``eer_interp`` is the interpolated step-curve EER), minCllr and privacy-ZEBRA's
# D_ECE in bits, eps_max in nats with its tag. An ideal anonymizer reads 50 % on both trial types.

rows = []
for system, audit in result.systems.items():
    for attacker, by_type in audit.type_metrics.items():
        for trial_type, m in by_type.items():
            rows.append({"system": system, "attacker": attacker, "trials": trial_type,
                         "EER ROCCH %": 100 * m["eer_rocch"], "EER interp %": 100 * m["eer_interp"],
                         "minCllr bits": m["min_cllr_bits"], "D_ECE bits": m["d_ece_bits"],
                         "ZEBRA tag": m["zebra_tag"]})
table = pd.DataFrame(rows).round(2)
table.pivot(index=["system", "attacker"], columns="trials", values="EER ROCCH %")

# %%
# Which attacker is strongest? On **oa** no trained back-end beats plain cosine by much: an attacker trained on
# anonymized speech meets original enrollment it was never trained for. On **aa** the PLDA trained on speech
# anonymized by the same system (semi-informed) separates the speakers almost perfectly: all three anonymizers
# keep each speaker's pseudo-voice consistent, and that consistency is what links them.
strongest = table.loc[table.groupby(["system", "trials"])["EER ROCCH %"].idxmin()]
strongest[["system", "trials", "attacker", "EER ROCCH %", "D_ECE bits", "ZEBRA tag"]]

# %%
# Per gender, with speaker-level intervals
# ----------------------------------------
# The challenge reports female and male speakers apart. ``groups`` splits every attacker's oa/aa trials by the
# sex of the enrollment speaker (``group_by="sex"``, read from the metadata) with 95 % speaker-bootstrap
# intervals: with 5 evaluation speakers per gender they are wide, which is the honest reading of so small an
# example.

rows = []
for system, audit in result.systems.items():
    for trial_type in ("oa", "aa"):
        for g in audit.groups["mfcc/cosine"][trial_type]:
            e = g.metrics["eer_rocch"]
            rows.append({"system": system, "trials": trial_type, "sex": g.group, "targets": g.n_tar,
                         "EER %": round(100 * e.value, 1),
                         "95 % interval": f"{100 * e.low:.1f} to {100 * e.high:.1f}"})
pd.DataFrame(rows).set_index(["system", "trials", "sex"])

# %%
# A picture for the paper
# -----------------------
# The strongest attacker's EER per system and trial type; the dashed line is the ideal.

import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(6, 3))
best = table.groupby(["system", "trials"])["EER ROCCH %"].min().unstack()
best.loc[list(FOLDERS)].plot.bar(ax=ax, rot=0, color=["C0", "C1"])
ax.axhline(50, color="k", ls="--", lw=1, label="ideal (50 %)")
ax.set_ylabel("lowest ROCCH-EER (%)")
ax.set_xlabel("")
ax.legend(title="trials", fontsize=8)
fig.tight_layout()

# %%
# What next
# ---------
# * ``vpeval demo`` runs the full audit of this example (22 attackers per system, every trial type, the channels
#   beyond the voice) and writes ``report.html``; ``vpeval audit sysA/ ... --vpc-table results.csv`` does it for
#   your own folders and writes the per-gender table in the challenge's columns.
# * An EER near 50 % is not the end of the story: tutorial 2 asks whether the scores carry identity at all, and
#   how much data it takes to *certify* that they do not.
