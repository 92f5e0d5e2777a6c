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
            # an indented line inside a paragraph is joined with its run of spaces (anonymize, embed did)
            assert not re.search(r"\n[ \t]+\S", par), (name, who, par)


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


# ---- the guide (issue 47 item 3): groups, full lines, examples, one meaning per short option

def _example_commands(lines):
    """The argument lists of the ``vpeval ...`` invocations of an example block (comments dropped, `` \\``
    continuations joined)."""
    import shlex

    joined, cur = [], ""
    for line in lines:
        if line.lstrip().startswith("#"):
            continue
        cur += line[:-1] if line.endswith("\\") else line
        if not line.endswith("\\"):
            joined.append(cur)
            cur = ""
    assert not cur, lines
    out = []
    for line in joined:
        args = shlex.split(line)
        assert args[0] == "vpeval", line
        out.append(args[1:])
    return out


def test_the_listing_groups_every_command_under_one_heading_with_its_full_line():
    """`vpeval --help` lists every command once, under the group of vpeval.cli.guide, with its whole one-line
    description on its own line at 80 columns (click cut the lines derived from the help text with '...')."""
    from vpeval.cli.guide import GUIDE, PANELS

    cmds = get_command(app).commands
    assert set(cmds) == set(GUIDE)
    out = CliRunner().invoke(app, ["--help"], terminal_width=80).output
    lines = out.splitlines()
    lines = lines[lines.index("Options:"):]  # the listing, below the description (whose words may start a line)
    headings = [line[:-1] for line in lines if line.endswith(":") and not line.startswith(" ")]
    assert headings[:1] == ["Options"] and [h for h in headings if h in PANELS] == list(PANELS), headings
    for name, cmd in cmds.items():
        g = GUIDE[name]
        assert g.panel in PANELS and cmd.rich_help_panel == g.panel, name
        assert cmd.short_help == g.line and "..." not in g.line and len(g.line) <= 61, name
        row = [line for line in lines if line.split()[:1] == [name]]
        assert len(row) == 1 and row[0].rstrip().endswith(g.line), (name, row)
        assert len(row[0]) <= 80, row
        heading = max(i for i, line in enumerate(lines[:lines.index(row[0])]) if line.endswith(":")
                      and not line.startswith(" "))
        assert lines[heading] == g.panel + ":", (name, lines[heading])
    assert "..." not in out.split("\n", 1)[1]  # (the usage line's "[ARGS]..." aside)


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_shows_examples_that_parse(name):
    """Each command's --help ends with an Examples block printed verbatim (a \\b paragraph: click neither wraps
    nor joins its lines); every invocation in it names a command and options that exist, with valid values
    (parsed by click, not run)."""
    from vpeval.cli.guide import GUIDE

    examples = GUIDE[name].examples
    out = CliRunner().invoke(app, [name, "--help"], terminal_width=80).output
    shown = out[out.index("\n  Examples:\n"):].splitlines()[2:]
    assert [line[4:] for line in shown] == list(examples), shown
    calls = _example_commands(examples)
    assert any(c[0] == name for c in calls), (name, calls)  # the command itself is shown
    group = get_command(app)
    for args in calls:
        cmd = group.commands[args[0]]
        with cmd.make_context(args[0], list(args[1:])) as ctx:  # raises on an unknown option or a bad value
            assert ctx.params is not None
    for line in examples:
        assert len(line) <= 96, line


#: Examples that run as written in a folder holding the bundled example as examples/ (and the one placeholder
#: file named beside it); the others need audio, a VoicePrivacy toolkit's output or a few minutes (demo, audit).
RUN_AS_WRITTEN = {
    "verify": {"asv_scores.txt": "- target 2.5\n- nontarget -1.0\n- spoof 0.3\n- target 1.5\n- nontarget 0.5\n"},
    "disclosure": {}, "rank-disclosure": {}, "simulate": {}, "plan": {}, "doctor": {}, "embedding": {},
    "attributes": {}, "distinctiveness": {},
}


