"""The benchmark and demo scripts cannot rot unnoticed: nothing runs them in the suite (they measure, on a quiet
machine), so every one is started with ``--help`` here (its module-level imports load, its options parse), and
every name it imports from spectui, at the top or inside a function, exists."""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted([*(ROOT / "benchmarks").rglob("*.py"), *(ROOT / "demos").glob("*.py")])


def test_the_scripts_are_where_we_think():
    assert len(SCRIPTS) > 20 and (ROOT / "benchmarks" / "bench_attach_parse.py") in SCRIPTS


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
@pytest.mark.parametrize("script", SCRIPTS, ids=[str(p.relative_to(ROOT)) for p in SCRIPTS])
def test_every_script_starts_and_says_how_to_run_it(script):
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    r = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120,
                       cwd=ROOT, env=env, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.lower().startswith("usage:"), r.stdout[:500]


def spectui_imports(path: Path) -> list[tuple[int, str, str | None]]:
    """(line, module, name or None) of every import of spectui in ``path``, wherever it is in the file."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "spectui":
            out += [(node.lineno, node.module, a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name, None) for a in node.names if a.name.split(".")[0] == "spectui"]
    return out


def test_every_spectui_name_a_script_imports_exists():
    missing = []
    for path in SCRIPTS:
        for line, module, name in spectui_imports(path):
            try:
                mod = importlib.import_module(module)
            except ImportError as exc:
                missing.append(f"{path.relative_to(ROOT)}:{line}: {module} ({exc})")
                continue
            if name is not None and name != "*" and not hasattr(mod, name):
                try:
                    importlib.import_module(f"{module}.{name}")
                except ImportError:
                    missing.append(f"{path.relative_to(ROOT)}:{line}: {module}.{name}")
    assert not missing, "names the scripts import that do not exist:\n" + "\n".join(missing)
