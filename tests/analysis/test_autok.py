"""Auto draft length: the cost policy and HF's schedule, on synthetic worlds (hand-built PassEvents with
seeded Bernoulli acceptance and fixed timings), so every expectation can be computed exactly."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from synthetic_events import make_pass, make_prefill, make_start

from spectui.analysis.cost.costmodel import leviathan
from spectui.analysis.cost.draft_policy import (
    MIN_WEIGHT,
    PROBE_MAX,
    WARMUP_K,
    WARMUP_PASSES,
    CostPolicy,
    SchedulePolicy,
    make_policy,
)
from spectui.contract.errors import SpectuiError
from spectui.contract.events import MachineProbe, Settings, SettingsChanged


class World:
    """A speculative loop whose acceptance and costs we choose: constant per-draft rate ``a``,
    draft ``d`` ms per token, verify ``v0 + slope * k`` ms, ``other`` ms per pass."""

    def __init__(self, a, d, v0, slope, other=1.0, seed=0, catch_up=0.0):
        self.a, self.d, self.v0, self.slope, self.other = a, d, v0, slope, other
        self.catch_up = catch_up  # extra draft ms per token the draft model skipped while k was 0
        self.skipped = 0
        self.rng = random.Random(seed)
        self.index = 0

    def pass_event(self, k):
        n_acc = 0
        while n_acc < k and self.rng.random() < self.a:
            n_acc += 1
        self.index += 1
        extra = 0.0
        if k == 0:
            self.skipped += 1
        else:
            extra, self.skipped = self.catch_up * self.skipped, 0
        return make_pass(self.index, k, n_acc, draft_ms_per_token=self.d + extra / max(k, 1),
                         verify_ms=self.v0 + self.slope * k, other_ms=self.other)

    def expected_tps(self, k):
        return 1000.0 * leviathan(self.a, k) / (k * self.d + self.v0 + self.slope * k + self.other)

    def best_fixed(self, k_max=16):
        return max(range(k_max + 1), key=self.expected_tps)


def drive(policy, world, n_passes, settings=None, start=None):
    settings = settings or Settings(draft_max=2, auto="cost")
    policy.observe(start or make_start(target_decode_ms=world.v0, draft_decode_ms=world.d, settings=settings))
    policy.observe(make_prefill())
    ks, tokens, ms = [], 0, 0.0
    for _ in range(n_passes):
        k = policy.choose(settings)
        assert 0 <= k <= 32
        ev = world.pass_event(k)
        policy.observe(ev)
        ks.append(k)
        tokens += len(ev.emitted)
        ms += ev.timing.wall_ms
    return ks, 1000.0 * tokens / ms


def test_make_policy_modes():
    assert isinstance(make_policy("cost"), CostPolicy)
    assert isinstance(make_policy("auto"), CostPolicy)
    assert isinstance(make_policy("schedule"), SchedulePolicy)
    with pytest.raises(SpectuiError, match="unknown automatic draft-length mode 'fast'"):
        make_policy("fast")


def test_schedule_plus_two_minus_one():
    pol = make_policy("schedule")
    s = Settings(draft_max=3, auto="schedule")
    pol.observe(make_start(settings=s))
    pol.observe(make_prefill())
    seen = []
    # full, full, partial, partial, partial, partial, partial, full
    for full in [True, True, False, False, False, False, False, False, False, False, True]:
        k = pol.choose(s)
        seen.append(k)
        pol.observe(make_pass(len(seen), k, k if full else 0))
    assert seen == [3, 5, 7, 6, 5, 4, 3, 2, 1, 1, 1]
    assert pol.choose(s) == 3
    # starts at 5 when draft_max is 0, never exceeds 32
    pol = make_policy("schedule")
    s0 = Settings(draft_max=0, auto="schedule")
    pol.observe(make_start(settings=s0))
    assert pol.choose(s0) == 5
    for i in range(20):
        k = pol.choose(s0)
        pol.observe(make_pass(i + 1, k, k))
    assert pol.choose(s0) == 32
    # a pass where the drafter proposed fewer than k tokens is not a full pass
    pol = make_policy("schedule")
    pol.observe(make_start(settings=s))
    k = pol.choose(s)
    short = make_pass(1, 2, 2)
    from dataclasses import replace
    pol.observe(replace(short, k=k))
    assert pol.choose(s) == k - 1


def test_cost_policy_switches_speculation_off_when_it_loses():
    # the CPU case measured here: decode 85 ms, draft 44 ms/token, verify +20 ms per draft, a = 0.6
    world = World(a=0.6, d=44.0, v0=85.0, slope=20.0)
    assert world.best_fixed() == 0
    pol = make_policy("cost")
    ks, tps = drive(pol, world, 400)
    assert ks.count(0) >= 0.95 * len(ks)
    assert tps >= 0.95 * world.expected_tps(0)
    assert "speculation loses" in pol.last_reason or pol.last_reason.startswith("probe")
    # it keeps re-probing, less often as the probes keep confirming k = 0
    probes = [i for i, k in enumerate(ks[5:], 5) if k > 0]
    assert len(probes) >= 3
    gaps = [b - a for a, b in zip(probes, probes[1:])]
    assert gaps[-1] > gaps[0]
    assert max(gaps) <= PROBE_MAX + 1


def test_cost_policy_finds_a_good_k_when_speculation_pays():
    # cheap draft, nearly flat verify, high acceptance: the textbook GPU case
    world = World(a=0.85, d=5.0, v0=85.0, slope=1.0)
    best = world.best_fixed()
    assert best >= 5
    pol = make_policy("cost")
    ks, tps = drive(pol, world, 400)
    tail = ks[100:]
    assert min(tail) >= 3
    assert tps >= 0.95 * world.expected_tps(best)
    assert pol.last_prediction is not None and pol.last_prediction.best_k >= 3


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_cost_policy_near_the_best_fixed_k_in_between(seed):
    # moderate case: speculation pays a little; auto must stay within 5% of the best fixed k
    world = World(a=0.7, d=10.0, v0=85.0, slope=8.0, seed=seed)
    best = world.best_fixed()
    assert 1 <= best <= 4
    ks, tps = drive(make_policy("cost"), world, 500)
    assert tps >= 0.95 * world.expected_tps(best)


def test_cost_policy_notices_when_acceptance_recovers():
    pol = make_policy("cost")
    bad = World(a=0.05, d=5.0, v0=85.0, slope=1.0, seed=4)
    ks_bad, _ = drive(pol, bad, 150)
    assert ks_bad[-20:].count(0) >= 18
    good = World(a=0.9, d=5.0, v0=85.0, slope=1.0, seed=5)
    good.index = bad.index
    ks = []
    s = Settings(draft_max=2, auto="cost")
    for _ in range(PROBE_MAX + 60):
        k = pol.choose(s)
        pol.observe(good.pass_event(k))
        ks.append(k)
    first = next(i for i, k in enumerate(ks) if k > 0)
    assert first <= PROBE_MAX
    # once noticed, it keeps speculating, and within a few dozen passes (the old acceptance fades
    # with ACC_DECAY per observation) drafts long
    assert 0 not in ks[first:]
    assert min(ks[first + 60:]) >= 5


def test_cost_policy_resets_acceptance_on_temperature_change():
    pol = make_policy("cost")
    world = World(a=0.9, d=5.0, v0=85.0, slope=1.0)
    s = Settings(draft_max=2, auto="cost")
    drive(pol, world, 60, settings=s)
    assert pol.rates()[0]
    new = Settings(draft_max=2, temperature=0.8, auto="cost")
    pol.observe(SettingsChanged(before_pass=61, old=s, new=new))
    assert pol.rates() == ([], [])
    assert pol.choose(new) == WARMUP_K and pol.last_reason.startswith("warm-up")
    # a change of k alone (what the policy itself does) keeps what was learnt
    pol2 = make_policy("cost")
    drive(pol2, world, 60, settings=s)
    pol2.observe(SettingsChanged(before_pass=61, old=s, new=Settings(draft_max=7, auto="cost")))
    assert pol2.rates()[0]


def test_cost_policy_draft_cost_ignores_catch_up_passes():
    pol = make_policy("cost")
    s = Settings(draft_max=2, auto="cost")
    pol.observe(make_start(target_decode_ms=85.0, draft_decode_ms=40.0, settings=s))
    pol.observe(make_prefill())
    pol.observe(make_pass(1, 2, 1, draft_ms_per_token=400.0, verify_ms=120.0))  # first pass: catch-up
    pol.observe(make_pass(2, 2, 1, draft_ms_per_token=40.0, verify_ms=120.0))
    assert pol.draft_ms_per_token == pytest.approx(40.0)
    pol.observe(make_pass(3, 0, 0, verify_ms=85.0))
    pol.observe(make_pass(4, 2, 1, draft_ms_per_token=300.0, verify_ms=120.0))  # after k = 0: catch-up
    assert pol.draft_ms_per_token == pytest.approx(40.0)
    pol.observe(make_pass(5, 2, 1, draft_ms_per_token=48.0, verify_ms=120.0))
    assert pol.draft_ms_per_token == pytest.approx(42.0)


def test_no_drafter_means_k_zero():
    s = Settings(draft_max=4, drafter="none", auto="cost")
    assert make_policy("cost").choose(s) == 0
    assert make_policy("schedule").choose(s) == 0


def test_probes_back_off_to_the_maximum_when_catching_up_costs_more_than_the_budget():
    # the draft model must catch up on every token it skipped at k = 0 (3 ms each here, 3.5% of a
    # decode): no probe interval keeps that within PROBE_BUDGET, so after one probe it waits PROBE_MAX
    world = World(a=0.6, d=44.0, v0=85.0, slope=20.0, catch_up=3.0)
    assert world.best_fixed() == 0
    pol = make_policy("cost")
    ks, tps = drive(pol, world, 128)
    assert tps >= 0.96 * world.expected_tps(0)
    assert pol.probe_every == PROBE_MAX
    ks, _ = drive(make_policy("cost"), World(a=0.6, d=44.0, v0=85.0, slope=20.0, catch_up=3.0), 800)
    zero_stretch_starts = [i for i in range(1, len(ks)) if ks[i] > 0 and ks[i - 1] == 0]
    assert 2 <= len(zero_stretch_starts) <= 2 + 800 // PROBE_MAX


def test_settles_at_once_when_even_perfect_acceptance_cannot_pay():
    # the Qwen pair measured on a quiet 2-core machine: decode 34 ms, draft 21 ms/token, verify 34 + 25 k
    # ms, catch-up 5.3 ms per skipped token: k = 1 yields at most 2 tokens in 80 ms > 2 x 35 ms
    for a in (0.5, 0.95):
        world = World(a=a, d=21.0, v0=34.0, slope=25.0, catch_up=5.3)
        pol = make_policy("cost")
        ks, tps = drive(pol, world, 128)
        assert ks[:WARMUP_PASSES] == [WARMUP_K] * WARMUP_PASSES
        assert sum(1 for k in ks if k) == WARMUP_PASSES  # no exploring, no probe within PROBE_MAX
        assert pol.bound_prediction().best_k == 0
        assert tps >= 0.97 * world.expected_tps(0)
        assert pol.last_reason == "speculation loses: k = 0"


# ---------------------------------------------------------------- with the hardware's curve (spectui probe)

QWEN_RATIOS = (1.0, 1.70, 2.15, 2.54, 2.9, 3.3, 3.7, 4.36, 4.5, 4.6, 4.7, 4.8, 4.9, 5.0, 5.1, 5.27)


class CurveWorld(World):
    """A world whose verify cost follows a curve of ratios to one decode (k -> ratios[k] * v0)."""

    def __init__(self, a, d, v0, ratios, **kw):
        super().__init__(a, d, v0, 0.0, **kw)
        self.ratios = ratios

    def pass_event(self, k):
        ev = super().pass_event(k)
        from dataclasses import replace
        t = ev.timing
        v = self.v0 * self.ratios[k]
        return replace(ev, timing=replace(t, verify_ms=v, wall_ms=t.wall_ms - t.verify_ms + v))

    def expected_tps(self, k):
        return 1000.0 * leviathan(self.a, k) / (k * self.d + self.v0 * self.ratios[k] + self.other)

    def best_fixed(self, k_max=15):
        return max(range(k_max + 1), key=self.expected_tps)


def test_curve_that_cannot_pay_settles_on_k0_from_the_first_pass():
    # the Qwen curve with c = 0.6: only k = 15 at 98.5% per draft would break even
    curve = {k: 26.0 * r for k, r in enumerate(QWEN_RATIOS)}
    for a in (0.6, 0.9):
        world = CurveWorld(a=a, d=15.6, v0=26.0, ratios=QWEN_RATIOS, catch_up=5.0)
        assert world.best_fixed() == 0
        pol = make_policy("cost", curve=curve)
        ks, tps = drive(pol, world, 128)
        assert ks == [0] * 128  # no warm-up, no exploring, no probes
        assert tps == pytest.approx(world.expected_tps(0))
        assert "probe's curve" in pol.last_reason
    # the same world without the curve spends passes learning what the curve knew
    ks, _ = drive(make_policy("cost"), CurveWorld(a=0.6, d=15.6, v0=26.0, ratios=QWEN_RATIOS), 128)
    assert sum(1 for k in ks if k) >= WARMUP_PASSES


def test_curve_level_follows_the_run():
    # a curve measured on a quiet machine, a run twice as slow: the decision is the curve's shape
    curve = {k: 13.0 * r for k, r in enumerate(QWEN_RATIOS)}
    world = CurveWorld(a=0.7, d=15.6, v0=26.0, ratios=QWEN_RATIOS)
    ks, _ = drive(make_policy("cost", curve=curve), world, 32)
    assert ks == [0] * 32


def test_flat_curve_and_high_acceptance_drafts_long():
    # memory-bound (a GPU): verify costs one decode at any size; cheap draft, 90% acceptance
    flat = tuple(1.0 + 0.01 * k for k in range(17))
    world = CurveWorld(a=0.9, d=2.0, v0=20.0, ratios=flat + (flat[-1],) * 16)
    best = world.best_fixed(16)
    assert best >= 8
    pol = make_policy("cost", curve={k: 20.0 * r for k, r in enumerate(flat)})
    ks, tps = drive(pol, world, 300)
    assert ks[0] > 0 and min(ks) > 0  # never k = 0
    assert min(ks[60:]) >= 5
    assert tps >= 0.95 * world.expected_tps(best)


def test_prompt_lookup_is_not_judged_at_the_draft_models_price():
    # the Qwen curve with the ngram drafter: drafts cost ~0, so k = 1 pays at 70% acceptance; the
    # draft model's calibration (15.6 ms) must not make the policy settle on k = 0
    curve = {k: 26.0 * r for k, r in enumerate(QWEN_RATIOS)}
    s = Settings(draft_max=2, auto="cost", drafter="ngram")
    world = CurveWorld(a=0.9, d=0.05, v0=26.0, ratios=QWEN_RATIOS)
    pol = make_policy("cost", curve=curve)
    ks, tps = drive(pol, world, 200, settings=s,
                    start=make_start(target_decode_ms=26.0, draft_decode_ms=15.6, settings=s))
    assert ks[0] == WARMUP_K
    assert sum(1 for k in ks[20:] if k > 0) >= 0.9 * len(ks[20:])
    # (the best fixed k here is 14 at 59 t/s; the policy's prior makes deep positions look worse until
    # drafted, so it settles on 4-5: 53 t/s, within 0.9x)
    assert tps >= 1.3 * world.expected_tps(0) and tps >= 0.85 * world.expected_tps(world.best_fixed())


def test_the_start_events_probe_curve_reaches_the_policy():
    """The probe's curve travels with the run (RunStarted.probe): no registry, nothing to clean up."""
    from dataclasses import replace

    curve = {k: 26.0 * r for k, r in enumerate(QWEN_RATIOS)}
    probe = MachineProbe(verify_ms_by_batch=tuple(curve[k] for k in sorted(curve)))
    world = CurveWorld(a=0.9, d=15.6, v0=26.0, ratios=QWEN_RATIOS)
    start = replace(make_start(target_decode_ms=world.v0, draft_decode_ms=world.d,
                               settings=Settings(draft_max=2, auto="cost")), probe=probe)
    pol = make_policy("cost")
    ks, _ = drive(pol, world, 16, start=start)
    assert pol.curve == curve
    assert ks == [0] * 16
    pol = make_policy("cost")
    pol.observe(make_start())  # a run without a probe: no curve
    assert pol.curve is None


