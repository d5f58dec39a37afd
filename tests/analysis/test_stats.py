"""Statistics recomputed by hand from a recorded event list (vLLM / llama.cpp definitions)."""

import pytest
from synthetic_events import make_pass, make_pass_with_verdicts, make_prefill, make_start

from spectui.analysis.quantiles import percentile
from spectui.analysis.stats import RunStats, compute, pooled_rates
from spectui.contract.event_json import from_dict, to_dict
from spectui.contract.events import (
    ACCEPTED,
    BONUS,
    CORRECTION,
    DISCARDED,
    PLAIN,
    REJECTED,
    PassEvent,
    RunEnded,
    RunStarted,
    Settings,
)

A, R, D = ACCEPTED, REJECTED, DISCARDED


@pytest.fixture
def events():
    return [
        RunStarted(n_ctx=512, target_decode_ms=20.0, settings=Settings(draft_max=3)),
        make_pass_with_verdicts(0, [], PLAIN, wall=50.0, verify_ms=45.0, prefill=True),  # TTFT 50 ms, 1 token
        make_pass_with_verdicts(1, [A, A, A], BONUS, wall=80.0, draft_ms=30.0, verify_ms=40.0),  # 4 tokens
        make_pass_with_verdicts(2, [A, R, D], CORRECTION, wall=80.0, draft_ms=30.0, verify_ms=40.0),  # 2 tokens
        make_pass_with_verdicts(3, [R, D, D], CORRECTION, wall=80.0, draft_ms=30.0, verify_ms=40.0),  # 1 token
        make_pass_with_verdicts(4, [], PLAIN, wall=20.0, verify_ms=18.0),  # k=0 pass: 1 token
        RunEnded(reason="n_predict", n_passes=4, n_emitted=9, n_drafted=9, n_accepted=4, wall_s=0.31),
    ]


def test_counts_and_rates_by_hand(events):
    s = compute(events)
    assert s.n_emitted == 9
    assert s.n_passes == 4
    assert s.n_drafted == 9
    assert s.n_accepted == 4
    assert s.passes_drafted == 3
    assert s.acceptance_rate == pytest.approx(4 / 9)
    assert s.mean_acceptance_length == pytest.approx(1 + 4 / 3)
    assert [(p.position, p.accepted, p.drafted) for p in s.acceptance_by_position] == [(1, 2, 3), (2, 1, 3), (3, 1, 3)]
    assert s.acceptance_by_position[0].rate == pytest.approx(2 / 3)
    assert s.tokens_per_pass == pytest.approx(8 / 4)
    assert s.ttft_ms == 50.0
    # decode TPS: 8 tokens after the first over 80+80+80+20 ms
    assert s.tokens_per_second == pytest.approx(1000 * 8 / 260)
    # ITL: pass walls divided over their tokens: 4x20, 2x40, 1x80, 1x20
    assert s.itl_ms_p50 == pytest.approx(20.0)
    assert s.itl_ms_p95 == pytest.approx(80.0)
    # target single-token decode from the k=0 pass (18 ms), not the calibration (20 ms)
    assert s.target_decode_ms == pytest.approx(18.0)
    assert s.draft_ms_per_token == pytest.approx(90.0 / 9)
    assert s.draft_cost_ratio == pytest.approx(10.0 / 18.0)
    assert s.verify_ms_by_k == ((0, 18.0, 1), (3, 40.0, 3))
    assert s.stop_reason == "n_predict"
    assert s.n_ctx == 512
    # prefill excluded from the time split
    assert s.draft_ms_total == 90.0 and s.verify_ms_total == 138.0


def test_calibration_used_without_k0_passes(events):
    s = compute([e for e in events if not (isinstance(e, PassEvent) and e.index == 4)])
    assert s.target_decode_ms == 20.0
    assert s.draft_cost_ratio == pytest.approx(10.0 / 20.0)


def test_incremental_equals_batch(events):
    rs = RunStats()
    for e in events:
        rs.update(e)
    assert rs.snapshot() == compute(events)
    assert rs.text == "t" + "d0d1d2t" + "d0t" + "t" + "t"


def test_windowed_tps():
    rs = RunStats(window=2)
    rs.update(make_pass_with_verdicts(0, [], PLAIN, wall=10.0, prefill=True))
    rs.update(make_pass_with_verdicts(1, [A, A], BONUS, wall=100.0))  # 3 tokens
    rs.update(make_pass_with_verdicts(2, [], PLAIN, wall=10.0))  # 1 token
    rs.update(make_pass_with_verdicts(3, [], PLAIN, wall=10.0))  # 1 token
    snap = rs.snapshot()
    assert snap.tokens_per_second_window == pytest.approx(1000 * 2 / 20)
    assert snap.tokens_per_second == pytest.approx(1000 * 5 / 120)


def test_percentile_nearest_rank():
    assert percentile([], 50) == 0.0
    assert percentile([5.0], 95) == 5.0
    assert percentile([1, 2, 3, 4], 50) == 2
    assert percentile(list(range(1, 101)), 95) == 95


def test_events_json_round_trip(events):
    import json

    for e in events:
        assert from_dict(json.loads(json.dumps(to_dict(e)))) == e


def test_pooled_rates_weigh_each_run_by_its_drafts():
    """Acceptance by position over runs (a sweep's cell, a bench row group): accepted over drafted, summed over
    the runs, so a run that drafted more weighs more than in a mean of rates."""
    a = compute([make_start(), make_prefill(), *(make_pass(i, k=2, n_acc=2) for i in range(1, 4))])  # 3 x 2 of 2
    b = compute([make_start(), make_prefill(), make_pass(1, k=3, n_acc=0)])  # 1 pass: position 1 rejected
    assert [(p.position, p.drafted, p.accepted) for p in a.acceptance_by_position] == [(1, 3, 3), (2, 3, 3)]
    # every drafted token counts at its position, the discarded ones after a rejection too (vLLM's counters)
    assert [(p.position, p.drafted, p.accepted) for p in b.acceptance_by_position] == [(1, 1, 0), (2, 1, 0), (3, 1, 0)]
    assert pooled_rates([a, b]) == (3 / 4, 3 / 4, 0.0)  # a mean of the runs' rates would say (0.5, 0.5, 0.0)
    assert pooled_rates([]) == ()
