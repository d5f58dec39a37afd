"""One convention per flag, the same in every command (docs/conventions.md): ``--json`` is JSON on stdout (no
TUI) and ``-o/--output FILE`` writes an export; ``--record-dir DIR`` has one type and one check; ``--drafter``
names model, ngram, none everywhere; a draft length or a list of them (``-k 2,4,auto``) is parsed by one
function. The old spellings a user may have scripted keep working, with a one-line note."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from in_process import spectui_in_process
from synthetic_events import make_end, make_pass, make_prefill, make_start

from spectui.cli import SUBCOMMANDS, main
from spectui.commands import SUMMARIES
from spectui.contract.draft_length import DEFAULT_DRAFT_MAX, k_setting, parse_k, parse_ks
from spectui.contract.errors import SpectuiError
from spectui.contract.events import DRAFTERS, Settings
from spectui.race.spec import parse_spec, spec_settings
from spectui.recording.trace import write_trace

ROOT = Path(__file__).resolve().parents[2]


def spectui(*args, timeout=120):
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "spectui", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=ROOT)


def in_process(*args):
    return spectui_in_process(*args, env={"NO_COLOR": "1"})


@pytest.fixture(params=["in_process", pytest.param("process", marks=pytest.mark.slow)])
def cli(request):
    """How the commands run: in this process (the fast lane) or each as its own process (the full suite)."""
    return in_process if request.param == "in_process" else spectui


def commands() -> dict[str, click.Command]:
    """Every command: the group's own (the live run, "run") and each subcommand."""
    import importlib

    out = {"run": main}
    for name, spec in SUBCOMMANDS.items():
        mod, attr = spec.split(":")
        out[name] = getattr(importlib.import_module(mod), attr)
    return out


def option(cmd: click.Command, flag: str) -> click.Option | None:
    return next((p for p in cmd.params if isinstance(p, click.Option) and flag in p.opts), None)


def one_line_error(r, *needles):
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert len(lines) == 1 and lines[0].startswith("spectui: error: "), r.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])


@pytest.fixture
def trace(tmp_path):
    p = tmp_path / "run.jsonl"
    write_trace(p, [make_start(), make_prefill(), make_pass(1, 3, 2), make_end(2)])
    return p


# ------------------------------------------------------------------ k: one parser


def test_one_k_parser():
    """The user's words for a mode become its one name (Settings.auto, as traces record it) in the parser."""
    assert parse_ks("2,4,auto") == [2, 4, "cost"]
    assert parse_ks(" 0, 3,3 ,schedule,heuristic") == [0, 3, "schedule"]
    assert parse_k("4") == 4 and parse_k(" AUTO ") == "cost" and parse_k("heuristic") == "schedule"
    assert [k_setting(k) for k in (0, 7, "auto", "schedule")] == [(0, None), (7, None), (2, "cost"), (2, "schedule")]
    assert [k_setting(parse_k(w)) for w in ("auto", "heuristic")] == [(DEFAULT_DRAFT_MAX, "cost"),
                                                                        (DEFAULT_DRAFT_MAX, "schedule")]
    assert Settings().draft_max == DEFAULT_DRAFT_MAX
    for bad, says in (("2,x", "comma-separated integers"), ("40", "between 0 and 32"), ("", "at least one"),
                      ("-1", "between 0 and 32")):
        with pytest.raises(SpectuiError, match=says):
            parse_ks(bad)
    with pytest.raises(SpectuiError, match="fixed draft lengths"):
        parse_ks("2,auto", modes=False)
    with pytest.raises(SpectuiError, match="one draft length here"):
        parse_k("2,4")
    with pytest.raises(SpectuiError, match="-k takes an integer 0..32, 'auto' or 'schedule', not 'x'"):
        parse_k("x", "-k")


def test_race_specs_read_k_with_the_same_parser():
    assert parse_spec("k=heuristic")["k"] == "schedule" == parse_k("heuristic")
    s = spec_settings(parse_spec("k=auto"))
    assert (s.draft_max, s.auto) == k_setting("auto")
    with pytest.raises(SpectuiError, match="^--b 'k=two': k takes an integer 0..32, 'auto' or 'schedule', not 'two'$"):
        parse_spec("k=two")
    assert parse_spec("k=4,temp=0.8,") == {"k": 4, "temp": 0.8} == parse_spec(" k=4 , temp=0.8")


