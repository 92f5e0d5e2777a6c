"""Shared CLI pieces: input options, error handling, output."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import re
import sys
from pathlib import Path
from typing import List, Optional

import typer

from ..errors import InputFileError, VpevalError
from ..io.readers import read_columns, read_score_label, read_trials_scores
from ..io.trials import Trials

EXIT_OK = 0
EXIT_INPUT = 2  # bad input or usage
EXIT_OUTPUT = 3  # the output cannot be written: exists (without --force), another run writes it, not writable
EXIT_MEMORY = 4  # the machine's memory ran out (MemoryError), in this process or a worker
from .console import EXIT_BROKEN_PIPE  # noqa: E402  (141: the output's reader closed the pipe early)

FORMATS_HELP = """
Accepted score inputs (labels are case-sensitive; LF or CRLF; blank lines skipped; NaN is an error,
+-inf is a valid score, e.g. a calibrated LLR; a number that overflows or underflows is an error, and so is a
finite score beyond +-1e300, whose span float64 cannot compute on):

\b
  SCORES with --key KEY      Kaldi/VoicePrivacy: KEY lines `enroll test target|nontarget`,
                             SCORES lines `enroll test score`, joined on the (enroll, test) pair.
  SCORES alone               `score label` lines, label 1 = target, 0 = non-target (no trial ids:
                             a repeated line is another trial, with a warning giving the count).
  SCORES with --label-col/--score-col
                             any whitespace (or --sep ',') file or .parquet table; columns by 0-based
                             index or header name; --target/--nontarget/--ignore give the label mapping
                             (e.g. ASVspoof `- target 18.2`: --label-col 1 --score-col 2 --target target
                             --nontarget nontarget --ignore spoof); the lines of each label are
                             counted on stderr, in --json and in report.json.
  A FOLDER                   containing Kaldi `trials` and `scores` files.

Higher scores mean "more likely target" unless --lower-is-target is given.
"""


# Options shared by every command that reads score inputs.
KeyOpt = typer.Option(None, "--key", help="Kaldi key `enroll test target|nontarget` for a Kaldi scores file "
                      "(one scores input).")
LabelCol = typer.Option(None, "--label-col", help="Label column (0-based index or header name).")
ScoreCol = typer.Option(None, "--score-col", help="Score column (0-based index or header name).")
TargetOpt = typer.Option(None, "--target", help="Label value(s) meaning target (repeatable).")
NonOpt = typer.Option(None, "--nontarget", help="Label value(s) meaning non-target (repeatable).")
IgnoreOpt = typer.Option(None, "--ignore", help="Label value(s) to skip on purpose, e.g. spoof (repeatable); the "
                         "skipped lines are counted on stderr, in --json and in report.json.")
SepOpt = typer.Option(None, "--sep", help="Column separator (default: white space), e.g. ','.")
LowerOpt = typer.Option(False, "--lower-is-target", help="Lower scores mean more likely target.")
PTargetOpt = typer.Option([0.01, 0.05], "--p-target", help="Prior(s) for minDCF (and actDCF) (repeatable).")
LLROpt = typer.Option(False, "--llr", help="The scores are calibrated LLRs (natural log): also report Cllr and "
                      "actDCF of the scores as given.")

# One execution option for the heavy commands (anonymize, embed, trials, linkage, audit): see
# vpeval.pipeline.cluster. Without either, the single-process path runs.
#: anonymize / embed / utility / segment: the base of relative wav.scp paths (vpeval.io.kaldi_paths)
PathsFromOpt = typer.Option(
    None, "--paths-from", help="Kaldi data folder input: where relative wav.scp paths start. data (default): the "
    "data folder, as vpeval writes them; cwd: the working folder, as Kaldi recipes read them. Without the option a "
    "relative path naming two different files from the two is refused; a path missing from the chosen base but "
    "present from the other is an error naming both.")
#: ``-q``: one meaning in every command (progress, warnings and the closing summary silenced; errors still print).
QuietOpt = typer.Option(False, "--quiet", "-q", help="Print nothing but errors: no progress, warnings or summary "
                        "(--json still prints its JSON).")

SchedulerOpt = typer.Option(
    None, "--scheduler", metavar="ADDRESS",
    help="Run on the Dask cluster of this running scheduler, e.g. tcp://host:8786 (needs the dask extra; the "
         "workers must see the input and output paths). Results equal the single-process run.")
WorkersOpt = typer.Option(
    None, "--workers", min=1, metavar="N",
    help="Run on a local Dask cluster of N worker processes (one thread each), started and stopped by vpeval. "
         "Not with --scheduler.")
JobsOpt = typer.Option(
    -1, "--jobs", "-j", metavar="N",
    help="Worker processes of this machine for the independent analyses (intervals, chance floors, 1-to-N "
         "linkage, per-group rows, verdict tests) and the figures: N >= 1, or -1 for every usable core (default). "
         "The report does not depend on it. On a Dask cluster (audit --scheduler/--workers) the analyses run in "
         "the main process.")


def start_process() -> None:
    """What the command line sets up once, before any command: SIGTERM leaves like Ctrl-C
    (:func:`exit_on_sigterm`), and a command that cannot honour a stop signal within seconds (inside native code)
    is killed (:mod:`vpeval.cli.watchdog`), the C allocator reuses freed large blocks
    (:func:`vpeval.pipeline.allocator.reuse_large_blocks`), new memory comes in 4 KiB pages if the user opted in
    (:func:`vpeval.pipeline.allocator.small_pages`), the temporary folders that killed runs of this host left are
    removed, whatever this command starts (:func:`vpeval.io.leftovers.remove_stale`: only those whose owner is
    provably dead), and under ``ulimit -v`` scipy's BLAS is loaded (:func:`vpeval.cli.memory.load_scipy_blas`)."""
    from .memory import address_space_exhausted, load_scipy_blas, memory_message

    try:  # what runs before any command's own error handling: memory that runs out here ends as there
        from ..io.leftovers import remove_stale
        from ..pipeline.allocator import reuse_large_blocks, small_pages
        from . import watchdog

        watchdog.start()
        exit_on_sigterm()
        reuse_large_blocks()
        small_pages()
        remove_stale()
        load_scipy_blas()  # under ulimit -v only
    except (MemoryError, ImportError, OSError) as exc:
        if not (isinstance(exc, MemoryError) or address_space_exhausted(exc)):
            raise
        typer.echo(f"vpeval: error: {memory_message({})}", err=True)
        raise SystemExit(EXIT_MEMORY) from None


