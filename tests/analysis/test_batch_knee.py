"""The batched prediction against hand-computed cases: the speedup formula, the knee (a crossing, "never pays",
"always pays"), the best k, the table and chart as plain text, the JSON round trip and the acceptance inverse."""

from __future__ import annotations

import json
import math

import pytest

from spectui.analysis.cost.costmodel import leviathan
from spectui.analysis.knee import knee_text as kt
from spectui.analysis.measured import batch_knee as bk
from spectui.analysis.measured.cachefile import CacheError
from spectui.contract.errors import SpectuiError


def curve(plain, verify, draft=(), seqs=(1, 2, 4, 8)) -> bk.BatchCurve:
    return bk.BatchCurve(seqs=tuple(seqs), ks=tuple(sorted(verify)), plain_ms=tuple(plain),
                         verify_ms={k: tuple(v) for k, v in verify.items()}, draft_ms=tuple(draft))


# plain decode is flat (memory-bound) up to B = 2, then grows; a verify of 3 tokens a sequence costs like a plain
# step of 3 B sequences would: flat at B = 1, then linear in the tokens
KNEE = curve(plain=[10, 10, 12, 20], verify={2: [10, 15, 30, 60]})


def test_speedup_is_the_hand_computed_ratio():
    a = 0.5
    tokens = 1 + 0.5 + 0.25  # leviathan(0.5, 2) by hand
    assert leviathan(a, 2) == pytest.approx(tokens)
    # B = 1: 1.75 tokens for the price of one plain step
    assert bk.speedup(KNEE, 1, 2, a, bk.DRAFTER_LOOKUP) == pytest.approx(1.75)
    # B = 2: 1.75 * 10 / 15
    assert bk.speedup(KNEE, 2, 2, a, bk.DRAFTER_LOOKUP) == pytest.approx(1.75 * 10 / 15)
    # B = 4: 1.75 * 12 / 30 = 0.7
    assert bk.speedup(KNEE, 4, 2, a, bk.DRAFTER_LOOKUP) == pytest.approx(0.7)


def test_the_draft_models_steps_are_paid_k_times():
    c = curve(plain=[10, 10, 12, 20], verify={2: [10, 15, 30, 60]}, draft=[1, 1, 2, 4])
    # B = 1: 1.75 * 10 / (10 + 2 * 1)
    assert bk.speedup(c, 1, 2, 0.5) == pytest.approx(1.75 * 10 / 12)
    assert bk.speedup(c, 8, 2, 0.5) == pytest.approx(1.75 * 20 / (60 + 8))
    p = bk.predict(c, 0.5)
    assert p.drafter == bk.DRAFTER_MODEL  # a draft measured: the draft model by default
    assert bk.predict(c, 0.5, bk.DRAFTER_LOOKUP).speedup[2][0] == pytest.approx(1.75)


def test_the_knee_and_its_log2_crossing():
    p = bk.predict(KNEE, 0.5, bk.DRAFTER_LOOKUP)
    assert p.speedup[2] == pytest.approx((1.75, 1.75 * 10 / 15, 0.7, 1.75 * 20 / 60))
    kn = p.knees[2]
    assert (kn.pays_up_to, kn.stops_at) == (2, 4) and not kn.never and not kn.always
    s2 = 1.75 * 10 / 15  # 1.1667 at B = 2, 0.7 at B = 4: crossing at log2 B = 1 + (s2 - 1) / (s2 - 0.7)
    assert kn.crossing == pytest.approx(2 ** (1 + (s2 - 1) / (s2 - 0.7)))
    assert 2 < kn.crossing < 4
    assert "stops at B = 4" in kn.words(8)


def test_never_pays():
    # verification costs twice a plain step from B = 1 on, the acceptance is low: below 1.0x everywhere
    c = curve(plain=[10, 10, 12, 20], verify={2: [20, 20, 24, 40]})
    p = bk.predict(c, 0.3, bk.DRAFTER_LOOKUP)
    assert all(s < 1 for s in p.speedup[2])
    assert p.knees[2].never and p.knees[2].pays_up_to == 0 and p.knees[2].stops_at == 1
    assert p.best.never
    assert "never pays" in p.knees[2].words(8)