def test_policy_by_mode_memory_is_flat_and_a_mode_switched_on_mid_run_knows_the_run():
    """The engine hands every event to one PolicyByMode and keeps nothing else: what the policies keep
    is aggregates (decayed rates per position, EWMAs per batch size), so their size does not grow with
    the passes; and a mode switched on mid-run has learned from every pass before it."""
    import pickle

    from spectui.analysis.cost.draft_policy import PolicyByMode

    def run(n_passes, switch_at=None):
        pol = PolicyByMode()
        world = World(a=0.8, d=2.0, v0=30.0, slope=0.5)
        fixed = Settings(draft_max=3)
        auto = Settings(draft_max=3, auto="cost")
        pol.observe(make_start(target_decode_ms=world.v0, draft_decode_ms=world.d, settings=fixed))
        pol.observe(make_prefill())
        for i in range(n_passes):
            s = auto if switch_at is not None and i >= switch_at else fixed
            k = pol.choose(s) if s.auto else s.draft_max
            ev = world.pass_event(k)
            pol.observe(replace(ev, settings=s))
        return pol

    sizes = [len(pickle.dumps(run(n))) for n in (200, 2000, 8000)]
    assert max(sizes) <= 1.05 * sizes[0], sizes  # 40x the passes, the same few hundred bytes
    pol = run(120, switch_at=100)
    cost = pol.current("cost")
    assert cost.n_decode_passes == 120  # it saw the 100 passes before it was switched on
    assert cost.positions and cost.positions[0].trials > MIN_WEIGHT  # and learned acceptance from them
    assert cost.last_reason and not cost.last_reason.startswith("warm-up")


