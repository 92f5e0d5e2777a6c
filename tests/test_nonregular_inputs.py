"""Issue 48 (5): a device, socket or folder given where a file is read is refused at once, before a byte is read,
by the one check of the I/O layer (vpeval.io.files.check_input_file); pipes stay accepted (docs/output.md)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from vpeval.errors import InputFileError, MemoryEstimateWarning

SRC = Path(__file__).resolve().parents[1] / "src"


def _readers():
    from vpeval.audio.asr.transcripts import read_transcripts
    from vpeval.audio.io import read_audio, read_speaker_metadata
    from vpeval.io.embeddings import read_embeddings, read_extractor_info
    from vpeval.io.kaldi_data import read_vpc_enrolls, read_vpc_trials
    from vpeval.io.matrix import read_kaldi_score_matrix, read_score_matrix
    from vpeval.io.pitch_table import read_pitch_table
    from vpeval.io.readers import read_columns, read_id_list, read_score_label, read_trials_scores
    from vpeval.io.speaker_groups import read_speaker_groups
    from vpeval.io.vpc_results import read_result_for_rank

    return {
        "score label": read_score_label,
        "key": lambda p: read_trials_scores(p, p),
        "columns": lambda p: read_columns(p, label_col=0, score_col=1, target="t", nontarget="n"),
        "ids": read_id_list,
        "matrix": read_score_matrix,
        "kaldi matrix": lambda p: read_kaldi_score_matrix(p, p),
        "embeddings": read_embeddings,
        "extractor info": read_extractor_info,
        "vpc trials": read_vpc_trials,
        "vpc enrolls": read_vpc_enrolls,
        "audio": read_audio,
        "speaker metadata": read_speaker_metadata,
        "groups": read_speaker_groups,
        "pitch table": read_pitch_table,
        "result table": read_result_for_rank,
        "transcripts": read_transcripts,
    }


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
@pytest.mark.parametrize("name", sorted(_readers()))
def test_devices_and_folders_are_refused_before_reading_and_pipes_are_read(name, tmp_path):
    read = _readers()[name]
    with pytest.raises(InputFileError, match=r"^/dev/zero: is a character device, not a regular file; expected "):
        read("/dev/zero")  # it used to read zeros until memory ran out
    with pytest.raises(InputFileError, match=r": is a folder, not a regular file; expected ") as e:
        read(tmp_path)
    assert e.value.path == str(tmp_path) and e.value.line is None
    if name == "score label":  # a pipe ends when its writer closes it: still read (vpeval report /dev/stdin)
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        threading.Thread(target=lambda: fifo.write_text("0.5 1\n0.25 0\n"), daemon=True).start()
        assert read(fifo).tar.tolist() == [0.5]


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
@pytest.mark.parametrize("argv", [["verify", "/dev/zero"], ["report", "/dev/zero", "-o", "OUT", "-q"],
                                  ["verify", "SCORES", "--key", "/dev/zero"]])
def test_cli_refuses_a_device_in_one_line_with_exit_2(argv, tmp_path):
    (tmp_path / "SCORES").write_text("a b 0.5\n")
    argv = [str(tmp_path / a) if a in ("OUT", "SCORES") else a for a in argv]
    p = subprocess.run([sys.executable, "-m", "vpeval.cli.main", *argv], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "PYTHONPATH": str(SRC)})
    assert p.returncode == 2, p.stderr
    assert p.stderr.splitlines() == [p.stderr.strip()] and p.stderr.startswith("vpeval: error: /dev/zero: is a "
                                                                                "character device")
    assert not (tmp_path / "OUT").exists()


def test_memory_exhaustion_is_one_line_naming_the_input_with_exit_4(tmp_path, monkeypatch):
    """A MemoryError (here raised where the scores are read) becomes one line naming the input and its size, the
    machine's memory and what helps, with exit code 4; no traceback."""
    from typer.testing import CliRunner

    import vpeval.cli.common as common
    from vpeval.cli.main import app

    scores = tmp_path / "scores.txt"
    scores.write_text("a b 0.5 target\n" * 1000)

    def exhausted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(common, "load_trials", exhausted)
    r = CliRunner().invoke(app, ["verify", str(scores)])
    assert r.exit_code == common.EXIT_MEMORY == 4
    line = " ".join(r.output.split())
    assert line.startswith("vpeval: error: out of memory while working on") and f"scores.txt ({15000 / 2**20:.3g} MiB)" in line
    assert "Traceback" not in r.output and "--jobs" in line
    assert "needs about" in line and "estimated before reading" in line  # the estimate made before reading


