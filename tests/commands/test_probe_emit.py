"""``spectui probe --batched --emit vllm|trtllm|llama-server`` on the tiny models (real llama.cpp): the file goes
through the output gate (atomic, never over an input, an unknown file kept without --force), the checks come
before any model loads, and the vLLM config is read by vLLM's own parser (its CLI's --speculative-config, its
SpeculativeConfig and the scheduler's dynamic table lookup) in the vLLM CPU virtualenv, in a subprocess; one
slow test serves it with the real vLLM."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from in_process import spectui_in_process
from vllm_server import SKIP_REASON as VLLM_SKIP
from vllm_server import VENV

REPO = Path(__file__).resolve().parents[2]


def probe_process(tmp_path: Path, *args, timeout: float = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), XDG_CACHE_HOME=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, "-m", "spectui", "probe", *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=timeout, stdin=subprocess.DEVNULL)


def probe_in_process(tmp_path: Path, *args) -> subprocess.CompletedProcess:
    return spectui_in_process("probe", *args, env={"XDG_CACHE_HOME": str(tmp_path / "cache")})


@pytest.fixture(params=["in_process", pytest.param("process", marks=pytest.mark.slow)])
def probe(request):
    """How the command runs: in this process (the fast lane) or as its own process (the full suite)."""
    return probe_in_process if request.param == "in_process" else probe_process


def emit_args(target, *more):
    return ["--target", target, "--batched", "--batch-seqs", "4", "--batch-ks", "2,3", "--repeats", "1",
            "--acceptance", "0.9", *more]


def test_emit_checks_come_before_any_model_loads(probe, tiny_target, tmp_path):
    r = probe(tmp_path, "--target", tiny_target, "--emit", "vllm")
    assert r.returncode == 2 and "needs an acceptance" in r.stderr, r.stderr
    r = probe(tmp_path, *emit_args(tiny_target, "--emit", "vllm", "-o", tiny_target))
    assert r.returncode == 2 and "refusing to write" in r.stderr and "inputs" in r.stderr, r.stderr
    other = tmp_path / "notes.txt"
    other.write_text("mine\n")
    r = probe(tmp_path, *emit_args(tiny_target, "--emit", "trtllm", "-o", other))
    assert r.returncode == 2 and other.read_text() == "mine\n", r.stderr  # not one of ours: kept
    r = probe(tmp_path, "--target", tiny_target, "-o", other)
    assert r.returncode == 2 and "for --emit" in r.stderr


def test_emit_each_format_through_the_gate(probe, tiny_target, tiny_draft_noisy, tmp_path):
    out = tmp_path / "spec.json"
    r = probe(tmp_path, *emit_args(tiny_target, "--drafter", "ngram", "--emit", "vllm", "-o", out))
    assert r.returncode == 0, r.stderr
    cfg = json.loads(out.read_text())
    assert cfg["method"] == "ngram" and cfg["num_speculative_tokens_per_batch_size"][0][0] == 1
    assert "spectui: wrote" in r.stderr and "batched step cost" in r.stdout  # the figures, and the file
    # a second run may replace its own file; without -o the config alone goes to stdout
    r = probe(tmp_path, *emit_args(tiny_target, "--drafter", "ngram", "--emit", "vllm", "-o", out))
    assert r.returncode == 0, r.stderr
    r = probe(tmp_path, *emit_args(tiny_target, "--draft", tiny_draft_noisy, "--emit", "llama-server"))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("# spectui probe --emit llama-server") and [ln.split()[1] for ln in lines[2:]] == [
        "1", "2", "4"]


VALIDATE = r'''
import json, sys
from vllm.config.speculative import SpeculativeConfig
from vllm.engine.arg_utils import EngineArgs
from vllm.utils.argparse_utils import FlexibleArgumentParser
from vllm.v1.spec_decode.dynamic.utils import build_dynamic_sd_schedule_lookup
text = open(sys.argv[1]).read()
parser = EngineArgs.add_cli_args(FlexibleArgumentParser())
args = parser.parse_args(["--model", "m", "--speculative-config", text])   # vLLM's CLI reads it
cfg = SpeculativeConfig(**args.speculative_config)                           # its config class takes it
dense = build_dynamic_sd_schedule_lookup(cfg.num_speculative_tokens_per_batch_size, 16, cfg.num_speculative_tokens)
print(json.dumps({"method": cfg.method, "k": cfg.num_speculative_tokens, "dense": dense,
                  "table": [list(e) for e in cfg.num_speculative_tokens_per_batch_size]}))
'''


def vllm_python(script: str, *args, timeout: float = 300) -> subprocess.CompletedProcess:
    iomp = (VENV / ".spectui-ok").read_text().strip()
    env = dict(os.environ, LD_PRELOAD=iomp, VLLM_LOGGING_LEVEL="ERROR", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env.pop("PYTHONPATH", None)
    return subprocess.run([str(VENV / "bin" / "python"), "-c", script, *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=timeout)


@pytest.mark.skipif(VENV is None, reason=VLLM_SKIP)
@pytest.mark.timeout(900)
@pytest.mark.slow
def test_the_emitted_vllm_config_is_read_by_vllm(tiny_target, tmp_path):
    out = tmp_path / "spec.json"
    r = probe_process(tmp_path, *emit_args(tiny_target, "--drafter", "ngram", "--emit", "vllm", "-o", out))
    assert r.returncode == 0, r.stderr
    mine = json.loads(out.read_text())
    v = vllm_python(VALIDATE, out)
    assert v.returncode == 0, v.stderr[-3000:]
    got = json.loads(v.stdout.strip().splitlines()[-1])
    assert got["method"] == "ngram" and got["k"] == mine["num_speculative_tokens"]
    assert got["table"] == mine["num_speculative_tokens_per_batch_size"]
    # vLLM's own lookup (index = requests in the step) is our table, read the way the scheduler reads it
    want = [0] + [next(k for lo, hi, k in mine["num_speculative_tokens_per_batch_size"] if lo <= b <= hi)
                  for b in range(1, 17)]
    assert got["dense"] == [min(x, mine["num_speculative_tokens"]) for x in want]


@pytest.mark.skipif(VENV is None, reason=VLLM_SKIP)
@pytest.mark.timeout(1800)
@pytest.mark.slow
def test_vllm_serves_with_the_emitted_config(tiny_target, tmp_path):
    """The real CPU vLLM started with the emitted --speculative-config serves a completion."""
    import urllib.request

    from vllm_server import vllm_server

    out = tmp_path / "spec.json"
    r = probe_process(tmp_path, *emit_args(tiny_target, "--drafter", "ngram", "--emit", "vllm", "-o", out))
    assert r.returncode == 0, r.stderr
    (tmp_path / "srv").mkdir()
    with vllm_server(tmp_path / "srv", spec=json.loads(out.read_text())) as url:
        body = json.dumps({"prompt": "hash map key value", "max_tokens": 8, "temperature": 0}).encode()
        req = urllib.request.Request(url + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as resp:
            assert json.loads(resp.read())["choices"][0]["text"] is not None
