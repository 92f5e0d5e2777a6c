"""`vpeval doctor`: which optional pieces import, with versions and the torch build, and the command adding each
missing one; import failures and missing programs are simulated with monkeypatch."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

import vpeval.cli.doctor as doctor
from vpeval.cli.main import app

README = Path(__file__).resolve().parents[1] / "README.md"


def _fake_environment(monkeypatch, *, broken=(), errors=None, programs=("chromium", "chromedriver"), cuda=None):
    """Every module's probe answers "ok" (version 9.9) except those in ``broken`` (not installed) or ``errors``
    (module -> the probe's answer); programs on PATH are ``programs``; torch reports the CUDA version ``cuda``.
    The probe itself (a child process) is tested in test_probes_in_processes_report_what_failed."""
    errors = dict(errors or {})
    torch = SimpleNamespace(version=SimpleNamespace(cuda=cuda), cuda=SimpleNamespace(is_available=lambda: False))

    def fake_probe(modules, timeout):
        out = {}
        for mod, _ in modules:
            if mod in broken:
                out[mod] = {"module": mod, "state": "missing"}
            elif mod in errors:
                out[mod] = errors[mod]
            else:
                out[mod] = {"module": mod, "state": "ok", "version": "9.9",
                            "detail": doctor.torch_build(torch) if mod == "torch" else ""}
        return out

    monkeypatch.setattr(doctor, "_probe_piece", fake_probe)
    monkeypatch.setattr(doctor, "_which", lambda prog: f"/usr/bin/{prog}" if prog in programs else None)


def test_all_present(monkeypatch):
    _fake_environment(monkeypatch)
    found = doctor.check_pieces()
    assert [f.piece.name for f in found] == ["audio", "encoder", "voicefilter", "onnx", "asr", "tts", "semantic",
                                             "vocoder", "browser", "cluster", "fast"]
    assert all(f.installed and not f.missing for f in found)
    enc = next(f for f in found if f.piece.name == "encoder")
    assert enc.versions == {"torch": "9.9", "webrtcvad-wheels": "9.9", "Resemblyzer": "9.9"}
    assert enc.detail == "torch 9.9: CPU build"


def test_missing_module_names_it_and_keeps_the_others(monkeypatch):
    _fake_environment(monkeypatch, broken={"resemblyzer", "distributed"})
    found = {f.piece.name: f for f in doctor.check_pieces()}
    enc = found["encoder"]
    assert not enc.installed and enc.missing == ["resemblyzer (not installed)"]
    assert set(enc.versions) == {"torch", "webrtcvad-wheels"}
    assert not found["cluster"].installed and found["cluster"].missing == ["distributed (not installed)"]
    assert found["audio"].installed and found["semantic"].installed


def test_an_installed_module_that_fails_to_import_makes_its_piece_broken(monkeypatch):
    # a torch built for another platform raises OSError on import; a module whose own import of another module
    # fails raises ModuleNotFoundError naming that other module: both are installed, and pip would not fix them
    _fake_environment(monkeypatch, errors={
        "torch": {"state": "broken", "error": "OSError: libtorch_cpu.so: cannot open shared object file"},
        "pyworld": {"state": "broken", "error": "ModuleNotFoundError: No module named 'pkg_resources'"}})
    found = {f.piece.name: f for f in doctor.check_pieces()}
    assert found["vocoder"].state == "broken"
    assert found["vocoder"].missing == ["pyworld: installed, but its import fails: ModuleNotFoundError: No module "
                                        "named 'pkg_resources'"]
    for name in ("encoder", "semantic"):
        assert not found[name].installed and found[name].state == "broken"
        assert found[name].missing == ["torch: installed, but its import fails: OSError: libtorch_cpu.so: cannot "
                                       "open shared object file"]
        assert found[name].detail == ""
    assert found["audio"].state == "installed"


def test_probes_in_processes_report_what_failed(tmp_path, monkeypatch):
    """Real child processes: a module missing, one installed but failing (a missing system library), one whose
    import hangs, one that crashes Python; each is reported for its piece, the others are still checked, and a
    hung probe is stopped at the timeout."""
    import time

    (tmp_path / "vpx_ok.py").write_text("__version__ = '1.2'\n")
    (tmp_path / "vpx_nolib.py").write_text(
        "raise OSError(\"cannot load library 'libsndfile.so': libsndfile.so: cannot open shared object file\")\n")
    (tmp_path / "vpx_hang.py").write_text("import time\ntime.sleep(600)\n")
    (tmp_path / "vpx_crash.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    P = doctor.Piece
    pieces = [P("fine", "", (("vpx_ok", None),)), P("gone", "", (("vpx_absent", None),), command="pip install x"),
              P("nolib", "", (("vpx_nolib", None), ("vpx_ok", None))), P("hang", "", (("vpx_ok", None),
                                                                                     ("vpx_hang", None))),
              P("crash", "", (("vpx_crash", None), ("vpx_ok", None)))]
    t0 = time.monotonic()
    found = {f.piece.name: f for f in doctor.check_pieces(pieces, timeout=5)}
    assert time.monotonic() - t0 < 60
    assert found["fine"].state == "installed" and found["fine"].versions == {"vpx_ok": "1.2"}
    assert found["gone"].state == "missing" and found["gone"].missing == ["vpx_absent (not installed)"]
    assert found["nolib"].state == "broken" and found["nolib"].versions == {"vpx_ok": "1.2"}
    assert found["nolib"].missing == ["vpx_nolib: installed, but its import fails: OSError: cannot load library "
                                      "'libsndfile.so': libsndfile.so: cannot open shared object file"]
    assert found["hang"].state == "timed out" and found["hang"].versions == {"vpx_ok": "1.2"}
    assert found["hang"].missing == ["vpx_hang: the import did not finish within 5 s (a hang, or a very slow "
                                     "disk; --timeout gives it longer)"]
    assert found["crash"].state == "broken"
    assert found["crash"].missing[0].startswith("vpx_crash: the import crashed Python (signal 11 (SIGSEGV))")
    assert found["crash"].missing[1] == "vpx_ok: not tried (an earlier import of this piece failed as said)"


def test_missing_program_and_alternative_names(monkeypatch):
    _fake_environment(monkeypatch, programs=("chromium-browser",))
    browser = next(f for f in doctor.check_pieces() if f.piece.name == "browser")
    assert not browser.installed and browser.missing == ["chromedriver (not on PATH)"]
    _fake_environment(monkeypatch, programs=())
    browser = next(f for f in doctor.check_pieces() if f.piece.name == "browser")
    assert browser.missing == ["chromium or chromium-browser (not on PATH)", "chromedriver (not on PATH)"]


def test_torch_build_names_cuda_and_survives_a_broken_driver():
    def boom():
        raise RuntimeError("driver too old")

    assert doctor.torch_build(SimpleNamespace(version=SimpleNamespace(cuda="12.8"),
                                              cuda=SimpleNamespace(is_available=boom))).startswith(
        "CUDA 12.8 build (GPU available: no")
    assert doctor.torch_build(SimpleNamespace(version=SimpleNamespace(cuda="12.8"),
                                              cuda=SimpleNamespace(is_available=lambda: True))) == \
        "CUDA 12.8 build (GPU available: yes)"


def test_torch_pieces_install_the_cpu_build_first():
    for p in doctor.PIECES:
        if any(mod == "torch" for mod, _ in p.modules):
            first, *rest = p.command.split(" && ")
            assert first == f"pip install torch==2.13.0 --index-url {doctor.CPU_TORCH_INDEX}", p.name
            assert rest and rest[0].startswith("pip install -e '.["), p.name
    enc = next(p for p in doctor.PIECES if p.name == "encoder")
    assert enc.command.endswith("pip install --no-deps resemblyzer==0.1.4")


def test_readme_gives_every_piece_its_command():
    text = README.read_text(encoding="utf-8")
    install = text[text.index("## Install"):]
    install = install[:install.index("\n## ", 4)]
    for p in doctor.PIECES:
        assert p.command in install, p.name


def test_cli_lists_installed_and_missing_with_commands(monkeypatch):
    _fake_environment(monkeypatch, broken={"faster_whisper"}, cuda="12.8",
                      errors={"soundfile": {"state": "broken",
                                            "error": "OSError: cannot load library 'libsndfile.so'"}})
    r = CliRunner().invoke(app, ["doctor"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].startswith("vpeval ") and "core: numpy" in lines[0]
    assert "[installed] vocoder: pyworld-prebuilt 9.9" in lines
    # installed but failing to import is not "missing, install with pip"
    assert "[broken]    audio: soundfile: installed, but its import fails: OSError: cannot load library " \
        "'libsndfile.so'" in lines
    i = lines.index("[broken]    audio: soundfile: installed, but its import fails: OSError: cannot load library "
                    "'libsndfile.so'")
    assert lines[i + 2].startswith("            installed, but an import fails (above): pip does not add a missing "
                                   "system library")
    assert "[missing]   asr: faster_whisper (not installed)" in lines
    asr = next(p for p in doctor.PIECES if p.name == "asr")
    assert f"            install ({asr.size}): {asr.command}" in lines
    assert any(re.fullmatch(r" +torch 9\.9: CUDA 12\.8 build \(GPU available: no; .*\)", ln) for ln in lines)
    assert lines[-1].startswith("9 of 11 optional pieces installed; 1 broken; 1 missing")
    r = CliRunner().invoke(app, ["doctor", "--json"])
    doc = json.loads(r.output)
    got = {p["name"]: p for p in doc["pieces"]}
    assert got["asr"]["installed"] is False and got["asr"]["command"] == asr.command
    assert got["audio"]["state"] == "broken" and got["asr"]["state"] == "missing"
    assert got["vocoder"]["installed"] is True and got["vocoder"]["versions"]["pyworld-prebuilt"] == "9.9"


@pytest.mark.skipif(not __import__("importlib.util").util.find_spec("torch"), reason="torch not installed")
def test_real_torch_is_reported_with_its_build():
    enc = next(f for f in doctor.check_pieces([p for p in doctor.PIECES if p.name == "encoder"]))
    assert enc.detail.startswith("torch ") and ("CPU build" in enc.detail or "CUDA" in enc.detail)
