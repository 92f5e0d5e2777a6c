"""``vpeval embedding``, ``vpeval attributes`` and ``vpeval distinctiveness``: privacy beyond identity."""

from __future__ import annotations

import math
from pathlib import Path
from typing import List, Optional

import typer

from .common import echo_json, handle_errors, read_metadata_csv, say_unused_conditions

__all__ = ["register"]

_EMB_HELP = """\
Embedding structure: is the anonymized embedding space a linear image of the original one?

EMBEDDINGS is an .npz or .parquet embeddings file (vpeval.io.embeddings) holding the 'original' and the
'anonymized' embedding of the same utterances (same utterance_id). Pairs are split by speaker (about 80/20);
reports the mean of the top-k held-out canonical correlations (CCA) and the mean held-out cosine after an
orthogonal Procrustes rotation, each beside its permutation baseline (training pairing shuffled; mean and
95th percentile over --permutations seeds seed+1..seed+N). Beside them, the paper's in-sample protocol
(fitted and measured on all pairs; baseline: pairing of all pairs shuffled), whose baseline the paper puts
at about 0.734 (CCA top-10) and 0.29-0.31 (Procrustes). Unitless, in [-1, 1].
"""

_ATTR_HELP = """\
Soft-biometric leakage (SBLS): what a frozen attribute attacker infers from the embeddings.

A logistic regression per --attribute (a column of the --metadata CSV, e.g. sex) is trained on original
speech of the cohort speakers (those with a single utterance) and applied to the original and anonymized
utterances of the evaluation speakers (several utterances). Reports mAUC (chance 0.5), MI in bits, and
SBLS = alpha P_attr + beta P_assoc + gamma P_subgroup (1 = nothing leaks). As in Seo et al., the class
scores are permutation-aligned first (the label permutation maximising mAUC; a swapped attacker still
leaks); the chosen alignment and the unaligned readings are printed beside. --hard-labels scores only the
attacker's argmax labels (P_attr from the balanced accuracy, chance 1/K). The metadata CSV has columns
utterance_id[,condition],<attributes>.
"""

_DIST_HELP = """\
Voice distinctiveness: DeID and G_VD (VoicePrivacy 2020/2022) from voice similarity matrices of calibrated
LLRs (cosine scores; PAV with Laplace smoothing by default), over the speakers with several utterances.
DeID 1 = de-identified, 0 = as identifiable as the original; G_VD 0 dB = distinctiveness preserved.
"""


def _read_list(path: Optional[Path]):
    from ..io.readers import read_id_list

    return None if path is None else read_id_list(path, "speaker id")


