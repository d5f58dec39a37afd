"""Auto draft length inside the real engine loop (tiny models, real llama.cpp): the k of every pass is
exactly what the policy chose from the events before it (replayed offline through a fresh policy)."""

from __future__ import annotations

import pytest

from spectui.analysis.cost.draft_policy import WARMUP_K, WARMUP_PASSES, make_policy
from spectui.contract.control import RunControl
from spectui.contract.events import MachineProbe, PassEvent, RunEnded, Settings


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


# ---------------------------------------------------------------- the hardware's curve (spectui probe)


def _replay_with_curve(events, n_predict, curve):
    pol = make_policy("cost", curve=curve)
    pairs, emitted = [], 0
    for ev in events:
        if isinstance(ev, PassEvent) and not ev.prefill:
            pairs.append((max(0, min(pol.choose(ev.settings), n_predict - emitted - 1)), ev.k))
        if isinstance(ev, PassEvent):
            emitted += len(ev.emitted)
        pol.observe(ev)
    return pairs


def test_probe_curve_reaches_the_loop(noisy_engine, tmp_path):
    from spectui.analysis.measured.probe import cached_or_measure

    res = cached_or_measure(noisy_engine, repeats=1, directory=tmp_path)  # measured, cached
    n = 48
    evs = list(noisy_engine.run("the cat", RunControl(Settings(draft_max=2, auto="cost")), n,
                                probe=res.machine_probe()))
    assert isinstance(evs[-1], RunEnded) and evs[-1].reason in ("n_predict", "eog"), evs[-1]
    pairs = _replay_with_curve(evs, n, res.curve)
    assert [a for a, _ in pairs] == [b for _, b in pairs]
    # a curve on which no plausible acceptance pays (a verify of 2 tokens costs 51 decodes: on the tiny
    # models the loop's own ~1 ms per pass dwarfs a 0.2 ms decode, so a merely steep curve would pay):
    # k = 0 from the first pass, no warm-up at k = 1
    steep = {k: res.decode_ms * (1 + 50 * k) for k in range(17)}
    evs = list(noisy_engine.run("the cat", RunControl(Settings(draft_max=2, auto="cost")), n,
                                probe=MachineProbe(verify_ms_by_batch=tuple(steep[k] for k in range(17)))))
    passes = [e for e in evs if isinstance(e, PassEvent) and not e.prefill]
    assert passes and all(p.k == 0 for p in passes)
    assert [a for a, _ in _replay_with_curve(evs, n, steep)] == [p.k for p in passes]
    # without a curve the policy warms up at k = 1 as before
    evs = list(noisy_engine.run("the cat", RunControl(Settings(draft_max=2, auto="cost")), n))
    passes = [e for e in evs if isinstance(e, PassEvent) and not e.prefill]
    assert [p.k for p in passes[:WARMUP_PASSES]] == [WARMUP_K] * WARMUP_PASSES


def test_the_loop_hands_events_to_the_policy_and_keeps_none(make_engine, tiny_target, tiny_draft_noisy):
    """Memory flat over a long run: the per-run policy the engine builds (Engine(draft_policy=...)) keeps
    aggregates bounded by the draft positions (K_LIMIT), a few KB after 32 tokens or 448, where the loop
    used to keep every PassEvent (inspector data included) to replay into a policy created mid-run."""
    import pickle

    from spectui.analysis.cost.draft_policy import K_LIMIT, PolicyByMode

    made = []

    def factory():
        made.append(PolicyByMode())
        return made[-1]

    engine = make_engine(tiny_target, tiny_draft_noisy, n_ctx=1024, draft_policy=factory)
    sizes = []
    for n in (32, 448):
        evs = list(engine.run("the cat", RunControl(Settings(draft_max=2, auto="cost")), n))
        assert isinstance(evs[-1], RunEnded) and evs[-1].reason in ("n_predict", "eog"), evs[-1]
        sizes.append(len(pickle.dumps(made[-1])))
        event_bytes = sum(len(pickle.dumps(e)) for e in evs)  # what keeping the events would cost
        for policy in made[-1].policies.values():
            for value in vars(policy).values():
                if isinstance(value, (list, dict)):
                    assert len(value) <= K_LIMIT + 1, (type(policy).__name__, value)
    assert len(made) == 2 and max(sizes) < 12_000 < event_bytes, (sizes, event_bytes)
