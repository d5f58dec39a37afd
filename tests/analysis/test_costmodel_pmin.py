"""Cost model and auto k with drafting that stops early (--draft-p-min, short n-gram matches): a pass asked
for k drafts L <= k tokens, L distributed by the continuation rates c_i; the prediction weighs drafting and
verify time by that distribution (see spectui/analysis/cost/costmodel.py's definitions). Synthetic events, then one run
of the real engine on the tiny models."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from synthetic_events import make_end, make_pass, make_prefill, make_start

from spectui.analysis.cost.costmodel import conditional_rates, predict, predict_from
from spectui.analysis.cost.draft_policy import CostPolicy
from spectui.analysis.stats import ContinueStat, compute
from spectui.contract.control import RunControl
from spectui.contract.events import (
    DRAFT_STOP_K,
    DRAFT_STOP_NO_MATCH,
    DRAFT_STOP_P_MIN,
    PassEvent,
    RunEnded,
    Settings,
    SettingsChanged,
    Timing,
)

PMIN = Settings(draft_max=4, draft_p_min=0.5)


class PminWorld:
    """Passes from a known process: drafting continues at position i with chance c_i (held at c[-1] beyond),
    draft i is accepted (given drafts 1..i-1 were) with chance a_i (held at a[-1]); fixed timings: drafting
    ``fixed + L * d`` ms, verifying ``v0 + slope * L`` ms, ``other`` ms a pass."""

    def __init__(self, c, a, *, d=3.0, fixed=1.0, v0=20.0, slope=2.0, other=0.5, seed=0,
                 stop=DRAFT_STOP_P_MIN, settings=PMIN):
        self.c, self.a = list(c), list(a)
        self.d, self.fixed, self.v0, self.slope, self.other = d, fixed, v0, slope, other
        self.rng = random.Random(seed)
        self.stop = stop
        self.settings = settings
        self.index = 0

    def _rate(self, rates, i):
        return rates[i] if i < len(rates) else rates[-1]

    def pass_event(self, k: int) -> PassEvent:
        n = 0
        while n < k and self.rng.random() < self._rate(self.c, n):
            n += 1
        n_acc = 0
        while n_acc < n and self.rng.random() < self._rate(self.a, n_acc):
            n_acc += 1
        self.index += 1
        ev = make_pass(self.index, n, n_acc, settings=replace(self.settings, draft_max=k))
        draft_ms = self.fixed + n * self.d if k > 0 else 0.0
        verify_ms = self.v0 + self.slope * n
        timing = Timing(draft_ms=draft_ms, verify_ms=verify_ms, other_ms=self.other,
                        wall_ms=draft_ms + verify_ms + self.other, t_end=self.index * 0.03)
        stop = "" if k == 0 else (DRAFT_STOP_K if n == k else self.stop)
        return replace(ev, k=k, timing=timing, draft_stop=stop)

    def run(self, k: int, n_passes: int) -> list:
        evs = [make_start(target_decode_ms=self.v0, draft_decode_ms=self.d, settings=replace(self.settings,
                                                                                               draft_max=k)),
               make_prefill()]
        evs += [self.pass_event(k) for _ in range(n_passes)]
        return evs + [make_end(n_passes)]


def _today(a, points, d, other, k_max, fixed):
    """The prediction as the cost model made it before drafting could stop early, computed here from the
    conditional acceptance a_1..a_kmax (tail filled in)."""
    reach, r = [], 1.0
    for x in a:
        r *= x
        reach.append(r)
    tpp = [1.0 + sum(reach[:k]) for k in range(k_max + 1)]
    v = [points[k] for k in range(k_max + 1)]
    ms = [(fixed + k * d if k > 0 else 0.0) + v[k] + other for k in range(k_max + 1)]
    return tpp, ms, [1000.0 * t / m for t, m in zip(tpp, ms)]


# ---------------------------------------------------------------- c = 1: exactly today's numbers


def test_continuation_of_one_reproduces_todays_prediction_exactly():
    rates, weights = [0.8, 0.75, 0.7, 0.7], [100.0, 80.0, 60.0, 42.0]
    points = {k: 20.0 + 2.5 * k for k in range(9)}
    old = predict_from(rates, weights, points, 3.0, 0.5, k_max=8, current_k=4, draft_ms_fixed=1.25)
    new = predict_from(rates, weights, points, 3.0, 0.5, k_max=8, current_k=4, draft_ms_fixed=1.25,
                       continue_rates=[1.0] * 4, continue_weights=[100.0, 100.0, 100.0, 100.0])
    tail = (0.75 * 80.0 + 0.7 * 60.0 + 0.7 * 42.0) / (80.0 + 60.0 + 42.0)  # the acceptance tail rule
    assert old.acceptance_by_position == pytest.approx(rates + [tail] * 4)
    tpp, ms, tps = _today(old.acceptance_by_position, points, 3.0, 0.5, 8, 1.25)
    for p in (old, new):
        assert p.tokens_per_pass_by_k == tuple(tpp)  # exact, not approx
        assert p.ms_per_pass_by_k == tuple(ms)
        assert p.tps_by_k == tuple(tps)
        assert p.drafted_per_pass_by_k == tuple(float(k) for k in range(9))
        assert p.verify_ms_expected_by_k == p.verify_ms_by_k
        assert p.continue_by_position == (1.0,) * 8
    assert new.continue_measured_by_position == (True,) * 4 + (False,) * 4
    assert "held at 100%" in new.continue_note
    assert old.continue_measured_by_position == (False,) * 8 and "no drafting measured" in old.continue_note
    for f in ("tps_by_k", "tokens_per_pass_by_k", "ms_per_pass_by_k", "speedup_by_k", "best_k", "advice",
              "acceptance_by_position", "reach_by_position", "verify_ms_by_k"):
        assert getattr(old, f) == getattr(new, f), f
    assert "on average" not in new.advice and "p-min" not in new.advice


def test_continuation_of_one_from_events_is_todays_prediction():
    # the model drafter without --draft-p-min: every pass drafts the k asked for, so c = 1 is measured
    evs = PminWorld(c=[1.0], a=[0.8, 0.7], settings=Settings(draft_max=4)).run(4, 300)
    snap = compute(evs)
    assert [c.rate for c in snap.draft_continue_by_position] == [1.0] * 4
    assert snap.draft_stops == ((DRAFT_STOP_K, 300),)
    p = predict(snap, k_max=8, current_k=4)
    rates, weights = conditional_rates([(s.drafted, s.accepted) for s in snap.acceptance_by_position])
    points = {0: snap.target_decode_ms, **{k: ms for k, ms, _ in snap.verify_ms_by_k}}
    ref = predict_from(rates, weights, points, p.draft_ms_per_token, p.other_ms_per_pass, k_max=8, current_k=4,
                       draft_ms_fixed=p.draft_ms_fixed)  # no continuation given: the old model
    assert p.tps_by_k == ref.tps_by_k and p.ms_per_pass_by_k == ref.ms_per_pass_by_k
    assert p.tokens_per_pass_by_k == ref.tokens_per_pass_by_k and p.advice == ref.advice
    assert p.drafted_per_pass_by_k[4] == 4.0 and p.draft_stop_cause == ""
    assert p.draft_ms_fixed == pytest.approx(1.0) and p.draft_ms_per_token == pytest.approx(3.0)


# ---------------------------------------------------------------- a hand-computed example


def test_hand_computed_example():
    c, a = (1.0, 0.5, 0.5), (0.8, 0.8, 0.8)
    v = {0: 10.0, 1: 12.0, 2: 14.0, 3: 16.0}
    d, fixed, other = 2.0, 1.0, 0.5
    p = predict_from(list(a), [100.0] * 3, v, d, other, k_max=3, draft_ms_fixed=fixed,
                     continue_rates=list(c), continue_weights=[100.0, 100.0, 50.0], draft_stop_cause=DRAFT_STOP_P_MIN)
    # by hand: P(L >= 1, 2, 3) = 1, 0.5, 0.25, so P(L = 1, 2, 3) = 0.5, 0.25, 0.25
    assert p.drafted_per_pass_by_k[3] == pytest.approx(1.75)
    assert p.verify_ms_expected_by_k[3] == pytest.approx(0.5 * 12 + 0.25 * 14 + 0.25 * 16)  # 13.5
    assert p.tokens_per_pass_by_k[3] == pytest.approx(1 + 0.8 + 0.5 * 0.64 + 0.25 * 0.512)  # 2.248
    assert p.ms_per_pass_by_k[3] == pytest.approx(1.0 + 1.75 * 2.0 + 13.5 + 0.5)  # 18.5
    assert p.tps_by_k[3] == pytest.approx(1000 * 2.248 / 18.5)
    # independently: enumerate every (drafted length, accepted count) outcome with its probability
    for k in range(4):
        tokens = ms = 0.0
        for n in range(k + 1):
            p_n = 1.0
            for i in range(n):
                p_n *= c[i]
            if n < k:
                p_n *= 1.0 - c[n]
            for acc in range(n + 1):
                p_acc = 1.0
                for i in range(acc):
                    p_acc *= a[i]
                if acc < n:
                    p_acc *= 1.0 - a[acc]
                tokens += p_n * p_acc * (acc + 1)
            ms += p_n * ((fixed + n * d if k > 0 else 0.0) + v[n] + other)
        assert p.tokens_per_pass_by_k[k] == pytest.approx(tokens)
        assert p.ms_per_pass_by_k[k] == pytest.approx(ms)
        assert p.tps_by_k[k] == pytest.approx(1000 * tokens / ms)
    assert p.continue_by_position == (1.0, 0.5, 0.5) and all(p.continue_measured_by_position)
    assert "drafts 1.8 on average (--draft-p-min stops it early)" in p.advice
    assert ". " not in p.advice and "\n" not in p.advice  # one sentence
    assert "drafts 1.75 on average" in p.describe_k(3)


def test_continuation_beyond_the_deepest_measured_position_is_held():
    # measured at 1..3 with 100, 80 and 20 passes asked: the tail is their weighted mean
    p = predict_from([0.8] * 3, [100.0] * 3, {0: 10.0, 1: 11.0}, 1.0, k_max=6,
                     continue_rates=[0.8, 0.5, 0.25], continue_weights=[100.0, 80.0, 20.0])
    tail = (0.8 * 100 + 0.5 * 80 + 0.25 * 20) / 200
    assert p.continue_by_position == pytest.approx((0.8, 0.5, 0.25) + (tail,) * 3)
    assert p.continue_measured_by_position == (True,) * 3 + (False,) * 3
    assert f"held at {tail:.0%}" in p.continue_note and "beyond 3" in p.continue_note
    # a rate of 0 ends drafting there: asking for more costs nothing more
    p = predict_from([0.8] * 2, [100.0] * 2, {0: 10.0, 1: 11.0, 2: 12.0}, 1.0, k_max=5,
                     continue_rates=[0.5, 0.0], continue_weights=[100.0, 50.0])
    assert p.drafted_per_pass_by_k[1:] == pytest.approx((0.5,) * 5)
    assert p.tps_by_k[1:] == pytest.approx((p.tps_by_k[1],) * 5)


def test_ngram_short_matches_are_named_in_the_advice():
    evs = PminWorld(c=[0.6, 0.9, 0.9], a=[0.9], d=0.0, fixed=0.0, v0=20.0, slope=0.5, stop=DRAFT_STOP_NO_MATCH,
                    settings=Settings(draft_max=4, drafter="ngram")).run(4, 400)
    p = predict(compute(evs), k_max=8, current_k=4)
    assert p.draft_stop_cause == DRAFT_STOP_NO_MATCH
    assert p.best_k > 0 and "the n-gram matches run short" in p.advice


# ---------------------------------------------------------------- against a simulated run


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
@pytest.mark.parametrize("seed", [0, 1])
def test_prediction_matches_a_simulated_run(seed):
    c, a = [0.9, 0.6, 0.5, 0.5], [0.8, 0.7, 0.7, 0.6]
    world = PminWorld(c, a, seed=seed)
    evs = world.run(4, 3000)
    snap = compute(evs)
    p = predict(snap, k_max=8, current_k=4)
    assert p.drafted_per_pass_by_k[4] == pytest.approx(snap.n_drafted / snap.n_passes)
    assert p.tps_by_k[4] == pytest.approx(snap.tokens_per_second, rel=0.03)
    assert p.tokens_per_pass_by_k[4] == pytest.approx(snap.tokens_per_pass, rel=0.03)
    # another k, predicted from this run, against a run at that k from the same process
    for k in (2, 3):
        other = compute(PminWorld(c, a, seed=seed + 10).run(k, 3000))
        assert p.tps_by_k[k] == pytest.approx(other.tokens_per_second, rel=0.03)
    assert p.draft_stop_cause == DRAFT_STOP_P_MIN
    assert "--draft-p-min stops it early" in p.advice


# ---------------------------------------------------------------- auto k


def _drive(pol, world, n, settings, choices=None):
    for _ in range(n):
        k = pol.choose(settings)
        if choices is not None:
            choices.append((k, pol.last_reason, pol.last_prediction))
        pol.observe(world.pass_event(k))


def test_cost_policy_with_heavy_pmin_stopping_maximises_its_own_prediction():
    c, a = [0.7, 0.5, 0.4], [0.85]
    settings = Settings(draft_max=4, draft_p_min=0.5, auto="cost")
    world = PminWorld(c, a, d=2.0, fixed=0.0, v0=20.0, slope=1.0, other=0.5, seed=3, settings=settings)
    pol = CostPolicy()
    pol.observe(make_start(target_decode_ms=20.0, draft_decode_ms=2.0, settings=settings))
    pol.observe(make_prefill())
    choices: list = []
    _drive(pol, world, 400, settings, choices)
    chosen = [(k, pred) for k, why, pred in choices if why.startswith("best predicted")]
    assert len(chosen) > 300
    for k, pred in chosen:
        assert pred.tps_by_k[k] == max(pred.tps_by_k)
        assert pred.best_k == k
    pred = pol.last_prediction
    k = chosen[-1][0]
    assert k >= 2
    assert pred.drafted_per_pass_by_k[k] < 0.8 * k  # it knows drafting stops early
    assert pred.draft_stop_cause == DRAFT_STOP_P_MIN
    rates, _ = pol.continue_rates()
    assert rates[0] == pytest.approx(0.7, abs=0.12) and rates[1] == pytest.approx(0.5, abs=0.15)
    assert pol.prediction().continue_by_position[:2] == pytest.approx(rates[:2])
    # a change of --draft-p-min re-learns continuation (acceptance is kept)
    off = replace(settings, draft_p_min=0.0)
    pol.observe(SettingsChanged(before_pass=world.index + 1, old=settings, new=off))
    assert pol.continuation == [] and pol.continue_rates() == ([], [])
    assert pol.positions and pol.rates()[0]
    assert pol.prediction().continue_by_position == (1.0,) * pol.k_max
    world.c, world.settings = [1.0], off
    _drive(pol, world, 20, off)
    rates, _ = pol.continue_rates()
    assert rates and all(r == 1.0 for r in rates)
    assert pol.last_prediction.drafted_per_pass_by_k[4] == 4.0
    # ... and so does a change of --draft-min; a change of temperature leaves it alone
    n_before = len(pol.continuation)
    pol.observe(SettingsChanged(old=off, new=replace(off, temperature=0.8)))
    assert len(pol.continuation) == n_before
    pol.observe(SettingsChanged(old=replace(off, temperature=0.8), new=replace(off, temperature=0.8, draft_min=2)))
    assert pol.continuation == []


def test_cost_policy_pass_that_drafted_nothing_is_not_a_k0_pass():
    settings = Settings(draft_max=4, draft_p_min=0.9, auto="cost")
    world = PminWorld([0.0], [0.8], seed=1, settings=settings)
    pol = CostPolicy()
    pol.observe(make_start(target_decode_ms=20.0, draft_decode_ms=3.0, settings=settings))
    ev = world.pass_event(3)
    assert ev.drafts == () and ev.k == 3
    pol.observe(ev)
    assert pol.zero_run == 0 and pol.prev_k == 3
    assert pol.verify_ms[0] == pytest.approx(20.0)  # verify only: the draft time belongs to the drafting
    assert [(p.trials, p.hits) for p in pol.continuation] == [(1.0, 0.0)]


# ---------------------------------------------------------------- the real engine


def test_engine_pmin_run_feeds_the_prediction(make_engine, tiny_target, tiny_draft_noisy):
    engine = make_engine(tiny_target, tiny_draft_noisy)
    evs = list(engine.run("the cat", RunControl(Settings(draft_max=4, draft_p_min=0.5)), n_predict=64))
    assert isinstance(evs[-1], RunEnded)
    passes = [e for e in evs if isinstance(e, PassEvent) and not e.prefill]
    snap = compute(evs)
    # the snapshot's continuation stats, recounted from the events
    asked: list[int] = []
    drafted: list[int] = []
    for ev in passes:
        nd = len(ev.drafts)
        assert nd <= ev.k
        assert ev.draft_stop == ("" if ev.k == 0 else (DRAFT_STOP_K if nd == ev.k else DRAFT_STOP_P_MIN))
        for i in range(min(ev.k, nd + 1)):
            while len(asked) <= i:
                asked.append(0)
                drafted.append(0)
            asked[i] += 1
            drafted[i] += i < nd
    assert snap.draft_continue_by_position == tuple(ContinueStat(i + 1, a, d) for i, (a, d) in
                                                    enumerate(zip(asked, drafted)))
    stops = {}
    for ev in passes:
        if ev.k > 0:
            stops[ev.draft_stop] = stops.get(ev.draft_stop, 0) + 1
    assert dict(snap.draft_stops) == stops
    # the prediction uses them
    p = predict(snap, current_k=4)
    m = len(asked)
    assert p.continue_by_position[:m] == pytest.approx([d / a for a, d in zip(asked, drafted)])
    assert p.continue_measured_by_position[:m] == (True,) * m
    mean4 = sum(len(e.drafts) for e in passes if e.k == 4) / sum(1 for e in passes if e.k == 4)
    assert p.drafted_per_pass_by_k[4] == pytest.approx(mean4, abs=0.1)  # the last passes ask fewer (-n)
    if DRAFT_STOP_P_MIN in stops:
        assert p.draft_stop_cause == DRAFT_STOP_P_MIN
    # on the passes that asked for 4, D(4) is their mean drafted length exactly
    only4 = [e for e in evs if not (isinstance(e, PassEvent) and not e.prefill and e.k != 4)]
    p4 = predict(compute(only4), current_k=4)
    assert p4.drafted_per_pass_by_k[4] == pytest.approx(mean4, rel=1e-9)