def exit_on_sigterm() -> None:
    """Make SIGTERM (``kill PID``, a batch system's time limit) and SIGHUP (the terminal closed; unless ignored,
    as under ``nohup``) leave like Ctrl-C: as ``SystemExit(128 + signal)`` (143, 129) raised in the main thread,
    so that the output policy removes what this run left half-written and releases its lock, the worker
    processes of ``--jobs`` are stopped (they were left behind by a plain SIGTERM) and their shared files
    removed."""
    import signal

    from .watchdog import acknowledge

    caught = [signal.SIGTERM]
    if hasattr(signal, "SIGHUP") and signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        caught.append(signal.SIGHUP)

    def _ignore_further():
        # once: a second stop signal of any kind during the cleanup is ignored (raised inside the interpreter's
        # exit, where concurrent.futures joins its threads, it left the process waiting for ever, or cut the
        # cleanup short); a cleanup that hangs is the watchdog's to end
        for s in caught + [signal.SIGINT]:
            signal.signal(s, signal.SIG_IGN)

    def _leave(signum, frame):
        acknowledge()  # a Python handler runs: the watchdog allows the cleanup its time
        _ignore_further()
        raise SystemExit(128 + signum)

    def _interrupt(signum, frame):  # Ctrl-C: KeyboardInterrupt as always, acknowledged to the watchdog
        acknowledge()
        _ignore_further()
        signal.default_int_handler(signum, frame)

    try:
        for s in caught:
            signal.signal(s, _leave)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _interrupt)
    except ValueError:  # not the main thread of the main interpreter (e.g. embedded): keep the default
        pass


#: ``vpeval verify`` starts its ``--jobs`` workers for inputs of at least this many trials: below, the verdict's
#: relabellings take less time than starting the workers does.
VERIFY_JOBS_MIN_TRIALS = 1_000_000