@pytest.mark.parametrize("cmd, args, says", [
    ([], ["--draft-max", "x"], "--draft-max takes an integer 0..32, 'auto' or 'schedule'"),
    ([], ["-k", "40"], "--draft-max values must be between 0 and 32, not 40"),
    (["sweep"], ["-k", "2,auto"], "--draft-max auto: this command runs fixed draft lengths"),
    (["sweep"], ["-k", "2,x"], "--draft-max takes comma-separated integers 0..32 (e.g. 2,5,10)"),
    (["bench"], ["-k", "schedule"], "--draft-max schedule: this command runs fixed draft lengths"),
    (["race"], ["-k", "x", "-p", "hi"], "--draft-max takes an integer 0..32, 'auto' or 'schedule'"),
    (["race"], ["--b", "k=99", "-p", "hi"], "--b 'k=99': k values must be between 0 and 32, not 99"),
])
def test_every_command_parses_k_the_same_way_before_loading(cli, tmp_path, cmd, args, says):
    """A bad k is the one parser's one-line error, exit 2, before any model loads (the target is missing)."""
    one_line_error(cli(*cmd, "--target", tmp_path / "missing.gguf", "--headless" if not cmd else "--drafter",
                           *(["ngram"] if cmd else []), *args), says)


def test_race_takes_a_mode_as_its_k(cli, tmp_path):
    """-k auto is a draft length in the race as in the live run: it reaches the models (missing here)."""
    r = cli("race", "--target", tmp_path / "missing.gguf", "-p", "hi", "-k", "auto", "--drafter", "ngram")
    one_line_error(r, "missing.gguf")


# Every command that takes a draft length, as the user types it: (name, the command line before the value, the
# option the messages name, what it takes: "one" k or a "list", whether modes are k values there, its range).
MISSING = "missing.gguf"
K_COMMANDS = [
    ("run", lambda v: ["--target", MISSING, "--headless", "-k", v], "--draft-max", "one", True, (0, 32)),
    ("bench", lambda v: ["bench", "--target", MISSING, "-k", v], "--draft-max", "list", False, (0, 32)),
    ("bench --url", lambda v: ["bench", "--url", "http://127.0.0.1:9", "-k", v], "--draft-max", "one", False,
     (0, 32)),
    ("bench --concurrency", lambda v: ["bench", "--url", "http://127.0.0.1:9", "--concurrency", "1,2", "-k", v],
     "--draft-max", "one", False, (0, 32)),
    ("sweep", lambda v: ["sweep", "--target", MISSING, "-p", "hi", "-k", v], "--draft-max", "list", False, (0, 32)),
    ("race -k", lambda v: ["race", "--target", MISSING, "-p", "hi", "--drafter", "ngram", "-k", v], "--draft-max",
     "one", True, (0, 32)),
    ("race --b", lambda v: ["race", "--target", MISSING, "-p", "hi", "--drafter", "ngram", "--b", f"k={v}"], "k",
     "one", True, (0, 32)),
    ("probe --batch-ks", lambda v: ["probe", "--target", MISSING, "--batched", "--batch-ks", v], "--batch-ks",
     "list", False, (1, 16)),
    ("attach -k", lambda v: ["attach", "http://127.0.0.1:9", "--headless", "--count", "1", "-k", v], "--draft-max",
     "one", False, (0, 32)),
]


def expected_k_message(value: str, flag: str, takes: str, modes: bool, low_high: tuple[int, int]) -> str | None:
    """What the one k parser says for ``value`` in such a command (None: it takes the value)."""
    try:
        parse_ks(value, flag, modes=modes, many=takes == "list", low=low_high[0], high=low_high[1])
    except SpectuiError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("value", ["2,4", "99", "auto"])
