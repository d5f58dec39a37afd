"""spectui.attach.metrics and .window on real-format /metrics text.

llama-server text is written exactly as llama.cpp's server-task.cpp ``to_metrics`` writes it (HELP /
TYPE / value lines, ``llamacpp:`` prefix, the per-position series only once a draft was verified).
vLLM text is produced by prometheus_client itself (what vLLM uses) from counters declared as
vllm/v1/spec_decode/metrics.py declares them (two engines through the ``engine`` label), and by the
v0 names; SGLang by its gauge. No mock stands in for an engine: the real llama-server is in
tests/attach/test_attach_server.py.
"""

from __future__ import annotations

import math

import pytest

pytest.importorskip("prometheus_client")

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client import Histogram as PHistogram

from spectui.analysis.attach_stats import (
    BASELINE,
    ERROR,
    IDLE,
    NO_SPEC,
    OK,
    RESET,
    AttachStats,
    histogram_quantile,
)
from spectui.attach import metrics
from spectui.contract.events import (
    KIND_LLAMA_SERVER,
    KIND_PROMETHEUS,
    KIND_SGLANG,
    KIND_VLLM,
    Bucket,
    Histogram,
    MetricsScraped,
)


def llama_text(drafts: int, draft_tokens: int, accepted: int, per_pos: list[int] | None, predicted: int = 0) -> str:
    """Byte for byte the layout of llama-server's to_metrics()."""
    counters = [
        ("prompt_tokens_total", "Number of prompt tokens processed, excluding cached tokens", 10),
        ("tokens_predicted_total", "Number of generation tokens processed", predicted),
        ("spec_decode_num_draft_tokens_total", "Speculative: Total draft tokens generated", draft_tokens),
        ("spec_decode_num_accepted_tokens_total", "Speculative: Total draft tokens accepted by the target model",
         accepted),
        ("spec_decode_num_drafts_total", "Speculative: Total speculative decoding verification steps", drafts),
    ]
    gauges = [("predicted_tokens_seconds", "Average generation throughput in tokens/s", 12.5)]
    out = []
    for typ, items in (("counter", counters), ("gauge", gauges)):
        for name, doc, value in items:
            out += [f"# HELP llamacpp:{name} {doc}", f"# TYPE llamacpp:{name} {typ}", f"llamacpp:{name} {value}"]
    if per_pos:
        out += ["# HELP llamacpp:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position",
                "# TYPE llamacpp:spec_decode_num_accepted_tokens_per_pos_total counter"]
        name = "llamacpp:spec_decode_num_accepted_tokens_per_pos_total"
        out += [f'{name}{{position="{i}"}} {c}' for i, c in enumerate(per_pos)]
    return "\n".join(out) + "\n"


def vllm_registry(k: int = 3):
    """Counters and histograms declared like vLLM v1 (name, labels, buckets), in a fresh registry."""
    reg = CollectorRegistry()
    labels = ["model_name", "engine"]
    c = {
        "drafts": Counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", labels, registry=reg),
        "draft_tokens": Counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", labels, registry=reg),
        "accepted": Counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", labels, registry=reg),
        "per_pos": Counter("vllm:spec_decode_num_accepted_tokens_per_pos", "Accepted tokens per draft position.",
                           labels + ["position"], registry=reg),
        "gen": Counter("vllm:generation_tokens", "Number of generation tokens processed.", labels, registry=reg),
        "ttft": PHistogram("vllm:time_to_first_token_seconds", "TTFT", labels, registry=reg,
                           buckets=[0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 1.0]),
        "itl": PHistogram("vllm:inter_token_latency_seconds", "ITL", labels, registry=reg,
                          buckets=[0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4]),
    }
    return reg, c


def observe_vllm(c, engine: str, drafts: list[int], k: int = 3, ttft=(), itl=()):
    """Each entry of ``drafts`` is one verify step that accepted that many of k drafted tokens."""
    lv = ("tiny", engine)
    for n_acc in drafts:
        c["drafts"].labels(*lv).inc(1)
        c["draft_tokens"].labels(*lv).inc(k)
        c["accepted"].labels(*lv).inc(n_acc)
        for pos in range(k):
            c["per_pos"].labels(*lv, str(pos)).inc(1 if pos < n_acc else 0)
        c["gen"].labels(*lv).inc(n_acc + 1)
    for x in ttft:
        c["ttft"].labels(*lv).observe(x)
    for x in itl:
        c["itl"].labels(*lv).observe(x)