def test_without_a_probe_the_verify_costs_come_from_the_runs_own_passes():
    """A first run (no probe cached, RunStarted.probe None): every batch size the run has verified is a
    measured point of the model, at the run's own figure, from the first pass that used it."""
    world = World(a=0.85, d=5.0, v0=85.0, slope=1.0)
    pol = make_policy("cost")
    seen = []
    settings = Settings(draft_max=2, auto="cost")
    pol.observe(make_start(target_decode_ms=world.v0, draft_decode_ms=world.d, settings=settings))
    pol.observe(make_prefill())
    assert pol.curve is None
    for _ in range(60):
        k = pol.choose(settings)
        pol.observe(world.pass_event(k))
        seen.append(k)
        pred = pol.prediction()
        for used in {x for x in seen if 0 < x <= pred.k_max}:
            assert pred.verify_measured_by_k[used]
            assert pred.verify_ms_by_k[used] == pytest.approx(world.v0 + world.slope * used)
    assert len({x for x in seen if x > 0}) >= 2  # it verified more than one size: it learned as it went


def test_the_policy_the_engine_is_handed_is_a_draft_policy():
    """engine/run/policy.py's protocol is what analysis' PolicyByMode offers (observe, choose), and the engine's
    factory type names it: the engine never imports a policy."""
    from spectui.analysis.cost.draft_policy import PolicyByMode
    from spectui.engine.run.policy import DraftPolicy

    policy = PolicyByMode()
    assert isinstance(policy, DraftPolicy)
    policy.observe(make_start())
    assert isinstance(policy.choose(Settings(draft_max=4, auto="cost")), int)
