"""`vpeval doctor`: which optional pieces import, with versions and the torch build, and the command adding each
missing one; import failures and missing programs are simulated with monkeypatch."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
from typer.testing import CliRunner

import vpeval.cli.doctor as doctor
from vpeval.cli.main import app

README = Path(__file__).resolve().parents[1] / "README.md"


def _fake_environment(monkeypatch, *, broken=(), errors=None, programs=("chromium", "chromedriver"), cuda=None):
    """Every module imports as a fake (version 9.9) except those in ``broken`` (ImportError) or ``errors``
    (module -> exception); programs on PATH are ``programs``; torch reports the CUDA version ``cuda``."""
    errors = dict(errors or {})

    def fake_import(name):
        if name in broken:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        if name in errors:
            raise errors[name]
        m = ModuleType(name)
        m.__version__ = "9.9"
        if name == "torch":
            m.version = SimpleNamespace(cuda=cuda)
            m.cuda = SimpleNamespace(is_available=lambda: False)
        return m

    monkeypatch.setattr(doctor, "_import_module", fake_import)
    monkeypatch.setattr(doctor, "_which", lambda prog: f"/usr/bin/{prog}" if prog in programs else None)
    monkeypatch.setattr(doctor, "_version", lambda module, dist: module.__version__)


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


def test_any_import_error_counts_as_missing_and_is_shown(monkeypatch):
    # a torch built for another platform raises OSError on import, not ImportError; a module whose own import of
    # another module fails raises ModuleNotFoundError naming that other module
    _fake_environment(monkeypatch, errors={"torch": OSError("libtorch_cpu.so: cannot open shared object file\nmore"),
                                           "pyworld": ModuleNotFoundError("No module named 'pkg_resources'",
                                                                          name="pkg_resources")})
    vocoder = next(f for f in doctor.check_pieces() if f.piece.name == "vocoder")
    assert vocoder.missing == ["pyworld: ModuleNotFoundError: No module named 'pkg_resources'"]
    found = {f.piece.name: f for f in doctor.check_pieces()}
    for name in ("encoder", "semantic"):
        assert not found[name].installed
        assert found[name].missing == ["torch: OSError: libtorch_cpu.so: cannot open shared object file"]
        assert found[name].detail == ""


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
    _fake_environment(monkeypatch, broken={"faster_whisper"}, cuda="12.8")
    r = CliRunner().invoke(app, ["doctor"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].startswith("vpeval ") and "core: numpy" in lines[0]
    assert "[installed] audio: soundfile 9.9, soxr 9.9, librosa 9.9" in lines
    assert "[missing]   asr: faster_whisper (not installed)" in lines
    asr = next(p for p in doctor.PIECES if p.name == "asr")
    assert f"            install ({asr.size}): {asr.command}" in lines
    assert any(re.fullmatch(r" +torch 9\.9: CUDA 12\.8 build \(GPU available: no; .*\)", ln) for ln in lines)
    assert lines[-1].startswith("10 of 11 optional pieces installed")
    r = CliRunner().invoke(app, ["doctor", "--json"])
    doc = json.loads(r.output)
    got = {p["name"]: p for p in doc["pieces"]}
    assert got["asr"]["installed"] is False and got["asr"]["command"] == asr.command
    assert got["audio"]["installed"] is True and got["audio"]["versions"]["soxr"] == "9.9"


@pytest.mark.skipif(not __import__("importlib.util").util.find_spec("torch"), reason="torch not installed")
def test_real_torch_is_reported_with_its_build():
    enc = next(f for f in doctor.check_pieces([p for p in doctor.PIECES if p.name == "encoder"]))
    assert enc.detail.startswith("torch ") and ("CPU build" in enc.detail or "CUDA" in enc.detail)
