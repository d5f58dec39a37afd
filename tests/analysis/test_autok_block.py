"""``--draft-max auto`` with a block drafter (DFlash, DSpark): the cost policy prices its draft by the one
pass that proposes the whole block, as the run measures that pass's cost by k, so an extra draft token costs
the verify's extra row and not a draft step, and auto drafts a longer block than it would let a draft model
draft with the same acceptance and the same cost per draft step."""

from __future__ import annotations

import random
import statistics
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from synthetic_events import make_pass, make_prefill, make_start  # noqa: E402

from spectui.analysis.cost.draft_cost import DraftCost, block_line  # noqa: E402
from spectui.analysis.cost.draft_policy import CostPolicy  # noqa: E402
from spectui.contract.events import Settings, SettingsChanged  # noqa: E402

RATE = 0.85  # per-draft acceptance, the same for both drafters
STEP_MS = 12.0  # one draft step: a draft model's decode of one token, a block drafter's pass for the whole block
PASS_GROWTH_MS = 0.05  # what a block pass measurably grows by per extra slot (a few rows more in one batch)
V0, V_SLOPE, OTHER = 20.0, 1.0, 1.0  # the target's verify of k + 1 rows: V0 + V_SLOPE * k ms


def _drive(drafter: str, n_passes: int = 400, seed: int = 3) -> tuple[CostPolicy, list[int]]:
    """A run of ``n_passes`` under auto; the draft time is what such a drafter measures: ``STEP_MS`` per token
    for a draft model, one ``STEP_MS`` pass (growing ``PASS_GROWTH_MS`` a slot) for a block drafter."""
    rng = random.Random(seed)
    settings = Settings(draft_max=2, auto="cost", drafter=drafter)
    pol = CostPolicy()
    pol.observe(make_start(target_decode_ms=V0, draft_decode_ms=STEP_MS, settings=settings))
    pol.observe(make_prefill())
    ks = []
    for i in range(n_passes):
        k = pol.choose(settings)
        n_acc = 0
        while n_acc < k and rng.random() < RATE:
            n_acc += 1
        per_token = STEP_MS if drafter == "model" else (STEP_MS + PASS_GROWTH_MS * k) / max(k, 1)
        pol.observe(make_pass(i + 1, k, n_acc, draft_ms_per_token=per_token if k else 0.0,
                              verify_ms=V0 + V_SLOPE * k, other_ms=OTHER, settings=settings))
        ks.append(k)
    return pol, ks


@pytest.mark.parametrize("block", ["dflash", "dspark"])
def test_auto_drafts_a_longer_block_than_a_draft_model_with_the_same_acceptance_and_step(block):
    model_pol, model_ks = _drive("model")
    block_pol, block_ks = _drive(block)
    model_k, block_k = statistics.median(model_ks[-150:]), statistics.median(block_ks[-150:])
    assert 1 <= model_k < block_k, (model_k, block_k)
    assert block_k >= 2 * model_k, (model_k, block_k)
    # the draft model is priced per drafted token, the block per pass, as the run measured it by k
    assert model_pol.draft.costs() == (pytest.approx(STEP_MS), 0.0)
    slope, fixed = block_pol.draft.costs()
    assert slope == pytest.approx(PASS_GROWTH_MS, abs=1e-6) and fixed == pytest.approx(STEP_MS, abs=1e-4)
    # so the predicted pass time grows by the verify's extra row (and the pass's measured growth), not a step
    pred = block_pol.prediction()
    grows = [b - a for a, b in zip(pred.ms_per_pass_by_k[1:], pred.ms_per_pass_by_k[2:])]
    assert grows and max(grows) < V_SLOPE + PASS_GROWTH_MS + 1e-6 < STEP_MS
    assert pred.best_k == pytest.approx(block_k, abs=2)


def test_block_line_is_the_measured_pass_cost_by_k():
    assert block_line({}, 7.0) == (0.0, 7.0)  # nothing measured: one draft decode (the start's calibration)
    assert block_line({4: 9.0}, 7.0) == (0.0, 9.0)  # one size measured: flat at its cost
    slope, fixed = block_line({2: 10.2, 4: 10.4, 8: 10.8}, 7.0)
    assert slope == pytest.approx(0.1) and fixed == pytest.approx(10.0)
    assert block_line({2: 11.0, 8: 10.0}, 7.0) == (0.0, pytest.approx(10.5))  # never cheaper with more slots
    slope, fixed = block_line({1: 1.0, 7: 1.2, 15: 6.0}, 7.0)  # grows faster than in proportion: through 0
    assert fixed == 0.0 and slope == pytest.approx((1.0 + 7 * 1.2 + 15 * 6.0) / (1 + 49 + 225))


def test_a_switch_to_a_block_drafter_reprices_the_draft():
    s_model = Settings(draft_max=4, auto="cost", drafter="model")
    s_block = Settings(draft_max=4, auto="cost", drafter="dflash")
    pol = CostPolicy()
    pol.observe(make_start(target_decode_ms=V0, draft_decode_ms=STEP_MS, settings=s_model))
    for i in range(1, 4):
        pol.observe(make_pass(i, 4, 2, draft_ms_per_token=STEP_MS, verify_ms=V0 + 4, settings=s_model))
    assert pol.draft.costs() == (pytest.approx(STEP_MS), 0.0)
    pol.observe(SettingsChanged(before_pass=4, old=s_model, new=s_block))
    assert pol.draft.costs() == (0.0, STEP_MS)  # before its passes: the calibration, as one pass
    for i in range(4, 7):
        pol.observe(make_pass(i, 6, 2, draft_ms_per_token=STEP_MS / 6, verify_ms=V0 + 6, settings=s_block))
    assert pol.draft.costs() == (0.0, pytest.approx(STEP_MS))
    assert isinstance(pol.draft, DraftCost) and pol.draft_ms_per_token == pytest.approx(STEP_MS)


def test_a_block_drafter_in_a_chain_is_priced_by_its_pass():
    from dataclasses import replace

    chain = Settings(draft_max=6, auto="cost", drafter="ngram-mod,dflash")
    pol = CostPolicy()
    pol.observe(make_start(target_decode_ms=V0, draft_decode_ms=STEP_MS, settings=chain))
    for i in range(1, 6):
        k = pol.choose(chain)
        ev = make_pass(i, 6, 2, draft_ms_per_token=STEP_MS / 6, verify_ms=V0 + 6, settings=chain)
        pol.observe(replace(ev, drafter="dflash"))
        assert k >= 1
    member = pol.chain.policies["dflash"]
    assert member.draft.drafter == "dflash" and member.draft.costs() == (0.0, pytest.approx(STEP_MS))
    assert pol.chain.policies["ngram-mod"].draft.costs()[0] == 0.0  # a lookup: per pass too, none measured
