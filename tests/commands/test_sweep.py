"""``spectui sweep``: aggregation, table, chart and report on hand-built runs (exact numbers), then the
whole command on the tests' tiny models (real llama.cpp): JSON, CSV, traces, and every bad input."""

from __future__ import annotations

import csv
import io
import json
import statistics

import pytest
from click.testing import CliRunner
from synthetic_events import make_end, make_pass, make_prefill, make_start

from spectui.analysis.stats import compute
from spectui.commands.sweep import sweep_cmd
from spectui.contract.errors import SpectuiError
from spectui.sweep import (
    CSV_FIELDS,
    SweepRun,
    aggregate,
    make_plan,
    parse_ks,
    parse_temps,
    report_lines,
    sweep_prediction,
    to_csv,
)
from spectui.text.sweep import render_chart, table_rows

pytestmark = pytest.mark.slow  # whole sweeps on the engine


# ------------------------------------------------------------------ hand-built runs


def _run(temp, k, repeat, accepted, verify_ms, draft_ms_per_token=40.0, ttft=200.0, drafter="model"):
    """A run of len(accepted) decode passes at draft length k (accepted: drafts accepted per pass)."""
    evs = [make_start(target_decode_ms=80.0), make_prefill(ttft)]
    for i, a in enumerate(accepted):
        evs.append(make_pass(i + 1, k, a, draft_ms_per_token=draft_ms_per_token, verify_ms=verify_ms, other_ms=2.0))
    evs.append(make_end(len(accepted)))
    return SweepRun(temp, k, drafter, repeat, compute(evs))


def _grid():
    runs = []
    for rep, jitter in ((0, 0.0), (1, 4.0)):
        for t, acc2, acc5 in ((0.0, [2, 1, 2, 0], [5, 3, 1, 0]), (0.8, [1, 0, 1, 0], [2, 0, 1, 0])):
            runs.append(_run(t, 0, rep, [0] * 8, 80.0 + jitter, draft_ms_per_token=0.0, ttft=200.0 + jitter,
                             drafter="none"))
            runs.append(_run(t, 2, rep, acc2 * 2, 140.0 + jitter, ttft=230.0 + jitter))
            runs.append(_run(t, 5, rep, acc5 * 2, 190.0 + jitter, ttft=230.0 + jitter))
    return runs


def test_parse_lists():
    assert parse_ks("2,5,10") == [2, 5, 10]
    assert parse_ks(" 0, 3,3 ,") == [0, 3]
    assert parse_temps("0,0.8") == [0.0, 0.8]
    for bad, msg in (("2,x", "comma-separated integers"), ("40", "between 0 and 32"), ("", "at least one")):
        with pytest.raises(SpectuiError, match=msg):
            parse_ks(bad)
    for bad, msg in (("0,hot", "comma-separated numbers"), ("2.5", "between 0 and 2"), ("nan", "between 0 and 2")):
        with pytest.raises(SpectuiError, match=msg):
            parse_temps(bad)


def test_plan_runs_the_baseline_first_at_each_temperature():
    plan = make_plan([2, 5], [0.0, 0.8], 2, "model")
    assert len(plan) == 12
    assert [(p.temperature, p.k, p.drafter, p.repeat) for p in plan[:3]] == [
        (0.0, 0, "none", 0), (0.0, 2, "model", 0), (0.0, 5, "model", 0)]
    assert sum(p.drafter == "none" for p in plan) == 4


def test_aggregate_speedup_spread_and_positions():
    runs = _grid()
    cells = aggregate(runs)
    assert [(c.temperature, c.label) for c in cells] == [
        (0.0, "target only"), (0.0, "k=2"), (0.0, "k=5"), (0.8, "target only"), (0.8, "k=2"), (0.8, "k=5")]
    c = cells[1]
    per_rep = [r for r in runs if r.temperature == 0.0 and r.k == 2]
    bases = {r.repeat: r.stats.tokens_per_second for r in runs if r.drafter == "none" and r.temperature == 0.0}
    speed = [r.stats.tokens_per_second / bases[r.repeat] for r in per_rep]
    assert c.speedup.mean == pytest.approx(statistics.fmean(speed))
    assert c.speedup.sd == pytest.approx(statistics.stdev(speed))
    assert c.tokens_per_second.n == 2 and c.tokens_per_second.sd > 0
    assert c.acceptance_rate.mean == pytest.approx(10 / 16)  # 2+1+2+0 accepted of 8 drafted, twice
    assert c.acceptance_rate.sd == 0.0
    assert c.acceptance_by_position == pytest.approx((6 / 8, 4 / 8))
    assert cells[0].speedup.mean == pytest.approx(1.0)
    assert cells[2].verify_ms.mean == pytest.approx(192.0)
    assert cells[2].draft_ms_per_pass.mean == pytest.approx(200.0)


