"""Report sections beyond identity: embedding structure (CCA, Procrustes), soft-biometric leakage (SBLS) and
voice distinctiveness (DeID, G_VD).

The analyses that compute them from an :class:`EmbeddingSet` run in :mod:`vpeval.pipeline.analyses` (re-exported
here); this module only lays the results out.
"""

from __future__ import annotations

import numpy as np

from ..metrics.distinctiveness import VoiceSimilarity
from ..metrics.embedding import EmbeddingStructure
# the analyses run in the pipeline layer; re-exported here, where they were first defined
from ..pipeline.analyses import (  # noqa: F401
    MIN_TRAIN_PER_CLASS,
    AttributeAudit,
    analyse_attributes,
    analyse_distinctiveness,
    analyse_embedding_structure,
    matched_pairs,
    utterance_attributes,
)
from .document import Draw, Figure, Paragraph, Section, Table
from ..plots.displays import legend_label

__all__ = [
    "matched_pairs",
    "analyse_embedding_structure",
    "AttributeAudit",
    "utterance_attributes",
    "analyse_attributes",
    "analyse_distinctiveness",
    "embedding_section",
    "attributes_section",
    "distinctiveness_section",
]


# ------------------------------------------------------------------------------------------------ helpers


# ----------------------------------------------------------------------------------------------- sections


def embedding_section(results: dict[str, EmbeddingStructure], *, section_id: str = "embedding",
                      title: str = "Embedding structure: CCA and Procrustes") -> Section:
    """CCA and Procrustes per attacker under two named protocols, each beside its permutation baseline (mean,
    95th percentile, p-value and its floor): vpeval's held-out protocol and the paper's in-sample one, with
    the paper's reference levels beside the latter."""
    from ..metrics.embedding import PAPER_REFERENCE_BASELINE as REF

    sec = Section(section_id, title)
    first = next(iter(results.values()))
    sec.blocks.append(Paragraph(
        "Is the anonymized embedding space a linear image of the original one? Two protocols, both on the "
        "matched original/anonymized pairs of the same utterances. Held-out (vpeval): pairs are split by "
        "speaker (about 80 % training, 20 % held out; no speaker on both sides); the maps are fitted on the "
        "training pairs and scored on the held-out pairs; baseline: the training pairing is shuffled, the "
        "held-out pairs are not, so the baseline sits near 0. In-sample (the paper's protocol): the maps are "
        "fitted and scored on all pairs; baseline: the pairing of all pairs is shuffled and scored on the "
        "shuffled pairs themselves, so it measures overfitting and sits well above 0 (the paper reports about "
        "{rc:g} for CCA top-10 and {rp0:g}-{rp1:g} for Procrustes; the level depends on the number of pairs and "
        "the dimension). Only the in-sample rows can be set beside the paper's tables; only the held-out rows "
        "measure structure that generalises to unseen speakers. CCA: mean of the first {k} canonical "
        "correlations (SVD of the cross-covariance of PCA-reduced, ridge-whitened views). Procrustes: mean "
        "cosine similarity of pairs after the orthogonal rotation (views centred and L2-normalised). Baselines: "
        "{p} shuffles (seeds {s0}..{s1}); a value above the baseline's 95th percentile is linear structure "
        "beyond chance. Both scores are unitless in [-1, 1]; an ideal anonymizer sits at its baseline.".format(
            rc=REF["cca_top10"], rp0=REF["procrustes_cosine"][0], rp1=REF["procrustes_cosine"][1],
            k=first.n_components, p=len(first.permutation_seeds), s0=first.permutation_seeds[0],
            s1=first.permutation_seeds[-1])))
    rows, data = [], {}
    for name, r in results.items():
        for proto, cca, pro, ref_c, ref_p in (
                ("held-out (vpeval)", r.cca, r.procrustes, "-", "-"),
                ("in-sample (paper)", r.cca_insample, r.procrustes_insample, f"{REF['cca_top10']:g}",
                 "{:g}-{:g}".format(*REF["procrustes_cosine"]))):
            for label, sc, ref in ((f"CCA mean top-{r.n_components} corr.", cca, ref_c),
                                   ("Procrustes mean cosine", pro, ref_p)):
                if sc is None:
                    continue
                rows.append([name, proto, label, sc.value, sc.baseline_mean, sc.baseline_p95, ref, sc.p_value,
                             sc.p_value_floor, "yes" if sc.value > sc.baseline_p95 else "no"])
        data[name] = r.to_dict()
    sec.blocks.append(Table(
        ["attacker", "protocol", "score (unitless)", "value", "baseline mean", "baseline 95th pct",
         "paper's baseline", "perm. p-value", "smallest reachable p", "above baseline"], rows,
        caption="Linear predictability of anonymized from original embeddings, held-out and in-sample (the "
                "smallest reachable permutation p-value is 1/(seeds + 1))"))
    rows2 = [[n, r.n_train, r.n_test, r.n_speakers_test, r.n_pca, r.n_train + r.n_test, r.n_pca_insample, r.seed]
             for n, r in results.items()]
    sec.blocks.append(Table(["attacker", "training pairs", "held-out pairs", "held-out speakers",
                             "PCA dims per view (held-out)", "pairs (in-sample)", "PCA dims per view (in-sample)",
                             "split seed"], rows2, caption="Split and CCA settings"))
    sec.blocks.append(Figure("embedding_structure", Draw(_draw_structure, results),
                             "Value (dot) against its permutation baseline (box: seeds; line: 95th percentile), "
                             "held-out (left of each pair) and in-sample (right; cross: the paper's baseline)."))
    sec.data = {"attackers": data}
    return sec


