"""Cost model: the lesson's worked example, Leviathan's special case, measured vs extrapolated figures,
and the advice sentence, on synthetic snapshots and hand-built event streams."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
from synthetic_events import make_end, make_pass, make_pass_with_verdicts, make_prefill, make_start

from spectui.analysis.cost.costmodel import (
    conditional_rates,
    expected_tokens_per_pass,
    leviathan,
    predict,
    predict_from,
)
from spectui.analysis.cost.verify_time import verify_curve
from spectui.analysis.stats import PositionStat, StatsSnapshot, compute


def _snapshot_with_rate(a: float, positions: int, drafted: int = 100000, **kw) -> StatsSnapshot:
    """A snapshot whose per-position (vLLM) rates are a, a^2, ... (constant conditional rate a)."""
    pos = tuple(PositionStat(i, drafted, round(drafted * a**i)) for i in range(1, positions + 1))
    return StatsSnapshot(acceptance_by_position=pos, **kw)


def test_worked_example_of_the_lesson():
    # per-draft acceptance 0.7, a draft token costs 0.1 of a target pass, verification costs one pass
    snap = _snapshot_with_rate(0.7, 16, target_decode_ms=1.0, draft_ms_per_token=0.1)
    p = predict(snap, k_max=16, verify_ms_by_k={k: 1.0 for k in range(17)})
    assert p.tokens_per_pass_by_k[5] == pytest.approx(2.94, abs=0.005)
    assert p.speedup_by_k[5] == pytest.approx(1.96, abs=0.005)
    assert p.tokens_per_pass_by_k[10] == pytest.approx(3.27, abs=0.005)
    assert p.speedup_by_k[10] == pytest.approx(1.63, abs=0.005)
    assert p.tps_by_k[10] < p.tps_by_k[5]
    assert p.tps_by_k[0] == pytest.approx(1000.0)
    assert all(p.verify_measured_by_k)
    assert all(p.acceptance_measured_by_position)
    assert p.best_k in (3, 4)  # the optimum of this textbook case sits at k = 3..4
    assert p.speedup_by_k[p.best_k] >= p.speedup_by_k[5]


def test_worked_example_with_extrapolation():
    # only positions 1..3 measured and only the single decode time known: the tail rate (0.7) and the
    # flat verify assumption reproduce the same numbers, and are reported as not measured
    snap = _snapshot_with_rate(0.7, 3, target_decode_ms=1.0, draft_ms_per_token=0.1)
    p = predict(snap, k_max=12)
    assert p.tokens_per_pass_by_k[5] == pytest.approx(2.94, abs=0.005)
    assert p.speedup_by_k[10] == pytest.approx(1.63, abs=0.005)
    assert p.acceptance_measured_by_position == (True,) * 3 + (False,) * 9
    assert p.verify_measured_by_k == (True,) + (False,) * 12
    assert "flat" in p.verify_note
    assert "70%" in p.acceptance_note and "beyond 3" in p.acceptance_note


@pytest.mark.parametrize("a", [0.0, 0.3, 0.7, 0.95, 1.0])
@pytest.mark.parametrize("k", [0, 1, 2, 5, 10])
def test_leviathan_is_the_constant_rate_case(a, k):
    assert expected_tokens_per_pass([a] * k, k) == pytest.approx(leviathan(a, k))


def test_conditional_rates_from_vllm_counts():
    # 100 passes drafted 3 positions: 80 accepted the first, 60 the first two, 30 all three
    rates, weights = conditional_rates([(100, 80), (100, 60), (100, 30)])
    assert rates == pytest.approx([0.8, 0.75, 0.5])
    assert weights == pytest.approx([100, 80, 60])
    # a deeper position measured on fewer passes (mixed k) with a higher raw rate is clamped to 1
    rates, _ = conditional_rates([(10, 2), (3, 3)])
    assert rates == pytest.approx([0.2, 1.0])
    assert conditional_rates([]) == ([], [])


def test_verify_curve_interpolates_and_extrapolates_linearly():
    pts = {0: 85.0, 1: 124.0, 2: 149.0, 4: 167.0, 5: 190.0}
    v, meas, note = verify_curve(pts, 8)
    assert meas == [True, True, True, False, True, True, False, False, False]
    assert v[3] == pytest.approx((149.0 + 167.0) / 2)
    ks = list(pts)
    mk = sum(ks) / len(ks)
    mm = sum(pts.values()) / len(ks)
    slope = sum((k - mk) * (m - mm) for k, m in pts.items()) / sum((k - mk) ** 2 for k in ks)
    assert v[8] == pytest.approx(190.0 + 3 * slope)
    assert v[6] < v[7] < v[8]
    assert "least-squares" in note and "k=0,1,2,4,5" in note


def test_from_hand_built_events_measured_and_extrapolated():
    # k = 4 for 40 passes with accepted counts cycling 4,2,1,0 -> per-position reach 3/4, 2/4, 1/4, 1/4
    evs = [make_start(target_decode_ms=80.0), make_prefill()]
    pattern = [4, 2, 1, 0]
    for i in range(40):
        evs.append(make_pass(i + 1, 4, pattern[i % 4], draft_ms_per_token=20.0, verify_ms=120.0, other_ms=2.0))
    evs.append(make_end(40))
    snap = compute(evs)
    p = predict(snap, k_max=8)
    assert p.acceptance_measured_by_position == (True,) * 4 + (False,) * 4
    assert p.reach_by_position[:4] == pytest.approx((0.75, 0.5, 0.25, 0.25))
    assert p.acceptance_by_position[:4] == pytest.approx((0.75, 2 / 3, 0.5, 1.0))
    assert p.verify_measured_by_k[0] and p.verify_measured_by_k[4]
    assert not any(p.verify_measured_by_k[k] for k in (1, 2, 3, 5, 6, 7, 8))
    assert p.verify_ms_by_k[2] == pytest.approx(80.0 + 2 * 10.0)  # interpolated between 80 and 120
    assert p.other_ms_per_pass == pytest.approx(2.0)
    assert p.current_k == 4
    # predicted k = 4 matches the measured run exactly: same rates, same times
    assert p.tokens_per_pass_by_k[4] == pytest.approx(snap.tokens_per_pass)
    assert p.tps_by_k[4] == pytest.approx(snap.tokens_per_second)


def test_speculation_loses_on_the_measured_cpu_figures():
    # figures measured on this machine (NOTES): decode 85 ms, draft 44 ms/token, verify grows with k
    verify = {0: 85.0, 1: 124.0, 2: 149.0, 4: 167.0, 5: 190.0, 8: 250.0, 10: 284.0}
    rates = [0.8, 0.7, 0.7, 0.7, 0.65]
    p = predict_from(rates, [100] * 5, verify, 44.0, 0.0, k_max=16, current_k=2)
    assert p.best_k == 0
    assert max(p.speedup_by_k[1:]) < 1.0
    assert p.advice.startswith("verifying 3 tokens costs 1.8x one decode and a draft token costs 0.5x")
    assert "speculation loses here; best k = 0" in p.advice
    assert "(current k = 2:" in p.advice


def test_speculation_wins_with_a_cheap_draft_and_flat_verify():
    verify = {0: 85.0, 2: 90.0, 4: 95.0}
    p = predict_from([0.9] * 6, [50] * 6, verify, 4.0, 1.0, k_max=16, current_k=2)
    assert p.best_k > 2
    assert p.speedup_by_k[p.best_k] > 2.0
    assert f"best k = {p.best_k}" in p.advice
    assert "90% acceptance" in p.advice


def test_no_data_is_not_an_error():
    p = predict(StatsSnapshot())
    assert not p.ready
    assert p.best_k == 0
    assert p.advice == "no timings measured yet: nothing to predict"
    assert len(p.tps_by_k) == 17 and all(t == 0.0 for t in p.tps_by_k)
    # decode time known but nothing drafted yet
    p = predict(StatsSnapshot(target_decode_ms=85.0))
    assert p.ready and p.tps_by_k[0] == pytest.approx(1000 / 85)
    assert "acceptance is unknown" in p.advice
    assert not any(p.acceptance_measured_by_position)


def test_numbers_are_finite_and_consistent():
    snap = _snapshot_with_rate(0.55, 5, target_decode_ms=50.0, draft_ms_per_token=10.0,
                               verify_ms_by_k=((0, 50.0, 10), (5, 90.0, 20)), other_ms_total=30.0, n_passes=30)
    p = predict(snap)
    for k in range(p.k_max + 1):
        assert math.isfinite(p.tps_by_k[k]) and p.tps_by_k[k] > 0
        assert p.ms_per_pass_by_k[k] == pytest.approx(k * 10.0 + p.verify_ms_by_k[k] + 1.0)
        assert p.tps_by_k[k] == pytest.approx(1000 * p.tokens_per_pass_by_k[k] / p.ms_per_pass_by_k[k])
    assert p.best_tps == max(p.tps_by_k)
    assert "measured" in p.describe_k(5) and "extrapolated" in p.describe_k(7)


def test_core_modules_do_not_import_textual():
    code = ("import sys, spectui.analysis.cost.costmodel, spectui.analysis.cost.draft_policy; "
            "print('textual' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_draft_cost_has_a_fixed_part_per_pass():
    """Drafting k tokens = fixed + k * per-token, the per-token slope from the start's calibration."""
    from spectui.contract.events import ACCEPTED, PLAIN, REJECTED, RunStarted, Settings

    def p(i, k, draft_ms):  # the first draft accepted, the others rejected
        verdicts = [ACCEPTED] + [REJECTED] * (k - 1)
        return make_pass_with_verdicts(i, verdicts, PLAIN, wall=draft_ms + 50.0, draft_ms=draft_ms, verify_ms=50.0)

    start = RunStarted(target_decode_ms=30.0, draft_decode_ms=18.0, settings=Settings(draft_max=4))
    events = [start] + [p(i, 4, 12.0 + 4 * 18.0) for i in range(1, 11)]  # 84 ms of drafting per pass
    pred = predict(compute(events), k_max=8)
    assert pred.draft_ms_per_token == pytest.approx(18.0)
    assert pred.draft_ms_fixed == pytest.approx(12.0)
    # a k = 1 pass: 12 + 18 ms of drafting + the verify time of k = 1 (50 ms, the only measured size)
    assert pred.ms_per_pass_by_k[1] == pytest.approx(12.0 + 18.0 + pred.verify_ms_by_k[1])
    assert pred.ms_per_pass_by_k[0] == pytest.approx(30.0)  # no drafting at k = 0
    # without a calibration the average per token is used, with no fixed part (the older model)
    pred2 = predict(compute([RunStarted(target_decode_ms=30.0)] + events[1:]), k_max=8)
    assert pred2.draft_ms_fixed == 0.0 and pred2.draft_ms_per_token == pytest.approx(21.0)


