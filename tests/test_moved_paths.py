"""The audio modules moved into ``vpeval.audio`` (issue 23). The old paths at the top of the package were
deprecation aliases and are removed now (issue 47, CHANGELOG.md): importing them fails, and nothing in src/ imports
them. ``vpeval.io.audio`` is still an alias and still works, with a warning.

The public names of each old path are listed here by hand (what the README, docs, examples and earlier code
imported), independently of the alias table in ``vpeval._deprecated``, so a name dropped from the table fails.
"""

from __future__ import annotations

import ast
import importlib
import os
import pickle
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from vpeval.errors import VpevalDeprecationWarning, VpevalWarning

SRC = Path(__file__).resolve().parents[1] / "src" / "vpeval"

# old module -> (module to import from now, public names of the old module); removed and aliased paths alike
OLD_PATHS = {
    "vpeval.io.audio": ("vpeval.audio.io", [
        "SAMPLE_RATE", "AUDIO_EXTENSIONS", "AudioItem", "read_audio", "write_audio", "scan_audio_folder",
        "read_speaker_metadata"]),
    "vpeval.pitch": ("vpeval.audio.pitch", ["f0_contour", "FRAME_PERIOD_MS", "F0_RANGE"]),
    "vpeval.anonymize": ("vpeval.audio.anonymize", [
        "mcadams", "mcadams_pole_angles", "draw_alpha", "anonymize_folder", "DEFAULT_ALPHA", "ALPHA_RANGE"]),
    "vpeval.anonymize_world": ("vpeval.audio.anonymize", [
        "vtln", "resample_shift", "bilinear_warp", "draw_parameter", "VTLN_WARP_RANGE", "VTLN_F0_RANGE",
        "RESAMPLE_RANGE"]),
    "vpeval.embed": ("vpeval.audio.embed", [
        "Extractor", "ExtractorUnavailableError", "MfccStatsExtractor", "EXTRACTORS", "get_extractor",
        "embed_folder"]),
    "vpeval.embed.base": ("vpeval.audio.embed.base", ["Extractor", "ExtractorUnavailableError", "embed_folder"]),
    "vpeval.embed.mfcc": ("vpeval.audio.embed.mfcc", ["MfccStatsExtractor"]),
    "vpeval.embed.resemblyzer": ("vpeval.audio.embed.resemblyzer",
                                 ["ResemblyzerExtractor", "INSTALL_HINT", "preprocess"]),
    "vpeval.asr": ("vpeval.audio.asr", [
        "ASRBackend", "ASRUnavailableError", "FasterWhisperBackend", "cache_dir", "read_transcripts",
        "transcribe_folder", "whisper_base_dir", "write_transcripts"]),
    "vpeval.asr.base": ("vpeval.audio.asr.base", ["ASRBackend", "ASRUnavailableError", "transcribe_folder"]),
    "vpeval.asr.semantic": ("vpeval.audio.asr.semantic", ["MiniLMEncoder"]),
    "vpeval.asr.transcripts": ("vpeval.audio.asr.transcripts", ["read_transcripts", "write_transcripts"]),
    "vpeval.asr.whisper": ("vpeval.audio.asr.whisper", ["FasterWhisperBackend", "whisper_base_dir", "cache_dir"]),
}

#: old paths that are still deprecation aliases (``vpeval._deprecated.MOVED``)
ALIASED = {"vpeval.io.audio"}
#: old paths removed after their deprecation period (issue 47; CHANGELOG.md): importing them must fail
REMOVED = sorted(set(OLD_PATHS) - ALIASED)

# names outside ``__all__`` (private helpers tests and scripts reached through the old paths): still found
OLD_OTHER = {
    "vpeval.io.audio": ("vpeval.audio.io", ["_require"]),
}

