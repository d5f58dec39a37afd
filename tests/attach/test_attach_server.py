"""spectui attach against a real llama-server on 127.0.0.1 (built by scripts/build-llama-server.sh).

The server runs the tiny GGUF pair (tests/tinymodels.py: target + noisy draft, so some drafts are
rejected) with ``-md DRAFT --spec-type draft-simple --metrics``; with the Qwen pair too when present
(``-m qwen``). Every number spectui computes is checked against the server's own /metrics (read here
with a plain regular expression, not spectui's parser) and the request's ``timings``.

Skipped with the reason when the llama-server binary is not built.
"""

from __future__ import annotations

import io
import json
import re
import threading
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("prometheus_client")

from click.testing import CliRunner
from qwen_pair import QWEN_DRAFT, QWEN_TARGET, needs_qwen
from servers import SKIP_REASON, LlamaServer, llama_server_binary

from spectui.analysis.attach_stats import ERROR, NO_SPEC, OK, RESET, AttachStats
from spectui.attach.request import stream_completion
from spectui.attach.scraper import Scraper
from spectui.commands.attach import attach_cmd
from spectui.commands.replay import replay_cmd
from spectui.contract import event_json
from spectui.contract import events as aev
from spectui.text.attach import HeadlessFace

BINARY = llama_server_binary()
pytestmark = [pytest.mark.skipif(BINARY is None, reason=SKIP_REASON), pytest.mark.timeout(300), pytest.mark.slow]

PROMPT = "the hash map key value table bucket chain probe slot list node array index load factor"
THREADS = ["-t", "2", "-tb", "2", "-td", "2"]


def spec_args(target: Path, draft: Path, ctx: int = 2048, n_max: int = 3) -> list[str]:
    return ["-m", str(target), "-md", str(draft), "--spec-type", "draft-simple", "--spec-draft-n-max", str(n_max),
            "--metrics", "-c", str(ctx), "-np", "1", "--no-warmup", *THREADS]


def raw_metrics(url: str) -> dict[str, float]:
    """The server's own numbers, read without spectui: name{labels} -> value."""
    with urllib.request.urlopen(url + "/metrics", timeout=5) as r:
        text = r.read().decode()
    out = {}
    for m in re.finditer(r'^(llamacpp:[a-z_]+(?:\{position="\d+"\})?) (\S+)$', text, re.M):
        out[m.group(1)] = float(m.group(2))
    return out


def pos_counts(raw: dict[str, float]) -> dict[int, float]:
    return {int(re.search(r'"(\d+)"', k).group(1)): v for k, v in raw.items() if "per_pos" in k}


def settled_metrics(url: str, before: dict[str, float], key: str, at_least: float) -> dict[str, float]:
    """/metrics once the finished request is counted (the server adds it when the slot is released)."""
    for _ in range(50):
        raw = raw_metrics(url)
        if raw.get(key, 0) - before.get(key, 0) >= at_least:
            return raw
        time.sleep(0.1)
    raise AssertionError(f"{key} did not grow by {at_least} within 5 s")


@pytest.fixture(scope="module")
def spec_server(tiny_target, tiny_draft_noisy, tmp_path_factory):
    log = tmp_path_factory.mktemp("llama-server") / "spec.log"
    server = LlamaServer(BINARY, spec_args(tiny_target, tiny_draft_noisy), log)
    try:
        yield server
    finally:
        server.stop()


def run_request(url: str, n: int, **kw) -> list:
    # timeout: the whole request's budget (a Deadline since issue 26, no longer per read): a loaded 2-core
    # machine takes about a minute for this request
    return list(stream_completion(url, aev.KIND_LLAMA_SERVER, PROMPT, n, timeout=600, **kw))


def check_against_server(url: str, n: int, **kw):
    """One request between two scrapes; returns (stats snapshot, raw before, raw after, events)."""
    stats = AttachStats()
    scraper = Scraper([url], timeout=5)
    try:
        raw0 = raw_metrics(url)
        first = scraper.scrape_all()[0]
        assert first.error == "" and first.kind == aev.KIND_LLAMA_SERVER and first.speculation == "on"
        stats.update(first)
        evs = run_request(url, n, clock=time.monotonic, t0=scraper.t0, **kw)
        for ev in evs:
            stats.update(ev)
        end = evs[-1]
        assert isinstance(end, aev.RequestEnded) and end.reason in (aev.REQ_LENGTH, aev.REQ_STOP), end
        raw1 = settled_metrics(url, raw0, "llamacpp:spec_decode_num_draft_tokens_total", max(end.draft_n, 1))
        second = scraper.scrape_all()[0]
        stats.update(second)
    finally:
        scraper.close()
    return stats.snapshot(), raw0, raw1, evs


