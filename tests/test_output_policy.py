"""The one output policy (vpeval.io.output) across every command that writes: refuse an existing output,
--force only over an earlier output proved by its manifest (and then as a whole), one winner among concurrent
writers, symlinked outputs written through, stale temporaries of dead runs removed, no partial output."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from vpeval.cli.main import app
from vpeval.io.embeddings import EmbeddingSet, write_embeddings
from vpeval.io.output import (
    MANIFEST_NAME, OutputBusyError, OutputExistsError, claim_file, claim_folder, verify_manifest,
)

SRC = Path(__file__).resolve().parents[1] / "src"


def _emb(n_spk: int, prefix: str, seed: int) -> EmbeddingSet:
    rng = np.random.default_rng(seed)
    spk = np.repeat([f"{prefix}{i}" for i in range(n_spk)], 4)
    utt = np.array([f"{s}-1-{j}" for s, j in zip(spk, np.tile(range(4), n_spk))])
    centres = rng.normal(size=(n_spk, 8))
    x = np.repeat(centres, 4, axis=0) + 0.5 * rng.normal(size=(spk.size, 8))
    y = x + 0.8 * rng.normal(size=x.shape)
    cond = np.r_[["original"] * spk.size, ["anonymized"] * spk.size]
    return EmbeddingSet(np.vstack([x, y]), np.r_[utt, utt], np.r_[spk, spk], cond, "toy")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("inputs")
    rng = np.random.default_rng(1)
    with open(d / "scores.txt", "w") as f:
        f.writelines(f"{float(v)!r} 1\n" for v in rng.normal(1, 1, 30))
        f.writelines(f"{float(v)!r} 0\n" for v in rng.normal(0, 1, 30))
    system = d / "system"
    (system / "train").mkdir(parents=True)
    write_embeddings(system / "embeddings_toy.npz", _emb(8, "e", 2))
    write_embeddings(system / "train" / "embeddings_toy.npz", _emb(10, "t", 3))
    sf = pytest.importorskip("soundfile")
    audio = d / "audio"
    audio.mkdir()
    t = np.arange(16000) / 16000
    for k, spk in enumerate(("11", "12")):
        for u in range(2):
            y = 0.3 * np.sin(2 * np.pi * (120 + 40 * k + 7 * u) * t) * (1 + 0.3 * np.sin(2 * np.pi * 3 * t))
            y += 0.01 * rng.normal(size=t.size)
            sf.write(audio / f"{spk}-1-000{u}.flac", y, 16000)
    kaldi = d / "kaldi"  # a Kaldi data folder over the same audio (absolute paths), for `segment`
    kaldi.mkdir()
    utts = sorted(p.stem for p in audio.glob("*.flac"))
    (kaldi / "wav.scp").write_text("".join(f"{u} {audio / (u + '.flac')}\n" for u in utts))
    (kaldi / "utt2spk").write_text("".join(f"{u} {u.split('-')[0]}\n" for u in utts))
    from test_vpc_import import _write_run  # the VoicePrivacy toolkit's files, for `vpc-import`

    (d / "vpc").mkdir()
    _write_run(d / "vpc")
    (d / "ref.txt").write_text("11-1-0000 hello world\n11-1-0001 hello there\n12-1-0000 good day\n"
                               "12-1-0001 good night\n")
    return d


def _fake_asr(monkeypatch):
    """utility --save-hyp without a speech recogniser: a fixed transcript per utterance."""
    import vpeval.audio.asr as asr

    class Fake:
        def __init__(self, *a, **k):
            pass

        def settings(self):
            return {"backend": "fake", "model_dir": "-", "compute_type": "-", "beam_size": 1, "cpu_threads": 1}

    monkeypatch.setattr(asr, "FasterWhisperBackend", Fake)
    monkeypatch.setattr(asr, "transcribe_folder", lambda d, backend, quiet=False: {
        p.stem: "hello world" for p in sorted(Path(d).glob("*.flac"))})


# command -> (arguments given the inputs folder and the output path, manifest command family, output is a file)
COMMANDS = {
    "report": (lambda d, o: ["report", str(d / "scores.txt"), "-o", str(o), "-q"], "report", False),
    "audit": (lambda d, o: ["audit", str(d / "system"), "-o", str(o), "-q", "--backend", "cosine", "--no-fusion"],
              "audit", False),
    "demo": (lambda d, o: ["demo", "--example", str(d / "system"), "-o", str(o), "-q", "--backend", "cosine",
                           "--no-fusion"], "demo", False),
    "trials": (lambda d, o: ["trials", str(d / "system" / "embeddings_toy.npz"), "-o", str(o), "--types", "oa",
                             "--json"], "trials", False),
    "attack": (lambda d, o: ["attack", str(d / "system" / "embeddings_toy.npz"), "--train",
                             str(d / "system" / "train" / "embeddings_toy.npz"), "--backend", "lda", "--types", "oa",
                             "-o", str(o), "--json"], "attack", False),
    "simulate": (lambda d, o: ["simulate", "-o", str(o), "--n", "40", "--n-probes", "40", "-q", "--estimators", "pav"],
                 "simulate", False),
    "anonymize": (lambda d, o: ["anonymize", str(d / "audio"), str(o), "-q", "--json"], "anonymize", False),
    "embed": (lambda d, o: ["embed", str(d / "audio"), "-o", str(o), "-q", "--json"], "embed", True),
    "segment": (lambda d, o: ["segment", str(d / "kaldi"), "-o", str(o), "--seconds", "0.4", "--json"], "segment",
                False),
    "vpc-import": (lambda d, o: ["vpc-import", str(d / "vpc" / "result_for_rank_mcadams"), "--scores",
                                 str(d / "vpc" / "exp"), "--data", str(d / "vpc" / "data"), "-o", str(o), "--n-boot",
                                 "39", "--json"], "vpc-import", False),
    "utility": (lambda d, o: ["utility", "--ref", str(d / "ref.txt"), "--audio", str(d / "audio"), "--save-hyp",
                              str(o), "--json"], "utility", False),
}


def _out(tmp_path, name):
    return tmp_path / ("out.npz" if COMMANDS[name][2] else "out")


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".vpeval-" in p.name and not p.name.endswith("manifest.json"))


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_writing_command_twice_in_sequence(name, inputs, tmp_path, monkeypatch):
    _fake_asr(monkeypatch)
    args, family, is_file = COMMANDS[name]
    out = _out(tmp_path, name)
    runner = CliRunner()
    r = runner.invoke(app, args(inputs, out))
    assert r.exit_code == 0, r.output
    assert verify_manifest(out, (family,), is_file=is_file) is None
    first = json.loads((out.parent / f".{out.name}.vpeval-manifest.json" if is_file else out / MANIFEST_NAME)
                       .read_text())
    assert first["command"] == family and first["files"]
    # the second run into the same output is refused and changes nothing
    r = runner.invoke(app, args(inputs, out))
    assert r.exit_code == 3 and "exists" in r.output and "--force" in r.output, r.output
    assert verify_manifest(out, (family,), is_file=is_file) is None
    if not is_file:  # an earlier output with a file of the user's in it is never replaced, not even with --force
        (out / "mine.txt").write_text("keep")
        r = runner.invoke(app, args(inputs, out) + ["--force"])
        assert r.exit_code == 3 and "mine.txt" in r.output and (out / "mine.txt").read_text() == "keep"
        (out / "mine.txt").unlink()
        (out / "mine").mkdir()  # an empty folder of the user's is not in the manifest either
        r = runner.invoke(app, args(inputs, out) + ["--force"])
        assert r.exit_code == 3 and "mine" in r.output and (out / "mine").is_dir()
        (out / "mine").rmdir()
        # a stale file of an earlier run that the new run would not write: the manifest must list it
        first_files = {e["path"] for e in first["files"]}
    r = runner.invoke(app, args(inputs, out) + ["--force"])
    assert r.exit_code == 0, r.output
    # the whole output is the new run's: exactly the files of its manifest, nothing stale, no temporaries
    assert verify_manifest(out, (family,), is_file=is_file) is None
    if not is_file:
        new = json.loads((out / MANIFEST_NAME).read_text())
        assert {e["path"] for e in new["files"]} == first_files
    assert _leftovers(tmp_path) == []


def _cli(*args):
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-m", "vpeval.cli.main", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


@pytest.mark.parametrize("name", [n for n in COMMANDS if n != "utility"])
def test_every_writing_command_racing_itself_has_one_winner(name, inputs, tmp_path):
    args, family, is_file = COMMANDS[name]
    out = _out(tmp_path, name)
    procs = [_cli(*args(inputs, out)) for _ in range(2)]
    results = [(p.wait(timeout=120), p.stdout.read(), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    assert sorted(r[0] for r in results) == [0, 3], results
    loser = next(r[2] for r in results if r[0] == 3)
    assert "another vpeval run is writing" in loser or "exists" in loser, loser
    assert verify_manifest(out, (family,), is_file=is_file) is None
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_writing_command_is_refused_while_another_run_writes(name, inputs, tmp_path, monkeypatch):
    """Deterministic half of the race: while one run holds the output, any other is refused at once."""
    _fake_asr(monkeypatch)
    args, family, is_file = COMMANDS[name]
    out = _out(tmp_path, name)
    holder = (claim_file if is_file else claim_folder)(out, command=family)
    try:
        r = CliRunner().invoke(app, args(inputs, out))
        assert r.exit_code == 3 and "another vpeval run is writing" in r.output, r.output
        assert str(out) in r.output and "vpeval-tmp" not in r.output
    finally:
        holder.abort()
    assert not out.exists() and _leftovers(tmp_path) == []


def test_names_alone_never_prove_ownership(tmp_path):
    out = tmp_path / "sim"
    out.mkdir()
    (out / "scores.txt").write_text("my own notes\n")  # named like simulate's output, not written by it
    r = CliRunner().invoke(app, ["simulate", "-o", str(out), "--n", "40", "--n-probes", "40", "-q", "--force"])
    assert r.exit_code == 3 and "no vpeval manifest" in r.output
    assert (out / "scores.txt").read_text() == "my own notes\n"
    # a forged manifest of another command, or one whose files changed, proves nothing either
    r = CliRunner().invoke(app, ["simulate", "-o", str(tmp_path / "s2"), "--n", "40", "--n-probes", "40", "-q"])
    assert r.exit_code == 0
    assert "`vpeval simulate`" in verify_manifest(tmp_path / "s2", ("report",))
    (tmp_path / "s2" / "scores.txt").write_text("edited\n")
    assert "changed since" in verify_manifest(tmp_path / "s2", ("simulate",))


def test_anonymize_into_a_user_folder_and_embed_over_a_file_are_refused(inputs, tmp_path):
    out = tmp_path / "anon"
    out.mkdir()
    (out / "keep.flac").write_bytes(b"not ours")
    r = CliRunner().invoke(app, ["anonymize", str(inputs / "audio"), str(out), "-q"])
    assert r.exit_code == 3 and (out / "keep.flac").read_bytes() == b"not ours"
    npz = tmp_path / "e.npz"
    r = CliRunner().invoke(app, ["embed", str(inputs / "audio"), "-o", str(npz), "-q", "-c", "original"])
    assert r.exit_code == 0
    r = CliRunner().invoke(app, ["embed", str(inputs / "audio"), "-o", str(npz), "-q", "-c", "anonymized"])
    assert r.exit_code == 3 and "exists" in r.output and "--append" in r.output  # would lose the original rows
    # --append keeps both conditions and records the joined file in the manifest
    r = CliRunner().invoke(app, ["embed", str(inputs / "audio"), "-o", str(npz), "-q", "-c", "anonymized",
                                 "--append"])
    assert r.exit_code == 0, r.output
    from vpeval.io.embeddings import read_embeddings

    assert sorted(set(read_embeddings(npz).condition.tolist())) == ["anonymized", "original"]
    assert verify_manifest(npz, ("embed",), is_file=True) is None


def test_symlinked_output_folder_is_written_through(inputs, tmp_path):
    target = tmp_path / "real"
    target.mkdir()
    link = tmp_path / "link"
    link.symlink_to(target, target_is_directory=True)
    r = CliRunner().invoke(app, ["report", str(inputs / "scores.txt"), "-o", str(link), "-q"])
    assert r.exit_code == 0, r.output
    assert link.is_symlink() and (target / "report.json").is_file()
    r = CliRunner().invoke(app, ["report", str(inputs / "scores.txt"), "-o", str(link), "-q", "--force"])
    assert r.exit_code == 0, r.output
    assert link.is_symlink() and os.path.realpath(link) == str(target) and (target / "report.html").is_file()
    assert _leftovers(tmp_path) == []


def test_stale_temporaries_of_dead_runs_are_removed_and_nothing_else(inputs, tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    import socket

    stale = tmp_path / ".out.vpeval-tmp-deadbeef"
    stale.mkdir()
    (stale / ".vpeval-owner").write_text(f"{dead.pid} {socket.gethostname()}\n")
    alive = tmp_path / ".out.vpeval-tmp-alive"
    alive.mkdir()
    (alive / ".vpeval-owner").write_text(f"{os.getpid()} {socket.gethostname()}\n")
    foreign = tmp_path / ".out.vpeval-tmp-nopid"  # no owner file: not provably ours
    foreign.mkdir()
    r = CliRunner().invoke(app, ["report", str(inputs / "scores.txt"), "-o", str(tmp_path / "out"), "-q"])
    assert r.exit_code == 0, r.output
    assert not stale.exists() and alive.is_dir() and foreign.is_dir()


def test_failure_midway_leaves_nothing_and_a_rerun_is_accepted(inputs, tmp_path):
    out = tmp_path / "t"
    meta = tmp_path / "meta.csv"
    meta.write_text("utterance_id,speaker_id\nnobody,x\n")  # fails after the output is claimed
    r = CliRunner().invoke(app, ["trials", str(inputs / "system" / "embeddings_toy.npz"), "-o", str(out),
                                 "--metadata", str(meta)])
    assert r.exit_code == 2 and not out.exists() and _leftovers(tmp_path) == []
    r = CliRunner().invoke(app, ["trials", str(inputs / "system" / "embeddings_toy.npz"), "-o", str(out)])
    assert r.exit_code == 0, r.output


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes everywhere")
def test_unwritable_output_is_reported_with_the_given_path(inputs, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        r = CliRunner().invoke(app, ["report", str(inputs / "scores.txt"), "-o", str(ro / "x"), "-q"])
    finally:
        ro.chmod(0o755)
    assert r.exit_code == 3 and str(ro / "x") in r.output and "vpeval-tmp" not in r.output


def test_unwritable_output_message_names_the_given_path(tmp_path, monkeypatch):
    """The same without file permissions (root ignores them): the file system refuses the temporary folder."""
    import vpeval.io.output as output

    def refuse(self, *a, **k):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(output.Path, "mkdir", refuse)
    with pytest.raises(output.OutputError) as e:
        claim_folder(tmp_path / "given", command="report")
    assert str(tmp_path / "given") in str(e.value) and "Permission denied" in str(e.value)
    assert "vpeval-tmp" not in str(e.value)


def test_report_from_a_pipe_hashes_the_bytes_it_read(inputs, tmp_path):
    import hashlib

    data = (inputs / "scores.txt").read_bytes()
    out = tmp_path / "r"
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-m", "vpeval.cli.main", "report", "/dev/stdin", "-o", str(out), "-q"],
                       input=data, capture_output=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    rec = json.loads((out / "report.json").read_text())["inputs"][0]
    assert rec["path"] == "/dev/stdin" and rec["sha256"] == hashlib.sha256(data).hexdigest()


def test_claims_exclude_each_other_in_process(tmp_path):
    a = claim_folder(tmp_path / "o", command="report")
    with pytest.raises(OutputBusyError):
        claim_folder(tmp_path / "o", command="trials")
    (a.path / "x.txt").write_text("1")
    a.commit()
    with pytest.raises(OutputExistsError):
        claim_folder(tmp_path / "o", command="report")
    with claim_folder(tmp_path / "o", command="audit", force=True) as c:  # same family: report layout
        (c.path / "y.txt").write_text("2")
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == [MANIFEST_NAME, "y.txt"]
    with pytest.raises(OutputExistsError, match="not `vpeval trials`"):
        claim_folder(tmp_path / "o", command="trials", force=True)


def _full_disk(monkeypatch):
    """Every file the command opens for writing in its temporary folder fails with ENOSPC (a full disk)."""
    import builtins
    import errno
    import io

    real = io.open

    def full(file, mode="r", *a, **k):
        name = os.fsdecode(file) if isinstance(file, (str, bytes, os.PathLike)) else ""
        if any(c in mode for c in "wax") and ".vpeval-tmp-" in name and not name.endswith(".vpeval-owner"):
            raise OSError(errno.ENOSPC, "No space left on device", name)
        return real(file, mode, *a, **k)

    monkeypatch.setattr(io, "open", full)
    monkeypatch.setattr(builtins, "open", full)


@pytest.mark.parametrize("name", ["report", "trials", "simulate", "anonymize", "embed"])
def test_a_full_disk_exits_3_naming_the_output_and_leaves_nothing(name, inputs, tmp_path, monkeypatch):
    if name == "embed":
        pytest.importorskip("librosa")
    out = _out(tmp_path, name)
    args = COMMANDS[name][0](inputs, out)
    _full_disk(monkeypatch)
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 3, r.output
    assert f"{out}: cannot " in r.output and "(No space left on device)" in r.output and "vpeval-tmp" not in r.output
    assert not out.exists() and _leftovers(tmp_path) == []


def test_ownership_is_kept_until_the_install(tmp_path, monkeypatch):
    """A run killed while the manifest is written (it hashes every file) leaves a temporary folder that the
    next run recognises as stale (its owner file is still there); the installed output holds no owner file."""
    import vpeval.io.output as output

    seen = []
    real = output._manifest_doc

    def spy(command, base, files):
        seen.append((base / ".vpeval-owner").is_file())
        assert ".vpeval-owner" not in files
        return real(command, base, files)

    monkeypatch.setattr(output, "_manifest_doc", spy)
    with claim_folder(tmp_path / "o", command="report") as c:
        (c.path / "a.txt").write_text("1")
    with claim_file(tmp_path / "f.txt", command="report") as c:
        c.path.write_text("1")
    assert seen == [True, True]
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == [MANIFEST_NAME, "a.txt"]
    assert verify_manifest(tmp_path / "o", ("report",)) is None


def test_a_late_task_never_recreates_a_removed_temporary_folder(inputs, tmp_path):
    """A cluster task still running after its run failed (or was installed) writes below the temporary folder
    by its old path: it must fail, not re-create the folder (which no later run would remove)."""
    from vpeval.audio.anonymize.folder import _anonymize_file
    from vpeval.audio.io import scan_audio_folder

    it = scan_audio_folder(inputs / "audio")[0]
    it = dataclasses.replace(it, relative_path=Path("sub") / it.relative_path)
    c = claim_folder(tmp_path / "o", command="anonymize")
    gone = c.path
    c.abort()
    with pytest.raises(OSError):
        _anonymize_file((it, "mcadams", {"alpha": 0.8}, gone, "flac", False, None, None))
    assert not gone.exists() and _leftovers(tmp_path) == []


def test_a_full_disk_names_the_output_being_written_of_two(inputs, tmp_path, monkeypatch):
    """embed --metadata-out holds two claims: the error names the file whose write failed, not the other."""
    import errno

    from vpeval.io import embeddings

    def full(path, es, **k):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(embeddings, "write_embeddings", full)
    d = tmp_path / "data"
    d.mkdir()
    (d / "wav.scp").write_text(f"11-1-0000 {inputs / 'audio' / '11-1-0000.flac'}\n")
    (d / "utt2spk").write_text("11-1-0000 11\n")
    e, m = tmp_path / "e.npz", tmp_path / "m.csv"
    r = CliRunner().invoke(app, ["embed", str(d), "-o", str(e), "-q", "--metadata-out", str(m)])
    assert r.exit_code == 3, r.output
    assert f"{e}: cannot write the output (No space left on device)" in r.output and str(m) not in r.output
    assert not e.exists() and not m.exists() and _leftovers(tmp_path) == []
