"""The core does not know the UI exists: engine, events, stats, trace, cost model never import textual.

Checked twice: at run time (import the core in a fresh interpreter, look at sys.modules) and statically
(`lint-imports`, the contracts in pyproject.toml's [tool.importlinter], which also see imports made inside
functions). `ruff check` (pyproject.toml's [tool.ruff]) runs here too, so the README's test command lints.
"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent  # the venv's console scripts (ruff, lint-imports) sit next to its python

# Every module of the layers below the faces (docs/ARCHITECTURE.md), and the faces and commands that stay
# Textual-free: headless, cast (its Textual half, tui.run.cast_render, is imported only to render), and
# attach: what it observes of a serving engine, its headless face and its command (attach.cli imports the
# TUI face only when it opens it).
CORE_LAYERS = ["contract", "engine", "analysis", "recording", "views"]
CORE = sorted(
    "spectui." + ".".join(p.relative_to(ROOT / "spectui").with_suffix("").parts).removesuffix(".__init__")
    for layer in CORE_LAYERS for p in (ROOT / "spectui" / layer).rglob("*.py")
) + [
    "spectui.headless", "spectui.commands.cast",
    "spectui.attach.metrics", "spectui.attach.scraper", "spectui.attach.request", "spectui.attach.text",
    "spectui.commands.attach",
    "spectui.commands.race", "spectui.race.spec", "spectui.commands.serve",
    # bench: a command without Textual (rich only; its chat templating and lossless rule are in the layers)
    "spectui.commands.bench", "spectui.bench.server",
]


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


def test_core_modules_do_not_import_textual():
    code = (
        "import importlib, sys\n"
        f"for m in {CORE!r}:\n"
        "    importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"core imported textual: {out.stdout.strip()}"


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
