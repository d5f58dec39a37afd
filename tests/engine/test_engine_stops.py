"""Stop reasons and the engine's reusability: eog, n_predict, ctx_full, control.stop(), KeyboardInterrupt,
an abandoned generator, an error inside a pass; RunEnded is always last."""

from __future__ import annotations

import time

import pytest

from spectui.analysis import stats
from spectui.contract.control import RunControl
from spectui.contract.events import PassEvent, RunEnded, Settings

PROMPT = "the hash map handles collisions"


def ids(events):
    return [t.id for ev in events if isinstance(ev, PassEvent) for t in ev.emitted]


def check_end(events):
    end = events[-1]
    assert isinstance(end, RunEnded)
    assert sum(isinstance(e, RunEnded) for e in events) == 1
    snap = stats.compute(events)
    assert (end.n_emitted, end.n_drafted, end.n_accepted, end.n_passes) == (
        snap.n_emitted, snap.n_drafted, snap.n_accepted, snap.n_passes)
    return end


@pytest.mark.parametrize("k", [0, 1, 3, 7])
@pytest.mark.parametrize("n", [1, 2, 17])
def test_n_predict_exact(noisy_engine, k, n):
    events = list(noisy_engine.run(PROMPT, RunControl(Settings(draft_max=k)), n))
    end = check_end(events)
    assert end.reason == "n_predict" and end.n_emitted == n == len(ids(events))


def test_eog(make_engine, tiny_eog_target, tiny_draft_same):
    with make_engine(tiny_eog_target, tiny_draft_same) as e:
        for k in (0, 3):
            events = list(e.run(PROMPT, RunControl(Settings(draft_max=k)), 400))
            end = check_end(events)
            assert end.reason == "eog"
            last = [ev for ev in events if isinstance(ev, PassEvent)][-1]
            assert last.emitted[-1].id == 2 and last.emitted[-1].text == ""  # EOS counted, no text
            assert 2 not in ids(events)[:-1]
            assert end.n_emitted < 400


def test_ctx_full(make_engine, tiny_target, tiny_draft_same):
    with make_engine(tiny_target, tiny_draft_same, n_ctx=40) as e:
        n_prompt = len(e.tokenize(PROMPT))
        for k in (0, 4):
            events = list(e.run(PROMPT, RunControl(Settings(draft_max=k)), -1))
            end = check_end(events)
            assert end.reason == "ctx_full"
            passes = [ev for ev in events if isinstance(ev, PassEvent)]
            assert passes[-1].n_ctx_used == 40
            assert end.n_emitted == 40 - n_prompt + 1  # the last token is emitted but never decoded


def test_prompt_longer_than_context(make_engine, tiny_target):
    with make_engine(tiny_target, n_ctx=8) as e:
        events = list(e.run(PROMPT + " and the key value table", RunControl(), 10))
        end = check_end(events)
        assert end.reason == "ctx_full" and "does not fit" in end.error


def test_control_stop_and_reuse(noisy_engine):
    fresh = ids(list(noisy_engine.run(PROMPT, RunControl(Settings(draft_max=3)), 40)))
    control = RunControl(Settings(draft_max=3))
    events = []
    for ev in noisy_engine.run(PROMPT, control, 40):
        events.append(ev)
        if isinstance(ev, PassEvent) and ev.index == 3:
            control.stop()
    end = check_end(events)
    assert end.reason == "stopped" and max(ev.index for ev in events if isinstance(ev, PassEvent)) == 3
    assert ids(events) == fresh[: len(ids(events))]
    assert ids(list(noisy_engine.run(PROMPT, RunControl(Settings(draft_max=3)), 40))) == fresh


def test_abandoned_generator_leaves_engine_reusable(noisy_engine):
    fresh = ids(list(noisy_engine.run(PROMPT, RunControl(Settings(draft_max=2)), 30)))
    gen = noisy_engine.run(PROMPT, RunControl(Settings(draft_max=2)), 30)
    for ev in gen:
        if isinstance(ev, PassEvent) and ev.index == 4:
            break
    gen.close()
    assert ids(list(noisy_engine.run(PROMPT, RunControl(Settings(draft_max=2)), 30))) == fresh


