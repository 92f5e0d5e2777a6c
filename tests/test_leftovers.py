"""Issue 48 (8): what a run killed outright (kill -9) left, its vpeval-jobs-* and vpeval-input-* folders in the
temporary folder and its output's hidden temporary folder, is removed by the next vpeval command of this host,
whatever it starts (here a verify that starts no worker); a live run's folders, another host's and those whose
owner is not provably dead stay."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from vpeval.io import leftovers

SRC = Path(__file__).resolve().parents[1] / "src"

_RUN = """
import sys, time
from vpeval.cli.common import InputSnapshot
from vpeval.io.output import claim_folder
from vpeval.pipeline.jobs import _shared_folder

_shared_folder()                        # the --jobs workers' shared arrays
snap = InputSnapshot()
snap.path("/dev/stdin")                 # a piped input, copied to vpeval-input-*
claim = claim_folder(sys.argv[1], command="report")
(claim.path / "half-written.json").write_text("{")
print("ready", flush=True)
time.sleep(600)
"""


def _start(out, env):
    p = subprocess.Popen([sys.executable, "-c", _RUN, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         env=env, text=True)
    p.stdin.write("0.5 1\n0.25 0\n")
    p.stdin.close()
    assert p.stdout.readline().strip() == "ready"
    return p


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="Linux /proc")
def test_a_killed_runs_folders_are_removed_by_any_later_command_and_a_live_runs_stay(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(SRC)}
    killed, live = _start(tmp_path / "out-killed", env), _start(tmp_path / "out-live", env)
    try:
        os.kill(killed.pid, signal.SIGKILL)  # no cleanup runs
        killed.wait()
        made = sorted(p.name.split("-")[1] for p in tmp.glob("vpeval-*-*"))
        assert made == ["claims", "input", "input", "jobs", "jobs"]
        assert len(list(tmp_path.glob(".out-*.vpeval-tmp-*"))) == 2

        # the owner's identity: pid, start time and boot; a reused pid or an earlier boot is dead, another host not
        host, me = socket.gethostname(), leftovers.owner_record().split()
        live_rec = (tmp / next(p.name for p in tmp.glob("vpeval-jobs-*")
                               if f"{live.pid} " in (p / "vpeval-owner").read_text()) / "vpeval-owner").read_text()
        assert live_rec.split()[:2] == [str(live.pid), host] and not leftovers.owner_dead(live_rec)
        pid, _, start, boot = live_rec.split()
        for name, rec, dead in (("reused", f"{pid} {host} {int(start) + 1} {boot}", True),
                                ("earlier-boot", f"{pid} {host} {start} {boot[:-1]}{'0' if boot[-1] != '0' else '1'}",
                                 True),
                                ("other-host", f"{killed.pid} not-{host} {start} {boot}", False),
                                ("me", " ".join(me), False), ("garbled", "12x host", False)):
            assert leftovers.owner_dead(rec) is dead, name
            (tmp / f"vpeval-jobs-{name}").mkdir()
            (tmp / f"vpeval-jobs-{name}" / "vpeval-owner").write_text(rec + "\n")
        (tmp / "vpeval-input-no-owner").mkdir()

        scores = tmp_path / "scores.txt"
        scores.write_text("0.9 1\n0.8 1\n0.1 0\n0.2 0\n")
        r = subprocess.run([sys.executable, "-m", "vpeval.cli.main", "verify", str(scores), "--no-verdict", "--json"],
                           env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert r.returncode == 0, r.stderr

        left = sorted(p.name for p in tmp.iterdir())
        owners = {n: (tmp / n / "vpeval-owner").read_text().split()[0] for n in left
                  if (tmp / n / "vpeval-owner").is_file()}
        assert [n for n, o in owners.items() if o == str(killed.pid)] == ["vpeval-jobs-other-host"]  # its own: gone
        assert sorted(n.split("-")[1] for n, o in owners.items() if o == str(live.pid)) == ["input", "jobs"]
        assert {"vpeval-jobs-other-host", "vpeval-jobs-me", "vpeval-jobs-garbled", "vpeval-input-no-owner"} <= set(left)
        assert not {"vpeval-jobs-reused", "vpeval-jobs-earlier-boot"} & set(left)
        # the killed run's output temporary is gone (it lies beside its output, found through its registration);
        # the live run's stays, and so does its registration
        assert [p.name.split(".")[1] for p in tmp_path.glob(".out-*.vpeval-tmp-*")] == ["out-live"]
        (claims,) = tmp.glob("vpeval-claims-*")
        assert [e.read_text().splitlines()[0].split()[0] for e in claims.iterdir()] == [str(live.pid)]
    finally:
        for p in (killed, live):
            if p.poll() is None:
                p.kill()
                p.wait()
