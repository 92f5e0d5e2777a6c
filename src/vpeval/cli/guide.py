"""What ``vpeval --help`` and every ``vpeval COMMAND --help`` show beyond the options: the commands in groups, each
with a one-line description that is never cut off, examples that run as written, one meaning per short option, and
the former spellings that still work.

The app's help is click's plain layout (``rich_markup_mode=None``: no boxes, nothing in square brackets taken for
markup), so an example block is a ``\\b`` paragraph, which click prints verbatim. :data:`GUIDE` holds the group,
the line and the examples of every command (a command missing from it fails :func:`finish` at import);
:class:`GuideGroup` lists the commands by group. :data:`SHORT_OPTIONS` is the one meaning of each short option;
:func:`deprecated_short` keeps a short option that used to mean something else working, with a
:class:`~vpeval.errors.VpevalDeprecationWarning`, for one release.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import warnings

import typer
from typer.core import TyperCommand, TyperGroup

__all__ = ["PANELS", "GUIDE", "SHORT_OPTIONS", "FORMER_LONG", "DEPRECATED_SHORT", "GuideGroup", "GuideCommand",
           "deprecated_short", "epilog", "finish"]

#: The groups of ``vpeval --help``, in their order.
PANELS = ("Audits and reports", "Score files", "Audio and protocols", "Tools")

#: Each short option means one long option in every command that has it.
SHORT_OPTIONS = {"-o": "--out", "-q": "--quiet", "-j": "--jobs", "-e": "--extractor", "-c": "--condition"}

#: Former long spellings of ``--out`` (each command had one of the three): still accepted, not listed by --help.
FORMER_LONG = {"--out-dir": "--out", "--output": "--out"}

#: (command, short option) -> the long option it still stands for there, with a deprecation warning
#: (filled by :func:`deprecated_short`).
DEPRECATED_SHORT: dict[tuple[str, str], str] = {}

#: Where the examples start: the paths of the bundled example are relative to the repository's root.
_FROM_ROOT = "# from the root of a clone of vpeval (examples/librispeech-mini is the bundled example)"
_TRIALS = "vpeval trials examples/librispeech-mini/embeddings_mfcc.npz -o trials-mfcc"


@dataclasses.dataclass(frozen=True)
class Guide:
    """One command's place in ``vpeval --help``: its group, its line there and its examples (shell lines; a line
    ``# ...`` is a comment, a line ending in `` \\`` continues on the next)."""

    panel: str
    line: str
    examples: tuple[str, ...]