# ---------------------------------------------------------------- the hardware's curve (spectui probe)


def test_curve_replaces_the_straight_line_exact_arithmetic():
    from spectui.analysis.cost.verify_time import SRC_CURVE, SRC_EXTRAPOLATED, SRC_RUN, verify_sources

    curve = {0: 10.0, 1: 12.0, 2: 14.0, 3: 16.0}  # 2 ms per extra token
    # the run measured k = 0 at 20 ms: the curve's shape at twice its level
    v, src, note = verify_sources({0: 20.0}, 5, curve)
    assert v == pytest.approx([20.0, 24.0, 28.0, 32.0, 36.0, 40.0])
    assert src == [SRC_RUN, SRC_CURVE, SRC_CURVE, SRC_CURVE, SRC_EXTRAPOLATED, SRC_EXTRAPOLATED]
    assert "probe's curve" in note and "x2.00" in note
    # two measured sizes: measured values kept, the others scaled by sum(measured) / sum(curve)
    v, src, _ = verify_sources({0: 10.0, 2: 21.0}, 3, {0: 10.0, 1: 15.0, 2: 20.0, 3: 25.0})
    assert v == pytest.approx([10.0, 15.0 * 31 / 30, 21.0, 25.0 * 31 / 30])
    # nothing measured in the run: the curve as it is
    v, _, _ = verify_sources({}, 3, curve)
    assert v == pytest.approx([10.0, 12.0, 14.0, 16.0])
    # the scale is not clamped: the shape is what the curve knows
    v, _, _ = verify_sources({0: 100.0}, 1, {0: 10.0, 1: 20.0})
    assert v == pytest.approx([100.0, 200.0])
    # verify_curve: the measured flags are the run's only
    v2, meas, _ = verify_curve({0: 20.0}, 3, curve)
    assert meas == [True, False, False, False] and v2 == pytest.approx([20.0, 24.0, 28.0, 32.0])