def test_request_and_window_match_server(spec_server):
    snap, raw0, raw1, evs = check_against_server(spec_server.url, 48)

    def d(name: str) -> float:
        return raw1[f"llamacpp:{name}"] - raw0.get(f"llamacpp:{name}", 0.0)

    drafts, draft_tokens, accepted = d("spec_decode_num_drafts_total"), d("spec_decode_num_draft_tokens_total"), d(
        "spec_decode_num_accepted_tokens_total")
    p0, p1 = pos_counts(raw0), pos_counts(raw1)
    per_pos = [p1[i] - p0.get(i, 0.0) for i in sorted(p1)]
    assert drafts > 0 and 0 < accepted < draft_tokens, (drafts, draft_tokens, accepted)  # noisy draft: partial
    assert sum(per_pos) == accepted and len(per_pos) == 3  # --spec-draft-n-max 3

    # the request's own timings (final chunk) against the server's counters
    end = evs[-1]
    assert end.draft_n == draft_tokens and end.draft_n_accepted == accepted
    assert end.n_tokens == 48 == end.predicted_n and end.reason == aev.REQ_LENGTH
    # per-chunk timings (timings_per_token): cumulative, never decreasing, last = final
    chunks = [e for e in evs if isinstance(e, aev.RequestChunk)]
    seq = [c.draft_n for c in chunks]  # -1 until the first draft (the server omits draft_n while it is 0)
    assert seq == sorted(seq) and seq[-1] >= 0 and seq[-1] <= end.draft_n
    assert sum(c.n_tokens for c in chunks) == 48

    # spectui's window (session: the request alone) against the same deltas
    (w,) = snap.session
    assert w.status == OK and w.kind == aev.KIND_LLAMA_SERVER
    assert (w.drafts, w.draft_tokens, w.accepted) == (drafts, draft_tokens, accepted)
    assert w.accepted_per_pos == pytest.approx(tuple(per_pos))
    assert w.acceptance_by_pos == pytest.approx(tuple(c / drafts for c in per_pos))
    assert w.acceptance_rate == pytest.approx(accepted / draft_tokens)
    assert w.mean_acceptance_length == pytest.approx(1 + accepted / drafts)
    assert w.drafted_tps == pytest.approx(draft_tokens / w.dt) and w.accepted_tps == pytest.approx(accepted / w.dt)
    assert w.generated == d("tokens_predicted_total") == 48
    assert w.ttft_p50 is None and w.itl_n == 0  # llama-server publishes no latency histograms

    # the request view: server figures as sent, client timing measured
    r = snap.request
    assert r.draft_n == draft_tokens and r.draft_n_accepted == accepted
    assert r.acceptance_rate == pytest.approx(accepted / draft_tokens)
    assert r.n_tokens == 48 and r.text == "".join(c.text for c in chunks)
    assert 0 < r.ttft_s < 30 and r.itl_p50_s is not None and r.itl_p50_s <= r.itl_p95_s


def test_per_request_draft_max(spec_server):
    """speculative.n_max per request: the vendored server's schema has it under `#if 0`
    (tools/server/server-schema.cpp), so the server keeps its own --spec-draft-n-max. This test pins
    what the server does: if a later llama.cpp honours it, this fails and the k keys can use it."""
    _snap, raw0, raw1, evs = check_against_server(spec_server.url, 32, draft_max=1)
    drafts = raw1["llamacpp:spec_decode_num_drafts_total"] - raw0["llamacpp:spec_decode_num_drafts_total"]
    draft_tokens = raw1["llamacpp:spec_decode_num_draft_tokens_total"] - raw0[
        "llamacpp:spec_decode_num_draft_tokens_total"]
    assert isinstance(evs[0], aev.RequestStarted) and evs[0].draft_max == 1
    assert draft_tokens > drafts  # more than one token per draft: n_max=1 was not applied


def test_cli_json_request_mode(spec_server):
    raw0 = raw_metrics(spec_server.url)
    r = CliRunner().invoke(attach_cmd, [spec_server.url, "-p", PROMPT, "-n", "24", "--json", "--headless",
                                        "--interval", "0.2"])
    assert r.exit_code == 0, r.output
    objs = [json.loads(ln) for ln in r.output.splitlines()]
    req = next(o for o in objs if o["what"] == "request")["request"]
    session = next(o for o in objs if o["what"] == "session")["engines"][0]
    raw1 = raw_metrics(spec_server.url)
    dt = raw1["llamacpp:spec_decode_num_draft_tokens_total"] - raw0["llamacpp:spec_decode_num_draft_tokens_total"]
    da = raw1["llamacpp:spec_decode_num_accepted_tokens_total"] - raw0["llamacpp:spec_decode_num_accepted_tokens_total"]
    dd = raw1["llamacpp:spec_decode_num_drafts_total"] - raw0["llamacpp:spec_decode_num_drafts_total"]
    assert req["n_tokens"] == 24 and req["draft_n"] == dt and req["draft_n_accepted"] == da and req["error"] == ""
    assert session["status"] == OK and (session["drafts"], session["draft_tokens"], session["accepted"]) == (dd, dt, da)
    assert session["mean_acceptance_length"] == pytest.approx(1 + da / dd)


