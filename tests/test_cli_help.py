"""Every command's --help: arguments as upper-case names (no ``{scores}`` braces), no stray spaces, and the
score commands share one --key option."""

from __future__ import annotations

import math
import re

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from vpeval.cli.common import ScoreInputOptions, VerdictOptions, score_input_options, verdict_option_group
from vpeval.cli.main import app

COMMANDS = sorted(get_command(app).commands)


def _raw_texts(name):
    cmd = get_command(app).commands[name]
    yield "help", cmd.help or ""
    for p in cmd.params:
        yield p.name, getattr(p, "help", None) or ""


@pytest.mark.parametrize("name", [None] + COMMANDS)
def test_help_has_no_braces_and_no_stray_spaces(name):
    out = CliRunner().invoke(app, ([name] if name else []) + ["--help"], terminal_width=100).output
    assert "Usage:" in out
    assert not re.search(r"\{[a-z_]+\}", out), out  # e.g. {scores}
    for line in out.splitlines():
        assert line == line.rstrip(), repr(line)
        assert not re.search(r"\S [,;:)]|\( ", line), repr(line)
    if name is None:
        return
    usage = next(line for line in out.splitlines() if line.startswith("Usage:"))
    assert "{" not in usage and "}" not in usage
    for who, text in _raw_texts(name):
        paragraphs = text.split("\n\n")
        for par in paragraphs:
            if par.lstrip().startswith("\b"):  # verbatim blocks are aligned on purpose
                continue
            assert text == text.strip() or who == "help", (who, text)
            assert not re.search(r"\S  +\S", par), (name, who, par)


def test_score_commands_share_one_key_option():
    cmds = get_command(app).commands
    for name in ("verify", "report", "disclosure"):
        key = next(p for p in cmds[name].params if p.name == "key")
        assert key.opts == ["--key"] and key.param_type_name == "option", name
        assert "--key" in CliRunner().invoke(app, [name, "--help"]).output


def test_score_commands_list_the_input_options_together_and_pass_them_on():
    """score_input_options: the eight input options stand together, in one order, in every score command, and
    the values reach the command as one ScoreInputOptions (omitted ones at their defaults)."""
    names = ["key", "label_col", "score_col", "target", "nontarget", "ignore", "sep", "lower_is_target"]
    cmds = get_command(app).commands
    for name in ("verify", "report", "disclosure"):
        params = [p.name for p in cmds[name].params]
        i = params.index("key")
        assert params[i:i + len(names)] == names, name

    @score_input_options
    def command(path: str, score_input: ScoreInputOptions = ScoreInputOptions(), flag: bool = False):
        return path, score_input, flag

    assert command("x", sep=",", target=["t"], flag=True) == ("x", ScoreInputOptions(sep=",", target=["t"]), True)
    assert command("x") == ("x", ScoreInputOptions(), False)


def test_verdict_commands_list_the_verdict_options_together_and_pass_them_on():
    """verdict_option_group: the verdict's five options stand together, in one order, in every command that decides
    a verdict (--n-perm's default: by the input's size for score inputs, 999 otherwise), and the values reach the
    command as one VerdictOptions."""
    names = ["budget_bits", "delta", "n_perm", "alpha", "no_verdict"]
    cmds = get_command(app).commands
    for name, n_perm in (("verify", None), ("report", None), ("vpc-import", None), ("linkage", 999),
                         ("demo", 999), ("audit", 999)):
        params = {p.name: p for p in cmds[name].params}
        order = list(params)
        i = order.index("budget_bits")
        assert order[i:i + len(names)] == names, name
        assert params["n_perm"].default == n_perm and params["alpha"].default == 0.05, name

    @verdict_option_group()
    def command(path: str, verdict_args: VerdictOptions = VerdictOptions(), flag: bool = False):
        return path, verdict_args, flag

    assert command("x", alpha=0.01, no_verdict=True, flag=True) == ("x", VerdictOptions(alpha=0.01, no_verdict=True),
                                                                      True)
    assert command("x")[1].checked() == {"budget_bits": math.log2(10), "n_perm": None, "alpha": 0.05, "delta": None}
    assert command("x", no_verdict=True)[1].for_audit()["skip"] is True


