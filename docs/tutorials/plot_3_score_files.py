"""
A score-file user: EER, minDCF, Cllr and the verdict from files
===============================================================

You already have an ASV system and its output: a Kaldi/VoicePrivacy key (``enroll test target|nontarget``) and
a score file (``enroll test score``), or the ``score label`` lines anonymization toolkits write (``1`` target,
``0`` non-target). vpeval reads them unchanged and strictly (an unknown label, a NaN, a duplicated or missing
trial is an error naming the file and the line), and computes every verification and disclosure metric, each
with its definition and unit named, and the verdict.

To stay self-contained the tutorial first *writes* such files: cosine scores of the bundled example's McAdams
system on **oa** trials, as a Kaldi recipe would have written them, and a ``score label`` file of the worst-case
paper's counterexample. From "Read the files" on, it is what you would run on your own.
"""

# %%
# Make a Kaldi key and score file
# -------------------------------
# :func:`vpeval.build_trials` scores every anonymized probe against every original speaker model (the oa trials of
# the VoicePrivacy protocol; 50 target and 5,500 non-target trials here). We write them in the Kaldi formats.

import tempfile
import textwrap
from pathlib import Path

import numpy as np

import vpeval


def find_example() -> Path:
    """The bundled example of a clone of the repository (beside ``src/``, or above the working folder)."""
    here = [Path(vpeval.__file__).resolve().parents[2], Path.cwd(), *Path.cwd().parents]
    for root in here:
        if (root / "examples" / "librispeech-mini").is_dir():
            return root / "examples" / "librispeech-mini"
    raise FileNotFoundError("run this from a clone of the vpeval repository (examples/librispeech-mini)")


embeddings = vpeval.read_embeddings(find_example() / "embeddings_mfcc.npz")
embeddings = embeddings.select(np.isin(embeddings.condition, ["original", "anonymized"]))
oa = vpeval.build_trials(embeddings, ["oa"], backend=vpeval.CosineBackend())["oa"]

folder = Path(tempfile.mkdtemp(prefix="vpeval-tutorial-"))
with open(folder / "trials", "w") as key, open(folder / "scores", "w") as scores:
    for enroll, test, score, target in zip(oa.enroll, oa.test, oa.scores, oa.is_target):
        key.write(f"{enroll} {test} {'target' if target else 'nontarget'}\n")
        scores.write(f"{enroll} {test} {float(score)!r}\n")
print((folder / "trials").read_text().splitlines()[:2], (folder / "scores").read_text().splitlines()[:2], sep="\n")

# %%
# Read the files
# --------------
# :func:`vpeval.read_trials_scores` joins the key and the scores on ``(enroll, test)`` and returns
# :class:`vpeval.Trials`: the scores, the labels and the keys, with ``tar`` and ``non`` as arrays.

trials = vpeval.read_trials_scores(folder / "trials", folder / "scores")
tar, non = trials.tar, trials.non
print(f"{tar.size} target and {non.size} non-target trials")

# %%
# Verification metrics
# --------------------
# The EER has several definitions and vpeval names each: the ROCCH-EER (BOSARIS convex hull, the default, never
# above 50 %), the interpolated step-curve EER, and the closest-point EER of the ASVspoof/VoicePrivacy scripts.
# minDCF is normalised (at most 1); these raw cosine scores are not calibrated LLRs, so Cllr of the scores
# themselves means little and minCllr (after the best monotonic calibration, PAV) is the one to read, in bits.
# Linkability is Gomez-Barrero's global D<->sys.

metrics = {
    "EER, ROCCH (%)": 100 * vpeval.rocch_eer(tar, non),
    "EER, interpolated (%)": 100 * vpeval.interp_eer(tar, non),
    "EER, closest point (%)": 100 * vpeval.closest_eer(tar, non),
    "minDCF (p_target = 0.05)": vpeval.min_dcf(tar, non, p_target=0.05),
    "minCllr (bits)": vpeval.min_cllr(tar, non),
    "linkability D<->sys": vpeval.linkability(tar, non),
}
for name, value in metrics.items():
    print(f"{name:26s} {value:8.4f}")