@pytest.mark.parametrize("name", sorted(RUN_AS_WRITTEN))
def test_examples_run_as_written(name, tmp_path, monkeypatch):
    from pathlib import Path

    from vpeval.cli.guide import GUIDE

    example = Path(__file__).resolve().parents[1] / "examples"
    if not sorted((example / "librispeech-mini").glob("embeddings_*.npz")):
        pytest.skip("bundled example missing")
    (tmp_path / "examples").symlink_to(example)
    for f, text in RUN_AS_WRITTEN[name].items():
        (tmp_path / f).write_text(text)
    monkeypatch.chdir(tmp_path)
    for args in _example_commands(GUIDE[name].examples):
        if args[0] in ("verify", "linkage"):
            args = [*args, "--n-perm", "99"]  # the verdict's relabellings: the same call, fewer of them
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 0, (args, r.output)


def test_short_options_have_one_meaning_across_commands():
    """A short option stands for one long option in every command that has it (vpeval.cli.guide.SHORT_OPTIONS):
    -o was --out, --out-dir or --output, -e --extractor in embed but --estimators in simulate. A short option with
    another meaning survives only as a hidden deprecated alias (DEPRECATED_SHORT), which warns (tested below)."""
    from vpeval.cli.guide import DEPRECATED_SHORT, FORMER_LONG, SHORT_OPTIONS

    seen = set()
    for name, cmd in get_command(app).commands.items():
        shorts = []
        for p in cmd.params:
            for o in [*p.opts, *p.secondary_opts]:
                if len(o) == 2 and o.startswith("-"):
                    shorts.append(o)
                    if p.hidden:
                        assert (name, o) in DEPRECATED_SHORT, (name, o, p.opts)
                    else:
                        assert SHORT_OPTIONS.get(o) in p.opts, (name, o, p.opts)
                        seen.add(o)
            if any(o in FORMER_LONG for o in p.opts):  # a former spelling stands beside the one it became
                assert {FORMER_LONG[o] for o in p.opts if o in FORMER_LONG} <= set(p.opts), (name, p.opts)
        assert len(shorts) == len(set(shorts)), (name, shorts)
    assert seen == set(SHORT_OPTIONS)
    for (name, flag), long in DEPRECATED_SHORT.items():
        assert long != SHORT_OPTIONS[flag] and any(long in p.opts for p in get_command(app).commands[name].params)


def test_former_long_spellings_still_work_and_are_not_listed():
    from pathlib import Path

    cmds = get_command(app).commands
    for name, args, param in (("trials", ["e.npz", "--out-dir", "d"], "out_dir"),
                              ("attack", ["e.npz", "--train", "t.npz", "--out-dir", "d"], "out_dir"),
                              ("simulate", ["--out-dir", "d"], "out_dir"),
                              ("embed", ["audio", "--output", "d"], "output"),
                              ("adapt", ["train", "--original", "o", "--anonymized", "a", "--output", "d"], "output")):
        former = next(a for a in args if a in ("--out-dir", "--output"))
        for flag in ("-o", "--out", former):
            a = [flag if x == former else x for x in args]
            with cmds[name].make_context(name, a) as ctx:
                assert ctx.params[param] == Path("d"), (name, flag)
        out = CliRunner().invoke(app, [name, "--help"], terminal_width=100).output
        assert "-o, --out OUT" in out and "--out-dir" not in out and "--output" not in out, out


@pytest.mark.parametrize("name", ["simulate", "disclosure"])
def test_deprecated_short_option_still_works_and_warns(name, tmp_path):
    """-e meant --estimators in simulate and disclosure: it still does for one release, with a deprecation
    warning (VpevalDeprecationWarning through the CLI's warning line), and gives the same result as --estimators."""
    import json
    import warnings

    f = tmp_path / "s.txt"
    f.write_text("0.9 1\n0.8 1\n0.3 1\n0.1 0\n0.4 0\n0.2 0\n")

    def run(flag, out):
        args = (["simulate", "--n", "50", "-o", str(tmp_path / out), "--json"] if name == "simulate"
                else ["disclosure", str(f), "--json"])
        with warnings.catch_warnings():
            warnings.simplefilter("always")  # the CLI's hook prints each warning as one line on stderr
            r = CliRunner().invoke(app, [*args, flag, "pav,gaussian"])
        assert r.exit_code == 0, r.output
        return json.loads(r.stdout), r.stderr

    old, err = run("-e", "a")
    new, err_new = run("--estimators", "b")
    assert old == new and "deprecated" not in err_new
    assert err.startswith("vpeval: warning: -e for --estimators is deprecated") and "write --estimators" in err
    assert not any("-e" in p.opts for p in get_command(app).commands[name].params if not p.hidden)