def test_the_memory_estimate_is_checked_before_reading_under_an_address_space_limit(tmp_path):
    """Under `ulimit -v` below the estimate (a certain failure), the command warns before it reads (the input, the
    estimate and the limit named) and runs out with one line naming the limit; a limit that leaves room gives no
    warning (a hostile run found one on every small input under a 0.6 GB limit, which runs)."""
    import resource
    import subprocess
    import sys

    from vpeval.cli.memory import BASE_BYTES, BYTES_PER_INPUT_BYTE

    scores = tmp_path / "scores.txt"
    rng = np.random.default_rng(0)
    scores.write_text("".join(f"{s:.6f} {int(s > 0)}\n" for s in rng.normal(size=200_000)))
    needs = BASE_BYTES + BYTES_PER_INPUT_BYTE * scores.stat().st_size

    def run(limit):
        def cap():
            resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))

        p = subprocess.run([sys.executable, "-m", "vpeval.cli.main", "verify", str(scores), "--jobs", "1"],
                           capture_output=True, text=True, preexec_fn=cap, timeout=300)
        return p.returncode, " ".join(p.stderr.split())

    code, err = run(needs - 2**20)  # below the estimate
    assert f"{scores}: evaluating it needs about {needs / 2**30:.3g} GiB of memory" in err, err
    assert "ulimit -v" in err and "Traceback" not in err, err
    assert code == 4 and "the address-space limit (ulimit -v) is" in err.split("vpeval: error:")[1], err
    code, err = run(8 * 2**30)  # plenty
    assert code == 0 and "needs about" not in err, err


@pytest.mark.parametrize("limit_mib, lines", [(170, 1000), (290, 10**6), (360, 10**6), (380, 10**6), (440, 10**6),
                                              (590, 10**6), (760, 3 * 10**6)])
def test_a_low_address_space_limit_ends_with_the_memory_line_not_a_crash(tmp_path, limit_mib, lines):
    """Under a `ulimit -v` too low to read a 1e6-line file, the command ends with the out-of-memory line and exit
    code 4 wherever memory runs out: before any command (importing the libraries), in pyarrow's reader (which
    aborted the process, exit 134, under 0.6 GB, or raised its own 'Failed to launch worker thread') or after it
    (a tester's finds). A 3e6-line file under 760 MiB: Arrow's reader aborted once fewer libraries were imported
    before it (a breaker's find); the room is now checked before the read. At 360 and 380 MiB importing pyarrow
    itself crashed (exit 139) or aborted (134): the room for the import is checked before it. At 160-180 MiB the
    command hung in scipy's BLAS start (its failed allocation retried for ever): loaded first, with its room checked."""
    import resource
    import subprocess
    import sys

    scores = tmp_path / "scores.txt"
    rng = np.random.default_rng(0)
    s = np.round(rng.normal(size=lines), 6)
    scores.write_text("\n".join(f"{x} {int(x > 0)}" for x in s.tolist()) + "\n")

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit_mib * 2**20, resource.RLIM_INFINITY))

    p = subprocess.run([sys.executable, "-m", "vpeval.cli.main", "verify", str(scores), "--jobs", "1"],
                       capture_output=True, text=True, preexec_fn=cap, timeout=300)
    # exit 0 where these libraries fit in less (another build): never a crash, a traceback or another code
    assert p.returncode in (0, 4) and "Traceback" not in p.stderr, (p.returncode, p.stderr[-2000:])
    assert p.returncode == 0 or "vpeval: error: out of memory" in " ".join(p.stderr.split()), p.stderr[-2000:]


