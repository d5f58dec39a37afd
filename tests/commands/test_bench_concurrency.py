"""spectui bench --concurrency 1,2,4 (the knee sweep) against a real llama-server with -np 4 slots and a draft (-md),
beside the same target with -np 4 and no draft as the baseline, both started and stopped here by PID
(tests/servers.py); the same against the CPU vLLM (with and without n-gram speculation) when its virtualenv is
there. The sweep's drafted and accepted tokens must equal the server's own /metrics counters over the sweep (read
with a regular expression); every level has its tokens/s, ITL, TTFT and acceptance; the report prints the
measured knee, and with --knee-probe (``spectui probe --batched --json`` on the same models) the predicted one
beside it. Bad --concurrency values are one line and exit status 2 before any request."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest
from servers import SKIP_REASON, THREADS, LlamaServer, llama_server_binary, raw_metrics, spec_and_baseline

from spectui.bench.concurrency import parse_concurrency
from spectui.contract.errors import SpectuiError

BINARY = llama_server_binary()
PROMPTS = [
    {"question_id": 1, "category": "lookup", "turns": ["the hash map key value table bucket chain the hash map"]},
    {"question_id": 2, "category": "lookup", "turns": ["code python function return def class if else"]},
    {"question_id": 3, "category": "free", "turns": ["the a an of to in and is it that for on with"]},
]
needs_server = [pytest.mark.skipif(BINARY is None, reason=SKIP_REASON), pytest.mark.timeout(900), pytest.mark.slow]


def write_prompts(path):
    path.write_text("".join(json.dumps(r) + "\n" for r in PROMPTS), encoding="utf-8")
    return path


def bench(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "spectui", "bench", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout)


def test_parse_concurrency():
    assert parse_concurrency("1,2,4,8,16") == (1, 2, 4, 8, 16)
    assert parse_concurrency(3) == (3,)
    for bad in ("0", "1,x", "", "2,2", "1000"):
        with pytest.raises(SpectuiError):
            parse_concurrency(bad)


def test_report_of_a_sweep_by_hand():
    """The arithmetic of the report on hand-made levels: speedup per level, the measured knee, and a server that
    stopped drafting past some concurrency (as vLLM's num_speculative_tokens_per_batch_size with k = 0 does)
    named as such."""
    from spectui.bench.concurrency import Level, Sweep, report_lines

    res = Sweep([1, 2, 4, 8])
    for c, b_tps, s_tps, drafted in ((1, 10.0, 15.0, 300), (2, 19.0, 24.0, 300), (4, 36.0, 30.0, 290),
                                     (8, 60.0, 61.0, 2)):
        res.base.append(Level(c, "b", "baseline", n_requests=8, output_tokens=400, tokens_per_second=b_tps))
        res.spec.append(Level(c, "s", "speculation", n_requests=8, output_tokens=400, tokens_per_second=s_tps,
                              drafted=drafted, accepted=drafted // 2, acceptance=0.5 if drafted else None))
    sp = res.speedups()
    assert sp == pytest.approx({1: 1.5, 2: 24 / 19, 4: 30 / 36, 8: 61 / 60})
    assert res.switched_off() == [8]  # 2 drafts / 400 tokens against 300 / 400 at concurrency 1
    text = "\n".join(report_lines(res, {1: 1.4, 2: 1.1, 4: 0.9, 8: 0.7}))
    assert "measured: speculation pays up to concurrency = 2, stops at concurrency = 4" in text
    assert ("predicted (spectui probe --batched on this machine): speculation pays up to concurrency = 2, stops at "
            "concurrency = 4") in text
    assert "switched speculation off by itself at concurrency 8" in text and "disable_by_batch_size" in text
    assert " 1.50x" in text and "1.40x" in text


def test_a_deployment_that_drafted_nothing_has_no_knee():
    """A speculating deployment that drafted no token at any level (llama-server's ngram-simple keys on 12 tokens
    by default, so prompts without such a repeat never draft) is measured against its baseline twice over: its
    "speedups" are run-to-run spread, and the report says so instead of naming a knee."""
    from spectui.bench.concurrency import Level, Sweep, report_lines

    res = Sweep([1, 2, 4])
    for c, b_tps, s_tps in ((1, 10.0, 10.4), (2, 19.0, 20.1), (4, 36.0, 35.0)):
        res.base.append(Level(c, "b", "baseline", n_requests=8, output_tokens=400, tokens_per_second=b_tps))
        res.spec.append(Level(c, "s", "speculation", n_requests=8, output_tokens=400, tokens_per_second=s_tps))
    assert res.drafted_nothing() and res.switched_off() == []
    text = "\n".join(report_lines(res))
    assert "measured: no knee: the speculating deployment drafted no token at any level" in text
    assert "pays up to" not in text and "never pays" not in text
    res.spec[0].drafted = 5  # one level that drafted: the knee is measured again
    assert not res.drafted_nothing()
    assert "measured: speculation pays up to concurrency = 2, stops at concurrency = 4" in "\n".join(report_lines(res))


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
@pytest.mark.parametrize("value, msg", [("1,two", "comma-separated numbers"), ("0,2", "between 1 and"),
                                         ("2,2", "twice")])
def test_bad_concurrency_is_one_line(value, msg, tmp_path):
    r = bench("--url", "http://127.0.0.1:9", "--concurrency", value, "--prompts", write_prompts(tmp_path / "q.jsonl"))
    assert r.returncode == 2 and msg in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_knee_probe_file_must_be_a_probe(tmp_path):
    bad = tmp_path / "not-a-probe.json"
    bad.write_text('{"schema": "spectui.bench"}\n')
    r = bench("--url", "http://127.0.0.1:9", "--concurrency", "1,2", "--knee-probe", bad,
              "--prompts", write_prompts(tmp_path / "q.jsonl"))
    assert r.returncode == 2 and "--knee-probe" in r.stderr and "not `spectui probe --batched --json`" in r.stderr


@pytest.fixture(scope="module")
def servers(tiny_target, tiny_draft_noisy, tmp_path_factory):
    if BINARY is None:
        pytest.skip(SKIP_REASON)
    with spec_and_baseline(BINARY, tiny_target, tiny_draft_noisy, tmp_path_factory.mktemp("llama-server-np4"),
                           slots=4, ctx=4096) as pair:
        yield pair


@pytest.fixture(scope="module")
def knee_probe(tiny_target, tiny_draft_noisy, tmp_path_factory):
    d = tmp_path_factory.mktemp("knee-probe")
    r = subprocess.run([sys.executable, "-m", "spectui", "probe", "--target", str(tiny_target), "--draft",
                        str(tiny_draft_noisy), "-c", "512", "-t", "1", "--max-batch", "4", "--repeats", "1",
                        "--batched", "--batch-seqs", "4", "--batch-ks", "3", "--acceptance", "0.5", "--json"],
                       capture_output=True, text=True, timeout=600, env={**os.environ, "XDG_CACHE_HOME": str(d)})
    assert r.returncode == 0, r.stderr
    p = d / "probe.json"
    p.write_text(r.stdout)
    return p


@pytest.mark.skipif(BINARY is None, reason=SKIP_REASON)
@pytest.mark.timeout(900)
@pytest.mark.slow
def test_sweep_against_llama_server_np4_with_a_draft(servers, knee_probe, tmp_path):
    spec, base = servers
    out = tmp_path / "sweep.json"
    raw0 = raw_metrics(spec.url)
    r = bench("--url", spec.url, "--baseline-url", base.url, "--prompts", write_prompts(tmp_path / "q.jsonl"),
              "-n", "24", "-k", "3", "--concurrency", "1,2,4", "--knee-probe", knee_probe, "--json", "-o", out)
    assert r.returncode == 0, r.stderr + r.stdout
    time.sleep(0.5)
    raw1 = raw_metrics(spec.url)
    doc = json.loads(out.read_text())
    assert doc["schema"] == "spectui.bench"
    sw = doc["concurrency_sweep"]
    assert sw["status"] == "done" and sw["params"]["levels"] == [1, 2, 4]
    levels = sw["levels"]
    assert [lv["concurrency"] for lv in levels] == [1, 2, 4]
    assert [lv["concurrency"] for lv in sw["baseline"]] == [1, 2, 4]
    for lv, bl in zip(levels, sw["baseline"]):
        assert lv["n_requests"] == max(3, 2 * lv["concurrency"]) == bl["n_requests"]
        assert lv["output_tokens"] > 0 and lv["tokens_per_second"] > 0 and bl["tokens_per_second"] > 0
        assert lv["speedup"] == pytest.approx(lv["tokens_per_second"] / bl["tokens_per_second"])
        assert lv["itl_ms_p50"] is not None and lv["itl_ms_p95"] >= lv["itl_ms_p50"] > 0
        assert lv["ttft_ms_p95"] >= lv["ttft_ms_p50"] > 0
        assert lv["drafted"] > 0 and 0 <= lv["acceptance"] <= 1 and lv["acceptance_source"] == "timings"
        assert lv["predicted_speedup"] is not None and lv["predicted_speedup"] > 0
        assert bl["drafted"] == 0
    drafted = raw1["llamacpp:spec_decode_num_draft_tokens_total"] - raw0["llamacpp:spec_decode_num_draft_tokens_total"]
    accepted = (raw1["llamacpp:spec_decode_num_accepted_tokens_total"]
                - raw0["llamacpp:spec_decode_num_accepted_tokens_total"])
    assert sum(lv["drafted"] for lv in levels) == drafted
    assert sum(lv["accepted"] for lv in levels) == accepted
    text = r.stdout
    assert "measured: speculation" in text and "predicted (spectui probe --batched on this machine)" in text
    assert re.search(r"^\s+1\s+\d", text, re.M) and re.search(r"^\s+4\s+\d", text, re.M)


@pytest.mark.skipif(BINARY is None, reason=SKIP_REASON)
@pytest.mark.timeout(900)
@pytest.mark.slow
def test_sweep_without_a_baseline_says_so(servers, tmp_path):
    spec, _ = servers
    r = bench("--url", spec.url, "--prompts", write_prompts(tmp_path / "q.jsonl"), "-n", "8", "--concurrency", "1,2")
    assert r.returncode == 0, r.stderr
    assert "No baseline: give --baseline-url" in r.stdout


@pytest.mark.skipif(BINARY is None, reason=SKIP_REASON)
@pytest.mark.timeout(900)
@pytest.mark.slow
def test_sweep_against_llama_server_with_ngram_lookup(servers, tiny_target, tmp_path):
    """--spec-type ngram-simple (prompt lookup, no draft model) with -np 4, against the same baseline: every level
    measured, and the drafted / accepted tokens the sweep reports equal the server's own counters."""
    _, base = servers
    # a 1-token lookup key: the tiny random model's text repeats single tokens, not longer n-grams
    ngram = LlamaServer(BINARY, ["-m", str(tiny_target), "--spec-type", "ngram-simple", "--spec-ngram-simple-size-n",
                                 "1", "--spec-draft-n-max", "3",
                                 "--metrics", "-c", "4096", "-np", "4", "--no-warmup", *THREADS],
                        tmp_path / "ngram.log")
    try:
        out = tmp_path / "ngram.json"
        raw0 = raw_metrics(ngram.url)
        r = bench("--url", ngram.url, "--baseline-url", base.url, "--prompts", write_prompts(tmp_path / "q.jsonl"),
                  "-n", "48", "--concurrency", "1,2,4", "--json", "-o", out)
        assert r.returncode == 0, r.stderr + r.stdout
        time.sleep(0.5)
        raw1 = raw_metrics(ngram.url)
    finally:
        ngram.stop()
    sw = json.loads(out.read_text())["concurrency_sweep"]
    assert [lv["concurrency"] for lv in sw["levels"]] == [1, 2, 4]
    assert all(lv["tokens_per_second"] > 0 and lv["speedup"] > 0 for lv in sw["levels"])
    drafted = raw1["llamacpp:spec_decode_num_draft_tokens_total"] - raw0["llamacpp:spec_decode_num_draft_tokens_total"]
    assert drafted > 0 and sum(lv["drafted"] for lv in sw["levels"]) == drafted
    assert all(lv["drafted"] > 0 and lv["acceptance_source"] == "timings" for lv in sw["levels"])
    assert "measured: speculation" in r.stdout


# ---------------------------------------------------------------- the CPU vLLM

try:
    from vllm_server import SKIP_REASON as VLLM_SKIP
    from vllm_server import VENV, metrics, series, vllm_server
except ImportError:  # pragma: no cover
    VENV, VLLM_SKIP, vllm_server = None, "vLLM helper missing", None

CHAT = "{% for m in messages %}{{ m['content'] }} {% endfor %}"
ADD_TEMPLATE = "\nimport json\np = out / 'tokenizer_config.json'\nc = json.loads(p.read_text())\n" \
               f"c['chat_template'] = {CHAT!r}\np.write_text(json.dumps(c))\n"


@pytest.mark.skipif(VENV is None, reason=VLLM_SKIP)
@pytest.mark.timeout(1800)
@pytest.mark.slow
def test_bench_and_the_sweep_against_the_cpu_vllm(tmp_path):
    """A tiny Llama in Hugging Face format with a chat template, served by the real CPU vLLM with n-gram
    speculation and without (started and stopped here by PID). One request at a time, the bench's acceptance
    agrees with vLLM's own spec_decode counters within 0.01; then the sweep over concurrency 1, 2 and 4 against
    the baseline."""
    prompts = tmp_path / "q.jsonl"
    prompts.write_text("".join(json.dumps(p) + "\n" for p in [
        {"question_id": 1, "category": "lookup", "turns": ["hash map key value table bucket hash map key value "
                                                           "table bucket hash map key value table bucket hash map"]},
        {"question_id": 2, "category": "free", "turns": ["the a of to in and is it code data time"]}]))
    out, one = tmp_path / "v.json", tmp_path / "b.json"
    (tmp_path / "spec").mkdir()
    (tmp_path / "base").mkdir()
    with vllm_server(tmp_path / "spec", model_script=ADD_TEMPLATE) as url, \
            vllm_server(tmp_path / "base", model_script=ADD_TEMPLATE, spec=None) as base_url:
        before = metrics(url)
        b = bench("--url", url, "--prompts", prompts, "-n", "32", "--json", one, timeout=600)
        assert b.returncode == 0, b.stderr
        time.sleep(1.0)
        after = metrics(url)
        r = bench("--url", url, "--baseline-url", base_url, "--prompts", prompts, "-n", "24",
                  "--concurrency", "1,2,4", "--json", "-o", out, timeout=1200)
    d = {n: series(after, f"vllm:spec_decode_{n}_total") - series(before, f"vllm:spec_decode_{n}_total")
         for n in ("num_drafts", "num_draft_tokens", "num_accepted_tokens")}
    assert d["num_draft_tokens"] > 0
    data = json.loads(one.read_text())
    assert data["params"]["kinds"][url] == "vllm"
    ov = next(s for s in data["summaries"] if s["category"] == "overall")
    assert abs(ov["acceptance_rate"] - d["num_accepted_tokens"] / d["num_draft_tokens"]) <= 0.01
    assert abs(ov["mean_accepted_tokens"] - (1 + d["num_accepted_tokens"] / d["num_drafts"])) <= 0.01
    assert "No baseline: give --baseline-url" in b.stdout
    assert r.returncode == 0, r.stderr + r.stdout
    sw = json.loads(out.read_text())["concurrency_sweep"]
    assert [lv["concurrency"] for lv in sw["levels"]] == [1, 2, 4]
    for lv in sw["levels"]:
        assert lv["tokens_per_second"] > 0 and lv["speedup"] > 0
        assert lv["acceptance_source"] == "metrics" and lv["drafted"] > 0
    assert all(bl["drafted"] == 0 for bl in sw["baseline"])
    assert "measured: speculation" in r.stdout


@pytest.mark.skipif(VENV is None, reason=VLLM_SKIP)
@pytest.mark.timeout(1800)
@pytest.mark.slow
@pytest.mark.timing  # how long a level's ramp runs with fewer than 4 requests depends on the load: alone under xdist
def test_the_sweep_shows_vllm_switching_speculation_off(tmp_path):
    """vLLM's dynamic speculative decoding (num_speculative_tokens_per_batch_size: k = 3 for one running request,
    0 from two on) switches speculation off by itself at concurrency 4: the sweep sees the drafts per output token
    fall and the report names the concurrency."""
    from vllm_server import SPEC

    prompts = tmp_path / "q.jsonl"
    # 12 requests a level (max(prompts, 2 c)): the ramp at a level's start and end, where fewer than 4 run and
    # vLLM drafts again, is then a small share of the level even when the machine is busy
    text = ("hash map key value table bucket hash map key value table bucket hash map key value table bucket "
            "hash map")
    prompts.write_text("".join(json.dumps({"question_id": i + 1, "category": "lookup", "turns": [text]}) + "\n"
                               for i in range(12)))
    out = tmp_path / "off.json"
    (tmp_path / "dyn").mkdir()
    spec = dict(SPEC, num_speculative_tokens_per_batch_size=[[1, 1, 3], [2, 512, 0]])
    with vllm_server(tmp_path / "dyn", model_script=ADD_TEMPLATE, spec=spec) as url:
        r = bench("--url", url, "--prompts", prompts, "-n", "32", "--concurrency", "1,4", "--json", "-o", out,
                  timeout=1200)
    assert r.returncode == 0, r.stderr + r.stdout
    sw = json.loads(out.read_text())["concurrency_sweep"]
    one, four = sw["levels"]
    # (not zero: a level's first and last requests run with fewer beside them, and draft there)
    assert one["drafted"] > 0 and four["drafts_per_token"] < one["drafts_per_token"] / 3, sw["levels"]
    assert sw["switched_off_at"] == [4]
    assert "switched speculation off by itself at concurrency 4" in r.stdout