def _draw_structure(fig, results):
    from ..metrics.embedding import PAPER_REFERENCE_BASELINE as REF

    names = list(results)
    for j, key in enumerate(("cca", "procrustes")):
        ax = fig.add_subplot(1, 2, j + 1)
        ref = REF["cca_top10"] if key == "cca" else float(np.mean(REF["procrustes_cosine"]))
        for i, n in enumerate(names):
            for off, sc in ((-0.2, getattr(results[n], key)), (0.2, getattr(results[n], f"{key}_insample"))):
                if sc is None:
                    continue
                x = i + off
                ax.boxplot([sc.baseline], positions=[x], widths=0.3)
                ax.plot([x - 0.15, x + 0.15], [sc.baseline_p95] * 2, ":", color="grey")
                ax.plot([x], [sc.value], "o", color="C3")
                if off > 0:
                    ax.plot([x], [ref], "x", color="C0")
        ax.set_xticks(range(len(names)), [legend_label(n) for n in names], fontsize=7)
        ax.set_title("CCA (mean corr.)" if key == "cca" else "Procrustes (mean cosine)", fontsize=9)
        ax.set_ylim(-0.2, 1.05)
        ax.grid(True, alpha=0.3)


def attributes_section(results: dict[str, AttributeAudit], *, section_id: str = "attributes",
                       title: str = "Soft-biometric leakage (SBLS)") -> Section:
    """Aligned mAUC (with the unaligned one and the chosen alignment), MI, SBLS and its parts per attacker and
    condition, with chance levels and the degenerate-subgroup flag."""
    sec = Section(section_id, title)
    first = next(iter(results.values()))
    r0 = next(iter(first.results.values()))
    hard = first.variant == "labels"
    sec.blocks.append(Paragraph(
        "An attribute attacker (logistic regression on embeddings, inverse penalty C = {C:g}) is trained on "
        "original speech of {nt} speakers disjoint from the {ne} evaluation speakers and applied, frozen, to "
        "their original and anonymized utterances. {var} Permutation alignment (Seo et al.): the label "
        "permutation that maximises {obj} is applied before scoring, because an attacker whose classes come "
        "out swapped after anonymization still reveals the attribute; the chosen alignment is shown "
        "(class<-column used for it; \"identity\" = none), and the unaligned reading beside it. mAUC: mean "
        "one-vs-rest ROC AUC (chance 0.5, perfect 1). MI: mutual information between the true attribute and "
        "the attacker's aligned decision, in bits (chance 0, at most log2 K). SBLS = {a:g} P_attr + {b:g} "
        "P_assoc + {g:g} P_subgroup (omega = {o:g}); every part is in [0, 1], 1 = nothing leaks, 0 = "
        "everything leaks. Subgroup leakage L_g: the chance-normalised AUC of the members of subgroup g (by "
        "{sg}; vpeval's definition), on the aligned scores. The anonymizer protects the attribute only if the "
        "anonymized aligned mAUC falls to 0.5.".format(
            C=first.C, nt=first.n_train_speakers, ne=first.n_eval_speakers, a=r0.alpha, b=r0.beta, g=r0.gamma,
            o=r0.omega, sg=r0.subgroup_name,
            var=("Hard-prediction variant: only the attacker's argmax labels are scored; P_attr = 1 - "
                 "max(0, BA - 1/K) / (1 - 1/K) from the macro balanced accuracy BA of the aligned labels."
                 if hard else "P_attr = 1 - max(0, mAUC - 0.5) / 0.5 from the aligned mAUC (mAUC*)."),
            obj="the balanced accuracy" if hard else "the mean AUC")))
    degenerate = sorted({a for audit in results.values() for r in audit.results.values() for a in r.subgroup_same_as})
    if degenerate:
        sec.blocks.append(Paragraph(
            "Degenerate subgroups: the subgroups ({sg}) are the classes of the scored attribute(s) {a}, so "
            "P_subgroup measures that attribute again rather than a disparity between independent demographic "
            "groups (for a binary attribute both L_g coincide and the disparity term is 1 by construction). "
            "Give another metadata column as the subgroup (vpeval attributes --subgroup COLUMN, or "
            "analyse_attributes(subgroup=...)) for a meaningful P_subgroup.".format(
                sg=r0.subgroup_name, a=", ".join(degenerate)), kind="note"))
    for name, audit in results.items():
        few = audit.few_training()
        if few:
            sec.blocks.append(Paragraph(
                f"{name}: too few training utterances for the attribute attacker ("
                + "; ".join(f"{a}: " + ", ".join(f"{c} {n}" for c, n in by.items()) for a, by in few.items())
                + f"; fewer than {MIN_TRAIN_PER_CLASS} per class). Its mAUC and SBLS are shown but flagged: an "
                "attacker fitted on so few examples understates what an adversary with more data would infer.",
                kind="warning"))
    rows, parts, data = [], [], {}
    for name, audit in results.items():
        for cond, r in audit.results.items():
            for a, lk in r.attributes.items():
                k = len(lk.classes)
                conf = ", ".join(f"{t}->{d}: {int(lk.confusion[i, j])}" for i, t in enumerate(lk.classes)
                                 for j, d in enumerate(lk.classes))
                rows.append([name, cond, a, lk.n, lk.alignment.describe(), lk.mauc, lk.mauc_unaligned, 0.5,
                             lk.balanced_accuracy, lk.balanced_accuracy_unaligned, 1.0 / k, lk.mi_bits,
                             float(np.log2(k)), conf])
            parts.append([name, cond, r.p_attr, r.p_assoc, r.p_subgroup, r.sbls, r.p_attr_unaligned,
                          r.sbls_unaligned, ", ".join(f"{g}: {v:.3f}" for g, v in r.subgroup_leakage.items()),
                          "yes (= " + ", ".join(r.subgroup_same_as) + ")" if r.subgroup_degenerate else "no"])
        data[name] = audit.to_dict()
    sec.blocks.append(Table(
        ["attacker", "condition", "attribute", "utterances", "alignment (class<-column)", "mAUC (aligned)",
         "mAUC (unaligned)", "chance mAUC", "balanced acc. (aligned)", "balanced acc. (unaligned)",
         "chance bal. acc.", "MI (bits)", "max MI log2 K (bits)", "aligned decisions (true->decided: count)"],
        rows, caption="Attribute inference"))
    sec.blocks.append(Table(
        ["attacker", "condition", "P_attr", "P_assoc", "P_subgroup", "SBLS", "P_attr (unaligned)",
         "SBLS (unaligned)", "L_g per subgroup", "degenerate subgroups"], parts,
        caption="SBLS and its parts (unitless, 1 = no leakage; chance-level attacker: about 1). The paper's "
                "readings are aligned; the unaligned ones are shown for comparison only."))
    sec.blocks.append(Figure("attributes_mauc", Draw(_draw_mauc, results),
                             "Aligned mAUC of the frozen attribute attacker on original and anonymized speech; "
                             "dotted: chance 0.5."))
    sec.data = {"attackers": data}
    return sec