def jobs_value(value: int) -> int:
    """``--jobs`` as a number of worker processes (:func:`vpeval.pipeline.jobs.resolve_jobs`)."""
    from ..pipeline.jobs import resolve_jobs

    try:
        return resolve_jobs(value)
    except VpevalError as exc:
        raise VpevalError(f"--jobs: {exc}") from None


def execution(scheduler: Optional[str], workers: Optional[int]):
    """Context manager yielding the ``distributed.Client`` of --scheduler/--workers, or None (single process).

    The options are checked at once (ClusterError), before the caller's ``with`` starts any cluster."""
    from ..pipeline.cluster import check_options, cluster

    check_options(scheduler, workers)
    return cluster(scheduler, workers)


_QUIET = [False]  # set by the running command (see quiet_aware)


def quiet_aware(func):
    """Wrap a command so that its ``quiet`` option (if any) silences the warning hook while it runs."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        _QUIET[0] = bool(kwargs.get("quiet", False))
        return func(*args, **kwargs)

    return wrapper


def install_warning_hook(ctx) -> None:
    """Print every warning raised while the command of ``ctx`` runs as one line ``vpeval: warning: ...`` on
    stderr (no source path), each distinct text once per run; nothing when the command was given ``-q``/``--quiet``. The previous
    ``warnings.showwarning`` is restored when ``ctx`` closes."""
    import warnings

    from ..errors import VpevalWarning

    previous = warnings.showwarning
    _QUIET[0] = False
    seen: set[str] = set()  # each warning once per run, however many places raise the same text

    def show(message, category, filename, lineno, file=None, line=None):
        if _QUIET[0]:
            return
        text = " ".join(str(message).split())
        kind = "" if issubclass(category, VpevalWarning) else f"{category.__name__}: "
        if kind + text in seen:
            return
        seen.add(kind + text)
        typer.echo(f"vpeval: warning: {kind}{text}", err=True)

    warnings.showwarning = show
    def restore():
        warnings.showwarning = previous
        _QUIET[0] = False

    ctx.call_on_close(restore)


#: A quoted text as ``repr`` writes it (its opening quote not inside a word, so the apostrophe of "vpeval's" opens
#: none; escaped quotes inside), or a NumPy scalar's repr outside such quotes.
_QUOTED_OR_SCALAR = re.compile(r"""(?<!\w)('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")"""
                               r"|\bnp\.(?:float|int|uint|complex)\d*\(([^()]*)\)")


def fail(msg: str, code: int = EXIT_INPUT):
    # a NumPy scalar's repr (np.float64(nan)) shown as the number it is (nan), except in quoted text: a file's
    # field quoted as written ('np.float64(6.08)', a score line written with NumPy 2's repr) stays as written
    text = _QUOTED_OR_SCALAR.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), str(msg))
    typer.echo(f"vpeval: error: {text}", err=True)
    raise typer.Exit(code)


def handle_errors(func):
    """Turn our errors into a one-line message and a documented exit code (no traceback)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        from ..io.output import OutputError
        from .memory import address_space_exhausted, memory_message, ran_out_of_memory, reset_estimates

        reset_estimates()  # the memory estimate adds up this command's inputs only
        try:
            return func(*args, **kwargs)
        except OutputError as exc:
            fail(str(exc), EXIT_OUTPUT)
        except VpevalError as exc:
            fail(str(exc))
        except BrokenPipeError:  # the reader of the output went away (`| head -1`): leave quietly, as the
            # shell's own tools do (killed by SIGPIPE: 141), nothing printed and no flush error at exit
            from .console import _silence_stdout

            _silence_stdout()
            raise typer.Exit(EXIT_BROKEN_PIPE)
        except OSError as exc:  # the file system refused (missing folder, permissions, a file in the way)
            if address_space_exhausted(exc):  # a library that could not be mapped under ulimit -v
                fail(memory_message(kwargs), EXIT_MEMORY)
            where = f"{exc.filename}: " if exc.filename else ""
            fail(f"{where}{exc.strerror or exc}")
        except UnicodeError as exc:
            fail(f"text is not valid UTF-8 ({exc})")
        except ImportError as exc:  # an optional extra is not installed
            if address_space_exhausted(exc):
                fail(memory_message(kwargs), EXIT_MEMORY)
            fail(f"{exc}" if "pip install" in str(exc) else f"a required package is missing ({exc.name or exc}); "
                 "see the README for the extras (audio, embed, asr, semantic, dask)")
        except MemoryError:  # raised after the allocation failed: the stack is unwound, its arrays freed
            fail(memory_message(kwargs), EXIT_MEMORY)
        except Exception as exc:
            if ran_out_of_memory(exc):  # a library's own words for it (pyarrow could not start a thread)
                fail(memory_message(kwargs), EXIT_MEMORY)
            raise

    return wrapper


def display_name(text: str) -> str:
    """A name that can be printed and written as UTF-8 (undecodable file-name bytes become escapes)."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def split_name(spec: str) -> tuple[str | None, str]:
    """``NAME=PATH`` -> (NAME, PATH); a plain path -> (None, PATH).

    The name may contain ``=`` itself: the split is at the last ``=`` after which an existing path follows
    (``v=2=scores.txt`` -> ``("v=2", "scores.txt")``), else at the first ``=`` (the path is then reported as
    missing)."""
    if "=" in spec and not Path(spec).exists():
        cuts = [i for i, c in enumerate(spec) if c == "="]
        at = next((i for i in reversed(cuts) if Path(spec[i + 1:]).exists()), cuts[0])
        return display_name(spec[:at]), spec[at + 1:]
    return None, spec