@pytest.mark.parametrize("name, argv, flag, takes, modes, low_high", K_COMMANDS, ids=[c[0] for c in K_COMMANDS])
def test_every_command_answers_the_same_k_the_same_way(cli, tmp_path, monkeypatch, value, name, argv, flag, takes,
                                                       modes, low_high):
    """-k 2,4 / -k 99 / -k auto in every command that takes a draft length: one line in the one parser's words,
    exit 2, where it is refused (the race's spec with its spec before it); where it is taken, the command goes on
    to the models (missing here: their one-line error instead)."""
    monkeypatch.chdir(tmp_path)
    r = cli(*argv(value))
    said = expected_k_message(value, flag, takes, modes, low_high)
    if said is None:
        one_line_error(r, MISSING)
        assert "draft" not in r.stderr and "batch-ks" not in r.stderr, r.stderr
        return
    prefix = f"--b 'k={value}': " if name == "race --b" else ""
    one_line_error(r)
    assert r.stderr.strip() == f"spectui: error: {prefix}{said}", (name, r.stderr)


def test_the_k_answers_are_what_a_user_expects():
    """The table above, spelled out: a list where a command measures several, a mode where one chooses per
    pass, and one range everywhere (the batched probe measures 1..16)."""
    answers = {name: tuple(expected_k_message(v, flag, takes, modes, lh) is None for v in ("2,4", "99", "auto"))
               for name, _, flag, takes, modes, lh in K_COMMANDS}
    assert answers == {
        "run": (False, False, True), "bench": (True, False, False), "bench --url": (False, False, False),
        "bench --concurrency": (False, False, False), "sweep": (True, False, False), "race -k": (False, False, True),
        "race --b": (False, False, True), "probe --batch-ks": (True, False, False), "attach -k": (False, False, False),
    }
    assert expected_k_message("99", "--draft-max", "one", True, (0, 32)) == (
        "--draft-max values must be between 0 and 32, not 99")
    assert expected_k_message("2,4", "--draft-max", "one", False, (0, 32)) == (
        "--draft-max takes one draft length here (0..32), not a list: '2,4'")


def test_commands_without_a_draft_length_have_no_k():
    """replay, cast, demo and serve draft nothing: -k is not one of their options (click's own exit 2)."""
    cmds = commands()
    for name in ("replay", "cast", "demo", "serve"):
        assert option(cmds[name], "-k") is None and option(cmds[name], "--draft-max") is None, name
    for name in ("run", "bench", "sweep", "race", "attach"):
        assert option(cmds[name], "-k").opts == ["--draft-max", "--draft-n-max", "-k"], name


def test_attach_sends_its_own_n_max(cli, tmp_path):
    """attach's server-side value has its own flag (llama-server's request field speculative.n_max); the old
    -k N still works, through the one parser, with a note; both at once is refused."""
    attach = option(commands()["attach"], "--speculative-n-max")
    assert attach is not None and "--speculative.n_max" in attach.opts and option(commands()["attach"], "-k").hidden
    r = cli("attach", "http://127.0.0.1:9", "--headless", "--count", "1", "-k", "3", "--speculative-n-max", "3")
    one_line_error(r, "--speculative-n-max", "not both")
    r = cli("attach", "http://127.0.0.1:9", "--headless", "--count", "1", "-k", "3")
    assert "spectui: note: attach -k/--draft-max N is deprecated; use --speculative-n-max N" in r.stderr


# ------------------------------------------------------------------ --json: JSON on stdout, no TUI


def test_json_is_json_on_stdout_without_a_tui_everywhere(cli, trace):
    """--json alone gives what --headless --json gives (the TUI never starts): replay here, race and the live
    run through the same rule (their tests: tests/race/test_race_model.py, tests/commands/test_cli.py)."""
    alone, headless = cli("replay", trace, "--json"), cli("replay", trace, "--headless", "--json")
    assert alone.returncode == headless.returncode == 0, alone.stderr
    assert alone.stdout == headless.stdout and json.loads(alone.stdout)["start"]["run_id"] == "synthetic"
    for name, cmd in commands().items():
        opt = option(cmd, "--json")
        if opt is None:
            continue
        assert "stdout" in opt.help or "JSON object per line" in opt.help, (name, opt.help)
        assert "needs --headless" not in opt.help and "with --headless" not in opt.help, (name, opt.help)


def test_dash_o_writes_the_export_wherever_there_is_one():
    for name in ("sweep", "bench"):
        cmd = commands()[name]
        assert option(cmd, "-o") is not None and option(cmd, "--output") is option(cmd, "-o"), name
        assert option(cmd, "--json").is_flag or option(cmd, "--json").flag_value == "-", name


