"""Auto draft length inside the real engine loop (tiny models, real llama.cpp): the k of every pass is
exactly what the policy chose from the events before it (replayed offline through a fresh policy)."""

from __future__ import annotations

import pytest

from spectui.autok import WARMUP_K, WARMUP_PASSES, make_policy
from spectui.control import RunControl
from spectui.events import PassEvent, RunEnded, Settings


def _replay_choices(mode, events, n_predict):
    """Feed the run's events to a fresh policy; return (chosen k clipped as the engine clips, actual k)."""
    pol = make_policy(mode)
    pairs = []
    emitted = 0
    for ev in events:
        if isinstance(ev, PassEvent) and not ev.prefill:
            want = pol.choose(ev.settings)
            pairs.append((max(0, min(want, n_predict - emitted - 1)), ev.k))
        if isinstance(ev, PassEvent):
            emitted += len(ev.emitted)
        pol.observe(ev)
    return pairs


@pytest.mark.parametrize("temp", [0.0, 0.8])
def test_schedule_mode_in_the_loop(noisy_engine, temp):
    n = 48
    evs = list(noisy_engine.run("the cat", RunControl(Settings(draft_max=3, temperature=temp, auto="schedule")), n))
    assert isinstance(evs[-1], RunEnded) and evs[-1].reason in ("n_predict", "eog"), evs[-1]
    passes = [e for e in evs if isinstance(e, PassEvent) and not e.prefill]
    assert passes[0].k == 3
    pairs = _replay_choices("schedule", evs, n)
    assert [a for a, _ in pairs] == [b for _, b in pairs]
    # the +2 / -1 rule is visible in the events themselves (the engine clips k near -n)
    emitted = 1  # the prefill token
    sched = 3
    for prev, cur in zip(passes, passes[1:]):
        emitted += len(prev.emitted)
        full = prev.n_accepted == prev.k == len(prev.drafts)
        if prev.k > 0:  # a pass clipped to k = 0 at the very end teaches the schedule nothing
            sched = min(32, sched + 2) if full else max(1, sched - 1)
        assert cur.k == max(0, min(sched, n - emitted - 1))


@pytest.mark.parametrize("temp", [0.0, 0.8])
def test_cost_mode_in_the_loop(noisy_engine, temp):
    n = 64
    evs = list(noisy_engine.run("the cat", RunControl(Settings(draft_max=2, temperature=temp, auto="cost")), n))
    assert isinstance(evs[-1], RunEnded) and evs[-1].reason in ("n_predict", "eog"), evs[-1]
    passes = [e for e in evs if isinstance(e, PassEvent) and not e.prefill]
    assert [p.k for p in passes[:WARMUP_PASSES]] == [WARMUP_K] * WARMUP_PASSES
    assert all(0 <= p.k <= 16 for p in passes)
    # the policy is a function of the events it saw: replaying them chooses the same k every pass
    pairs = _replay_choices("cost", evs, n)
    assert [a for a, _ in pairs] == [b for _, b in pairs]
    assert sum(len(p.emitted) for p in evs if isinstance(p, PassEvent)) == n or evs[-1].reason == "eog"