def split_comma_list(values) -> list[str]:
    """Items of a repeatable option whose values may also be comma-separated, in order.

    ``["a,b", " c ,", "d"]`` -> ``["a", "b", "c", "d"]``: each value is split at commas, items are stripped
    of white space and empty ones dropped (duplicates are kept; the caller decides whether they are an error)."""
    out = []
    for v in values:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


def read_metadata_csv(path: Path):
    """A metadata CSV as a pandas DataFrame of strings (empty cells stay ``""``, never NaN; fields stripped), read
    by :func:`vpeval.io.csv_table.read_named_csv`.

    Raises
    ------
    InputFileError
        The file does not exist or is not a readable CSV file, its header names a column twice, a row has another
        number of fields than the header."""
    import pandas as pd

    from ..io.csv_table import read_named_csv
    from ..io.files import check_input_file

    if not path.exists():
        raise InputFileError(path, None, "file does not exist")
    check_input_file(path, "a metadata CSV")
    # by name, any columns (the caller checks its own), none twice (pandas would rename the second 'sex' to
    # 'sex.1'), no ragged row (pandas filled a short one with empty cells)
    header, rows = read_named_csv(path, (), others=True)
    return pd.DataFrame([row for _, row in rows], columns=header, dtype=str)


@dataclasses.dataclass(frozen=True)
class ScoreInputOptions:
    """The score-input options of a command, as given on its command line (see :data:`FORMATS_HELP`).

    :func:`score_input_options` makes a typer command take them; :meth:`load` reads one input with them."""

    key: Optional[str] = None
    label_col: Optional[str] = None
    score_col: Optional[str] = None
    target: Optional[List[str]] = None
    nontarget: Optional[List[str]] = None
    ignore: Optional[List[str]] = None
    sep: Optional[str] = None
    lower_is_target: bool = False

    def load(self, path: str, key: Optional[str] = None, *, profile: bool = False) -> Trials:
        """:func:`load_trials` of ``path`` with these options; ``key`` (when given) in place of ``self.key``.
        The memory it needs is estimated first, with a warning when it exceeds the room
        (:func:`vpeval.cli.memory.check_score_input`). ``profile``: the privacy profile follows, whose compiled
        loops then load while a large input is read (:func:`vpeval.metrics.profile_kernel.load_ahead`)."""
        from ..metrics.profile_kernel import load_ahead
        from .memory import check_score_input, input_bytes

        paths = [path, self.key if key is None else key]
        check_score_input(paths)
        load_ahead(input_bytes([p for p in paths if p]) if profile else 0)
        return load_trials(path, self.key if key is None else key, self.label_col, self.score_col, self.target,
                           self.nontarget, self.ignore, self.sep, self.lower_is_target)

    def as_options(self) -> dict:
        """Every option as given (None when not), for report.json's ``options``: each shaped the numbers."""
        return dataclasses.asdict(self)