def test_bench_json_to_a_file_the_old_way_still_works_with_a_note(cli, tmp_path):
    """`bench --json FILE` (scripted before the convention) is still accepted, with a one-line note; it
    still refuses bad input as before (here the missing target), after the note."""
    r = cli("bench", "--target", tmp_path / "missing.gguf", "--json", tmp_path / "b.json", "--limit", 1)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 2, r.stderr
    assert lines[0] == "spectui: note: `--json FILE` is deprecated; use `--json -o FILE`"
    assert lines[1].startswith("spectui: error: ") and "missing.gguf" in lines[1]


@pytest.mark.parametrize("args, says", [
    (["-o", "x.json"], "give one of --json, --csv or --markdown"),
    (["--json", "--csv", "-o", "x"], "--json and --csv were given"),
])
def test_bench_dash_o_writes_one_export(cli, tmp_path, args, says):
    one_line_error(cli("bench", "--target", tmp_path / "missing.gguf", *args), says)
    assert not (ROOT / "x.json").exists() and not (ROOT / "x").exists()


# ------------------------------------------------------------------ --record-dir: one type, one check


def test_record_dir_has_one_type_everywhere():
    found = {name: option(cmd, "--record-dir") for name, cmd in commands().items()}
    found = {name: o for name, o in found.items() if o is not None}
    assert sorted(found) == ["bench", "race", "sweep"]
    for name, o in found.items():
        assert type(o.type) is click.Path and o.metavar == "DIR", name
        assert (o.type.file_okay, o.type.dir_okay, o.type.exists) == (True, True, False), name


@pytest.mark.parametrize("cmd", [["sweep"], ["bench"], ["race", "-p", "hi"]])
def test_record_dir_that_is_a_file_is_the_same_one_line_error(cli, tmp_path, cmd):
    """The folder is checked by one function (contract.outputs.record_folder), before any model loads."""
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    r = cli(*cmd, "--target", tmp_path / "missing.gguf", "--drafter", "ngram", "--record-dir", a_file)
    one_line_error(r, f"--record-dir {a_file} exists and is not a directory")


# ------------------------------------------------------------------ --drafter: the same choices


def test_drafter_has_the_same_choices_everywhere():
    """Every command's --drafter offers the one list, contract.events.DRAFTERS (what a trace may say)."""
    from spectui.commands import options

    assert DRAFTERS == ("model", "ngram", "none", "eagle3", "mtp") and options.DRAFTERS is DRAFTERS  # no copy
    found = {name: option(cmd, "--drafter") for name, cmd in commands().items()}
    found = {name: o for name, o in found.items() if o is not None}
    assert sorted(found) == ["bench", "probe", "race", "run", "sweep"]
    for name, o in found.items():
        if name == "bench":  # a comma-separated list of them
            assert o.metavar == "model|ngram|eagle3|mtp[,...]"  # the list but none (the bench's baseline)
        else:
            assert tuple(o.type.choices) == DRAFTERS, name
        assert o.help.startswith("model (the draft model), ngram (prompt lookup) or none (the target alone)"), name


@pytest.mark.parametrize("cmd, says", [
    ("sweep", "--drafter none: the sweep runs the target alone anyway"),
    ("bench", "--drafter none: the bench runs the target alone anyway"),
])
def test_a_drafter_a_command_cannot_run_is_one_line(cli, tmp_path, cmd, says):
    one_line_error(cli(cmd, "--target", tmp_path / "missing.gguf", "--drafter", "none"), says)


def test_the_race_runs_drafter_none(cli, tmp_path):
    """In a race, drafter none is a setting like any other (B = the target alone): it reaches the models."""
    one_line_error(cli("race", "--target", tmp_path / "missing.gguf", "-p", "hi", "--drafter", "none"),
                   "missing.gguf")


def test_every_subcommand_is_covered():
    assert set(commands()) == {"run", *SUMMARIES}


@pytest.mark.slow  # the live run on the tiny models
def test_the_live_run_json_alone_is_headless(tiny_target):
    r = spectui("--target", tiny_target, "--json", "-n", 4, "-t", 1, "--drafter", "ngram", "--no-probe", "-p", "a b")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["n_predict"] == 4 and d["start"]["settings"]["drafter"] == "ngram"