# public names of the new audio package, by module
NEW_PUBLIC = {
    "vpeval.audio.io": OLD_PATHS["vpeval.io.audio"][1] + ["read_audio_rate", "resample", "read_item_audio",
                                                          "read_item_audio_rate"],  # issues 30, 26
    "vpeval.audio.pitch": OLD_PATHS["vpeval.pitch"][1],
    "vpeval.audio.anonymize": [
        "METHODS", "anonymize_folder", "mcadams", "mcadams_pole_angles", "draw_alpha", "DEFAULT_ALPHA",
        "ALPHA_RANGE", "vtln", "bilinear_warp", "VTLN_WARP_RANGE", "VTLN_F0_RANGE", "resample_shift",
        "RESAMPLE_RANGE", "draw_parameter", "profile_seed", "resynthesize", "pseudo_speaker"],
    "vpeval.audio.anonymize.asr_tts": [
        "resynthesize", "synthesize", "resolve_engine", "ENGINES", "VOICES", "OUTPUT_RMS", "SILENCE_S",
        "PIPER_SYNTHESIS", "TTSUnavailableError", "EngineFallbackWarning", "TTS_HINT", "ESPEAK_HINT"],
    "vpeval.audio.anonymize.mcadams_coefficient": [
        "mcadams", "mcadams_pole_angles", "draw_alpha", "DEFAULT_ALPHA", "ALPHA_RANGE"],
    "vpeval.audio.anonymize.world": ["vtln", "bilinear_warp", "VTLN_WARP_RANGE", "VTLN_F0_RANGE"],
    "vpeval.audio.anonymize.resample": ["resample_shift", "RESAMPLE_RANGE"],
    "vpeval.audio.anonymize.base": ["draw_parameter"],
    "vpeval.audio.anonymize.folder": ["anonymize_folder", "profile_seed", "pseudo_speaker", "METHODS"],
    "vpeval.audio.embed": OLD_PATHS["vpeval.embed"][1] + ["MODEL_PREFIXES"],
    "vpeval.audio.embed.features": ["FeatureSpec", "compute_features", "model_input", "window_function",
                                    "read_feature_spec"],
    "vpeval.audio.embed.model_file": ["ModelFileError", "OnnxExtractor", "TorchScriptExtractor", "sidecar_path",
                                      "features_record", "ONNX_HINT"],
    "vpeval.audio.embed.voicefilter": ["VoiceFilterDvectorExtractor", "VOICEFILTER_FEATURES", "VOICEFILTER_HINT"],
    "vpeval.audio.embed.base": OLD_PATHS["vpeval.embed.base"][1],
    "vpeval.audio.embed.mfcc": OLD_PATHS["vpeval.embed.mfcc"][1] + ["MFCC_SETTINGS"],
    "vpeval.audio.embed.resemblyzer": OLD_PATHS["vpeval.embed.resemblyzer"][1],
    "vpeval.audio.asr": OLD_PATHS["vpeval.asr"][1],
    "vpeval.audio.asr.base": OLD_PATHS["vpeval.asr.base"][1],
    "vpeval.audio.asr.semantic": OLD_PATHS["vpeval.asr.semantic"][1],
    "vpeval.audio.asr.transcripts": OLD_PATHS["vpeval.asr.transcripts"][1],
    "vpeval.audio.asr.whisper": OLD_PATHS["vpeval.asr.whisper"][1],
}


def _fresh_import(name: str):
    """Import ``name`` as if for the first time (the alias warns only when it is executed)."""
    for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[loaded]
    return importlib.import_module(name)


@pytest.mark.parametrize("old", sorted(ALIASED))
def test_old_path_warns_and_gives_the_same_objects(old):
    new_name, names = OLD_PATHS[old]
    new = importlib.import_module(new_name)
    with pytest.warns(VpevalDeprecationWarning) as record:
        mod = _fresh_import(old)
    messages = [str(w.message) for w in record if issubclass(w.category, VpevalDeprecationWarning)]
    assert f"{old} is deprecated and will be removed; import from {new_name} instead" in messages
    assert sorted(mod.__all__) == sorted(names)
    for n in names:
        assert getattr(mod, n) is getattr(new, n), n
        assert n in dir(mod)
    star: dict = {}
    exec(f"from {old} import *", star)  # noqa: S102
    assert {k for k in star if not k.startswith("__")} == set(mod.__all__)
    with pytest.raises(AttributeError, match="no_such_name"):
        mod.no_such_name  # noqa: B018


@pytest.mark.parametrize("old", sorted(OLD_OTHER))
def test_old_path_still_reaches_names_outside_all(old):
    new_name, names = OLD_OTHER[old]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VpevalDeprecationWarning)
        mod = importlib.import_module(old)
    new = importlib.import_module(new_name)
    for n in names:
        assert getattr(mod, n) is getattr(new, n), n