# %%
# Calibrated LLRs
# ---------------
# To read Cllr, turn the scores into log-likelihood ratios (nats) first. :class:`vpeval.PAVCalibrator` fitted on
# the same trials gives minCllr again (PAV is what defines it); a calibrator fitted on separate development
# trials gives the actual Cllr of a deployed attacker. :func:`vpeval.crossval_llr` fits without each trial's own
# speakers.

tar_llr, non_llr = vpeval.pav_llr(tar, non)
print(f"Cllr of PAV LLRs: {vpeval.cllr(tar_llr, non_llr):.4f} bits (= minCllr)")

# %%
# Worst-case disclosure: privacy-ZEBRA
# ------------------------------------
# :func:`vpeval.zebra` gives the expected disclosure D_ECE (bits) and the worst case eps_max, the largest
# absolute LLR of the Laplace-smoothed PAV fit, in nats with bits and log10 beside it, and its tag (A to F).

z = vpeval.zebra(tar, non)
print(f"D_ECE {z.d_ece_bits:.3f} bits; eps_max {z.eps_max:.3f} nats = {z.eps_max_bits:.2f} bits = "
      f"{z.eps_max_log10:.2f} log10; tag {z.tag}")

# %%
# A DET curve
# -----------
# :class:`vpeval.plots.DETDisplay` draws the operating points on probit axes with the ROCCH-EER marked.

import matplotlib.pyplot as plt

from vpeval.plots import DETDisplay

fig, ax = plt.subplots(figsize=(4.5, 4.5))
DETDisplay.from_scores(tar, non, label="McAdams, oa, cosine").plot(ax)
fig.tight_layout()

# %%
# The verdict
# -----------
# :func:`vpeval.score_verdict` decides for one score input. With Kaldi keys it knows the speakers (the enrollment
# keys are speaker ids; a probe's speaker is the model it is the target of), so its permutation test relabels
# whole speakers and its default delta is half of one speaker's share of the trials.

verdict = vpeval.score_verdict(trials, name="McAdams oa cosine")
print(verdict.verdict.upper())
print(textwrap.fill(verdict.sentence, 110))

# %%
# ``partial``: the scores do carry identity (perfect secrecy is rejected), but 50 target trials cannot show
# how much beyond the budget, nor certify that it stays within it. ``vpeval verify scores --key trials`` prints
# the same verdict and every metric above from the command line.
#
# A ``score label`` file, and why the EER is not enough
# -----------------------------------------------------
# The worst-case paper's counterexample (:func:`vpeval.simulate.counterexample`): targets and non-targets share
# the mean and differ in spread (standard deviations 2 and 1). The EER stays near 50 %, yet both tails of the
# score axis are far likelier for targets. We write it as a ``score label`` file and read it back.

sim = vpeval.simulate.counterexample(seed=0)
with open(folder / "score_label.txt", "w") as f:
    f.writelines(f"{float(s)!r} 1\n" for s in sim.tar)
    f.writelines(f"{float(s)!r} 0\n" for s in sim.non)

labelled = vpeval.read_score_label(folder / "score_label.txt")
z = vpeval.zebra(labelled.tar, labelled.non)
print(f"ROCCH-EER {100 * vpeval.eer(labelled.tar, labelled.non):.1f} %, "
      f"eps_max {z.eps_max_bits:.2f} bits (tag {z.tag})")
counter = vpeval.score_verdict(labelled)
print(counter.verdict.upper())
print(textwrap.fill(counter.reason, 110))
print(f"(unrounded: lower bound {counter.profile.eps_low:.4f} bits, budget {counter.budget_bits:.4f} bits)")

# %%
# The EER reads close to "perfect", the verdict says ``leaks``: its privacy profile takes every interval of
# scores *and its complement* as a decision region, so an attacker who answers "same speaker" on both tails is
# counted. A ``score label`` file names no speakers, so trials are relabelled one by one and taken as
# independent; the verdict's ``warnings`` say so:

for w in counter.warnings:
    print("-", textwrap.fill(w, 106, subsequent_indent="  "))
