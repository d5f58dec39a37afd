"""The third hostile-input report (../shared/reports/bad-input-2026-12-06.md), its rows in the Hugging Face
cache that ``-hf`` reads offline: HFC-symloop (a model file that is a loop of links) and HFC-dirloop (a
snapshot folder that links to itself). Each is one line naming the loop, as for any input
(docs/exit-statuses.md, "a loop of symbolic links"), not "not in the local cache" and not a traceback. The
cache is laid out with huggingface_hub's own functions (tests/hub_cache.py) around a tiny model.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("huggingface_hub")

from hub_cache import COMMIT, hf_env, lay_out

REPO = Path(__file__).resolve().parents[2]
LOOP = "is a loop of symbolic links (it never names a file)"


def run_hf(cache: Path) -> subprocess.CompletedProcess:
    env = dict(hf_env(cache), PYTHONPATH=str(REPO), NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "spectui", "-hf", "user/repo", "--drafter", "ngram", "--headless",
                           "-p", "x", "-n", "2"], stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env,
                          timeout=120, cwd=REPO)


def snapshot(cache: Path, model: Path) -> Path:
    lay_out(cache, "user/repo", {"m-Q4_K_M.gguf": model})
    return cache / "models--user--repo" / "snapshots" / COMMIT


def one_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_hfc_symloop_a_model_file_that_is_a_loop_of_links(tmp_path, tiny_target):
    snap = snapshot(tmp_path / "hf", tiny_target)
    (snap / "m-Q4_K_M.gguf").unlink()
    os.symlink("m-b.gguf", snap / "m-Q4_K_M.gguf")  # m-Q4_K_M.gguf -> m-b.gguf -> m-Q4_K_M.gguf
    os.symlink("m-Q4_K_M.gguf", snap / "m-b.gguf")
    r = run_hf(tmp_path / "hf")
    assert r.returncode == 2 and one_line(r.stderr) == (
        "spectui: error: Hugging Face repository user/repo in the local cache: "
        f"snapshots/{COMMIT}/m-Q4_K_M.gguf {LOOP}")


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_hfc_dirloop_a_snapshot_folder_that_links_to_itself(tmp_path, tiny_target):
    snap = snapshot(tmp_path / "hf", tiny_target)
    shutil.rmtree(snap)
    os.symlink(COMMIT, snap)  # snapshots/<commit> -> snapshots/<commit>
    r = run_hf(tmp_path / "hf")
    assert r.returncode == 2 and one_line(r.stderr) == (
        f"spectui: error: Hugging Face repository user/repo in the local cache: snapshots/{COMMIT} {LOOP}")


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_a_sound_cache_still_runs(tmp_path, tiny_target):
    snapshot(tmp_path / "hf", tiny_target)
    r = run_hf(tmp_path / "hf")
    assert r.returncode == 0, r.stderr
