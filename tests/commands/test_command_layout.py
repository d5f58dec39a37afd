"""One command = one place: each subcommand is a module of spectui/commands/ exporting ``<name>_cmd``, its
one-line summary is written once (spectui.commands.SUMMARIES), and `spectui --help` prints it without
importing any command (tests/test_architecture.py checks that no llama_cpp or Textual loads)."""

from __future__ import annotations

import importlib
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from spectui.cli import SUBCOMMANDS, main
from spectui.commands import SUMMARIES

COMMANDS_DIR = Path(__file__).resolve().parents[2] / "spectui" / "commands"
SHARED = {"__init__", "common", "options", "run"}  # run: the group's own command (spectui --target ...)


def test_every_command_module_is_a_subcommand():
    modules = sorted(p.stem for p in COMMANDS_DIR.glob("*.py") if p.stem not in SHARED)
    assert modules == sorted(SUMMARIES) == sorted(SUBCOMMANDS)
    assert not [p for p in COMMANDS_DIR.iterdir() if p.is_dir() and p.name != "__pycache__"]


@pytest.mark.parametrize("name", sorted(SUMMARIES))
def test_each_command_is_exported_and_its_help_starts_with_its_one_summary(name):
    cmd = getattr(importlib.import_module(f"spectui.commands.{name}"), f"{name}_cmd")
    assert isinstance(cmd, click.Command) and cmd.name == name
    summary = SUMMARIES[name]
    assert summary.endswith(")") or summary.endswith(".")
    assert cmd.help.split("\n\n")[0] == summary and cmd.short_help == summary
    r = CliRunner().invoke(main, [name, "-h"], prog_name="spectui")
    assert r.exit_code == 0, r.output
    assert " ".join(r.output.split("\n\n")[1].split()) == summary
    # the summary is not written a second time in the command's details
    assert summary not in cmd.help.split("\n\n", 1)[-1] or cmd.help == summary


def test_top_level_help_lists_each_summary_once():
    formatter = click.HelpFormatter(width=300)  # wide: no summary wrapped
    main.format_commands(main.make_context("spectui", [], resilient_parsing=True), formatter)
    rows = [line.split(None, 1) for line in formatter.getvalue().splitlines()[1:]]
    assert rows == sorted([name, summary] for name, summary in SUMMARIES.items())


def test_demo_summary_counts_no_acts():
    """The demo's acts change (there are three); its summary names none, so it cannot go stale."""
    from spectui.commands.demo import ACTS

    assert len(ACTS) >= 3 and "trace" not in SUMMARIES["demo"] and "act after act" in SUMMARIES["demo"]
