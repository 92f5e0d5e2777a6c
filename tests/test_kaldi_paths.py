"""Relative wav.scp paths: from the data folder (vpeval's default, the folders it writes) or from the working
folder as Kaldi recipes read them (--paths-from cwd); a wrong or ambiguous base is an error naming both files."""

import json
import os

import numpy as np
import pytest
from typer.testing import CliRunner

from vpeval.audio.io import scan_audio_folder, write_audio
from vpeval.errors import InputFileError, VpevalError
from vpeval.io.kaldi_data import read_kaldi_data_folder

runner = CliRunner()


def _tone(f0, seconds=0.6):
    t = np.arange(int(16000 * seconds)) / 16000
    return 0.3 * np.sin(2 * np.pi * f0 * t) + 0.01 * np.random.default_rng(int(f0)).normal(size=t.size)


def _recipe(tmp_path):
    """A Kaldi recipe layout: s5/ (where the recipe runs) holds corpus/ and data/test/, whose wav.scp lists
    corpus/... relative to s5/ (as Kaldi's data preparation writes them)."""
    s5 = tmp_path / "s5"
    (s5 / "data" / "test").mkdir(parents=True)
    lines = []
    for k, (utt, f0) in enumerate((("A-1", 120.0), ("A-2", 130.0), ("B-1", 210.0), ("B-2", 220.0))):
        write_audio(s5 / "corpus" / f"{utt}.wav", _tone(f0))
        lines.append(f"{utt} corpus/{utt}.wav")
    d = s5 / "data" / "test"
    (d / "wav.scp").write_text("\n".join(lines) + "\n")
    (d / "utt2spk").write_text("A-1 A\nA-2 A\nB-1 B\nB-2 B\n")
    return s5, d


def test_kaldi_recipe_paths_need_cwd_and_the_default_says_so(tmp_path, monkeypatch):
    s5, d = _recipe(tmp_path)
    monkeypatch.chdir(s5)
    with pytest.raises(InputFileError) as e:
        read_kaldi_data_folder("data/test")
    msg = str(e.value)
    # names the line, both files and the option
    assert "wav.scp:1" in msg and str(os.path.join("data", "test", "corpus", "A-1.wav")) in msg
    assert str(s5 / "corpus" / "A-1.wav") in msg and "--paths-from cwd" in msg
    k = read_kaldi_data_folder("data/test", paths_from="cwd")
    assert k.wav["B-2"] == s5 / "corpus" / "B-2.wav" and k.wav["B-2"].is_absolute()
    # the paths stay right when the working folder changes after reading (they are absolute)
    monkeypatch.chdir(tmp_path)
    assert all(p.is_file() for p in k.wav.values())
    # read from elsewhere, 'cwd' does not find them and says the data folder does not hold them either
    with pytest.raises(InputFileError, match="does not exist"):
        read_kaldi_data_folder(s5 / "data" / "test", paths_from="cwd")


def test_data_base_is_kept_and_cwd_refuses_what_only_the_data_folder_has(tmp_path, monkeypatch):
    d = tmp_path / "data"
    write_audio(d / "wav" / "A-1.wav", _tone(100.0))
    write_audio(d / "wav" / "B-1.wav", _tone(200.0))
    (d / "wav.scp").write_text("A-1 wav/A-1.wav\nB-1 wav/B-1.wav\n")  # as vpeval writes them
    (d / "utt2spk").write_text("A-1 A\nB-1 B\n")
    monkeypatch.chdir(tmp_path)
    for how in (None, "data"):
        assert read_kaldi_data_folder(d, paths_from=how).wav["A-1"] == d / "wav" / "A-1.wav"
    with pytest.raises(InputFileError) as e:
        read_kaldi_data_folder(d, paths_from="cwd")
    assert str(tmp_path / "wav" / "A-1.wav") in str(e.value) and str(d / "wav" / "A-1.wav") in str(e.value)
    assert "--paths-from data" in str(e.value)
    # the working folder being the data folder: one file from both bases, no ambiguity
    monkeypatch.chdir(d)
    assert read_kaldi_data_folder(".").wav["B-1"].resolve() == (d / "wav" / "B-1.wav").resolve()
    with pytest.raises(VpevalError, match="paths_from 'here'"):
        read_kaldi_data_folder(d, paths_from="here")