def test_table_chart_and_csv():
    runs = _grid()
    cells = aggregate(runs)
    rows = table_rows(cells)
    assert rows[0][0] == "target only" and rows[0][2] == "-"
    assert rows[1][:3] == ("k=2", "0", "62.5% ±0.0%")
    assert rows[1][5].endswith("x ±" + f"{cells[1].speedup.sd:.2f}")
    chart = render_chart(cells)
    assert chart.startswith("tokens/s against acceptance rate")
    assert any(line.strip() == "acceptance rate" for line in chart.splitlines())
    assert "1 k=2 temp 0: 62% accepted" in chart
    assert "··· target only:" in chart
    assert chart.count("\n") > 12
    parsed = list(csv.DictReader(io.StringIO(to_csv(runs))))
    assert len(parsed) == len(runs) and tuple(parsed[0]) == CSV_FIELDS
    assert {p["repeat"] for p in parsed} == {"1", "2"}


def test_report_answers_from_the_data():
    runs = _grid()
    cells = aggregate(runs)
    lines = report_lines(cells, runs, sweep_prediction(runs))
    text = "\n".join(lines)
    # acceptance at each draft length, with the spread over the two repeats
    assert "temp 0: k=2 62% ±0%, k=5 45% ±0%; temp 0.8: k=2 25% ±0%, k=5 15% ±0%" in text
    assert "standard deviation over 2 repeats" in text
    # every speculative setting lost here (drafting 40 ms/token, verify 140-190 ms vs 80 ms decode)
    assert "Tokens/s peaked with the target alone" in text
    assert "Why longer drafts stopped paying (temp 0): from k=2 to k=5" in text
    assert "Even k=2 lost at temp 0" in text
    # TTFT: baseline 200/204 ms vs 230/234 ms with a drafter
    assert "TTFT: target only 202.0 ±2.3 ms (range 200-204)" in text and "30 ms (+15%) longer with a drafter" in text
    assert "Temperature 0 -> 0.8 lowered acceptance at every draft length" in text
    # ± = standard error of the difference (binomial over the 32 / 80 drafts counted per cell)
    assert "k=2 62% -> 25% (±11%), k=5 45% -> 15% (±7%)" in text
    assert "Cost model (from the temp 0 runs): " in text and "best k = 0" in text


def test_report_says_when_temperature_raises_acceptance():
    runs = [
        _run(0.0, 0, 0, [0] * 4, 80.0, draft_ms_per_token=0.0, drafter="none"),
        _run(0.0, 3, 0, [0, 1, 0, 1], 100.0, draft_ms_per_token=2.0),
        _run(0.8, 0, 0, [0] * 4, 80.0, draft_ms_per_token=0.0, drafter="none"),
        _run(0.8, 3, 0, [3, 2, 3, 2], 100.0, draft_ms_per_token=2.0),
    ]
    text = "\n".join(report_lines(aggregate(runs), runs))
    assert "raised acceptance at every draft length, against the textbook expectation" in text
    assert "Tokens/s peaked at k=3, temp 0.8" in text
    assert "one run each: no spread measured" in text


def test_report_does_not_read_noise_as_a_temperature_effect():
    # 3 of 8 vs 4 of 8 drafts accepted: a 12-point difference with a 25-point standard error
    runs = [
        _run(0.0, 0, 0, [0] * 4, 80.0, draft_ms_per_token=0.0, drafter="none"),
        _run(0.0, 2, 0, [1, 1, 1, 0], 100.0, draft_ms_per_token=2.0),
        _run(0.8, 0, 0, [0] * 4, 80.0, draft_ms_per_token=0.0, drafter="none"),
        _run(0.8, 2, 0, [2, 1, 1, 0], 100.0, draft_ms_per_token=2.0),
    ]
    text = "\n".join(report_lines(aggregate(runs), runs))
    assert "Temperature 0 -> 0.8 left acceptance unchanged within the noise: k=2 38% -> 50% (±25%)" in text


# ------------------------------------------------------------------ the command on tiny models


def _invoke(args):
    return CliRunner().invoke(sweep_cmd, [str(a) for a in args])