@pytest.mark.parametrize("old", REMOVED)
def test_removed_path_no_longer_imports(old):
    """A removed alias stays removed: its import fails as for any missing module, and no file of it is left."""
    for loaded in [m for m in sys.modules if m == old or m.startswith(old + ".")]:
        del sys.modules[loaded]
    with pytest.raises(ModuleNotFoundError) as e:
        importlib.import_module(old)
    assert e.value.name in REMOVED and (old + ".").startswith(e.value.name + "."), e.value.name  # it or its package
    rel = Path(*old.split(".")[1:])
    assert not (SRC / rel.with_suffix(".py")).exists() and not (SRC / rel).exists()


@pytest.mark.parametrize("statement", ["from vpeval import anonymize", "from vpeval import embed",
                                       "from vpeval import asr", "from vpeval import pitch",
                                       "from vpeval import anonymize_world", "import vpeval.embed.mfcc"])
def test_removed_paths_fail_through_the_package_root_too(statement):
    """``vpeval.__getattr__`` (lazy subpackages) turns the missing module into a plain ImportError."""
    with pytest.raises(ImportError):
        exec(statement, {})  # noqa: S102


def _default_filters_env(tmp_path):
    """The environment of a user's fresh interpreter: Python's default warning filters (no -W, no
    PYTHONWARNINGS, no pytest filters), vpeval and ``tmp_path`` importable."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONWARNINGS", "PYTHONDEVMODE")}
    env["PYTHONPATH"] = os.pathsep.join([str(SRC.parent), str(tmp_path)])
    return env


def test_the_warning_is_a_future_warning_pointing_at_the_importing_line(tmp_path):
    # a FutureWarning: shown by Python's default filters; a DeprecationWarning would be hidden outside __main__
    assert issubclass(VpevalDeprecationWarning, FutureWarning)
    assert not issubclass(VpevalDeprecationWarning, DeprecationWarning)
    assert issubclass(VpevalDeprecationWarning, VpevalWarning)
    script = tmp_path / "user_script.py"
    script.write_text("import sys\nsys.path.insert(0, %r)\nimport vpeval.io.audio\n" % str(SRC.parent))
    err = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True,
                         env=_default_filters_env(tmp_path)).stderr
    assert f"{script}:3: VpevalDeprecationWarning: vpeval.io.audio is deprecated" in err, err


@pytest.mark.parametrize("statement", ["from vpeval.io import audio", "import vpeval.io.audio"])
def test_the_warning_is_shown_by_default_outside_main(tmp_path, statement):
    """The old path imported by a module that is not ``__main__`` (a user's library, a notebook helper), under
    the default filters: the warning is printed, once, naming that module's line (not importlib)."""
    (tmp_path / "users_library.py").write_text(f"x = 1\n{statement}\n")
    script = tmp_path / "main.py"
    script.write_text("import users_library\nimport users_library\n")
    err = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True,
                         env=_default_filters_env(tmp_path)).stderr
    where = f"{tmp_path / 'users_library.py'}:2: VpevalDeprecationWarning: "
    assert err.count("VpevalDeprecationWarning") == 1 and where in err, err
    assert statement.split()[-1] in err and "importlib" not in err and "__init__" not in err, err


@pytest.mark.parametrize("module", sorted(NEW_PUBLIC))
def test_public_names_of_the_audio_package(module):
    with warnings.catch_warnings():
        warnings.simplefilter("error", VpevalDeprecationWarning)  # the new paths never warn
        mod = importlib.import_module(module)
    assert sorted(mod.__all__) == sorted(NEW_PUBLIC[module])
    for n in mod.__all__:
        assert getattr(mod, n) is not None


def test_a_pickled_extractor_names_the_new_module_and_pickles_of_the_removed_path_no_longer_load():
    """A pickle naming ``vpeval.embed.mfcc`` (made before issue 23) fails to load since the alias was removed
    (CHANGELOG.md says so); one made now names the new module and loads."""
    from vpeval.audio.embed import MfccStatsExtractor

    data = pickle.dumps(MfccStatsExtractor(), protocol=0)  # text opcodes: the module name can be edited
    assert b"vpeval.audio.embed.mfcc\n" in data and b"vpeval.embed.mfcc" not in data
    assert type(pickle.loads(data)) is MfccStatsExtractor
    old_pickle = data.replace(b"vpeval.audio.embed.mfcc\n", b"vpeval.embed.mfcc\n")
    assert old_pickle != data
    with pytest.raises(ModuleNotFoundError):
        pickle.loads(old_pickle)


