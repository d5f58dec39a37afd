"""The sweep's "acceptance by draft confidence" section: pooled per configuration (temperature, k) over
repeats, in the report (text and --json's report), in --json's runs and cells, and as --csv columns;
exact counts on hand-built runs, then the command on the tiny models against a recount from the traces."""

from __future__ import annotations

import csv
import dataclasses
import io
import json

import pytest
from click.testing import CliRunner
from synthetic_events import make_end, make_pass, make_prefill, make_start

from spectui.analysis.stats import compute
from spectui.commands.sweep import sweep_cmd
from spectui.contract.events import ACCEPTED, DISCARDED, REJECTED, DraftToken
from spectui.sweep import (
    CONFIDENCE_FIELDS,
    CSV_FIELDS,
    SweepRun,
    aggregate,
    confidence_lines,
    report_lines,
    to_csv,
    to_json,
)

pytestmark = pytest.mark.slow  # whole sweeps on the engine

EDGES = (0.3, 0.5, 0.7, 0.9)


def _with_probs(ev, probs):
    drafts = tuple(dataclasses.replace(d, prob=q) for d, q in zip(ev.drafts, probs))
    return dataclasses.replace(ev, drafts=drafts)


def _run(temp, k, repeat, passes, drafter="model"):
    """passes: (n_accepted, [q per draft]) per decode pass."""
    evs = [make_start(target_decode_ms=10.0), make_prefill(20.0)]
    for i, (acc, probs) in enumerate(passes):
        evs.append(_with_probs(make_pass(i + 1, k, acc, verify_ms=12.0, draft_ms_per_token=1.0), probs))
    evs.append(make_end(len(passes)))
    return SweepRun(temp, k, drafter, repeat, compute(evs))


def _runs():
    base = [(0, [])] * 3
    return [
        _run(0.0, 0, 0, base, drafter="none"),
        # k=2: (q 0.95 acc, q 0.2 rej), (q 0.95 acc, q 0.95 acc), (q 0.6 rej, q 0.4 discarded)
        _run(0.0, 2, 0, [(1, [0.95, 0.2]), (2, [0.95, 0.95]), (0, [0.6, 0.4])]),
        _run(0.0, 0, 1, base, drafter="none"),
        _run(0.0, 2, 1, [(2, [0.8, 0.95]), (0, [0.1, 0.99])]),  # 0.8 acc, 0.95 acc; 0.1 rej, 0.99 discarded
        _run(0.8, 0, 0, base, drafter="none"),
        _run(0.8, 2, 0, [(0, [0.35, 0.9])]),
    ]


def test_cells_pool_the_buckets_over_repeats():
    cells = aggregate(_runs())
    c = next(c for c in cells if c.temperature == 0.0 and c.k == 2)
    got = {b.label: (b.judged, b.accepted) for b in c.confidence}
    # judged: <0.3: 0.2 rej, 0.1 rej; 0.5-0.7: 0.6 rej; 0.7-0.9: 0.8 acc; >=0.9: 0.95 x4 acc
    assert got == {"<0.3": (2, 0), "0.3-0.5": (0, 0), "0.5-0.7": (1, 0), "0.7-0.9": (1, 1), ">=0.9": (4, 4)}
    base = next(c for c in cells if c.is_baseline)
    assert all(b.judged == 0 for b in base.confidence)


def test_report_section():
    runs = _runs()
    cells = aggregate(runs)
    lines = confidence_lines([c for c in cells if not c.is_baseline], 2)
    assert lines[0].startswith("Acceptance by draft confidence") and "pooled over 2 repeats" in lines[0]
    assert lines[1] == "  temp 0, k=2: <0.3 0% (0/2), 0.5-0.7 0% (0/1), 0.7-0.9 100% (1/1), >=0.9 100% (4/4)"
    assert lines[2] == "  temp 0.8, k=2: 0.3-0.5 0% (0/1)"
    assert len(lines) == 3
    report = report_lines(cells, runs)
    i = report.index(lines[0])
    assert report[i:i + 3] == lines
    assert report[i - 1].startswith("Acceptance by draft position") or report[i - 1].startswith("Acceptance rate")
    # no speculative cell judged anything: no section
    assert confidence_lines([c for c in cells if c.is_baseline]) == []