def test_two_different_files_are_refused_unless_a_base_is_chosen(tmp_path, monkeypatch):
    d = tmp_path / "data"
    write_audio(d / "wav" / "A-1.wav", _tone(100.0))
    write_audio(tmp_path / "wav" / "A-1.wav", _tone(300.0))  # the same relative path from the working folder
    (d / "wav.scp").write_text("A-1 wav/A-1.wav\n")
    (d / "utt2spk").write_text("A-1 A\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputFileError, match="names two different files") as e:
        read_kaldi_data_folder(d)
    assert str(d / "wav" / "A-1.wav") in str(e.value) and str(tmp_path / "wav" / "A-1.wav") in str(e.value)
    assert read_kaldi_data_folder(d, paths_from="data").wav["A-1"] == d / "wav" / "A-1.wav"
    assert read_kaldi_data_folder(d, paths_from="cwd").wav["A-1"] == tmp_path / "wav" / "A-1.wav"
    # without the file check nothing is looked up: the chosen (default) base
    assert read_kaldi_data_folder(d, check_files=False).wav["A-1"] == d / "wav" / "A-1.wav"
    items = scan_audio_folder(d, paths_from="cwd")
    assert [i.path for i in items] == [tmp_path / "wav" / "A-1.wav"]


def test_cli_embed_and_anonymize_take_paths_from_cwd(tmp_path, monkeypatch):
    from vpeval.cli.main import app
    from vpeval.io.embeddings import read_embeddings

    s5, d = _recipe(tmp_path)
    monkeypatch.chdir(s5)
    r = runner.invoke(app, ["embed", "data/test", "-o", str(tmp_path / "e.npz"), "-q"])
    assert r.exit_code == 2 and "--paths-from cwd" in r.output
    r = runner.invoke(app, ["embed", "data/test", "-o", str(tmp_path / "e.npz"), "-q", "--paths-from", "cwd", "--json"])
    assert r.exit_code == 0, r.output
    es = read_embeddings(tmp_path / "e.npz")
    assert sorted(es.utterance_id.tolist()) == ["A-1", "A-2", "B-1", "B-2"]
    r = runner.invoke(app, ["anonymize", "data/test", str(tmp_path / "anon"), "-q", "--json", "--paths-from", "cwd"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["utterances"] == 4
    # the anonymized folder vpeval wrote reads with the default from anywhere
    monkeypatch.chdir(tmp_path.parent)
    assert len(read_kaldi_data_folder(tmp_path / "anon").wav) == 4
    r = runner.invoke(app, ["embed", str(d), "-o", str(tmp_path / "x.npz"), "--paths-from", "somewhere"])
    assert r.exit_code == 2 and "paths_from 'somewhere'" in r.output


def test_cli_utility_pitch_takes_paths_from_cwd(tmp_path, monkeypatch):
    pytest.importorskip("pyworld")
    from vpeval.cli.main import app

    s5, d = _recipe(tmp_path)
    d2 = s5 / "data" / "anon"
    d2.mkdir()
    for f in ("wav.scp", "utt2spk"):
        (d2 / f).write_text((d / f).read_text())
    monkeypatch.chdir(s5)
    args = ["utility", "--audio", "data/test", "--anonymized", "data/anon", "--pitch", "--json", "-q"]
    r = runner.invoke(app, args)
    assert r.exit_code == 2 and "--paths-from cwd" in r.output
    r = runner.invoke(app, args + ["--paths-from", "cwd"])
    assert r.exit_code == 0, r.output
    rho = json.loads(r.stdout)["pitch_correlation"]
    # the same files on both sides: every utterance's F0 contour correlates perfectly with itself
    assert sorted(rho["utterances"]) == ["A-1", "A-2", "B-1", "B-2"]
    assert rho["mean"] == pytest.approx(1.0)