def _imported_modules(path: Path) -> set[str]:
    """Absolute names of the vpeval modules a source file imports (relative imports resolved)."""
    package = ["vpeval", *path.relative_to(SRC).with_suffix("").parts]
    if package[-1] == "__init__":
        package.pop()
    else:
        package = package[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package[: len(package) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m == "vpeval" or m.startswith("vpeval.")}


def test_no_vpeval_module_imports_a_deprecated_or_removed_path():
    from vpeval._deprecated import MOVED

    alias_files = set()
    for old in MOVED:
        rel = Path(*old.split(".")[1:])
        alias_files.add(SRC / rel.with_suffix(".py") if (SRC / rel.with_suffix(".py")).is_file()
                        else SRC / rel / "__init__.py")
    assert all(f.is_file() for f in alias_files)
    offenders = {}
    for path in sorted(SRC.rglob("*.py")):
        if path in alias_files:
            continue
        bad = {m for m in _imported_modules(path)
               if m in MOVED or any(m == r or m.startswith(r + ".") for r in REMOVED)}
        if bad:
            offenders[str(path.relative_to(SRC))] = sorted(bad)
    assert offenders == {}
    # the check resolves relative imports (``from ..io import`` in vpeval/audio/anonymize/folder.py)
    assert _imported_modules(SRC / "audio" / "anonymize" / "folder.py") & {"vpeval.audio.io"}


def test_the_alias_table_and_this_list_agree():
    from vpeval._deprecated import MOVED

    assert set(MOVED) == ALIASED
    for old, (sources, names) in MOVED.items():
        assert sources[0] == OLD_PATHS[old][0]
        assert sorted(names) == sorted(OLD_PATHS[old][1])


def test_cli_start_up_loads_no_audio_library():
    code = "import vpeval.cli.main, sys; print('\\n'.join(sys.modules))"
    env = {**os.environ, "PYTHONPATH": str(SRC.parent)}
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                env=env).stdout.split())
    assert not loaded & {"torch", "librosa", "soundfile", "pyworld", "resemblyzer", "faster_whisper", "numba"}
    assert not {m for m in loaded if m.startswith("vpeval.audio.")}


def _documented_names() -> dict[str, str]:
    """Every ``vpeval.x.y`` the user-facing documents show (in backticks or a ``from ... import`` line)."""
    root = SRC.parents[1]
    docs = [root / "README.md", root / "CONTRIBUTING.md", root / "TESTING.md", root / "BENCHMARKS.md",
            *sorted((root / "docs").glob("*.md")), *sorted((root / "examples").rglob("README.md"))]
    found: dict[str, str] = {}
    for doc in docs:
        text = doc.read_text(encoding="utf-8")
        for name in re.findall(r"`(vpeval(?:\.\w+)+)", text):
            found.setdefault(name, doc.name)
        for module, names in re.findall(r"from (vpeval(?:\.\w+)*) import ([\w, ]+)", text):
            for n in names.split(","):
                found.setdefault(f"{module}.{n.strip()}", doc.name)
    return found


def _resolve(dotted: str):
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        break
    for p in parts[i:]:
        obj = getattr(obj, p)
    return obj


def test_every_documented_name_resolves_at_its_documented_path_without_a_warning():
    from vpeval._deprecated import MOVED

    names = _documented_names()
    assert "vpeval.audio.anonymize.anonymize_folder" in names and "vpeval.audio.embed.embed_folder" in names
    with warnings.catch_warnings():
        warnings.simplefilter("error", VpevalDeprecationWarning)
        for name, doc in sorted(names.items()):
            if name in MOVED:  # an old path, named as such ("the former path ... still imports")
                continue
            # a name under an old path (checked by name: an alias imported earlier warns no more), or a removed
            # path (CHANGELOG.md, not read here, is where those are named)
            assert not [m for m in MOVED if name.startswith(m + ".")], (name, doc)
            assert not [m for m in REMOVED if name == m or name.startswith(m + ".")], (name, doc)
            assert _resolve(name) is not None, (name, doc)
