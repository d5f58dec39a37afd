"""The first minute: without llama-cpp-python (`bash scripts/install.sh`, no --live) the demo, replay,
cast and attach work, and a live run says in one line how to install it (exit 2). The interpreter here
has llama-cpp-python, so each command runs in a subprocess that blocks the import
(``sys.modules["llama_cpp"] = None``: ``import llama_cpp`` then raises ImportError, as when absent)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = str(Path(__file__).resolve().parents[2])
NO_LLAMA = "import sys; sys.modules['llama_cpp'] = None; from spectui.cli import main; main()"


def spectui_without_llama(*args: str, tmp: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": REPO}
    return subprocess.run([sys.executable, "-c", NO_LLAMA, *args], capture_output=True, text=True, cwd=tmp,
                          env=env, timeout=120)


def test_a_live_run_says_how_to_install_llama_cpp(tiny_target, tmp_path):
    r = spectui_without_llama("--target", str(tiny_target), "--headless", "-p", "hi", "-n", "4", tmp=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("spectui: error: live runs need llama-cpp-python"), r.stderr
    assert "bash scripts/install.sh --live" in lines[0] and "spectui[live]" in lines[0]


@pytest.mark.slow  # a cast of the demo's act 2
def test_demo_replay_and_cast_work_without_llama_cpp(tmp_path):
    demo = spectui_without_llama("demo", "--headless", "--act", "2", tmp=tmp_path)
    assert demo.returncode == 0, demo.stderr
    assert "tokens" in demo.stdout
    from spectui.commands.demo import demo_trace_path

    trace = str(demo_trace_path(2))
    replay = spectui_without_llama("replay", trace, "--headless", tmp=tmp_path)
    assert replay.returncode == 0, replay.stderr
    cast = spectui_without_llama("cast", trace, "-o", str(tmp_path / "demo.cast"), "--speed", "8", tmp=tmp_path)
    assert cast.returncode == 0, cast.stderr
    assert (tmp_path / "demo.cast").stat().st_size > 0
    attach = spectui_without_llama("attach", "--help", tmp=tmp_path)
    assert attach.returncode == 0 and "URL" in attach.stdout, attach.stderr