def test_cli_headless_interval_lines(spec_server):
    r = CliRunner().invoke(attach_cmd, [spec_server.url, "--interval", "0.2", "--count", "2", "--headless"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert "baseline" in lines[0] and "[llama-server]" in lines[0]
    assert sum("idle" in ln for ln in lines if ln.startswith("t=")) == 2  # no request meanwhile
    assert lines[-2].startswith("since start")


def test_draft_loaded_without_spec_type_is_no_speculation(tiny_target, tiny_draft_noisy, tmp_path):
    """-md alone: the draft loads, /slots says the slot does not speculate, the counters stay at 0."""
    args = ["-m", str(tiny_target), "-md", str(tiny_draft_noisy), "--metrics", "-c", "1024", "-np", "1",
            "--no-warmup", *THREADS]
    server = LlamaServer(BINARY, args, tmp_path / "nospec.log")
    try:
        stats = AttachStats()
        s = Scraper([server.url], timeout=5)
        try:
            stats.update(s.scrape_all()[0])
            evs = run_request(server.url, 16)
            for ev in evs:
                stats.update(ev)
            settled_metrics(server.url, {}, "llamacpp:tokens_predicted_total", 16)
            ev = s.scrape_all()[0]
            stats.update(ev)
        finally:
            s.close()
        assert ev.speculation == "none"
        (w,) = stats.snapshot().interval
        assert w.status == NO_SPEC and w.generated == 16
        assert evs[-1].draft_n == -1  # no draft_n in timings without drafts
    finally:
        server.stop()


def test_killed_mid_stream_then_restart_is_reset(tiny_target, tiny_draft_noisy, tmp_path):
    args = spec_args(tiny_target, tiny_draft_noisy)
    server = LlamaServer(BINARY, args, tmp_path / "a.log")
    port = server.port
    stats = AttachStats()
    scraper = Scraper([server.url], timeout=2)
    try:
        stats.update(scraper.scrape_all()[0])
        for ev in run_request(server.url, 24):
            stats.update(ev)
        settled_metrics(server.url, {}, "llamacpp:tokens_predicted_total", 24)
        stats.update(scraper.scrape_all()[0])
        assert stats.snapshot().interval[0].status == OK
        # killed while streaming: the request ends with one line, no exception
        evs = []
        # timeout: the whole request's budget (not per read): the kill, not the deadline, must end it
        for ev in stream_completion(server.url, aev.KIND_LLAMA_SERVER, PROMPT, 1900, timeout=600):
            evs.append(ev)
            if isinstance(ev, aev.RequestChunk) and len([e for e in evs if isinstance(e, aev.RequestChunk)]) == 1:
                server.kill()
        end = evs[-1]
        assert isinstance(end, aev.RequestEnded) and end.reason == aev.REQ_ERROR, end
        assert end.error and "\n" not in end.error
        assert sum(isinstance(e, aev.RequestChunk) for e in evs) < 1900
        # the dead server: one error line
        ev = scraper.scrape_all()[0]
        stats.update(ev)
        assert stats.snapshot().interval[0].status == ERROR and "refused" in ev.error
        # restarted on the same port: counters start again => reset, not negative numbers
        server = LlamaServer(BINARY, args, tmp_path / "b.log", port=port)
        stats.update(scraper.scrape_all()[0])
        w = stats.snapshot().interval[0]
        assert w.status == RESET, w
        for ev in run_request(server.url, 16):
            stats.update(ev)
        settled_metrics(server.url, {}, "llamacpp:tokens_predicted_total", 16)
        stats.update(scraper.scrape_all()[0])
        w = stats.snapshot().interval[0]
        raw = raw_metrics(server.url)
        assert w.status == OK and w.drafts == raw["llamacpp:spec_decode_num_drafts_total"]
    finally:
        scraper.close()
        server.stop()


@pytest.mark.qwen
@needs_qwen
def test_qwen_pair_matches_server(tmp_path):
    server = LlamaServer(BINARY, spec_args(QWEN_TARGET, QWEN_DRAFT, ctx=1024), tmp_path / "qwen.log", ready_s=300)
    try:
        snap, raw0, raw1, evs = check_against_server(server.url, 48)
        (w,) = snap.session
        d = {k: raw1[k] - raw0.get(k, 0.0) for k in raw1}
        assert w.drafts == d["llamacpp:spec_decode_num_drafts_total"] > 0
        assert w.accepted == d["llamacpp:spec_decode_num_accepted_tokens_total"] == evs[-1].draft_n_accepted
        assert w.draft_tokens == d["llamacpp:spec_decode_num_draft_tokens_total"] == evs[-1].draft_n
        assert w.mean_acceptance_length == pytest.approx(1 + w.accepted / w.drafts)
    finally:
        server.stop()


def test_two_servers_summed(spec_server, tiny_target, tiny_draft_same, tmp_path):
    """Two URLs: one window each and their sum, every count equal to the servers' own deltas."""
    other = LlamaServer(BINARY, spec_args(tiny_target, tiny_draft_same, n_max=2), tmp_path / "other.log")
    urls = [spec_server.url, other.url]
    stats = AttachStats()
    s = Scraper(urls, timeout=5)
    try:
        raw0 = {u: raw_metrics(u) for u in urls}
        for ev in s.scrape_all():
            stats.update(ev)
        for u in urls:
            end = run_request(u, 24)[-1]
            settled_metrics(u, raw0[u], "llamacpp:spec_decode_num_draft_tokens_total", max(end.draft_n, 1))
        for ev in s.scrape_all():
            stats.update(ev)
        raw1 = {u: raw_metrics(u) for u in urls}
    finally:
        s.close()
        other.stop()
    snap = stats.snapshot()
    names = ("spec_decode_num_drafts_total", "spec_decode_num_draft_tokens_total",
             "spec_decode_num_accepted_tokens_total")
    deltas = {u: [raw1[u][f"llamacpp:{n}"] - raw0[u][f"llamacpp:{n}"] for n in names] for u in urls}
    for w in snap.interval:
        assert w.status == OK and [w.drafts, w.draft_tokens, w.accepted] == deltas[w.url]
    same = next(w for w in snap.interval if w.url == other.url)
    # identical weights: every drafted token accepted; position 1 can still be below 1 because the last
    # draft of a request is cut to the tokens left (per-position rates divide by all drafts, as vLLM's)
    assert same.accepted == same.draft_tokens and same.acceptance_rate == 1.0 and same.acceptance_by_pos[0] == 1.0
    total = snap.interval_sum
    assert [total.drafts, total.draft_tokens, total.accepted] == [sum(x) for x in zip(*deltas.values())]
    assert total.mean_acceptance_length == pytest.approx(1 + total.accepted / total.drafts)
    # positions: the n_max=3 server has 3, the n_max=2 one 2; the sum has 3, position 2 from the first only
    assert len(total.accepted_per_pos) == 3


def test_record_request_mode_and_replay_prints_the_same(spec_server, tmp_path):
    out = tmp_path / "attach.jsonl"
    r = CliRunner().invoke(attach_cmd, [spec_server.url, "-p", PROMPT, "-n", "16", "--headless",
                                        "--record", str(out)])
    assert r.exit_code == 0, r.output
    evs = [event_json.from_dict(json.loads(ln)) for ln in out.read_text().splitlines()[1:]]
    kinds = [type(e).__name__ for e in evs]
    assert kinds[0] == "AttachStarted" and kinds[-1] == "AttachEnded" and "RequestEnded" in kinds
    assert sum(k == "RequestChunk" for k in kinds) >= 1
    buf = io.StringIO()
    face = HeadlessFace(buf)
    for ev in evs:
        face(ev)
    assert buf.getvalue() == r.output.split("running --headless\n", 1)[-1]
    # `spectui replay FILE --headless` prints what the live attach printed (same face, same numbers)
    live = r.output.split("running --headless\n", 1)[-1]
    rr = CliRunner().invoke(replay_cmd, [str(out), "--headless"])
    assert rr.exit_code == 0, rr.output
    assert rr.output == live


def test_record_interval_mode_json_and_replay_prints_the_same(spec_server, tmp_path):
    """Interval mode, --json, while requests end on the server: the replay of the recording prints the
    same JSON objects, line for line."""
    out = tmp_path / "watch.jsonl.gz"
    stop = threading.Event()

    def client():
        while not stop.is_set():
            run_request(spec_server.url, 12)

    th = threading.Thread(target=client, daemon=True)
    th.start()
    try:
        r = CliRunner().invoke(attach_cmd, [spec_server.url, "--interval", "0.3", "--count", "5", "--headless",
                                            "--json", "--record", str(out)])
    finally:
        stop.set()
        th.join(timeout=60)
    assert r.exit_code == 0, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 5 + 1 + 1 and json.loads(lines[-1])["what"] == "session"
    assert json.loads(lines[-1])["engines"][0]["status"] == OK
    rr = CliRunner().invoke(replay_cmd, [str(out), "--headless", "--json"])
    assert rr.exit_code == 0, rr.output
    assert rr.output == r.output
