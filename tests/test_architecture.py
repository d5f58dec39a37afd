"""The core does not know the UI exists: engine, events, stats, trace, cost model never import textual.

Checked twice, from one list (pyproject.toml's "The core never imports Textual" contract): at run time
(import every module of its packages in a fresh interpreter, look at sys.modules) and statically
(`lint-imports`, the contracts in pyproject.toml's [tool.importlinter], which also see imports made inside
functions). `ruff check` (pyproject.toml's [tool.ruff]) runs here too, so the README's test command lints.
"""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent  # the venv's console scripts (ruff, lint-imports) sit next to its python

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: import-linter's own TOML reader
    import tomli as tomllib

CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
# The packages that never import Textual: ONE list, pyproject.toml's "The core never imports Textual" contract
# (lint-imports checks it statically; the test below imports every module of them at run time).
NO_TEXTUAL = next(c for c in CONTRACTS if c["type"] == "forbidden" and c["forbidden_modules"] == ["textual"]
                  )["source_modules"]
# Packages that may import Textual: the Textual faces; the commands import it only to open a TUI.
TEXTUAL_FACES = ["spectui.tui"]
COMMANDS = ["spectui.cli", "spectui.commands"]


def modules_of(name: str) -> list[str]:
    """``name`` and, for a package, every module under it (dotted names)."""
    path = ROOT.joinpath(*name.split("."))
    if not path.is_dir():
        return [name]
    return sorted(".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
                  for p in path.rglob("*.py"))


CORE = sorted({m for name in NO_TEXTUAL for m in modules_of(name)})


def _run_tool(name: str, *args: str) -> subprocess.CompletedProcess:
    tool = BIN / name
    assert tool.exists(), f"{tool} not found: `bash scripts/install.sh --test` installs it (the test extra)"
    return subprocess.run([str(tool), *args], cwd=ROOT, capture_output=True, text=True)


def test_ruff_check_passes():
    r = _run_tool("ruff", "check", "--no-cache", "--output-format", "concise", "spectui", "tests", "benchmarks")
    assert r.returncode == 0, r.stdout + r.stderr


def test_import_contracts_are_kept():
    r = _run_tool("lint-imports", "--no-cache")
    assert r.returncode == 0, r.stdout + r.stderr


def _textual_loaded_by(modules: list[str]) -> str:
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}:\n"
        "    importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "print(','.join(bad))\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_core_modules_do_not_import_textual():
    assert {"spectui.engine.loop", "spectui.text.run", "spectui.bench.server", "spectui.race.spec"} <= set(CORE)
    bad = _textual_loaded_by(CORE)
    assert bad == "", f"core imported textual: {bad}"


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_commands_import_textual_only_to_open_a_tui():
    """Importing a command (its --help, its errors, --headless) loads no Textual: it imports the TUI lazily."""
    commands = [m for name in COMMANDS for m in modules_of(name)]
    assert "spectui.commands.run" in commands and "spectui.commands.serve" in commands
    bad = _textual_loaded_by(commands)
    assert bad == "", f"a command imported textual: {bad}"


def test_every_package_but_the_faces_and_commands_is_in_the_no_textual_list():
    """A new package or module of spectui is Textual-free unless it is a Textual face or a command: the list
    cannot fall behind the tree."""
    top = ["spectui." + p.stem for p in (ROOT / "spectui").iterdir()
           if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and not p.stem.startswith("__"))]
    assert sorted(NO_TEXTUAL) == sorted(set(top) - set(TEXTUAL_FACES) - set(COMMANDS))


def test_cli_help_does_not_load_llama_cpp():
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from spectui.cli import main\n"
        "r = CliRunner().invoke(main, ['--help'])\n"
        "assert r.exit_code == 0, r.output\n"
        "print('llama_cpp' in sys.modules, 'textual' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"