def test_always_pays():
    # memory-bound all the way: a verify costs one plain step at every B, so any acceptance > 0 pays
    c = curve(plain=[10, 10, 11, 12], verify={1: [10, 10, 11, 12], 4: [10, 10, 11, 12]})
    p = bk.predict(c, 0.6, bk.DRAFTER_LOOKUP)
    assert p.speedup[1] == pytest.approx((1.6,) * 4)
    assert p.speedup[4] == pytest.approx((leviathan(0.6, 4),) * 4)
    assert p.knees[1].always and p.knees[4].always and p.best.always
    assert p.best_k == (4, 4, 4, 4)
    assert p.best.stops_at is None and p.best.pays_up_to == 8
    assert "every B measured (up to 8)" in p.best.words(8)


def test_the_best_k_moves_down_as_the_batch_grows():
    # k = 4 wins at B = 1 (flat), k = 1 at B = 8 (a verify of 5 tokens a sequence is paid in full there)
    c = curve(plain=[10, 10, 10, 10], verify={1: [10, 10, 12, 20], 4: [10, 12, 25, 50]})
    p = bk.predict(c, 0.7, bk.DRAFTER_LOOKUP)
    assert p.best_k[0] == 4 and p.best_k[-1] == 1
    l1, l4 = leviathan(0.7, 1), leviathan(0.7, 4)
    assert p.speedup[1][-1] == pytest.approx(l1 * 10 / 20)
    assert p.speedup[4][-1] == pytest.approx(l4 * 10 / 50)
    # the best row: 2.77x, 2.31x, then k = 1 at 1.42 (B = 4), 0.85 (B = 8): the knee is at 8
    assert p.best.pays_up_to == 4 and p.best.stops_at == 8


def test_the_k_schedule_in_vllms_form():
    # k = 4 best at B = 1 and 2, k = 1 at B = 4, nothing pays at B = 8 (see the test above)
    c = curve(plain=[10, 10, 10, 10], verify={1: [10, 10, 12, 20], 4: [10, 12, 25, 50]})
    p = bk.predict(c, 0.7, bk.DRAFTER_LOOKUP)
    assert p.best_k == (4, 4, 1, 1)
    assert p.k_schedule() == [[1, 3, 4], [4, 7, 1], [8, 8, 0]]
    assert p.to_dict()["k_schedule"] == [[1, 3, 4], [4, 7, 1], [8, 8, 0]]
    assert "[[1, 3, 4], [4, 7, 1], [8, 8, 0]]" in "\n".join(kt.table(c, p))
    # always pays with one k: one range; never pays: one range of 0
    flat = curve(plain=[10, 10, 11, 12], verify={2: [10, 10, 11, 12]})
    assert bk.predict(flat, 0.6, bk.DRAFTER_LOOKUP).k_schedule() == [[1, 8, 2]]
    dear = curve(plain=[10, 10, 12, 20], verify={2: [20, 20, 24, 40]})
    assert bk.predict(dear, 0.3, bk.DRAFTER_LOOKUP).k_schedule() == [[1, 8, 0]]


def test_knee_of_exactly_one_counts_as_not_paying():
    kn = bk.knee_of((1, 2, 4), (1.2, 1.0, 0.8))
    assert (kn.pays_up_to, kn.stops_at) == (1, 2) and kn.crossing == pytest.approx(2.0)


def test_the_acceptance_inverse_goes_through_leviathan():
    for a in (0.0, 0.2, 0.55, 0.9):
        for k in (1, 2, 5):
            assert bk.acceptance_from_tokens_per_pass(leviathan(a, k), k) == pytest.approx(a, abs=1e-9)
    assert bk.acceptance_from_tokens_per_pass(1.0, 3) == 0.0
    assert bk.acceptance_from_tokens_per_pass(4.0, 3) == 1.0
    with pytest.raises(SpectuiError):
        bk.acceptance_from_tokens_per_pass(1.5, 0)


def test_bad_input_is_one_line():
    with pytest.raises(SpectuiError, match="between 0 and 1"):
        bk.predict(KNEE, 1.5)
    with pytest.raises(SpectuiError, match="ngram"):
        bk.predict(KNEE, 0.5, bk.DRAFTER_MODEL)  # no draft measured
    with pytest.raises(ValueError):
        curve(plain=[10, 10], verify={2: [10, 15, 30, 60]})