#: Every command, in the order ``vpeval --help`` lists it within its group.
GUIDE = {
    # ---- audits of whole systems, and the reports beyond identity
    "demo": Guide("Audits and reports", "Audit the bundled example: a ladder of six anonymizers", (
        "vpeval demo", "vpeval demo -o my-demo --figures all --vpc-table per_gender.csv")),
    "audit": Guide("Audits and reports", "Audit anonymization systems from embedding folders", (
        _FROM_ROOT,
        "vpeval audit mcadams=examples/librispeech-mini vtln=examples/librispeech-mini/vtln \\",
        "    -o audit-out",
        "# your own systems, with the per-gender VoicePrivacy table; on the challenge's own lists",
        "vpeval audit sysA/ sysB/ -o audit-report --vpc-table results.csv",
        "vpeval audit sysA/ -o audit-lists --enroll-list enrolls \\",
        "    --vpc-trials trials_f --vpc-trials trials_m")),
    "vpc-import": Guide("Audits and reports", "VoicePrivacy toolkit results with vpeval's numbers", (
        "vpeval vpc-import exp/results_summary/eval_orig/result_for_rank \\",
        "    --scores exp/ --data data/ -o vpc-out")),
    "embedding": Guide("Audits and reports", "Embedding structure: CCA and Procrustes vs baselines", (
        _FROM_ROOT, "vpeval embedding examples/librispeech-mini/embeddings_mfcc.npz")),
    "attributes": Guide("Audits and reports", "Soft-biometric leakage (SBLS), e.g. of sex", (
        _FROM_ROOT, "vpeval attributes examples/librispeech-mini/embeddings_mfcc.npz \\",
        "    --metadata examples/librispeech-mini/metadata.csv --attribute sex")),
    "distinctiveness": Guide("Audits and reports", "Voice distinctiveness DeID and G_VD (VoicePrivacy)", (
        _FROM_ROOT, "vpeval distinctiveness examples/librispeech-mini/embeddings_resemblyzer.npz")),
    # ---- score files: trials and scores from any system
    "verify": Guide("Score files", "The verdict and every metric of one score input", (
        _FROM_ROOT, "# (the first line writes Kaldi trials and scores per trial type into trials-mfcc/)", _TRIALS,
        "vpeval verify trials-mfcc/oa", "vpeval verify trials-mfcc/oa/scores --key trials-mfcc/oa/trials --json",
        "# a column file with a label mapping: ASVspoof lines '- target 18.2' (spoof: counted, skipped)",
        "vpeval verify asv_scores.txt --label-col 1 --score-col 2 \\",
        "    --target target --nontarget nontarget --ignore spoof")),
    "report": Guide("Score files", "report.html and report.json of score inputs", (
        _FROM_ROOT, _TRIALS, "vpeval report oa=trials-mfcc/oa aa=trials-mfcc/aa -o report-mfcc",
        "# your own files: `score label` lines, per gender of the enrollment speaker",
        "vpeval report orig=orig_scores.txt anon=anon_scores.txt -o my-report",
        "vpeval report orig=orig_data/ anon=anon_data/ --groups spk2gender -o my-report-groups")),
    "disclosure": Guide("Score files", "Worst-case disclosure eps_max per LLR estimator", (
        _FROM_ROOT, _TRIALS, "vpeval disclosure trials-mfcc/oa --estimators pav_laplace,gaussian",
        "# several systems: the worst-case paper's Table 3 layout",
        "vpeval disclosure oa=trials-mfcc/oa aa=trials-mfcc/aa")),
    "rank-disclosure": Guide("Score files", "Similarity-rank disclosure of a 1-to-N score table", (
        _FROM_ROOT, _TRIALS, "vpeval rank-disclosure trials-mfcc/one_to_n_oa.csv --json")),
    "linkage": Guide("Score files", "1-to-N linkage: LID, identification, linkability", (
        _FROM_ROOT, _TRIALS, "vpeval linkage trials-mfcc/one_to_n_oa.csv",
        "# the LID calibration fitted on a development table of other speakers",
        "vpeval linkage one_to_n.csv --dev dev_one_to_n.csv --calibration pav")),
    "simulate": Guide("Score files", "Scores with exact LLRs: estimators against the oracle", (
        "vpeval simulate -o sim", "vpeval verify sim/scores.txt",
        "vpeval simulate --kind one-to-n --n-speakers 20 -o sim-lid --json")),
    # ---- from audio to embeddings, trials and scores
    "segment": Guide("Audio and protocols", "Cut a Kaldi data folder into fixed-length segments", (
        "vpeval segment data/train_long/ -o data/train_3s/ --seconds 3",)),
    "anonymize": Guide("Audio and protocols", "Anonymize audio: McAdams, vtln, resample or asr-tts", (
        "vpeval anonymize audio/ anon/ --alpha speaker --seed 2024",
        "vpeval anonymize data/libri_test/ anon_k2/ --profile k2",
        "vpeval anonymize data/libri_test/ anon_vtln/ --method vtln --alpha speaker --seed 1")),
    "embed": Guide("Audio and protocols", "One speaker embedding per utterance, into an .npz", (
        "vpeval embed audio/ -o sysA/embeddings_mfcc.npz -e mfcc -c original",
        "vpeval embed anon/ -o sysA/embeddings_mfcc.npz -e mfcc -c anonymized --append",
        "vpeval embed data/libri_test/ -o sysB/embeddings_ecapa.npz -e onnx:ecapa.onnx -c original \\",
        "    --metadata-out sysB/metadata.csv")),
    "adapt": Guide("Audio and protocols", "Adapt the GE2E encoder to an anonymizer, then embed", (
        "vpeval adapt train_anon/ --original audio/ --anonymized anon/ -o sysA/embeddings_adapted.npz",)),
    "trials": Guide("Audio and protocols", "Trials and cosine scores per trial type from embeddings", (
        _FROM_ROOT, _TRIALS, "vpeval trials examples/librispeech-mini/embeddings_mfcc.npz -o trials-oa --types oa,aa",
        "# exactly the VoicePrivacy lists",
        "vpeval trials sysA/embeddings_mfcc.npz -o vpc-trials --enroll-list enrolls \\",
        "    --vpc-trials trials_f --vpc-trials trials_m")),
    "attack": Guide("Audio and protocols", "Train one attacker, write its trials and scores", (
        _FROM_ROOT, "vpeval attack examples/librispeech-mini/embeddings_mfcc.npz \\",
        "    --train examples/librispeech-mini/train/embeddings_mfcc.npz \\",
        "    --backend plda --trained-on anonymized -o attack-plda")),
    "utility": Guide("Audio and protocols", "Word error rate, pitch correlation, semantic similarity", (
        "vpeval utility --ref ref.txt --audio audio/ --anonymized anon/",
        "vpeval utility --ref ref.txt --hyp original=orig.txt --hyp anonymized=anon.txt --json",
        "vpeval utility --audio audio/ --anonymized anon/ --pitch \\",
        "    --save-pitch sysA/pitch_correlation.csv")),
    # ---- tools
    "plan": Guide("Tools", "How much data a 'protects' verdict needs", (
        "vpeval plan --speakers 29 --probes 10",
        "vpeval plan --speakers 100 --probes 10 --delta 0.05 --design-effect 4",
        "vpeval plan --targets 10000 --nontargets 100000")),
    "doctor": Guide("Tools", "Which optional pieces are installed, and how to add them", (
        "vpeval doctor", "vpeval doctor --json")),
}