def _draw_mauc(fig, results):
    ax = fig.add_subplot(1, 1, 1)
    names = list(results)
    conds = list(next(iter(results.values())).results)
    width = 0.8 / max(1, len(conds))
    for j, cond in enumerate(conds):
        vals = [np.mean([lk.mauc for lk in results[n].results[cond].attributes.values()]) for n in names]
        ax.bar(np.arange(len(names)) + (j - (len(conds) - 1) / 2) * width, vals, width, label=legend_label(cond))
    ax.axhline(0.5, ls=":", color="grey")
    ax.set_xticks(range(len(names)), [legend_label(n) for n in names], fontsize=8)
    ax.set_ylabel("mAUC (mean over attributes)")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)


def distinctiveness_section(results: dict[str, VoiceSimilarity], *, section_id: str = "distinctiveness",
                            title: str = "Voice distinctiveness: DeID and G_VD") -> Section:
    """D_diag of M_oo, M_oa, M_aa, DeID and G_VD per attacker, with their ideal values."""
    sec = Section(section_id, title)
    first = next(iter(results.values()))
    sec.blocks.append(Paragraph(
        "Voice similarity matrices over the {n} speakers with several utterances (VoicePrivacy 2020/2022; Noé "
        "et al. 2020): entry (A, B) = {ent} over all pairs of an utterance of A and a different utterance of "
        "B (cosine scores; calibration: {cal}, fitted on {fit}). {vp} D_diag = |mean diagonal - mean off-diagonal| "
        "({unit}). DeID = 1 - D_diag(oa)/D_diag(oo): 1 = "
        "de-identified (ideal), 0 = as identifiable as the original. G_VD = 10 log10(D_diag(aa)/D_diag(oo)) "
        "dB: 0 dB = anonymized voices as distinguishable as the originals (ideal), negative = less. {cnt}".format(
            n=first.speakers.size, cal=first.calibration,
            ent=("sigmoid of the mean " if first.entry == "sigmoid" else "mean ")
            + ("raw cosine score" if first.calibration == "none" else "calibrated LLR")
            + (" (nats)" if first.entry == "llr" and first.calibration != "none" else ""),
            unit=("unitless, entries in (0, 1)" if first.entry == "sigmoid"
                  else "cosine units" if first.calibration == "none" else "nats"),
            vp=("Unlike the public VoicePAT code, which averages uncalibrated scores, the LLRs are calibrated."
                if first.calibration != "none" else
                "Warning: raw scores are averaged (VoicePAT's behaviour), for comparison only."),
            fit="each matrix's own same/different-speaker pairs" if first.fit_on == "each" else "the oo pairs",
            cnt=("Calibration trials: every ordered pair of utterances, so each unordered oo and aa pair (whose "
                 "score is symmetric) counts twice and all three matrices have the same number of trials; the "
                 "Laplace pseudo-counts then weigh the same in each, and an anonymizer that changes nothing gets "
                 "DeID 0 and G_VD 0 dB exactly." if first.pairs == "ordered" else
                 "Calibration trials: each unordered oo and aa pair once (oa: every ordered pair, all distinct)."))))
    rows, data = [], {}
    for name, r in results.items():
        rows.append([name, r.speakers.size, r.d_oo, r.d_oa, r.d_aa, 100 * r.deid, 100.0, r.gvd_db, 0.0])
        data[name] = r.to_dict()
    sec.blocks.append(Table(
        ["attacker", "speakers", "D_diag(oo)", "D_diag(oa)", "D_diag(aa)", "DeID (%)", "ideal DeID (%)",
         "G_VD (dB)", "ideal G_VD (dB)"], rows, caption="De-identification and voice distinctiveness"))
    sec.blocks.append(Figure("similarity_matrices", Draw(_draw_matrices, results),
                             "Voice similarity matrices (rows: first condition, columns: second; colour: entry in "
                             "(0, 1)). A bright diagonal means the speakers are told apart.",
                             size=(7.5, 2.6 * len(results))))
    sec.data = {"attackers": data}
    return sec