def say_unused_conditions(es, path, used=("original", "anonymized")) -> dict:
    """Rows of the embedding set ``es`` (read from ``path``) whose condition the command does not read (e.g. the
    ``anonymized@KEY`` rows of a further profile run), said as one line on stderr; returns ``{condition: rows}``
    (empty when every row is read)."""
    import numpy as np

    values, counts = np.unique(np.asarray(es.condition, dtype=str), return_counts=True)
    unused = {str(c): int(n) for c, n in zip(values, counts) if c not in used}
    if unused:
        typer.echo(f"vpeval: {display_name(str(path))}: set aside " + ", ".join(
            f"{n:,} rows of condition {c!r}" for c, n in unused.items()) + " (this command reads the "
            + " and ".join(repr(u) for u in used) + " rows)", err=True)
    return unused


def say_label_counts(t: Trials, name: Optional[str] = None, quiet: bool = False) -> Optional[dict]:
    """What the label mapping (--target/--nontarget/--ignore) did with the rows of a column input, said as one
    line on stderr (unless ``quiet``), e.g. ``vpeval: asv.txt: ignored 22,296 lines labelled 'spoof' (of 29,548);
    read ...``; returns the counts (``Trials.meta["label_counts"]``), or None for an input read without a mapping.
    ``name``: the input as the user gave it (default: the trials' source)."""
    counts = t.meta.get("label_counts")
    if counts is not None and not quiet:
        from ..io.label_counts import label_counts_text

        unit = "rows" if str(t.source).endswith(".parquet") else "lines"
        typer.echo(f"vpeval: {display_name(name or str(t.source))}: {label_counts_text(counts, unit)}", err=True)
    return counts


# (parameter name, type, typer option) of each field of ScoreInputOptions, in the order --help lists them
_SCORE_INPUT_PARAMS = (
    ("key", Optional[str], KeyOpt),
    ("label_col", Optional[str], LabelCol),
    ("score_col", Optional[str], ScoreCol),
    ("target", Optional[List[str]], TargetOpt),
    ("nontarget", Optional[List[str]], NonOpt),
    ("ignore", Optional[List[str]], IgnoreOpt),
    ("sep", Optional[str], SepOpt),
    ("lower_is_target", bool, LowerOpt),
)


def _option_group(func, param: str, group: type, specs):
    """``func`` with its parameter ``param`` replaced, at its place in the signature typer reads, by the options
    ``specs`` (``(name, annotation, typer option)`` each); the values given on the command line reach ``func``
    gathered into one ``group(**values)``. Raises TypeError when ``func`` has no parameter ``param``."""
    sig = inspect.signature(func, eval_str=True)
    names = [name for name, _, _ in specs]
    params = []
    for p in sig.parameters.values():
        if p.name == param:
            params += [inspect.Parameter(name, p.kind, default=opt, annotation=ann) for name, ann, opt in specs]
        else:
            params.append(p)
    if len(params) != len(sig.parameters) + len(names) - 1:
        raise TypeError(f"{func.__name__} must take one parameter named {param!r}")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        # typer passes every option by keyword; an option left out of a direct call takes its default
        given = group(**{name: kwargs.pop(name) for name in names if name in kwargs})
        return func(*args, **{param: given}, **kwargs)

    wrapper.__signature__ = sig.replace(parameters=params)
    return wrapper


def score_input_options(func):
    """Decorator: give a typer command the score-input options (--key ... --lower-is-target).

    ``func`` declares one parameter ``score_input: ScoreInputOptions``; in the command's signature (what
    typer reads) it is replaced, at its place, by the eight options of :data:`_SCORE_INPUT_PARAMS`, and the
    values given on the command line reach ``func`` gathered into one :class:`ScoreInputOptions`. So every
    score command spells, documents and passes these options the same way.
    """
    return _option_group(func, "score_input", ScoreInputOptions, _SCORE_INPUT_PARAMS)