def test_table_and_chart_are_plain_text():
    p = bk.predict(KNEE, 0.5, bk.DRAFTER_LOOKUP)
    lines = kt.table(KNEE, p)
    text = "\n".join(lines)
    assert "1.75x" in text and "0.70x" in text and "stops at B = 4" in text
    ch = kt.chart(p)
    assert all("\x1b" not in ln for ln in ch)
    one = [ln for ln in ch if ln.startswith(" 1.00x")]
    assert len(one) == 1 and "-" in one[0]  # the 1.0x line is marked and labelled
    assert sum(ln.count("2") for ln in ch[1:-2]) >= 4  # k = 2 has one mark per B (its digit)
    assert ch[-1].split()[:4] == ["1", "2", "4", "8"]
    # the mark for B = 1 (1.75x) sits above the 1.0x line, the one for B = 4 (0.70x) below it
    rows = ch[1:-2]
    i_one = next(i for i, ln in enumerate(rows) if ln.startswith(" 1.00x"))
    col1 = 8 + kt.CHART_COL // 2
    col4 = 8 + 2 * kt.CHART_COL + kt.CHART_COL // 2
    above = [i for i, ln in enumerate(rows) if len(ln) > col1 and ln[col1] == "2"]
    below = [i for i, ln in enumerate(rows) if len(ln) > col4 and ln[col4] == "2"]
    assert above and above[0] < i_one and below and below[0] > i_one
    assert "stops paying" in kt.render(KNEE, p) and "At B = 1" in kt.why(KNEE, p)


def test_the_reason_in_words_says_what_its_numbers_say():
    """why(): a pass's cost in plain steps (its verify and, with a draft model, its k draft steps) against the
    tokens it yields, and a verdict that agrees with the speedups."""
    # a draft model whose k = 2 draft steps cost 0.5 plain steps each: at B = 1 the pass costs
    # (10 + 2 * 5) / 10 = 2.0 plain steps for leviathan(0.5, 2) = 1.75 tokens: 0.875x, never pays
    c = curve(plain=[10, 10, 12, 20], verify={2: [10, 15, 30, 60]}, draft=[5, 5, 6, 10])
    p = bk.predict(c, 0.5, bk.DRAFTER_MODEL)
    assert p.speedup[2][0] == pytest.approx(1.75 / 2.0)
    w = kt.why(c, p)
    assert "At B = 1 a pass of k = 2 (its verify of 3 tokens a sequence and 2 draft steps) costs 2.00 plain " \
           "steps and yields 1.75 tokens" in w
    assert "never pays here (0.88x at B = 1" in w
    # the same curve with free drafts (prompt lookup): 1.75x at B = 1, a verify that grows dearer, 0.58x at B = 8
    p = bk.predict(c, 0.5, bk.DRAFTER_LOOKUP)
    w = kt.why(c, p)
    assert "(its verify of 3 tokens a sequence) costs 1.00 plain steps" in w and "at B = 8 it costs 3.00" in w
    assert "run out of idle compute" in w and "loses (0.58x)" in w


def test_json_round_trip_and_malformed_input():
    c = curve(plain=[10, 10, 12, 20], verify={1: [10, 12, 20, 40], 2: [10, 15, 30, 60]}, draft=[1, 1, 2, 4])
    d = json.loads(json.dumps(c.to_dict()))
    assert bk.BatchCurve.from_dict(d) == c
    bad = dict(d, plain_ms=[10, -1, 12, 20])
    with pytest.raises(CacheError):
        bk.BatchCurve.from_dict(bad)
    with pytest.raises(CacheError):
        bk.BatchCurve.from_dict(dict(d, version=99))
    with pytest.raises(CacheError):
        bk.BatchCurve.from_dict([])
    p = bk.predict(c, 0.5)
    pd = json.loads(json.dumps(p.to_dict()))
    assert pd["knees"]["2"]["stops_at"] == p.knees[2].stops_at
    assert pd["speedup"]["1"][0] == pytest.approx(round(leviathan(0.5, 1) * 10 / 11, 4))


