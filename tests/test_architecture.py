"""The core does not know the UI exists: engine, events, stats, trace, cost model never import textual."""

import subprocess
import sys

CORE = [
    "spectui.events", "spectui.stats", "spectui.control", "spectui.errors", "spectui.headless",
    "spectui.engine.loop", "spectui.engine.models", "spectui.engine.verify", "spectui.engine.drafters",
    "spectui.trace", "spectui.costmodel", "spectui.autok", "spectui.player", "spectui.tui.state", "spectui.cast",
]


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