def test_inputs_of_one_command_add_up_and_folders_count_only_what_is_read(tmp_path, monkeypatch):
    import vpeval.cli.memory as memory

    monkeypatch.setattr(memory, "_LAST", {"inputs": [], "bytes": 0, "warned": False})
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_bytes(b"0.5 1\n" * 1000)
    b.write_bytes(b"0.5 1\n" * 3000)
    kaldi = tmp_path / "kaldi"
    kaldi.mkdir()
    (kaldi / "trials").write_bytes(b"m p target\n" * 100)
    (kaldi / "scores").write_bytes(b"m p 0.5\n" * 100)
    (kaldi / "huge.wav").write_bytes(b"\0" * 100_000)  # not read: not counted
    assert memory.input_bytes([kaldi]) == 1100 + 800
    room = [(memory.BASE_BYTES + memory.BYTES_PER_INPUT_BYTE * 10_000, "only {} is here")]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        memory.check_score_input([str(a)], room=room)  # 6,000 bytes: within
    with pytest.warns(MemoryEstimateWarning, match=r"a.txt; .*b.txt: evaluating them needs about"):
        memory.check_score_input([str(b)], room=room)  # 24,000 bytes together: beyond
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        memory.check_score_input([str(b)], room=room)  # said once
    assert "a.txt" in memory.last_estimate() and "b.txt" in memory.last_estimate()


def test_the_memory_room_reads_cgroups_and_limits():
    from pathlib import Path

    from vpeval.cli.memory import _cgroup_room, _meminfo

    assert _meminfo("MemTotal:       24000 kB\nMemAvailable:   1000 kB\nHugePages_Total: 0\n") == {
        "MemTotal": 24000 * 1024, "MemAvailable": 1000 * 1024, "HugePages_Total": 0}
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        (root / "job").mkdir()
        (root / "job" / "memory.max").write_text("1000000\n")
        (root / "job" / "memory.current").write_text("400000\n")
        assert _cgroup_room(root, "0::/job\n") == 600000
        (root / "job" / "memory.stat").write_text("anon 100000\ninactive_file 300000\n")
        assert _cgroup_room(root, "0::/job\n") == 900000  # reclaimable page cache is room
        (root / "job" / "memory.stat").unlink()
        (root / "job" / "memory.max").write_text("max\n")
        assert _cgroup_room(root, "0::/job\n") is None
        # v1, the group's own folder not visible (a container): the hierarchy's root
        (root / "memory").mkdir()
        (root / "memory" / "memory.limit_in_bytes").write_text("2000\n")
        (root / "memory" / "memory.usage_in_bytes").write_text("2500\n")
        assert _cgroup_room(root, "12:memory:/docker/abc\n3:cpu:/x\n") == 0
        (root / "memory" / "memory.limit_in_bytes").write_text(f"{2**63 - 4096}\n")
        assert _cgroup_room(root, "12:memory:/docker/abc\n") is None
        assert _cgroup_room(root, "") is None
    from vpeval.cli.memory import check_score_input

    small = Path(__file__)  # any existing file: its size decides the estimate
    with pytest.warns(MemoryEstimateWarning, match="needs about .* of memory .* but only 0.000977 GiB is here"):
        check_score_input([str(small)], room=[(2**20, "only {} is here")])


def test_binary_data_in_a_score_file_is_refused_at_once_with_its_line(tmp_path):
    """A NUL byte (a sparse `truncate -s 50G` file, a binary given by mistake) is refused at the first chunk,
    naming the line and byte, instead of reading gigabytes of zeros (a hostile run: out of memory after 22 s)."""
    from typer.testing import CliRunner

    from vpeval.cli.main import app

    f = tmp_path / "scores.txt"
    f.write_bytes(b"0.5 1\n0.2 0\n\0\0\n")
    r = CliRunner().invoke(app, ["verify", str(f)])
    assert r.exit_code == 2 and "scores.txt:3: binary data (a NUL byte at byte 12), not text" in r.output
    sparse = tmp_path / "sparse.txt"
    with open(sparse, "wb") as fh:
        fh.truncate(1 << 34)  # 16 GiB of holes: no disk used
    r = CliRunner().invoke(app, ["verify", str(sparse)])
    assert r.exit_code == 2 and "sparse.txt:1: binary data (a NUL byte at byte 0)" in r.output