def load_trials(
    path: str,
    key: Optional[str] = None,
    label_col: Optional[str] = None,
    score_col: Optional[str] = None,
    target: Optional[list[str]] = None,
    nontarget: Optional[list[str]] = None,
    ignore: Optional[list[str]] = None,
    sep: Optional[str] = None,
    lower_is_target: bool = False,
) -> Trials:
    """Read one score input according to the CLI options (see FORMATS_HELP)."""
    p = Path(path)
    hit = not lower_is_target
    if sep == "\\t":  # typed as backslash-t on a command line
        sep = "\t"
    if p.is_dir():
        if key or label_col is not None or score_col is not None:
            raise VpevalError(f"{p}: a folder input holds Kaldi trials+scores; --key and column options do not apply")
        k, s = p / "trials", p / "scores"
        if not (k.is_file() and s.is_file()):
            raise VpevalError(f"{p}: a folder input must contain Kaldi 'trials' and 'scores' files")
        return read_trials_scores(k, s, higher_is_target=hit)
    if key:
        if label_col is not None or score_col is not None or target or nontarget or ignore or sep is not None:
            raise VpevalError("--key reads Kaldi 'enroll test score' lines joined with the key; --label-col, "
                              "--score-col, --target, --nontarget, --ignore and --sep do not apply with it")
        return read_trials_scores(key, p, higher_is_target=hit)
    if label_col is not None or score_col is not None:
        if label_col is None or score_col is None or not target or not nontarget:
            raise VpevalError("--label-col, --score-col, --target and --nontarget go together")
        digits = re.compile(r"[0-9]+")
        conv = (lambda c: int(c)) if digits.fullmatch(label_col) and digits.fullmatch(score_col) else (lambda c: c)
        return read_columns(p, label_col=conv(label_col), score_col=conv(score_col), target=target,
                            nontarget=nontarget, ignore=ignore or (), sep=sep, higher_is_target=hit)
    if sep is not None or target or nontarget or ignore:
        raise VpevalError("--sep, --target, --nontarget and --ignore apply to a table read with --label-col and "
                          "--score-col (e.g. 'score,label' lines: --label-col 1 --score-col 0 --target 1 "
                          "--nontarget 0 --sep ','); a `score label` file is split at white space")
    try:
        return read_score_label(p, higher_is_target=hit)
    except InputFileError as exc:
        if exc.problem.startswith("expected 2 fields (score label), got 3"):  # the reader's hint names Python
            raise InputFileError(exc.path, exc.line, "expected 2 fields (score label), got 3; for a Kaldi `enroll "
                                 "test score` file give its key with --key KEY, for a table with label and score "
                                 "columns use --label-col/--score-col with --target/--nontarget") from None
        raise


class InputSnapshot:
    """Inputs read once: a pipe or ``/dev/stdin`` is copied to a private file first, so the bytes that are
    parsed are the bytes that are hashed (a second read of a pipe would be empty).

    Use as a context manager; :meth:`path` gives the file to read, :meth:`sha256` its hash, and
    :meth:`rename` turns a message naming a private copy back into the path the user gave. The private folder
    ``vpeval-input-*`` of the temporary folder is made only when a copy is needed, with an owner record, so
    that a run killed outright leaves nothing the next run cannot prove dead and remove
    (:mod:`vpeval.io.leftovers`).
    """

    def __init__(self):
        self._dir = None
        self._copies: dict[str, Path] = {}

    def path(self, given) -> str:
        import os
        import stat
        import shutil

        given = str(given)
        if given in self._copies:
            return str(self._copies[given])
        try:
            st = os.stat(given)
        except OSError:
            return given  # the reader reports it
        if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
            return given  # a folder is a Kaldi trials+scores input; its files are checked by the reader
        from ..io.files import check_input_file

        check_input_file(given, "a score file")  # a device or socket is refused before a byte is copied
        if self._dir is None:
            import tempfile

            from ..io.leftovers import write_owner

            self._dir = tempfile.TemporaryDirectory(prefix="vpeval-input-")
            write_owner(self._dir.name)
        copy = Path(self._dir.name) / f"{len(self._copies)}" / (Path(given).name or "input")
        copy.parent.mkdir()
        with open(given, "rb") as src, open(copy, "wb") as dst:
            shutil.copyfileobj(src, dst)
        self._copies[given] = copy
        return str(copy)

    def sha256(self, given) -> str:
        from ..io.output import sha256_file

        return sha256_file(self._copies.get(str(given), given))

    def rename(self, exc: VpevalError) -> VpevalError:
        msg = str(exc)
        for given, copy in self._copies.items():
            msg = msg.replace(str(copy), given)
        return exc if msg == str(exc) else VpevalError(msg)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._dir is not None:
            self._dir.cleanup()