def test_keyboard_interrupt_and_errors_end_the_run(noisy_engine):
    fresh = ids(list(noisy_engine.run(PROMPT, RunControl(Settings(draft_max=2)), 30)))

    def hook(exc):
        def f(rec):
            if rec["index"] == 3:
                raise exc
        return f

    noisy_engine.debug_hook = hook(KeyboardInterrupt())
    try:
        events = list(noisy_engine.run(PROMPT, RunControl(Settings(draft_max=2)), 30))
    finally:
        noisy_engine.debug_hook = None
    assert check_end(events).reason == "stopped"
    noisy_engine.debug_hook = hook(RuntimeError("boom\nsecond line"))
    try:
        events = list(noisy_engine.run(PROMPT, RunControl(Settings(draft_max=2)), 30))
    finally:
        noisy_engine.debug_hook = None
    end = check_end(events)
    assert end.reason == "error" and "boom" in end.error and "\n" not in end.error
    assert ids(list(noisy_engine.run(PROMPT, RunControl(Settings(draft_max=2)), 30))) == fresh


def test_pause_and_settings_between_passes(noisy_engine):
    control = RunControl(Settings(draft_max=2))
    control.stop()
    events = list(noisy_engine.run(PROMPT, control, 30))
    assert [type(e).__name__ for e in events] == ["RunStarted", "RunEnded"] and events[-1].reason == "stopped"


def test_empty_prompt_is_an_error_event(make_engine, tiny_target):
    with make_engine(tiny_target, n_ctx=64) as e:
        # issue 17: an empty prompt is a failed run (exit status 1), although the tiny vocabulary would add
        # a BOS token to it: nothing is evaluated, the end event says why
        events = list(e.run("", RunControl(Settings(draft_max=0)), 3))
        end = check_end(events)
        assert end.reason == "error" and end.error == "the prompt is empty"
        assert [type(ev).__name__ for ev in events] == ["RunStarted", "RunEnded"]


def test_measure_verify_ms(noisy_engine):
    list(noisy_engine.run(PROMPT, RunControl(Settings(draft_max=2)), 10))
    before = ids(list(noisy_engine.run(PROMPT, RunControl(Settings(draft_max=2)), 10)))
    for k in (0, 3, 8):
        assert noisy_engine.measure_verify_ms(k) > 0
    assert ids(list(noisy_engine.run(PROMPT, RunControl(Settings(draft_max=2)), 10))) == before


def test_measure_verify_ms_between_passes_keeps_the_run_intact(noisy_engine):
    fresh = ids(list(noisy_engine.run(PROMPT, RunControl(Settings(draft_max=3)), 40)))
    events = []
    for ev in noisy_engine.run(PROMPT, RunControl(Settings(draft_max=3)), 40):
        events.append(ev)
        if isinstance(ev, PassEvent) and ev.index in (0, 3, 7):
            assert noisy_engine.measure_verify_ms(ev.index + 1, repeats=2) > 0
    assert check_end(events).reason == "n_predict"
    assert ids(events) == fresh


def test_started_at_is_the_instant_the_runs_clock_starts(noisy_engine):
    """RunStarted.started_at is the unix time of t0, the instant the passes' t_end and RunEnded.wall_s count
    from, so started_at + a pass's t_end is its wall-clock time. It was stamped after the run's single-decode
    calibration, later than t0 by that time (tens of ms on a busy machine: a probe measured after the run seemed
    to start before it had ended, tests/tui/test_first_run.py)."""
    before = time.time()
    evs = []
    for ev in noisy_engine.run("the hash map", RunControl(Settings(draft_max=2)), 24):
        evs.append(ev)
        if isinstance(ev, RunEnded):
            after = time.time()
    start, end = evs[0], evs[-1]
    assert before <= start.started_at
    assert start.started_at + end.wall_s <= after
    passes = [ev for ev in evs if isinstance(ev, PassEvent)]
    assert passes and all(before <= start.started_at + p.timing.t_end <= after for p in passes)
