"""A figure with nothing to measure is reported as such, never as a measurement of 0: a run that never started
(an empty prompt, a prompt that does not fit) has no time to first token (``ttft_ms: null``, not 0.0, which
reads as an instant first token); a run of only its first token has no decode speed or inter-token latency; a
run that drafted nothing has no acceptance. JSON says null, the text summary a dash with the reason, and every
consumer of TTFT (replay --json, the sweep's and the bench's aggregates and tables, the race's table, the
TUI's metrics) takes the None. Real llama.cpp on the tiny model for the runs; the aggregates from their own
inputs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from in_process import spectui_in_process

from spectui.analysis.stats import RunStats, StatsSnapshot
from spectui.bench.aggregate import BenchRow, summarize
from spectui.bench.datasets import Prompt
from spectui.bench.export import row_records, to_markdown
from spectui.bench.plan import Setting
from spectui.bench.server import request_stats
from spectui.contract.events import RequestEnded, RunEnded, RunStarted, Settings
from spectui.sweep.aggregate import SweepRun, aggregate
from spectui.sweep.export import to_csv as sweep_csv
from spectui.text.bench import table_rows as bench_table_rows
from spectui.text.run import measured, summary_text
from spectui.text.sweep import table_rows as sweep_table_rows
from spectui.views.numbers import ms_or_dash

REPO = Path(__file__).resolve().parents[2]
UNMEASURED = ("ttft_ms", "tokens_per_second", "itl_ms_p50", "itl_ms_p95", "tokens_per_pass", "acceptance_rate",
              "mean_acceptance_length", "draft_ms_per_token", "draft_cost_ratio")


def spectui(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spectui", *[str(a) for a in args]], capture_output=True,
                          text=True, cwd=REPO, timeout=120, env={**os.environ, "NO_COLOR": "1"})


@pytest.fixture(params=["in_process", pytest.param("process", marks=pytest.mark.slow)])
def cli(request):
    """How the commands run: in this process (the fast lane) or each as its own process (the full suite)."""
    return in_process if request.param == "in_process" else spectui


def in_process(*args) -> subprocess.CompletedProcess:
    return spectui_in_process(*args, env={"NO_COLOR": "1"})


def run_json(cli, *args) -> tuple[subprocess.CompletedProcess, dict]:
    r = cli(*args)
    return r, json.loads(r.stdout)


# ------------------------------------------------------------ live runs and their replays
@pytest.mark.parametrize("why,args", [
    ("empty", ["-p", ""]),
    ("does not fit", ["-c", "8", "-p", "the hash map handles collisions with a chain of nodes in each bucket"]),
], ids=["empty-prompt", "prompt-over-context"])
def test_a_run_that_never_started_has_no_ttft(cli, tiny_target, tmp_path, why, args):
    rec = tmp_path / "run.jsonl"
    r, d = run_json(cli, "--target", tiny_target, "--drafter", "ngram", "--headless", "--json", "-t", 1, *args,
                    "--record", rec)
    assert r.returncode == 1, r.stderr
    assert d["error"] and d["n_passes"] == 0 and d["n_predict"] == 0
    for key in UNMEASURED:
        assert d[key] is None, (key, d[key])
    # replay --json reads the trace the same way; the text summary names no time at all
    r, again = run_json(cli, "replay", rec, "--headless", "--json")
    assert r.returncode == 0, r.stderr
    assert {k: again[k] for k in UNMEASURED} == dict.fromkeys(UNMEASURED)
    text = cli("replay", rec, "--headless").stdout
    assert "nothing was decoded: no tokens/s, TTFT or ITL to report" in text
    assert "TTFT                   0.0" not in text and " ms" not in text


def test_the_first_token_only_has_ttft_but_no_decode_figures(cli, tiny_target):
    r, d = run_json(cli, "--target", tiny_target, "--drafter", "ngram", "--headless", "--json", "-t", 1, "--no-probe",
                    "-p", "the hash map", "-n", 1)
    assert r.returncode == 0, r.stderr
    assert d["n_predict"] == 1 and d["n_passes"] == 0
    assert d["ttft_ms"] == pytest.approx(d["passes"][0]["timing"]["wall_ms"]) and d["ttft_ms"] > 0
    for key in ("tokens_per_second", "itl_ms_p50", "itl_ms_p95", "tokens_per_pass"):
        assert d[key] is None, key
    text = cli("--target", tiny_target, "--drafter", "ngram", "--headless", "-t", 1, "--no-probe",
                   "-p", "the hash map", "-n", 1).stdout
    assert "tokens/s (decode)      - (no decode pass)" in text
    assert "ITL p50 / p95          - (no token after the first)" in text
    assert "decoded    0 tokens after the first: no decode speed to report" in text
    assert re.search(r"^TTFT +\d+\.\d ms", text, re.M)  # the TTFT line is a number
    assert "0.000 t/s" not in text


def test_nothing_drafted_has_no_acceptance(cli, tiny_target):
    r, d = run_json(cli, "--target", tiny_target, "--drafter", "none", "--headless", "--json", "-t", 1, "--no-probe",
                    "-p", "the hash map", "-n", 6)
    assert r.returncode == 0, r.stderr
    assert d["n_drafted"] == 0 and d["n_passes"] > 0
    assert d["acceptance_rate"] is None and d["mean_acceptance_length"] is None
    assert d["draft_ms_per_token"] is None and d["draft_cost_ratio"] is None
    assert d["tokens_per_second"] > 0 and d["ttft_ms"] > 0 and d["itl_ms_p50"] > 0  # measured: numbers
    text = cli("--target", tiny_target, "--drafter", "none", "--headless", "-t", 1, "--no-probe",
                   "-p", "the hash map", "-n", 6).stdout
    assert "accept    = - (nothing drafted)" in text
    assert "mean acceptance length - (no drafting pass)" in text
    assert "draft cost ratio c     - (nothing drafted; target " in text


# ------------------------------------------------------------ the statistics and their consumers
def test_the_snapshot_has_no_ttft_before_the_prefill_pass():
    stats = RunStats().extend([RunStarted(settings=Settings(draft_max=2)),
                               RunEnded(reason="error", error="the prompt is empty")])
    snap = stats.snapshot()
    assert snap.ttft_ms is None
    assert measured(snap) == dict.fromkeys(measured(snap))  # every one null
    assert "nothing was decoded" in summary_text(stats)


def _snap(ttft, tps=10.0) -> StatsSnapshot:
    return StatsSnapshot(n_passes=3 if ttft is not None else 0, n_emitted=4 if ttft is not None else 0,
                         ttft_ms=ttft, tokens_per_second=tps if ttft is not None else 0.0, decode_wall_ms=300.0)


def test_sweep_means_only_the_runs_with_a_first_token():
    runs = [SweepRun(0.0, 0, "none", 0, _snap(100.0)), SweepRun(0.0, 0, "none", 1, _snap(None)),
            SweepRun(0.0, 2, "ngram", 0, _snap(None))]
    base, spec = aggregate(runs)
    assert base.ttft_ms.n == 1 and base.ttft_ms.mean == pytest.approx(100.0)  # not (100 + 0) / 2
    assert spec.ttft_ms.n == 0
    rows = sweep_table_rows([base, spec])
    assert rows[0][-1] == "100" and rows[1][-1] == "-"
    lines = sweep_csv(runs).splitlines()
    col = lines[0].split(",").index("ttft_ms")
    assert [ln.split(",")[col] for ln in lines[1:]] == ["100.0", "", ""]  # an empty cell, never 0.0


def test_bench_means_only_the_runs_with_a_first_token():
    prompt = Prompt(1, "qa", ("what is a hash map?",))
    base = Setting("none", 0, 0.0)
    rows = [BenchRow(prompt, 0, base, 0, _snap(80.0)), BenchRow(prompt, 0, base, 1, _snap(None)),
            BenchRow(prompt, 0, base, 2, None, skipped="does not fit")]
    s = summarize(rows, "qa", base)
    assert s.ttft_ms == pytest.approx(80.0)
    none = summarize(rows[1:], "qa", base)
    assert none.ttft_ms is None
    assert bench_table_rows([none])[0][11] == "-"  # the TTFT column
    assert [rec["ttft_ms"] for rec in row_records(rows)] == [80.0, None, None]
    spec = Setting("ngram", 2, 0.0)
    md = to_markdown([summarize([BenchRow(prompt, 0, spec, 0, _snap(None))], "qa", spec)], has_baseline=False)
    cells = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in md.splitlines() if "|" in ln]
    head = next(c for c in cells if "TTFT ms" in c)
    assert cells[-1][head.index("TTFT ms")] == "-", md  # the detail table's TTFT cell


def test_a_request_without_a_token_has_no_ttft():
    snap = request_stats([RequestEnded(t=1.0, reason="error", error="HTTP 500")])
    assert snap.ttft_ms is None


def test_ms_or_dash():
    assert ms_or_dash(None) == "-"
    assert ms_or_dash(0.0) == "0" and ms_or_dash(12.34, ".1f") == "12.3"


async def test_the_tui_metrics_show_a_dash_without_a_first_token():
    from spectui.contract.control import RunControl
    from spectui.recording.synthetic import sample_events
    from spectui.tui.run.app import SpectuiApp
    from spectui.tui.run.run_metrics import RunMetrics

    events = [sample_events()[0], RunEnded(reason="error", error="the prompt is empty")]
    app = SpectuiApp(lambda c, p: iter(events), RunControl(Settings(draft_max=2)))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        app.refresh_from_state()
        await pilot.pause()
        text = app.screen.query_one(RunMetrics).draw(100, 12).plain
        await pilot.press("q")
    ttft = [line for line in text.splitlines() if line.startswith("TTFT")]
    assert ttft and ttft[0].startswith("TTFT - "), text  # not "TTFT 0.0 ms"