def echo_json(obj) -> None:
    from ..report.writer import _jsonable

    sys.stdout.write(json.dumps(_jsonable(obj), indent=2) + "\n")


#: the per-gender VoicePrivacy-style CSV of `vpeval audit` / `vpeval demo`
VpcTableOpt = typer.Option(
    None, "--vpc-table", help="Also write the per-gender results as CSV: the columns of the VoicePrivacy results "
    "tables (dataset, split, gender, enrollment, trial, and their EER named by its estimator: EER closest-point "
    "(%)) then vpeval's (ROCCH-EER, minCllr, D_ECE, "
    "eps_max, ALID, interval bounds; units in the names). Groups from the metadata's sex column; 'all' rows "
    "pool every speaker. Refuses an existing file unless --force over an earlier table of vpeval (manifest).")
SplitOpt = typer.Option("eval", "--split", help="Value of the split column of --vpc-table.")
EnrollRuleOpt = typer.Option(
    None, "--enroll-rule", help="With --vpc-trials: vpc (default; mean of the raw enrollment embeddings, then cosine, "
    "as the VoicePrivacy scripts) or normalized (normalised mean of normalised embeddings).")


#: the verdict's options, shared by verify, report, linkage, audit and demo (vpeval.analysis.verdict)
BudgetOpt = typer.Option(
    None, "--budget-bits", help="Disclosure budget of the verdict in bits (default log2(10) = 3.32: a likelihood "
    "ratio of 10, the upper edge of privacy-ZEBRA's tag A). 'protects' needs every attacker's privacy profile "
    "eps(delta) certified within it (upper bound), 'leaks' its lower bound above it and the test rejected.")
DeltaOpt = typer.Option(
    None, "--delta", help="The verdict's delta: the share of trials the certificate may leave out (eps(delta) "
    "bounds every decision of every attacker except on that share). Default 1 / (2 S) for S speakers behind the "
    "target trials (half of one speaker's share, so one fully exposed speaker always blocks 'protects'); 0.01 "
    "for trials without speakers.")
N_PERM_EXTENDED = (" A p-value so near alpha that its Monte-Carlo error could change the word reruns the test with "
                   "10(n+1)-1 relabellings, at most twice and up to 100,000 (the number used is in the JSON).")
VerdictPermOpt = typer.Option(999, "--n-perm", min=19, max=100_000, help="Relabellings of the family-wise perfect-secrecy "
                              "test behind the verdict (the smallest p-value is 1/(n+1))." + N_PERM_EXTENDED)
#: verify / report: the default depends on the input's size (vpeval.analysis.families.default_n_perm)
ScorePermOpt = typer.Option(
    None, "--n-perm", min=19, max=100_000, help="Relabellings of the verdict's perfect-secrecy test (the smallest p-value is "
    "1/(n+1)); default 999, or 199 for inputs above 2,000,000 trials (a keyed input's relabelling costs a pass "
    "over its trials, a key-less one's about a millisecond on cells of its score axis)." + N_PERM_EXTENDED)
ALPHA_RANGE = (1e-6, 0.5)


def _checked_alpha(value: float) -> float:
    """``--alpha`` of the verdict: a finite number in :data:`ALPHA_RANGE` (typer's own range check answered NaN
    with "should be less than or equal to 0.5", every comparison with NaN being false)."""
    low, high = ALPHA_RANGE
    if not (low <= value <= high):  # false for NaN too
        raise typer.BadParameter(f"must be a finite number in [{low:g}, {high:g}] (the family-wise level of the "
                                 f"verdict's test), got {value!r}")
    return value


AlphaOpt = typer.Option(0.05, "--alpha", callback=_checked_alpha, help="Family-wise level of the verdict's test, "
                        f"in [{ALPHA_RANGE[0]:g}, {ALPHA_RANGE[1]:g}].")
NoVerdictOpt = typer.Option(False, "--no-verdict", help="Skip the verdict (its permutation test). --budget-bits, "
                            "--delta, --n-perm and --alpha are still checked (a value out of range is an error, as without "
                            "--no-verdict) but not used.")


