"""``vpeval plan``: how much data certifies a perfectly secret anonymizer at a delta and budget (the same bound as
the verdict's, :func:`vpeval.analysis.profiles.plan_design`)."""

from __future__ import annotations

from typing import Optional

import typer

from .common import AlphaOpt, BudgetOpt, DeltaOpt, echo_json, handle_errors

_HELP = """How many speakers, probes per speaker and trials a perfectly secret system needs before the verdict can
say 'protects' (its privacy profile's upper bound within the budget at delta), computed from the verdict's own
bound on a typical perfectly secret sample (a lower bound: real scores need a little more; docs/verdict_calibration.md).

\b
Designs:
  --speakers S --probes P [--distractors D]   every probe against every one of S + D models (an audit)
  --targets N_T --nontargets N_N              a score file with these trial counts"""


def register(app: typer.Typer) -> None:
    """Add the ``plan`` command to ``app``."""

    @app.command("plan", help=_HELP)
    @handle_errors
    def plan(
        speakers: Optional[int] = typer.Option(None, "--speakers", min=2, help="Evaluation speakers S (audits)."),
        probes: Optional[int] = typer.Option(None, "--probes", min=1, help="Probes per speaker (audits)."),
        distractors: int = typer.Option(0, "--distractors", min=0, help="Enrolled models never probed (audits)."),
        targets: Optional[int] = typer.Option(None, "--targets", min=1, help="Target trials (score files)."),
        nontargets: Optional[int] = typer.Option(None, "--nontargets", min=1, help="Non-target trials (score files)."),
        design_effect: float = typer.Option(1.0, "--design-effect", min=1.0,
                                            help="Kish design effect of both classes (1: independent trials; the "
                                                 "simulated speaker structure of docs/verdict_calibration.md gives "
                                                 "about 4); of the targets alone with --nontarget-design-effect."),
        nontarget_design_effect: Optional[float] = typer.Option(
            None, "--nontarget-design-effect", min=1.0, help="Design effect of the non-targets (default: "
            "--design-effect), as an inconclusive verdict's words give it."),
        attackers: int = typer.Option(1, "--attackers", min=1, help="Attackers x trial types the bounds are shared "
                                      "by (alpha / m each)."),
        budget_bits: Optional[float] = BudgetOpt,
        delta: Optional[float] = DeltaOpt,
        alpha: float = AlphaOpt,
        as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    ) -> None:
        from ..analysis.profiles import check_budget, plan_design
        from ..analysis.verdict import DEFAULT_BUDGET_BITS
        from ..errors import VpevalError

        b = DEFAULT_BUDGET_BITS if budget_bits is None else check_budget(budget_bits)
        audit = speakers is not None or probes is not None
        if audit == (targets is not None or nontargets is not None):
            raise VpevalError("give either --speakers and --probes (an audit) or --targets and --nontargets (a score "
                              "file)")
        if audit and (speakers is None or probes is None):
            raise VpevalError("an audit needs both --speakers and --probes")
        if not audit and (targets is None or nontargets is None):
            raise VpevalError("a score file needs both --targets and --nontargets")
        got = plan_design(speakers=speakers, probes=probes, distractors=distractors, n_tar=targets, n_non=nontargets,
                          budget_bits=b, delta=delta, alpha=alpha, deff=design_effect, n_members=attackers,
                          deff_non=nontarget_design_effect)
        if as_json:
            echo_json(got)
            return
        typer.echo(got["sentence"])
