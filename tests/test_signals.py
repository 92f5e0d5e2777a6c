"""Stop signals while the command is inside native code (issue 48 item 5): the watchdog of
:mod:`vpeval.cli.watchdog` ends a command that does not honour SIGTERM, SIGHUP or Ctrl-C within its grace, and
leaves alone one that does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from vpeval.cli import watchdog

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX signals")

# the command line's start (vpeval.cli.main.main) and then a call that holds the main thread in C for hours:
# PBKDF2 with 2**31 - 1 iterations (its largest) does not return to the interpreter, so no Python signal handler can run
_NATIVE = """
import hashlib, sys
from vpeval.cli.common import start_process
start_process()
print("ready", flush=True)
hashlib.pbkdf2_hmac("sha256", b"x", b"salt", 2**31 - 1)
"""

# a Python loop whose cleanup, once the signal is honoured, takes longer than the grace
_PYTHON = """
import sys, time
from vpeval.cli.common import start_process
start_process()
print("ready", flush=True)
try:
    while True:
        sum(range(1000))
finally:
    time.sleep(SLEEP)
    print("cleaned up", flush=True)
"""


def _start(code: str, tmp_path):
    script = tmp_path / "s.py"
    script.write_text(code)
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    assert p.stdout.readline().strip() == "ready", p.communicate()
    time.sleep(0.5)  # into the call
    return p


def _session_left(p) -> list[str]:
    """Processes of ``p``'s session still running a few polls after it ended (zombies, which this machine's
    init reaps only every second or two, are not running)."""
    left = []
    for _ in range(10):
        time.sleep(watchdog.POLL_SECONDS)
        out = subprocess.run(["ps", "-e", "-o", "pid=,sid=,stat="], capture_output=True, text=True).stdout
        left = [f[0] for f in (line.split() for line in out.splitlines())
                if len(f) == 3 and f[1] == str(p.pid) and not f[2].startswith("Z")]
        if not left:
            break
    return left


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_command_inside_native_code_is_killed_after_the_grace(tmp_path, sig):
    p = _start(_NATIVE, tmp_path)
    t0 = time.monotonic()
    p.send_signal(sig)
    try:
        out, err = p.communicate(timeout=watchdog.GRACE_SECONDS + 20)
    except subprocess.TimeoutExpired:
        p.kill()
        pytest.fail(f"{sig.name} inside native code was not honoured")
    waited = time.monotonic() - t0
    assert p.returncode == -signal.SIGKILL, (p.returncode, err)
    assert watchdog.GRACE_SECONDS - 0.5 <= waited < watchdog.GRACE_SECONDS + 10, waited
    assert f"{sig.name} was not honoured within {watchdog.GRACE_SECONDS:g} s" in err, err
    assert "Traceback" not in err, err
    assert not _session_left(p)


def test_a_command_that_honours_the_signal_is_left_to_clean_up(tmp_path):
    sleep = watchdog.GRACE_SECONDS + 2.0  # longer than the grace: only the acknowledgement keeps it alive
    p = _start(_PYTHON.replace("SLEEP", repr(sleep)), tmp_path)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=sleep + 30)
    assert p.returncode == 143, (p.returncode, err)
    assert "cleaned up" in out
    assert "SIGKILL" not in err, err
    assert not _session_left(p)


def test_the_watchdog_leaves_with_the_command(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("from vpeval.cli.common import start_process\nstart_process()\nprint('done')\n")
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0 and out.strip() == "done", err
    assert not _session_left(p)


def test_descendants_are_found_below_a_process():
    # the companion kills the command's whole tree: a child and a grandchild of this process are found
    child = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time\n"
                              "g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
                              "print(g.pid, flush=True)\ntime.sleep(30)\n"], stdout=subprocess.PIPE, text=True)
    try:
        grandchild = int(child.stdout.readline())
        below = watchdog._descendants(os.getpid())
        assert child.pid in below and grandchild in below
        assert below.index(child.pid) < below.index(grandchild)
    finally:
        child.kill()
        os.kill(grandchild, signal.SIGKILL)
        child.wait()


def _companion_of(pid: int) -> int:
    out = subprocess.run(["ps", "-ww", "-e", "-o", "pid=,ppid=,args="], capture_output=True, text=True).stdout
    return next(int(f[0]) for f in (line.split(None, 2) for line in out.splitlines())
                if len(f) == 3 and f[1] == str(pid) and "watchdog.py" in f[2])


def test_time_while_stopped_does_not_count_against_the_grace(tmp_path):
    # a signal whose handler cannot run yet, then SIGSTOP (Ctrl-Z, a suspended batch job): the command is stopped,
    # not stuck in native code, so the grace waits; after SIGCONT it runs on (and here, inside native code, is
    # killed once the rest of the grace has passed)
    p = _start(_NATIVE, tmp_path)
    p.send_signal(signal.SIGTERM)
    time.sleep(0.5)  # its C-level handler has run (the watchdog's grace began); its Python handler cannot
    p.send_signal(signal.SIGSTOP)
    time.sleep(watchdog.GRACE_SECONDS + 3)
    alive = p.poll() is None
    t0 = time.monotonic()
    p.send_signal(signal.SIGCONT)
    out, err = p.communicate(timeout=watchdog.GRACE_SECONDS + 20)
    assert alive, err
    assert p.returncode == -signal.SIGKILL and time.monotonic() - t0 < watchdog.GRACE_SECONDS + 5


def test_a_killed_companion_leaves_the_signal_handling_as_it_was(tmp_path):
    p = _start(_PYTHON.replace("SLEEP", "0"), tmp_path)
    os.kill(_companion_of(p.pid), signal.SIGKILL)
    time.sleep(0.5)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 143 and "cleaned up" in out
    assert "Exception ignored" not in err and "Traceback" not in err, err


def test_a_second_stop_signal_of_another_kind_does_not_cut_the_cleanup_short(tmp_path):
    p = _start(_PYTHON.replace("SLEEP", "2.0"), tmp_path)
    p.send_signal(signal.SIGTERM)
    time.sleep(0.5)  # inside the cleanup
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 143 and "cleaned up" in out, (p.returncode, err)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err


@pytest.mark.parametrize("delay", [0.1, 0.4])
def test_ctrl_c_while_the_command_line_starts_ends_quietly(tmp_path, delay):
    """Ctrl-C (SIGINT to the terminal's process group) while the console script loads its libraries or starts the
    process ends it with exit code 130 and one line, not a KeyboardInterrupt traceback (a tester's find)."""
    import numpy as np

    scores = tmp_path / "s.txt"
    x = np.random.default_rng(0).normal(size=20_000)
    scores.write_text("".join(f"{v:.6f} {int(v > 0.3)}\n" for v in x))
    p = subprocess.Popen([sys.executable, "-c", "from vpeval.cli.entry import main; main()", "verify", str(scores)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    time.sleep(delay)
    os.killpg(p.pid, signal.SIGINT)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 130 and "Traceback" not in err, (p.returncode, err[-1500:])


def test_a_command_started_with_ctrl_c_ignored_keeps_ignoring_it(tmp_path):
    """A vpeval started with SIGINT ignored (a script's background job, as a test suite run under `timeout -s INT`
    starts its commands) is not ended by a Ctrl-C meant for the foreground, even while its libraries load: it
    finishes (a tester's suite survived the signal while the vpeval it had started exited 130)."""
    import numpy as np

    scores = tmp_path / "s.txt"
    x = np.random.default_rng(0).normal(size=2_000)
    scores.write_text("".join(f"{v:.6f} {int(v > 0.3)}\n" for v in x))
    p = subprocess.Popen([sys.executable, "-c", "from vpeval.cli.entry import main; main()", "verify", str(scores),
                          "--no-verdict"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    for delay in (0.1, 0.3, 0.6):
        time.sleep(delay)
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGINT)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, (p.returncode, err[-1500:])