def register(app: typer.Typer) -> None:
    """Add the ``embedding``, ``attributes`` and ``distinctiveness`` commands to ``app``."""

    @app.command("embedding", help=_EMB_HELP)
    @handle_errors
    def embedding(
        embeddings: Path = typer.Argument(..., help="Embeddings file (.npz or .parquet)."),
        seed: int = typer.Option(0, min=0, help="Seed of the speaker split; permutations use seed+1..seed+N."),
        permutations: int = typer.Option(
            99, "--permutations", help="Shuffles of the pairing per baseline (99: the p-value can reach 0.01)."),
        components: int = typer.Option(10, "--components", help="Canonical correlations averaged."),
        test_size: float = typer.Option(0.2, "--test-size", help="Smallest held-out share of pairs."),
        json_out: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
    ) -> None:
        from ..io.embeddings import read_embeddings
        from ..metrics.embedding import PAPER_REFERENCE_BASELINE
        from ..report.beyond import analyse_embedding_structure

        es = read_embeddings(embeddings)
        unused = say_unused_conditions(es, embeddings)  # e.g. a further profile run: counted, never silent
        r = analyse_embedding_structure(es, seed=seed, n_permutations=permutations, n_components=components,
                                        test_size=test_size)
        if json_out:
            echo_json({"input": str(embeddings), "extractor": es.extractor,
                       **({"set_aside_rows": unused} if unused else {}), **r.to_dict()})
            return
        from .console import Console
        from rich.table import Table

        con = Console()
        con.print(f"[bold]{embeddings}[/bold] ({es.extractor}): {r.n_train} training pairs, {r.n_test} held-out "
                  f"pairs of {r.n_speakers_test} speakers; CCA on {r.n_pca} PCA dims per view (in-sample: "
                  f"{r.n_pca_insample} dims, all {r.n_train + r.n_test} pairs)")
        t = Table(title=f"Linear structure (baselines: {len(r.permutation_seeds)} shuffles, "
                        f"seeds {r.permutation_seeds[0]}..{r.permutation_seeds[-1]})")
        for c in ("protocol", "score", "value", "baseline mean", "baseline 95th pct", "paper's baseline",
                  "p-value", "smallest p"):
            t.add_column(c, justify="right")
        ref = PAPER_REFERENCE_BASELINE
        for proto, cca, pro, rc, rp in (
                ("held-out (vpeval)", r.cca, r.procrustes, "-", "-"),
                ("in-sample (paper)", r.cca_insample, r.procrustes_insample, f"{ref['cca_top10']:g}",
                 "{:g}-{:g}".format(*ref["procrustes_cosine"]))):
            for label, sc, rv in ((f"CCA mean top-{r.n_components}", cca, rc), ("Procrustes mean cosine", pro, rp)):
                if sc is not None:
                    t.add_row(proto, label, f"{sc.value:.4f}", f"{sc.baseline_mean:.4f}", f"{sc.baseline_p95:.4f}",
                              rv, f"{sc.p_value:.3f}", f"{sc.p_value_floor:.3f}")
        con.print(t)

    @app.command("attributes", help=_ATTR_HELP)
    @handle_errors
    def attributes(
        embeddings: Path = typer.Argument(..., help="Embeddings file (.npz or .parquet)."),
        metadata: Path = typer.Option(..., "--metadata", help="CSV utterance_id[,condition],<attributes>."),
        attribute: List[str] = typer.Option(["sex"], "--attribute", help="Metadata column(s) (repeatable)."),
        subgroup: Optional[str] = typer.Option(None, "--subgroup",
                                               help="Column of the demographic subgroups (default: first attribute)."),
        train_speakers: Optional[Path] = typer.Option(
            None, "--train-speakers", help="File of training speaker ids (default: single-utterance speakers)."),
        eval_speakers: Optional[Path] = typer.Option(
            None, "--eval-speakers", help="File of evaluation speaker ids (default: multi-utterance speakers)."),
        c: float = typer.Option(0.1, "--C", help="Inverse L2 penalty of the logistic attacker."),
        alpha: float = typer.Option(0.4, help="Weight of P_attr."),
        beta: float = typer.Option(0.4, help="Weight of P_assoc."),
        gamma: float = typer.Option(0.2, help="Weight of P_subgroup."),
        omega: float = typer.Option(0.7, help="Worst-group weight inside P_subgroup."),
        hard_labels: bool = typer.Option(False, "--hard-labels",
                                         help="Score the attacker's argmax labels only (hard-prediction variant)."),
        json_out: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
    ) -> None:
        from ..io.embeddings import read_embeddings
        from ..metrics.attributes import check_weights
        from ..report.beyond import analyse_attributes

        check_weights(alpha, beta, gamma)
        es = read_embeddings(embeddings)
        unused = say_unused_conditions(es, embeddings)
        audit = analyse_attributes(
            es, read_metadata_csv(metadata), attribute, subgroup=subgroup, train_speakers=_read_list(train_speakers),
            eval_speakers=_read_list(eval_speakers), C=c, alpha=alpha, beta=beta, gamma=gamma, omega=omega,
            variant="labels" if hard_labels else "scores", source=str(metadata))
        if json_out:
            echo_json({"input": str(embeddings), "metadata": str(metadata), "extractor": es.extractor,
                       **({"set_aside_rows": unused} if unused else {}), **audit.to_dict()})
            return
        from .console import Console
        from rich.table import Table

        con = Console()
        con.print(f"[bold]{embeddings}[/bold] ({es.extractor}): attacker trained on {audit.n_train_utterances} "
                  f"original utterances of {audit.n_train_speakers} speakers, evaluated on {audit.n_eval_speakers} "
                  "other speakers")
        t = Table(title="Attribute inference, permutation-aligned (chance: mAUC 0.5, MI 0 bits)")
        for col in ("condition", "attribute", "n", "alignment", "mAUC", "mAUC unaligned", "balanced acc.",
                    "MI (bits)", "log2 K (bits)"):
            t.add_column(col, justify="right")
        for cond, r in audit.results.items():
            for a, lk in r.attributes.items():
                t.add_row(cond, a, str(lk.n), lk.alignment.describe(), f"{lk.mauc:.4f}", f"{lk.mauc_unaligned:.4f}",
                          f"{lk.balanced_accuracy:.4f}", f"{lk.mi_bits:.4f}", f"{math.log2(len(lk.classes)):.4f}")
        con.print(t)
        r0 = next(iter(audit.results.values()))
        t = Table(title=f"SBLS = {r0.alpha:g} P_attr + {r0.beta:g} P_assoc + {r0.gamma:g} P_subgroup "
                        f"(omega {r0.omega:g}; 1 = no leakage; {r0.variant})")
        for col in ("condition", "P_attr", "P_assoc", "P_subgroup", "SBLS", "P_attr unaligned", "SBLS unaligned"):
            t.add_column(col, justify="right")
        for cond, r in audit.results.items():
            t.add_row(cond, f"{r.p_attr:.4f}", f"{r.p_assoc:.4f}", f"{r.p_subgroup:.4f}", f"{r.sbls:.4f}",
                      f"{r.p_attr_unaligned:.4f}", f"{r.sbls_unaligned:.4f}")
        con.print(t)
        if r0.subgroup_degenerate:
            con.print(f"Note: the subgroups ({r0.subgroup_name}) are the classes of the attribute(s) "
                      f"{', '.join(r0.subgroup_same_as)}: P_subgroup measures that attribute again, not a "
                      "disparity between independent groups (use --subgroup with another column).")

    @app.command("distinctiveness", help=_DIST_HELP)
    @handle_errors
    def distinctiveness(
        embeddings: Path = typer.Argument(..., help="Embeddings file (.npz or .parquet)."),
        calibration: str = typer.Option("pav-laplace", help="pav-laplace, logistic or none (raw scores)."),
        fit_on: str = typer.Option("each", "--fit-on", help="each (per matrix) or oo (one map from oo)."),
        entry: str = typer.Option("sigmoid", help="sigmoid (published definition) or llr (mean LLR, nats)."),
        pairs: str = typer.Option("ordered", help="Calibration trials of oo/aa: ordered (each unordered pair "
                                                 "twice, as many as oa; default) or unordered (once)."),
        json_out: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
    ) -> None:
        from ..io.embeddings import read_embeddings
        from ..report.beyond import analyse_distinctiveness

        es = read_embeddings(embeddings)
        unused = say_unused_conditions(es, embeddings)
        r = analyse_distinctiveness(es, calibration=calibration, fit_on=fit_on, entry=entry, pairs=pairs)
        if json_out:
            echo_json({"input": str(embeddings), "extractor": es.extractor,
                       **({"set_aside_rows": unused} if unused else {}), **r.to_dict()})
            return
        typer.echo(f"{embeddings} ({es.extractor}): {r.speakers.size} speakers, {r.n_utterances} utterances; "
                   f"calibration {r.calibration} fitted on {r.fit_on} ({r.pairs} pairs), entries {r.entry}")
        typer.echo(f"D_diag: oo {r.d_oo:.4f}  oa {r.d_oa:.4f}  aa {r.d_aa:.4f}")
        typer.echo(f"DeID  = {100 * r.deid:.2f} %  (ideal 100 %)")
        typer.echo(f"G_VD  = {r.gvd_db:.3f} dB (ideal 0 dB)")