@pytest.mark.parametrize("mode", [["--json"], []])
def test_a_reader_that_goes_away_ends_the_command_quietly_with_141(tmp_path, mode):
    """`vpeval verify F [--json] | (sleep 1)`: the pipe's reader closed it; exit 141 as the shell's tools (killed
    by SIGPIPE), not 'error: Broken pipe' with the bad-input code 2 (JSON) nor rich's silent exit code 1, the code
    of an internal error (the table), and no flush traceback at exit."""
    f = tmp_path / "scores.txt"
    f.write_text("".join(f"{x:.6f} {i % 2}\n" for i, x in enumerate(np.random.default_rng(1).normal(size=200))))
    r, w = os.pipe()
    os.close(r)  # nobody reads: the first write fails
    p = subprocess.run([sys.executable, "-m", "vpeval.cli.main", "verify", str(f), *mode], stdout=w,
                       stderr=subprocess.PIPE, text=True, timeout=300)
    os.close(w)
    assert p.returncode == 141, p.stderr
    assert "Broken pipe" not in p.stderr and "Traceback" not in p.stderr and "Exception" not in p.stderr, p.stderr


def test_each_command_estimates_its_own_inputs(tmp_path):
    """The estimate adds up the inputs of one command, not of every command run in the same process (the tests'
    CliRunner, a notebook)."""
    from typer.testing import CliRunner

    import vpeval.cli.memory as memory
    from vpeval.cli.main import app

    f = tmp_path / "scores.txt"
    f.write_text("0.9 1\n0.1 0\n0.8 1\n0.2 0\n")
    for _ in range(2):
        r = CliRunner().invoke(app, ["verify", str(f), "--json"])
        assert r.exit_code == 0, r.output
        assert memory._LAST["inputs"] == [str(f)] and memory._LAST["bytes"] == f.stat().st_size


def test_the_verdicts_workers_count_against_the_machine_not_the_address_space(tmp_path, monkeypatch):
    """From about 1e6 trials `verify` starts workers, whose memory the estimate adds for the machine's and the
    control group's room, but not for `ulimit -v`, which holds each process apart (the estimate had counted the
    main process only: 1.25 GiB at 1e7 lines against 1.55 GiB measured with the workers)."""
    import warnings

    import vpeval.cli.memory as memory

    f = tmp_path / "big.txt"
    with open(f, "wb") as fh:
        fh.truncate(100 * 2**20)  # 100 MiB by its size (sparse: nothing written)
    main, whole = memory._needs(100 * 2**20)
    assert whole == main + memory.WORKERS_BASE_BYTES + memory.WORKERS_BYTES_PER_INPUT_BYTE * 100 * 2**20
    assert memory._needs(2**20)[0] == memory._needs(2**20)[1]  # a small input starts no workers
    between = (main + whole) // 2
    monkeypatch.setattr(memory, "_LAST", {"inputs": [], "bytes": 0, "warned": False})
    with pytest.warns(MemoryEstimateWarning, match="in the verdict's worker processes"):
        memory.check_score_input([str(f)], room=[(between, "only {} is available on the machine now")])
    monkeypatch.setattr(memory, "_LAST", {"inputs": [], "bytes": 0, "warned": False})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        memory.check_score_input([str(f)], room=[(between, "the process's address-space limit (ulimit -v) is {}")])


@pytest.mark.parametrize("limit", [None, "as", "data"])
def test_memory_limits_seen_by_the_jit_guard_and_the_blas_threads(limit):
    """Under ``ulimit -v`` or ``ulimit -d`` the helper threads' guard (vpeval.jit.address_space_limited) says so,
    and the console script starts OpenBLAS with one thread unless the user chose a number (several spun forever
    at 200-260 MB inside numpy's import; numba aborted in a helper thread under ``ulimit -d``: a breaker's finds);
    without a limit neither changes anything."""
    import os
    import resource
    import subprocess
    import sys

    which = {"as": resource.RLIMIT_AS, "data": resource.RLIMIT_DATA}.get(limit)

    def cap():
        if which is not None:
            resource.setrlimit(which, (8 << 30, resource.RLIM_INFINITY))

    code = ("import os, vpeval.cli.entry as e; e._one_blas_thread_under_a_memory_limit(); "
            "from vpeval.jit import address_space_limited; "
            "print(address_space_limited(), os.environ.get('OPENBLAS_NUM_THREADS'))")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, preexec_fn=cap, env=env,
                         timeout=120, check=True).stdout.split()
    assert out == (["False", "None"] if which is None else ["True", "1"])
    kept = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, preexec_fn=cap,
                          env=dict(env, OPENBLAS_NUM_THREADS="2"), timeout=120, check=True).stdout.split()
    assert kept[1] == "2"


