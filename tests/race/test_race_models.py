"""`spectui race --target T --draft D` loads its models as every other command that loads them
(spectui.commands.common.load_engine): -hf / -hfd by name from the Hugging Face cache, -ngl / -ngld,
--no-repack, -c, -t. Real llama.cpp on the tiny models (tests/conftest.py), the cache laid out offline by
tests/hub_cache.py (no network)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hub_cache import hf_env, lay_out

from spectui.recording.trace import read_trace

pytestmark = pytest.mark.slow  # the command in subprocesses on the engine

REPO = Path(__file__).resolve().parents[2]


def spectui(*args, env=None) -> subprocess.CompletedProcess:
    env = {**(env or os.environ), "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "spectui", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=300)


@pytest.fixture(scope="module")
def hub_cache(tmp_path_factory, tiny_target, tiny_draft_same):
    cache = tmp_path_factory.mktemp("hf") / "hub"
    lay_out(cache, "tiny/target-GGUF", {"target-Q8_0.gguf": tiny_target, "target-Q4_K_M.gguf": tiny_target})
    lay_out(cache, "tiny/draft-GGUF", {"draft-q4_k_m.gguf": tiny_draft_same})
    return cache


def test_race_by_name_with_the_loaders_options(hub_cache, tmp_path):
    """-hf/-hfd resolve from the cache (offline), and -c/-t/-ngl/-ngld/--no-repack reach the engine: each
    recorded trace says the files it ran, its context and its threads."""
    out = tmp_path / "rec"
    r = spectui("race", "-hf", "tiny/target-GGUF", "-hfd", "tiny/draft-GGUF:Q4_K_M", "-p", "one two three four",
                "-n", 8, "--b", "k=3", "-c", 512, "-t", 1, "-ngl", 0, "-ngld", 0, "--no-repack",
                "--record-dir", out, "--headless", "--json", env=hf_env(hub_cache))
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["lanes"][1]["drafted"] > 0 and d["same_tokens"]
    files = sorted(os.listdir(out))
    assert files == ["race-A-target-alone.jsonl.gz", "race-B-k3-model.jsonl.gz"]
    for name in files:
        start = read_trace(out / name).events[0]
        assert start.type == "start"
        assert "models--tiny--target-GGUF" in start.target.path and start.target.path.endswith("target-Q4_K_M.gguf")
        assert (start.n_ctx, start.threads, start.target.n_gpu_layers) == (512, 1, 0)
    b = read_trace(out / files[1]).events[0]
    assert b.draft is not None and "models--tiny--draft-GGUF" in b.draft.path and b.draft.n_gpu_layers == 0


def test_race_by_name_errors_like_every_command(hub_cache):
    """A repo missing from the offline cache is the same one-line error (exit 2) as the live run's."""
    r = spectui("race", "-hf", "nobody/missing-GGUF", "-p", "x", "--headless", env=hf_env(hub_cache))
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert "nobody/missing-GGUF" in lines[0] and "not in the local cache" in lines[0]
    live = spectui("-hf", "nobody/missing-GGUF", "-p", "x", "--headless", env=hf_env(hub_cache))
    assert live.returncode == 2 and live.stderr.strip() == r.stderr.strip()


@pytest.mark.parametrize("args", [["-hfd", "tiny/draft-GGUF"], ["-ngl", "0"], ["--no-repack"], ["-t", "1"]])
def test_model_options_without_a_target_are_refused(args):
    """Racing recorded traces loads no model: a model option there is a one-line error, exit 2."""
    r = spectui("race", "a.jsonl", "b.jsonl", *args)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "need --target" in r.stderr


def test_race_reads_its_prompt_as_every_command(tmp_path):
    """The prompt through the one reader (commands.common.resolve_prompt), which a recorded race needs."""
    for args, says in ((["-p", "  "], "a recorded race needs a prompt (-p TEXT or -f FILE)"),
                       ([], "a recorded race needs a prompt"),
                       (["-p", "x", "-f", tmp_path / "p.txt"], "not both"),
                       (["-f", tmp_path / "none.txt"], "prompt file not found")):
        r = spectui("race", "--target", tmp_path / "missing.gguf", *args)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and says in r.stderr, r.stderr