def test_three_column_file_hint_names_the_cli_options(tmp_path):
    f = tmp_path / "s.txt"
    f.write_text("a b 0.5\n")
    r = CliRunner().invoke(app, ["verify", str(f)])
    assert r.exit_code == 2 and "--key" in r.output and "--label-col" in r.output
    assert "read_trials_scores" not in r.output


def _warn_in_report(monkeypatch):
    import warnings

    import vpeval.report as rep
    from vpeval.errors import DegenerateInputWarning

    original = rep.verification_section

    def noisy(*a, **k):
        warnings.warn("few trials:\n  the estimate is rough", DegenerateInputWarning)
        warnings.warn("a library's own warning", RuntimeWarning)
        return original(*a, **k)

    monkeypatch.setattr(rep, "verification_section", noisy)


def test_warnings_are_one_line_and_silenced_by_quiet(tmp_path, monkeypatch):
    import warnings

    _warn_in_report(monkeypatch)
    f = tmp_path / "s.txt"
    f.write_text("1 1\n2 1\n0 0\n1.5 0\n")
    before = warnings.showwarning
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        # --no-verdict: four trials have 6 distinct relabellings, whose FewPermutationsWarning is checked below;
        # --jobs 1: the patched section must run in this process (with workers it is computed on one of them)
        r = CliRunner().invoke(app, ["report", str(f), "-o", str(tmp_path / "a"), "--no-verdict", "--jobs", "1"])
        assert r.exit_code == 0, r.output
        lines = [line for line in r.output.splitlines() if "warning:" in line]
        assert lines == ["vpeval: warning: few trials: the estimate is rough",
                         "vpeval: warning: RuntimeWarning: a library's own warning"], r.output
        r = CliRunner().invoke(app, ["report", str(f), "-o", str(tmp_path / "c"), "--jobs", "1"])
        assert r.exit_code == 0, r.output
        lines = [line for line in r.output.splitlines() if "warning:" in line]
        assert lines[0].startswith("vpeval: warning: the perfect-secrecy test cannot reject at alpha = 0.05: "
                                   "only about 6 distinct relabellings exist"), r.output
        assert ".py" not in r.output
        r = CliRunner().invoke(app, ["report", str(f), "-o", str(tmp_path / "b"), "-q", "--jobs", "1"])
        assert r.exit_code == 0 and r.output == ""
    assert warnings.showwarning is before  # restored when the command ends


@pytest.mark.parametrize("command", ["verify", "report", "linkage", "audit", "demo"])
@pytest.mark.parametrize("bad, word", [(["--budget-bits", "-1"], "budget"), (["--budget-bits", "nan"], "budget"),
                                       (["--n-perm", "5"], "--n-perm"), (["--alpha", "0.9"], "--alpha")])
def test_no_verdict_checks_every_verdict_option_alike(tmp_path, command, bad, word):
    """--no-verdict skipped the --budget-bits check of verify, report and linkage but not the range checks of
    --n-perm and --alpha, nor any check in audit and demo: now every verdict option is checked, in every
    command, with or without --no-verdict (and its help says so), before any input is read or output made."""
    from vpeval.cli.main import app

    f = tmp_path / "s.txt"
    f.write_text("0.9 1\n0.8 1\n0.3 1\n0.1 0\n0.4 0\n0.2 0\n")
    out = tmp_path / "out"
    args = {"verify": [str(f)], "report": [str(f), "-o", str(out)], "linkage": [str(tmp_path / "missing.csv")],
            "audit": [str(tmp_path / "missing"), "-o", str(out)], "demo": ["-o", str(out)]}[command]
    for extra in ([], ["--no-verdict"]):
        r = CliRunner().invoke(app, [command, *args, *bad, *extra])
        assert r.exit_code == 2, (extra, r.output)
        assert word in r.output and "missing" not in r.output, (extra, r.output)
        assert not out.exists()
    h = CliRunner().invoke(app, [command, "--help"], terminal_width=200).output
    assert "still checked" in " ".join(h.replace("│", " ").split()), h