def verdict_options(budget_bits, n_perm: int, alpha: float, delta=None) -> dict:
    """The keyword arguments of the verdict functions (vpeval.analysis.families) from the CLI options.

    Every command calls it, with or without --no-verdict, before reading any input: the verdict's options are
    checked alike whether or not they are used (typer checks --n-perm's and --alpha's ranges in any case)."""
    from ..analysis.profiles import check_delta
    from ..analysis.verdict import DEFAULT_BUDGET_BITS, check_budget

    return {"budget_bits": DEFAULT_BUDGET_BITS if budget_bits is None else check_budget(budget_bits),
            "n_perm": n_perm, "alpha": alpha, "delta": check_delta(delta)}


@dataclasses.dataclass
class VerdictOptions:
    """The verdict's options of a command, as given on its command line (``--budget-bits``, ``--delta``,
    ``--n-perm``, ``--alpha``, ``--no-verdict``); :func:`verdict_option_group` makes a typer command take them."""

    budget_bits: Optional[float] = None
    delta: Optional[float] = None
    n_perm: Optional[int] = None
    alpha: float = 0.05
    no_verdict: bool = False

    def checked(self) -> dict:
        """:func:`verdict_options` of these values: checked whether or not ``--no-verdict`` is given."""
        return verdict_options(self.budget_bits, self.n_perm, self.alpha, self.delta)

    def for_audit(self) -> dict:
        """:meth:`checked` with ``skip`` (``--no-verdict``): what :func:`audit_verdict_kwargs` reads."""
        return {**self.checked(), "skip": self.no_verdict}


def verdict_option_group(n_perm=ScorePermOpt):
    """Decorator: give a typer command the verdict's five options, ``--n-perm`` as ``n_perm`` (:data:`ScorePermOpt`,
    the default of the score commands, or :data:`VerdictPermOpt`).

    ``func`` declares one parameter ``verdict_args: VerdictOptions``, replaced at its place by the five options
    (as :func:`score_input_options` does), so every command spells, documents and checks them the same way."""
    specs = (("budget_bits", Optional[float], BudgetOpt), ("delta", Optional[float], DeltaOpt),
             ("n_perm", Optional[int] if n_perm.default is None else int, n_perm), ("alpha", float, AlphaOpt),
             ("no_verdict", bool, NoVerdictOpt))
    return lambda func: _option_group(func, "verdict_args", VerdictOptions, specs)


def audit_verdict_kwargs(verdict: dict | None) -> dict:
    """The verdict keyword arguments of :func:`vpeval.analysis.audit.audit` from a command's verdict options."""
    if verdict is None:
        return {}
    if verdict.get("skip"):
        return {"verdict_perm": None}
    return {"verdict_perm": verdict["n_perm"], "budget_bits": verdict["budget_bits"], "alpha": verdict["alpha"],
            "delta": verdict.get("delta")}


def print_verdicts(console, verdicts: dict, undecided: dict | None = None) -> None:
    """Each verdict as the terminal's first lines: the word and its sentence in plain words, then the numbers
    (the profile with its bounds, the worst case with its floor and ceiling, the exposed speakers and the average:
    the sentence of :mod:`vpeval.analysis.verdict`), then its warnings; then every input without a verdict and
    why."""
    from .console import print_item

    from rich.markup import escape

    for name, v in verdicts.items():
        plain = f" {escape(v['plain'])}" if v.get("plain") else ""
        console.print(f"[bold]{escape(name)}: {escape(v['verdict'].upper())}[/bold].{plain}", overflow="fold")
        print_item(console, "numbers", v["sentence"])
        for w in v.get("warnings", []):
            print_item(console, "note", w)
    for name, why in (undecided or {}).items():
        console.print(escape(f"{name}: no verdict: {why}."), overflow="fold")


def verdict_or_reason(make) -> tuple[dict | None, str | None]:
    """``(make().to_dict(), None)``, or ``(None, why)`` when the data cannot be tested (e.g. one speaker): the
    command still reports its numbers and says why there is no verdict. Options are checked before."""
    try:
        return make().to_dict(), None
    except VpevalError as exc:
        return None, str(exc)