def scrape(url: str, text: str, t: float, process_start: float = 0.0) -> MetricsScraped:
    p = metrics.parse(text)
    return MetricsScraped(url=url, t=t, kind=p.kind, engines=p.engines, process_start=process_start or p.process_start)


# ------------------------------------------------------------------------------------------ parser


def test_llama_server_text():
    p = metrics.parse(llama_text(drafts=10, draft_tokens=30, accepted=18, per_pos=[8, 6, 4], predicted=40))
    assert p.kind == KIND_LLAMA_SERVER
    (e,) = p.engines
    assert (e.engine, e.speculation, e.num_drafts, e.num_draft_tokens, e.num_accepted_tokens) == ("", True, 10, 30, 18)
    assert [(x.position, x.accepted) for x in e.accepted_per_pos] == [(0, 8), (1, 6), (2, 4)]
    assert e.generated_tokens == 40 and e.ttft is None and e.itl is None


def test_llama_server_before_any_draft_has_no_positions():
    (e,) = metrics.parse(llama_text(0, 0, 0, None)).engines
    assert e.speculation and e.num_drafts == 0 and e.accepted_per_pos == ()


def test_vllm_two_engines_by_label():
    reg, c = vllm_registry()
    observe_vllm(c, "0", [3, 1, 0, 2], ttft=[0.03, 0.05], itl=[0.02] * 5)
    observe_vllm(c, "1", [3, 3], ttft=[0.2], itl=[0.06] * 3)
    p = metrics.parse(generate_latest(reg).decode())
    assert p.kind == KIND_VLLM
    e0, e1 = p.engines
    assert (e0.engine, e0.model, e0.num_drafts, e0.num_draft_tokens, e0.num_accepted_tokens) == ("0", "tiny", 4, 12, 6)
    assert [x.accepted for x in e0.accepted_per_pos] == [3, 2, 1]
    assert (e1.engine, e1.num_drafts, e1.num_accepted_tokens) == ("1", 2, 6)
    assert e0.ttft.count == 2 and e0.itl.count == 5 and e1.ttft.count == 1
    assert e0.generated_tokens == 10 and not e0.drafts_derived


def test_vllm_without_speculation():
    reg = CollectorRegistry()
    Counter("vllm:generation_tokens", "gen", ["model_name", "engine"], registry=reg).labels("m", "0").inc(7)
    Gauge("vllm:num_requests_running", "running", ["model_name", "engine"], registry=reg).labels("m", "0").set(1)
    (e,) = metrics.parse(generate_latest(reg).decode()).engines
    assert not e.speculation and e.generated_tokens == 7


def test_vllm_v0_names_derive_drafts():
    reg = CollectorRegistry()
    lab = ["model_name"]
    Counter("vllm:spec_decode_num_accepted_tokens_total", "acc", lab, registry=reg).labels("m").inc(12)
    Counter("vllm:spec_decode_num_draft_tokens_total", "draft", lab, registry=reg).labels("m").inc(20)
    Counter("vllm:spec_decode_num_emitted_tokens_total", "emitted", lab, registry=reg).labels("m").inc(17)
    Gauge("vllm:spec_decode_draft_acceptance_rate", "rate", lab, registry=reg).labels("m").set(0.6)
    (e,) = metrics.parse(generate_latest(reg).decode()).engines
    assert e.speculation and e.drafts_derived
    assert (e.num_drafts, e.num_draft_tokens, e.num_accepted_tokens) == (5, 20, 12)


def test_sglang_gauge():
    text = (
        "# HELP sglang:spec_accept_length The average acceptance length of speculative decoding.\n"
        "# TYPE sglang:spec_accept_length gauge\n"
        'sglang:spec_accept_length{dp_rank="0",engine_type="unified",model_name="glm",tp_rank="0"} 2.55\n'
        "# TYPE sglang:generation_tokens_total counter\n"
        'sglang:generation_tokens_total{engine_type="unified",model_name="glm"} 100.0\n'
    )
    p = metrics.parse(text)
    assert p.kind == KIND_SGLANG
    e = next(x for x in p.engines if x.engine == "0")
    assert e.speculation and e.accept_length == pytest.approx(2.55)


@pytest.mark.parametrize(
    "text, message",
    [
        ("<!DOCTYPE html>\n<html><body><h1>llama.cpp</h1></body></html>", "HTML"),
        ("<html>\n<head></head></html>", "HTML"),
        ("", "empty"),
        ("   \n", "empty"),
        ('{"error": {"code": 501, "message": "This server does not support metrics endpoint."}}', "JSON"),
        ("hello world", "not Prometheus"),
        ("# just a comment\n", "no metrics"),
    ],
)
def test_not_prometheus(text, message):
    with pytest.raises(metrics.NotPrometheus, match=message):
        metrics.parse(text)


