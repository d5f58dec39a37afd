"""A plain (non-editable) install must carry the themes and the bundled demo trace."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # builds the wheel and installs it in a fresh venv

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    r = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(ROOT)],
        capture_output=True, text=True,
    )
    if r.returncode != 0:  # no hatchling in this environment: build with isolation (needs the package index)
        r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
                           capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    (whl,) = out.glob("spectui-*.whl")
    return whl


def test_wheel_has_themes_demo_trace_and_entry_point(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    themes = {Path(n).stem for n in names if n.startswith("spectui/themes/")}
    assert {"dark", "light", "high-contrast", "okabe-ito"} <= themes, themes
    assert any(n.startswith("spectui/data/demo") for n in names), sorted(names)
    assert {"spectui/data/demo-trace.jsonl.gz", "spectui/data/demo-act2.jsonl.gz"} <= names  # both demo acts
    assert "spectui/data/bench-prompts.jsonl" in names  # spectui bench's built-in prompt set
    assert "spectui/data/agentic.jsonl" in names  # and its multi-turn agentic sessions (--prompts agentic)
    assert {f"spectui/data/race-{n}.jsonl.gz" for n in ("alone", "lookup", "draft")} <= names  # the race act
    assert "spectui/tui/race/race.tcss" in names  # the race face's CSS
    assert "spectui/tui/spectui.tcss" in names  # the App's CSS (CSS_PATH) travels with the package
    ep = [n for n in names if n.endswith("entry_points.txt")]
    assert ep and "spectui = spectui.cli:main" in zipfile.ZipFile(wheel).read(ep[0]).decode()


def test_installed_wheel_finds_themes_and_demo(wheel, tmp_path):
    """Unpack the wheel alone (no repo on sys.path) and load themes and the demo trace from it."""
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);\n"
        "import spectui.tui.shared.themes as t, spectui.commands.demo as d, spectui\n"
        "assert spectui.__file__.startswith(sys.argv[1]), spectui.__file__\n"
        "names = t.available_themes()\n"
        "print(sorted(names))\n"
        "print(d.demo_trace_path())\n"
    )
    r = subprocess.run([sys.executable, "-c", code, str(site)], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "okabe-ito" in r.stdout and str(site) in r.stdout