def test_sweep_json_and_traces_on_tiny_models(tiny_target, tiny_draft_noisy, tmp_path):
    from spectui.recording.trace import read_trace

    rec = tmp_path / "traces"
    res = _invoke(["--target", tiny_target, "--draft", tiny_draft_noisy, "--draft-max", "1,3", "--temp", "0,0.8",
                   "-n", 24, "--repeat", 2, "-p", "the cat", "--json", "--record-dir", rec])
    assert res.exit_code == 0, res.output + res.stderr
    out = json.loads(res.stdout)
    runs = out["runs"]
    assert len(runs) == 12
    assert out["params"]["draft_max"] == [1, 3] and out["params"]["temperatures"] == [0.0, 0.8]
    files = sorted(rec.iterdir())
    assert len(files) == 12
    for r in runs:
        assert r["n_emitted"] == 24 or r["stop_reason"] == "eog"
        if r["drafter"] == "none":
            assert r["k"] == 0 and r["n_drafted"] == 0 and r["speedup"] == pytest.approx(1.0)
        else:
            assert r["n_drafted"] > 0 and 0.0 <= r["acceptance_rate"] <= 1.0
        # the numbers are the statistics of the recorded events
        snap = compute(read_trace(r["trace"]).events)
        assert snap.n_drafted == r["n_drafted"] and snap.n_accepted == r["n_accepted"]
        assert snap.tokens_per_second == pytest.approx(r["tokens_per_second"])
        assert snap.ttft_ms == pytest.approx(r["ttft_ms"])
    # same prompt and seed: the temperature-0 baseline is the same text in both repeats
    t0_base = [read_trace(r["trace"]).events for r in runs if r["drafter"] == "none" and r["temperature"] == 0.0]
    texts = ["".join(t.text for e in evs if getattr(e, "type", "") == "pass" for t in e.emitted) for evs in t0_base]
    assert texts[0] == texts[1] and texts[0]
    assert len(out["cells"]) == 6
    assert any(line.startswith("Acceptance rate by draft length") for line in out["report"])
    assert any(line.startswith("TTFT: target only") for line in out["report"])
    # the batch sizes no run used were measured on demand after the runs: the prediction extrapolates nothing
    on_demand = {int(k) for k in out["params"]["verify_measured_on_demand"]}
    seen = {v["k"] for r in runs for v in r["verify_ms_by_k"] if v["count"]}
    assert 3 in seen and 16 not in seen
    assert on_demand == set(range(17)) - seen
    assert all(out["prediction"]["verify_measured_by_k"])
    assert any("measured on demand after them" in line for line in out["report"] if line.startswith("Cost model"))


def test_sweep_table_and_csv_on_tiny_models(tiny_target, tiny_draft_noisy):
    res = _invoke(["--target", tiny_target, "--draft", tiny_draft_noisy, "--draft-max", "2", "--temp", "0",
                   "-n", 16, "-p", "the cat"])
    assert res.exit_code == 0, res.output + res.stderr
    for col in ("acceptance", "mean acc. len", "tokens/s", "speedup", "ITL p50 ms", "TTFT ms"):
        assert col in res.stdout
    assert "target only" in res.stdout and "k=2" in res.stdout
    assert "tokens/s against acceptance rate" in res.stdout
    assert "Acceptance rate by draft length - temp 0: k=2" in res.stdout
    assert "TTFT: target only" in res.stdout
    res = _invoke(["--target", tiny_target, "--drafter", "ngram", "--draft-max", "2,4", "--temp", "0",
                   "-n", 16, "-p", "the cat the cat the cat", "--csv"])
    assert res.exit_code == 0, res.output + res.stderr
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    assert [(r["drafter"], r["k"]) for r in rows] == [("none", "0"), ("ngram", "2"), ("ngram", "4")]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--draft-max", "2,x"], "--draft-max takes comma-separated integers"),
        (["--temp", "3"], "--temp values must be between 0 and 2"),
        (["--json", "--csv"], "give either --json or --csv"),
        (["--repeat", "0"], "Invalid value for '--repeat' / '-r': 0 is not in the range 1<=x<=1000"),
        (["-n", "0"], "Invalid value for '-n' / '--n-predict': 0 is not in the range x>=1"),
    ],
)
def test_sweep_bad_options(tiny_target, tiny_draft_noisy, args, message):
    res = _invoke(["--target", tiny_target, "--draft", tiny_draft_noisy, *args])
    assert res.exit_code == 2
    assert res.stderr.strip().splitlines() == [f"spectui: error: {res.stderr.strip()[len('spectui: error: '):]}"]
    assert message in res.stderr


def test_sweep_bad_models(tmp_path, tiny_target):
    res = _invoke(["--draft-max", "2"])
    assert res.exit_code == 2 and "--target PATH (or -hf user/repo) is required" in res.stderr
    res = _invoke(["--target", tmp_path / "missing.gguf", "--drafter", "ngram"])
    errors = [line for line in res.stderr.splitlines() if line.startswith("spectui: error:")]
    assert res.exit_code == 2 and len(errors) == 1 and "not found" in errors[0]
    assert "Traceback" not in res.stderr and res.stdout == ""
    res = _invoke(["--target", tiny_target, "--drafter", "model"])
    assert res.exit_code == 2 and "--drafter model needs --draft PATH" in res.stderr
    res = _invoke(["--target", tiny_target, "--record-dir", tiny_target])  # a file, not a directory
    assert res.exit_code == 2
    assert res.stderr.strip() == f"spectui: error: --record-dir {tiny_target} exists and is not a directory"