def test_nan_and_inf_values_are_absent():
    text = ("# TYPE sglang:spec_accept_length gauge\nsglang:spec_accept_length NaN\n"
            "# TYPE sglang:generation_tokens_total counter\nsglang:generation_tokens_total +Inf\n"
            "# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs 1\n")
    (e,) = metrics.parse(text).engines
    assert e.accept_length == -1 and e.generated_tokens == -1 and not e.speculation


def test_other_exporter_is_no_speculation():
    p = metrics.parse("# TYPE up gauge\nup 1\n")
    assert p.kind == KIND_PROMETHEUS and not p.engines[0].speculation


# ------------------------------------------------------------------------------------------ windows


def test_windows_llama_server_deltas_and_reset():
    stats = AttachStats()
    url = "http://127.0.0.1:1"
    stats.update(scrape(url, llama_text(10, 30, 18, [8, 6, 4], 40), 0.0, 1000.0))
    assert stats.snapshot().interval[0].status == BASELINE
    stats.update(scrape(url, llama_text(10, 30, 18, [8, 6, 4], 40), 1.0, 1000.0))
    assert stats.snapshot().interval[0].status == IDLE
    stats.update(scrape(url, llama_text(14, 42, 27, [12, 9, 6], 53), 2.0, 1000.0))
    w = stats.snapshot().interval[0]
    assert w.status == OK and w.dt == pytest.approx(1.0)
    assert (w.drafts, w.draft_tokens, w.accepted) == (4, 12, 9)
    assert w.acceptance_by_pos == pytest.approx((1.0, 0.75, 0.5))
    assert w.acceptance_rate == pytest.approx(0.75)
    assert w.mean_acceptance_length == pytest.approx(1 + 9 / 4)
    assert (w.drafted_tps, w.accepted_tps, w.generated_tps) == pytest.approx((12.0, 9.0, 13.0))
    s = stats.snapshot().session[0]
    assert (s.drafts, s.accepted, s.dt) == (4, 9, 2.0)
    # the server restarts: counters go back => reset, new baseline, no negative numbers
    stats.update(scrape(url, llama_text(1, 3, 2, [1, 1], 3), 3.0, 2000.0))
    assert stats.snapshot().interval[0].status == RESET
    assert stats.snapshot().session[0].status == RESET
    stats.update(scrape(url, llama_text(3, 9, 5, [3, 2, 0], 8), 4.0, 2000.0))
    w = stats.snapshot().interval[0]
    assert w.status == OK and (w.drafts, w.accepted) == (2, 3)
    assert w.acceptance_by_pos == pytest.approx((1.0, 0.5, 0.0))


def test_reset_by_process_start_only():
    stats = AttachStats()
    url = "u"
    stats.update(scrape(url, llama_text(5, 10, 5, [5], 9), 0.0, 1000.0))
    stats.update(scrape(url, llama_text(6, 12, 6, [6], 11), 1.0, 1001.0))  # restarted, counters grew past
    assert stats.snapshot().interval[0].status == RESET


