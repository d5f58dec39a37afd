"""Cost of one attach interval on the client: parse a /metrics page and compute the windows.

Builds a vLLM-sized page with prometheus_client itself (the counters and histograms vLLM declares, for
``--engines`` data-parallel engines, plus the usual process/GC series), then times
``spectui.attach.metrics.parse`` and ``AttachStats.update`` + ``snapshot`` over many rounds. At a 1 s
interval the client's share is this time divided by 1000 ms.

    .venv/bin/python benchmarks/bench_attach_parse.py [--engines 8] [--rounds 200]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from prometheus_client import (  # noqa: E402  # noqa: E402
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    gc_collector,
    generate_latest,
    platform_collector,
    process_collector,
)

from spectui.analysis.attach_stats import AttachStats  # noqa: E402
from spectui.attach.metrics import parse  # noqa: E402
from spectui.contract.events import MetricsScraped  # noqa: E402


def page(engines: int, k: int, step: int) -> str:
    reg = CollectorRegistry()
    process_collector.ProcessCollector(registry=reg)
    platform_collector.PlatformCollector(registry=reg)
    gc_collector.GCCollector(registry=reg)
    lab = ["model_name", "engine"]
    drafts = Counter("vllm:spec_decode_num_drafts", "d", lab, registry=reg)
    dtok = Counter("vllm:spec_decode_num_draft_tokens", "t", lab, registry=reg)
    acc = Counter("vllm:spec_decode_num_accepted_tokens", "a", lab, registry=reg)
    pos = Counter("vllm:spec_decode_num_accepted_tokens_per_pos", "p", lab + ["position"], registry=reg)
    gen = Counter("vllm:generation_tokens", "g", lab, registry=reg)
    running = Gauge("vllm:num_requests_running", "r", lab, registry=reg)
    ttft = Histogram("vllm:time_to_first_token_seconds", "ttft", lab, registry=reg,
                     buckets=[0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
                              20, 40, 80, 160, 640, 2560])
    itl = Histogram("vllm:inter_token_latency_seconds", "itl", lab, registry=reg,
                    buckets=[0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20,
                             40, 80])
    for e in range(engines):
        lv = ("model", str(e))
        n = 100 * (step + 1) + e
        drafts.labels(*lv).inc(n)
        dtok.labels(*lv).inc(k * n)
        acc.labels(*lv).inc(2 * n)
        for p in range(k):
            pos.labels(*lv, str(p)).inc(n - p)
        gen.labels(*lv).inc(3 * n)
        running.labels(*lv).set(4)
        for i in range(50):
            ttft.labels(*lv).observe(0.01 * (i % 30))
            itl.labels(*lv).observe(0.002 * (i % 40))
    return generate_latest(reg).decode()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engines", type=int, default=8)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=200)
    a = ap.parse_args()
    pages = [page(a.engines, a.k, s) for s in range(2)]
    stats = AttachStats()
    t_parse = t_stats = 0.0
    for r in range(a.rounds):
        text = pages[r % 2] if r < 2 else pages[1]
        t0 = time.perf_counter()
        parsed = parse(text)
        t1 = time.perf_counter()
        stats.update(MetricsScraped(url="u", t=float(r), kind=parsed.kind, engines=parsed.engines))
        stats.snapshot()
        t2 = time.perf_counter()
        t_parse += t1 - t0
        t_stats += t2 - t1
    n_lines = pages[1].count("\n")
    print(f"page: {len(pages[1]) / 1024:.1f} KiB, {n_lines} lines, {a.engines} engines, k = {a.k}")
    print(f"parse:            {1000 * t_parse / a.rounds:.2f} ms per scrape")
    print(f"windows+snapshot: {1000 * t_stats / a.rounds:.2f} ms per scrape")


if __name__ == "__main__":
    main()