def test_predict_from_with_a_flat_curve_and_certain_acceptance():
    # memory-bound: a verify of any size costs one decode (10 ms); drafts free and always accepted
    p = predict_from([1.0] * 4, [1.0] * 4, {}, 0.0, k_max=4, curve={k: 10.0 for k in range(17)})
    assert p.tps_by_k == pytest.approx((100.0, 200.0, 300.0, 400.0, 500.0))
    assert p.best_k == 4 and p.verify_source_by_k == ("probe",) * 5
    assert "from the probe's curve" in p.describe_k(2)


def test_predict_uses_the_curve_instead_of_linear_extrapolation():
    # the run measured k = 0 and 1; linear extrapolation would add 10 ms per token for ever, the
    # curve (the Qwen ratios, rising ever more slowly) says otherwise
    snap = _snapshot_with_rate(0.7, 4, target_decode_ms=26.0, draft_ms_per_token=15.6,
                               verify_ms_by_k=((1, 36.0, 50),))
    lin = predict(snap, k_max=15)
    ratios = (1.0, 1.70, 2.15, 2.54, 2.9, 3.3, 3.7, 4.36, 4.5, 4.6, 4.7, 4.8, 4.9, 5.0, 5.1, 5.27)
    curve = {k: 26.0 * r for k, r in enumerate(ratios)}
    p = predict(snap, k_max=15, curve=curve)
    assert lin.verify_ms_by_k[15] == pytest.approx(36.0 + 10.0 * 14)
    scale = (26.0 + 36.0) / (26.0 + 26.0 * 1.70)
    assert p.verify_ms_by_k[15] == pytest.approx(26.0 * 5.27 * scale)
    assert p.verify_ms_by_k[:2] == pytest.approx((26.0, 36.0))
    assert p.verify_measured_by_k[:3] == (True, True, False)
    assert p.best_k == 0