def test_windows_two_vllm_engines_and_sum():
    reg, c = vllm_registry()
    observe_vllm(c, "0", [1])
    observe_vllm(c, "1", [1])
    stats = AttachStats()
    stats.update(scrape("v", generate_latest(reg).decode(), 0.0))
    observe_vllm(c, "0", [3, 2, 0, 1], ttft=[0.03, 0.03, 0.07, 0.3], itl=[0.02] * 9 + [0.35])
    observe_vllm(c, "1", [3, 3])
    stats.update(scrape("v", generate_latest(reg).decode(), 2.0))
    snap = stats.snapshot()
    w0, w1 = snap.interval
    assert (w0.engine, w0.drafts, w0.accepted, w0.draft_tokens) == ("0", 4, 6, 12)
    assert w0.acceptance_by_pos == pytest.approx((0.75, 0.5, 0.25))
    assert w0.mean_acceptance_length == pytest.approx(2.5)
    assert (w1.drafts, w1.accepted) == (2, 6) and w1.acceptance_by_pos == pytest.approx((1, 1, 1))
    total = snap.interval_sum
    assert (total.drafts, total.accepted, total.draft_tokens) == (6, 12, 18)
    assert total.acceptance_by_pos == pytest.approx((5 / 6, 4 / 6, 3 / 6))
    assert total.mean_acceptance_length == pytest.approx(3.0)
    assert total.accepted_tps == pytest.approx(6.0)
    # TTFT observations in the window: 0.03, 0.03, 0.07, 0.3 (buckets ... 0.04: 2, 0.06: 2, 0.08: 3, ... 0.5: 4)
    assert w0.ttft_n == 4
    assert w0.ttft_p50 == pytest.approx(0.02 + (0.04 - 0.02) * (2 - 0) / 2)  # rank 2 reached in (0.02, 0.04]
    assert w0.ttft_p95 == pytest.approx(0.25 + (0.5 - 0.25) * (3.8 - 3) / 1)
    assert w0.itl_n == 10 and w0.itl_p50 == pytest.approx(0.01 + 0.015 * 5 / 9)
    assert w1.ttft_n == 0 and w1.ttft_p50 is None
    # the sum's quantiles come from the summed bucket deltas (both engines share vLLM's bounds)
    observe_vllm(c, "1", [], ttft=[0.09, 0.09])
    stats.update(scrape("v", generate_latest(reg).decode(), 3.0))
    total = stats.snapshot().interval_sum
    assert total.ttft_n == 2 and total.ttft_p50 == pytest.approx(0.08 + 0.02 * 1 / 2)
    stats.update(scrape("v", generate_latest(reg).decode(), 4.0))
    assert stats.snapshot().interval_sum.ttft_n == 0
    session = stats.snapshot().session_sum  # since the baseline: 0.03, 0.03, 0.07, 0.3 + 0.09, 0.09
    assert session.ttft_n == 6 and session.ttft_p50 == pytest.approx(0.06 + 0.02 * (3 - 2) / 1)


def test_no_speculation_and_error_windows():
    reg = CollectorRegistry()
    Counter("vllm:generation_tokens", "gen", ["model_name", "engine"], registry=reg).labels("m", "0").inc(1)
    stats = AttachStats()
    stats.update(scrape("a", generate_latest(reg).decode(), 0.0))
    stats.update(MetricsScraped(url="b", t=0.0, error="connection refused (nothing listens there)"))
    stats.update(scrape("a", generate_latest(reg).decode(), 1.0))
    a, b = stats.snapshot().interval
    assert a.status == NO_SPEC and b.status == ERROR and "refused" in b.error
    # llama-server with counters at zero and /slots saying no slot speculates: no speculation, not idle
    stats.update(MetricsScraped(url="c", t=1.0, kind=KIND_LLAMA_SERVER, speculation="none",
                                engines=metrics.parse(llama_text(0, 0, 0, None)).engines))
    assert stats.snapshot().interval[-1].status == NO_SPEC


def test_histogram_quantile_cases():
    h = Histogram((Bucket(0.1, 0), Bucket(0.2, 4), Bucket(0.4, 8)), count=10, sum=3.0)
    assert histogram_quantile(0.5, h) == pytest.approx(0.2 + 0.2 * (5 - 4) / (8 - 4))
    assert histogram_quantile(0.2, h) == pytest.approx(0.1 + 0.1 * 2 / 4)
    assert histogram_quantile(0.95, h) == pytest.approx(0.4)  # rank 9.5 in +Inf: largest finite bound
    # rank 0.1 of 2 observations in (0, 1]
    assert histogram_quantile(0.05, Histogram((Bucket(1.0, 2),), 2, 1.0)) == pytest.approx(0.05)
    assert histogram_quantile(0.5, Histogram((), 0, 0)) is None
    assert histogram_quantile(0.5, None) is None
    assert not math.isnan(histogram_quantile(0.99, h))


def test_error_then_answer_replaces_the_error_line():
    reg, c = vllm_registry()
    observe_vllm(c, "0", [1])
    stats = AttachStats()
    stats.update(MetricsScraped(url="v", t=0.0, error="connection refused (nothing listens there)"))
    assert [w.status for w in stats.snapshot().session] == [ERROR]
    stats.update(scrape("v", generate_latest(reg).decode(), 1.0))
    assert [(w.engine, w.status) for w in stats.snapshot().session] == [("0", BASELINE)]
    stats.update(MetricsScraped(url="v", t=2.0, error="timed out after 1 s"))
    snap = stats.snapshot()
    assert [(w.engine, w.status) for w in snap.interval] == [("0", ERROR)]
    assert [(w.engine, w.status) for w in snap.session] == [("0", BASELINE)]  # the session keeps its baseline