#: The examples and conventions under ``vpeval --help``.
ROOT_EPILOG = ("\b\nStart here:\n  vpeval demo              # audits the bundled example (one to two minutes)\n"
               "  vpeval COMMAND --help    # the options of a command, with examples\n\n"
               "Short options mean the same in every command that has them: "
               + ", ".join(f"{s} {long}" for s, long in SHORT_OPTIONS.items()) + " (-o: the output file or folder).")


def epilog(examples) -> str:
    """The examples as a verbatim paragraph (click's ``\\b``) headed ``Examples:``."""
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in examples)


class GuideGroup(TyperGroup):
    """The ``vpeval`` group: ``--help`` lists the commands under the headings of :data:`PANELS`, in the order of
    :data:`GUIDE`, each with its full line (``short_help``; click cuts only a line derived from the help)."""

    def format_commands(self, ctx, formatter) -> None:
        order = {name: i for i, name in enumerate(GUIDE)}
        found = [(n, c) for n in self.list_commands(ctx) if (c := self.get_command(ctx, n)) is not None and not c.hidden]
        panels: dict[str, list] = {}
        for name, cmd in sorted(found, key=lambda nc: (order.get(nc[0], len(order)), nc[0])):
            panels.setdefault(getattr(cmd, "rich_help_panel", None) or "Other commands", []).append((name, cmd))
        width = max((len(n) for n, _ in found), default=0)
        limit = formatter.width - 6 - width
        for panel in [p for p in PANELS if p in panels] + [p for p in panels if p not in PANELS]:
            with formatter.section(panel):  # names padded to one width: the lines of every group start aligned
                formatter.write_dl([(name.ljust(width), cmd.get_short_help_str(limit)) for name, cmd in panels[panel]])


class GuideCommand(TyperCommand):
    """A command whose usage line shows arguments as ``SCORES`` / ``[KEY]`` (upper case, no braces) and whose
    options list leaves out the former spellings of :data:`FORMER_LONG` (they are still accepted)."""

    def collect_usage_pieces(self, ctx):
        pieces = [self.options_metavar] if self.options_metavar else []
        for p in self.get_params(ctx):
            if p.param_type_name == "argument":
                name = p.metavar or p.name.upper()
                name = name if p.required else f"[{name}]"
                pieces.append(name + ("..." if p.nargs != 1 else ""))
        return pieces

    def format_options(self, ctx, formatter) -> None:
        kept = [(p, p.opts) for p in self.params if any(o in FORMER_LONG for o in p.opts)]
        for p, opts in kept:
            p.opts = [o for o in opts if o not in FORMER_LONG]
        try:
            super().format_options(ctx, formatter)
        finally:
            for p, opts in kept:
                p.opts = opts


def deprecated_short(command: str, flag: str, long: str, param: str):
    """Decorator: keep the short option ``flag`` of ``command`` working as ``long`` (the parameter ``param``, a
    repeatable option) for one release, with a :class:`~vpeval.errors.VpevalDeprecationWarning`, after ``flag`` got
    its one meaning of :data:`SHORT_OPTIONS` elsewhere.

    ``flag`` becomes a hidden option of its own (not in --help); its values are added after those of ``long``."""
    hidden = f"deprecated_{flag.lstrip('-')}"
    DEPRECATED_SHORT[(command, flag)] = long

    def decorate(func):
        sig = inspect.signature(func, eval_str=True)
        ann = sig.parameters[param].annotation
        extra = inspect.Parameter(hidden, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                  default=typer.Option(None, flag, hidden=True), annotation=ann)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            old = kwargs.pop(hidden, None)
            if old:
                from ..errors import VpevalDeprecationWarning

                warnings.warn(f"{flag} for {long} is deprecated and stops working in the next release: write {long} "
                              f"({flag} now means {SHORT_OPTIONS[flag]} in every command that has it)",
                              VpevalDeprecationWarning, stacklevel=2)
                kwargs[param] = [*(kwargs.get(param) or []), *old]
            return func(*args, **kwargs)

        wrapper.__signature__ = sig.replace(parameters=[*sig.parameters.values(), extra])
        return wrapper

    return decorate


def finish(app: typer.Typer) -> None:
    """Give every registered command of ``app`` its group, line and examples (:data:`GUIDE`; KeyError for a command
    without an entry), the :class:`GuideCommand` layout, the silencing of warnings by its ``--quiet``, and its
    positional arguments shown as their upper-case names (SCORES), never as ``{scores}``."""
    from typer.models import ArgumentInfo

    from .common import quiet_aware

    for info in app.registered_commands:
        name = info.name or info.callback.__name__.replace("_", "-")
        g = GUIDE[name]
        info.rich_help_panel, info.short_help, info.epilog = g.panel, g.line, epilog(g.examples)
        if info.cls in (None, TyperCommand):
            info.cls = GuideCommand
        info.callback = quiet_aware(info.callback)
        for pname, p in inspect.signature(info.callback).parameters.items():
            if isinstance(p.default, ArgumentInfo) and p.default.metavar is None:
                p.default.metavar = pname.upper()