def _draw_matrices(fig, results):
    names = list(results)
    for i, n in enumerate(names):
        r = results[n]
        for j, (key, m) in enumerate((("oo", r.m_oo), ("oa", r.m_oa), ("aa", r.m_aa))):
            ax = fig.add_subplot(len(names), 3, 3 * i + j + 1)
            lim = dict(vmin=0, vmax=1) if r.entry == "sigmoid" else {}
            ax.imshow(m, cmap="viridis", **lim)
            ax.set_title(legend_label(f"{n}: M_{key}"), fontsize=8)
            ax.set_xticks([])
            ax.set_yticks([])


def sbls_sensitivity_section(results: dict, *, section_id: str = "sbls-sensitivity",
                             title: str = "SBLS sensitivity: omega and weights") -> Section:
    """The beyond-EER paper's sensitivity study: each system's SBLS over an omega sweep and a weight sweep
    (:func:`vpeval.metrics.sbls_sensitivity.sbls_sweep`, from the measured parts), with the ranking under each.

    ``results``: system label -> :class:`~vpeval.metrics.attributes.SBLSResult` (e.g. the anonymized condition)."""
    from ..metrics.sbls_sensitivity import sbls_sweep

    sw = sbls_sweep(results)
    ref = sw["reference"]
    names = sw["systems"]
    sec = Section(section_id, title)
    sec.blocks.append(Paragraph(
        "SBLS = alpha P_attr + beta P_assoc + gamma P_subgroup and P_subgroup's omega are choices, not measurements. "
        "Each row recomputes every system's SBLS from its measured parts (nothing is refitted): first omega swept "
        f"with the weights at ({ref['alpha']:g}, {ref['beta']:g}, {ref['gamma']:g}), then the weights swept with "
        f"omega = {ref['omega']:g}. Ranking: most private (highest SBLS) first; 'changed' marks a ranking that "
        "differs from the one at the paper's defaults."))
    rows = [[r["sweep"], r["alpha"], r["beta"], r["gamma"], r["omega"]] + [r["sbls"][n] for n in names]
            + [" > ".join(r["ranking"]), "changed" if r["ranking_changed"] else ""] for r in sw["rows"]]
    sec.blocks.append(Table(["sweep", "alpha", "beta", "gamma", "omega"] + [f"SBLS {n}" for n in names]
                            + ["ranking", ""], rows, fmt="{:.3g}",
                            caption="SBLS per system under each setting"))
    changed = [r for r in sw["rows"] if r["ranking_changed"]]
    sec.blocks.append(Paragraph(
        f"The ranking changes under {len(changed)} of {len(sw['rows'])} settings." if changed else
        "The ranking of the systems is the same under every setting.", kind="note" if changed else "p"))
    sec.data = sw
    return sec