def test_csv_and_json_carry_the_buckets():
    runs = _runs()
    cells = aggregate(runs)
    assert CSV_FIELDS[-len(CONFIDENCE_FIELDS):] == CONFIDENCE_FIELDS
    assert CONFIDENCE_FIELDS[:2] == ("conf_0_0.3_judged", "conf_0_0.3_accepted")
    assert CONFIDENCE_FIELDS[-2:] == ("conf_0.9_1_judged", "conf_0.9_1_accepted")
    rows = list(csv.DictReader(io.StringIO(to_csv(runs))))
    assert tuple(rows[0]) == CSV_FIELDS
    r1 = rows[1]  # temp 0, k=2, repeat 1
    assert (r1["conf_0_0.3_judged"], r1["conf_0_0.3_accepted"]) == ("1", "0")
    assert (r1["conf_0.9_1_judged"], r1["conf_0.9_1_accepted"]) == ("3", "3")
    assert (r1["conf_0.5_0.7_judged"], r1["conf_0.3_0.5_judged"]) == ("1", "0")  # the discarded 0.4 not judged
    out = json.loads(json.dumps(to_json(runs, cells, report_lines(cells, runs), {})))
    run1 = out["runs"][1]
    assert not any(name in run1 for name in CONFIDENCE_FIELDS)
    assert [(b["label"], b["judged"], b["accepted"]) for b in run1["confidence"]] == [
        ("<0.3", 1, 0), ("0.3-0.5", 0, 0), ("0.5-0.7", 1, 0), ("0.7-0.9", 0, 0), (">=0.9", 3, 3)]
    cell = next(c for c in out["cells"] if c["temperature"] == 0.0 and c["k"] == 2)
    assert [(b["judged"], b["accepted"], b["rate"]) for b in cell["confidence"]] == [
        (2, 0, 0.0), (0, 0, 0.0), (1, 0, 0.0), (1, 1, 1.0), (4, 4, 1.0)]
    assert cell["confidence"][0]["lo"] == 0.0 and cell["confidence"][-1]["hi"] == 1.0
    assert any(line.startswith("Acceptance by draft confidence") for line in out["report"])


# ------------------------------------------------------------------ the command on tiny models


def _recount(events):
    out = [[0, 0] for _ in range(len(EDGES) + 1)]
    for ev in events:
        if getattr(ev, "type", "") != "pass" or ev.prefill:
            continue
        for d in ev.drafts:
            assert isinstance(d, DraftToken)
            if d.verdict == DISCARDED:
                continue
            b = sum(1 for e in EDGES if d.prob >= e)
            out[b][0] += 1
            out[b][1] += d.verdict == ACCEPTED
            assert d.verdict in (ACCEPTED, REJECTED)
    return out


def test_sweep_on_tiny_models_counts_the_recorded_drafts(tiny_target, tiny_draft_noisy, tmp_path):
    from spectui.recording.trace import read_trace

    rec = tmp_path / "traces"
    args = ["--target", tiny_target, "--draft", tiny_draft_noisy, "--draft-max", "1,3", "--temp", "0,0.8", "-n", 24,
            "--repeat", 2, "-p", "the cat", "--record-dir", rec]
    res = CliRunner().invoke(sweep_cmd, [str(a) for a in [*args, "--json"]])
    assert res.exit_code == 0, res.output + res.stderr
    out = json.loads(res.stdout)
    pooled: dict[tuple[float, int], list[list[int]]] = {}
    for r in out["runs"]:
        counts = _recount(read_trace(r["trace"]).events)
        assert [[b["judged"], b["accepted"]] for b in r["confidence"]] == counts
        acc = pooled.setdefault((r["temperature"], r["k"]), [[0, 0] for _ in counts])
        for a, c in zip(acc, counts):
            a[0] += c[0]
            a[1] += c[1]
        if r["drafter"] != "none":
            assert sum(b["accepted"] for b in r["confidence"]) == r["n_accepted"]
    for c in out["cells"]:
        assert [[b["judged"], b["accepted"]] for b in c["confidence"]] == pooled[(c["temperature"], c["k"])]
    head = next(i for i, line in enumerate(out["report"]) if line.startswith("Acceptance by draft confidence"))
    rows = out["report"][head + 1:head + 5]
    assert [r.split(":")[0] for r in rows] == ["  temp 0, k=1", "  temp 0, k=3", "  temp 0.8, k=1", "  temp 0.8, k=3"]
    c = next(c for c in out["cells"] if c["temperature"] == 0.8 and c["k"] == 3)
    want = ", ".join(f"{b['label']} {100 * b['rate']:.0f}% ({b['accepted']}/{b['judged']})"
                     for b in c["confidence"] if b["judged"])
    assert rows[3] == f"  temp 0.8, k=3: {want}"
    # the table's report and the CSV say the same
    text = CliRunner().invoke(sweep_cmd, [str(a) for a in args[:-2] + ["--repeat", 1]])
    assert text.exit_code == 0, text.stderr
    assert "Acceptance by draft confidence" in text.stdout and "  temp 0.8, k=3: " in text.stdout
    res = CliRunner().invoke(sweep_cmd, [str(a) for a in args[:-2] + ["--repeat", 1, "--csv"]])
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    assert tuple(rows[0]) == CSV_FIELDS
    spec = [r for r in rows if r["drafter"] == "model"]
    assert spec and all(sum(int(r[f]) for f in CONFIDENCE_FIELDS[1::2]) == int(r["n_accepted"]) for r in spec)


@pytest.mark.parametrize("probs", [[0.3], [0.5], [0.7], [0.9], [1.0], [0.0]])
def test_bucket_edges_include_their_lower_edge(probs):
    run = _run(0.0, 1, 0, [(1, probs)])
    b = [x for x in run.stats.confidence if x.judged]
    assert len(b) == 1 and b[0].lo <= probs[0] and (probs[0] < b[0].hi or b[0].hi == 1.0)