def test_memory_running_out_outside_a_command_ends_with_the_memory_line(monkeypatch, capfd):
    """A MemoryError raised outside a command's own handling (typer's context, starting the process) ends with
    the out-of-memory line and exit code 4, not a traceback (a tester's find under `ulimit -v` 290 MiB: raised in
    contextlib.ExitStack.__init__ while typer built its context); an import that cannot map its library under the
    limit counts as memory, a missing package does not."""
    import vpeval.cli.main as cli_main
    from vpeval.cli import common, oom

    assert oom._EXIT_MEMORY == common.EXIT_MEMORY

    def no_memory():
        raise MemoryError

    for target in ("app", "start_process"):
        with monkeypatch.context() as m:
            m.setattr(cli_main, target, no_memory)
            if target == "start_process":
                m.setattr(cli_main, "app", lambda: None)
            with pytest.raises(SystemExit) as exc:
                cli_main.main()
        assert exc.value.code == 4
        err = " ".join(capfd.readouterr().err.split())
        assert err.startswith("vpeval: error: out of memory") and "Traceback" not in err, err
    import vpeval.cli.memory as memory

    mapped = ImportError("libarrow.so: failed to map segment from shared object: Cannot allocate memory")
    assert oom.out_of_memory(MemoryError()) and not oom.out_of_memory(mapped)  # no limit: not the limit's doing
    monkeypatch.setattr(memory, "_address_space_limit", lambda: 290 * 2**20)
    assert oom.out_of_memory(mapped) and not oom.out_of_memory(ImportError("No module named 'dask'"))


def test_non_ascii_file_names_under_an_ascii_locale(tmp_path):
    """Under an ASCII locale (LC_ALL=C, no UTF-8 mode) a score file or Parquet table named with 'ö' is read (pyarrow
    refused the name's surrogate escapes and the command blamed the text: a breaker's find), the terminal shows
    the name escaped, and the JSON names it as its UTF-8 text; a name whose bytes are not UTF-8 is read too."""
    import json
    import os
    import subprocess
    import sys

    import pyarrow as pa
    import pyarrow.parquet as pq

    def name(text):  # the file name's UTF-8 bytes, as this process's file-system encoding spells them (under an
        # ASCII locale, as the suite may itself run: surrogate escapes)
        return tmp_path / os.fsdecode(text.encode("utf-8"))

    lines = "0.9 1\n0.2 0\n0.8 1\n0.1 0\n0.7 1\n0.3 0\n"
    utf8 = name("sc\u00f6re.txt")
    utf8.write_text(lines, encoding="utf-8")
    latin1 = os.path.join(os.fsencode(tmp_path), b"lat\xe9.txt")
    with open(latin1, "wb") as fh:
        fh.write(lines.encode())
    table = name("p\u00e4rq.parquet")
    with open(table, "wb") as fh:
        pq.write_table(pa.table({"score": [0.9, 0.2, 0.8, 0.1], "label": ["t", "n", "t", "n"]}), fh)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG"))} | {"LC_ALL": "C",
                                                                                      "PYTHONUTF8": "0"}

    def run(*args):
        return subprocess.run([sys.executable, "-m", "vpeval.cli.main", "verify", *args], capture_output=True,
                              env=env, timeout=300)

    p = run(os.fsencode(utf8), "--json")
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    assert json.loads(p.stdout)["input"] == os.fsencode(utf8).decode("utf-8")
    p = run(os.fsencode(utf8))
    assert p.returncode == 0 and b"sc\\xf6re.txt" in p.stdout, p.stdout + p.stderr
    p = run(latin1, "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["input"].endswith("lat\\xe9.txt"), p.stderr
    p = run(os.fsencode(table), "--label-col", "label", "--score-col", "score", "--target", "t", "--nontarget", "n")
    assert p.returncode == 0, p.stderr.decode(errors="replace")
