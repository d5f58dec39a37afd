"""spectui bench --url against a real llama-server on 127.0.0.1 (tests/servers.py; built by
scripts/build-llama-server.sh), started and stopped here by PID: the tiny target with its noisy draft
(speculation on, --metrics) and the tiny target alone as the baseline. The bench's acceptance must agree with the
server's own /metrics counters (read with a regular expression, not spectui's parser) within 0.01; a bench without
a baseline says so; a server killed mid-run keeps the rows done and exits 1."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from servers import SKIP_REASON, THREADS, LlamaServer, llama_server_binary, raw_metrics, spec_and_baseline

BINARY = llama_server_binary()
pytestmark = [pytest.mark.skipif(BINARY is None, reason=SKIP_REASON), pytest.mark.timeout(600), pytest.mark.slow]
PROMPTS = [
    {"question_id": 1, "category": "lookup", "turns": ["the hash map key value table bucket chain the hash map"]},
    {"question_id": 2, "category": "lookup", "turns": ["code python function return def class if else"]},
    {"question_id": 3, "category": "free", "turns": ["the a an of to in and is it that for on with"]},
]


def write_prompts(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def bench(*args, timeout=400):
    return subprocess.run([sys.executable, "-m", "spectui", "bench", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def servers(tiny_target, tiny_draft_noisy, tmp_path_factory):
    with spec_and_baseline(BINARY, tiny_target, tiny_draft_noisy, tmp_path_factory.mktemp("llama-server")) as pair:
        yield pair


def test_acceptance_agrees_with_the_servers_counters(servers, tmp_path):
    spec, base = servers
    prompts = write_prompts(tmp_path / "q.jsonl", PROMPTS)
    out = tmp_path / "b.json"
    raw0 = raw_metrics(spec.url)
    r = bench("--url", spec.url, "--baseline-url", base.url, "--prompts", prompts, "-n", "32", "--json", out,
              "--markdown", tmp_path / "b.md")
    assert r.returncode == 0, r.stderr
    time.sleep(0.5)
    raw1 = raw_metrics(spec.url)
    d = {k: raw1[k] - raw0.get(k, 0.0) for k in raw1}
    drafted, accepted, steps = (d["llamacpp:spec_decode_num_draft_tokens_total"],
                                d["llamacpp:spec_decode_num_accepted_tokens_total"],
                                d["llamacpp:spec_decode_num_drafts_total"])
    assert drafted > 0 and 0 < accepted < drafted
    data = json.loads(out.read_text())
    ov = next(s for s in data["summaries"] if s["category"] == "overall" and s["setting"]["label"] == spec.url)
    assert abs(ov["acceptance_rate"] - accepted / drafted) <= 0.01
    assert abs(ov["mean_accepted_tokens"] - (1 + accepted / steps)) <= 0.01
    assert ov["n_drafted"] == drafted and ov["n_accepted"] == accepted  # every request counted, exactly
    # per request, the /metrics delta agrees with the request's own timings (draft_n / draft_n_accepted)
    runs = [x for x in data["runs"] if x["drafter"] == "server"]
    assert len(runs) == 3 and all(x["source"] == spec.url for x in runs)
    assert ov["baseline_tokens_per_second"] > 0 and ov["speedup"] > 0
    base_ov = next(s for s in data["summaries"] if s["category"] == "overall" and s["setting"]["drafter"] == "none")
    assert base_ov["n_drafted"] == 0
    assert "no baseline" not in r.stdout
    md = (tmp_path / "b.md").read_text().splitlines()
    assert md[2] == "| Method | Temp | lookup | free | #Mean accepted tokens | Overall |"


def test_no_baseline_says_so(servers, tmp_path):
    spec, _ = servers
    prompts = write_prompts(tmp_path / "q.jsonl", PROMPTS[:1])
    r = bench("--url", spec.url, "--prompts", prompts, "-n", "8", "--json", tmp_path / "b.json")
    assert r.returncode == 0, r.stderr
    assert "No baseline: give --baseline-url" in r.stdout and "no baseline measured, so no speedup" in r.stdout
    ov = [s for s in json.loads((tmp_path / "b.json").read_text())["summaries"] if s["category"] == "overall"]
    assert all(s["speedup"] == 0 for s in ov)


def test_server_that_dies_mid_run(tiny_target, tiny_draft_noisy, tmp_path):
    log = tmp_path / "dying.log"
    server = LlamaServer(BINARY, ["-m", str(tiny_target), "-md", str(tiny_draft_noisy), "--spec-type",
                                  "draft-simple", "--metrics", "-c", "2048", "-np", "1", "--no-warmup", *THREADS], log)
    out = tmp_path / "b.json"
    try:
        prompts = write_prompts(tmp_path / "q.jsonl", PROMPTS * 20)
        proc = subprocess.Popen([sys.executable, "-m", "spectui", "bench", "--url", server.url, "--prompts",
                                 str(prompts), "-n", "200", "--json", str(out)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if raw_metrics(server.url).get("llamacpp:tokens_predicted_total", 0) >= 400:  # two requests done
                break
            time.sleep(0.1)
        server.kill()
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        server.stop()
    assert proc.returncode == 1, stderr
    data = json.loads(out.read_text())
    assert data["status"]["status"].startswith("failed:") and len(data["runs"]) >= 2
    assert data["status"]["jobs_done"] == len(data["runs"])
    assert "Stopped at job" in stdout


def test_concurrency_rows_from_the_requests_own_timings(servers, tmp_path):
    """--concurrency 2: /metrics deltas would mix requests, so each row keeps its own timings (draft_n,
    draft_n_accepted); their sums equal the server's counters over the bench."""
    spec, _ = servers
    prompts = write_prompts(tmp_path / "q.jsonl", PROMPTS)
    out = tmp_path / "b.json"
    raw0 = raw_metrics(spec.url)
    r = bench("--url", spec.url, "--prompts", prompts, "-n", "24", "--concurrency", "2", "--json", out)
    assert r.returncode == 0, r.stderr
    time.sleep(0.5)
    raw1 = raw_metrics(spec.url)
    data = json.loads(out.read_text())
    runs = data["runs"]
    assert len(runs) == 3 and data["status"]["jobs_done"] == 3
    drafted = raw1["llamacpp:spec_decode_num_draft_tokens_total"] - raw0["llamacpp:spec_decode_num_draft_tokens_total"]
    accepted = (raw1["llamacpp:spec_decode_num_accepted_tokens_total"]
                - raw0["llamacpp:spec_decode_num_accepted_tokens_total"])
    assert sum(x["n_drafted"] for x in runs) == drafted and sum(x["n_accepted"] for x in runs) == accepted
    assert "--concurrency 2: /metrics deltas mix requests" in r.stdout