def test_panel_lines_from_a_probe_report():
    c = curve(plain=[10, 10, 12, 20], verify={2: [10, 15, 30, 60]})
    lines = kt.panel_lines({"batched": {"curve": c.to_dict()}}, 0.5)
    assert len(lines) == 2 and "B1:1.75x" in lines[0] and "stops at B = 4" in lines[1]
    assert kt.panel_lines({}, 0.5) == [] and kt.panel_lines({"batched": {"curve": c.to_dict()}}, None) == []


def test_acceptance_from_a_bench_report(tmp_path):
    rows = [{"k": 2, "n_drafted": 100, "n_accepted": 60, "passes_drafted": 50}]
    p = tmp_path / "b.json"
    p.write_text(json.dumps({"schema": "spectui.bench", "runs": rows}))
    a, src = bk.acceptance_from_json(str(p))
    assert leviathan(a, 2) == pytest.approx(1 + 60 / 50) and "k = 2" in src
    sweep = {"schema": "spectui.bench", "concurrency_sweep": {"levels": [{"concurrency": 2, "acceptance": 0.4},
                                                                          {"concurrency": 1, "acceptance": 0.5}]}}
    p.write_text(json.dumps(sweep))
    assert bk.acceptance_from_json(str(p))[0] == 0.5  # no k: the raw rate
    sweep["concurrency_sweep"]["params"] = {"k": 3}
    p.write_text(json.dumps(sweep))
    a, src = bk.acceptance_from_json(str(p))  # 0.5 of 3 drafts a pass: E = 2.5 = leviathan(a, 3)
    assert leviathan(a, 3) == pytest.approx(2.5) and "k = 3" in src
    p.write_text("{}")
    with pytest.raises(SpectuiError, match="not a spectui report"):
        bk.acceptance_from_json(str(p))
    with pytest.raises(SpectuiError, match="no such file"):
        bk.acceptance_from_json(str(tmp_path / "none.json"))


def test_log2_crossing_is_symmetric_in_log_space():
    kn = bk.knee_of((4, 8), (1.5, 0.5))
    assert kn.crossing == pytest.approx(2 ** 2.5) and math.isclose(math.log2(kn.crossing), 2.5)


def test_the_prediction_panel_shows_the_knee_of_the_run_on_screen():
    """The run's RunStarted.probe carries the batched curve (cached beside the probe's); the panel's knee lines use
    the run's own acceptance at its k."""
    from dataclasses import replace
    from types import SimpleNamespace

    from synthetic_events import make_start

    from spectui.analysis.stats import StatsSnapshot
    from spectui.contract.events import MachineProbe, Settings
    from spectui.tui.run.prediction_panel import _knee_lines

    c = curve(plain=[10, 10, 12, 20], verify={2: [10, 15, 30, 60]})
    probe = MachineProbe(verify_ms_by_batch=(10.0, 10.0), summary="s",
                         report_json=json.dumps({"batched": {"curve": c.to_dict()}}))
    start = replace(make_start(settings=Settings(draft_max=2)), probe=probe)
    # 1.75 tokens a drafted pass at k = 2: a = 0.5 (leviathan(0.5, 2) = 1.75)
    stats = StatsSnapshot(n_passes=40, n_drafted=80, n_accepted=30, passes_drafted=40)
    lines = _knee_lines(SimpleNamespace(snap=SimpleNamespace(start=start, stats=stats)))
    assert len(lines) == 2 and "acceptance 0.50" in lines[0] and "B1:1.75x" in lines[0]
    assert "stops at B = 4" in lines[1]
    # no batched curve recorded: nothing shown
    bare = replace(start, probe=MachineProbe(verify_ms_by_batch=(10.0,), report_json="{}"))
    assert _knee_lines(SimpleNamespace(snap=SimpleNamespace(start=bare, stats=stats))) == []


def test_names_from_outside_are_escaped():
    c = bk.BatchCurve(seqs=(1, 2), ks=(1,), plain_ms=(1.0, 1.0), verify_ms={1: (1.0, 2.0)},
                      target="evil\x1b[2Jname", draft="d\x07")
    p = bk.predict(c, 0.5, bk.DRAFTER_LOOKUP, source="trace \x1b]0;x\x07.jsonl")
    text = kt.render(c, p)
    assert "\x1b" not in text and "\x07" not in text and "evil\\x1b[2Jname" in text
