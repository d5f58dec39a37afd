"""The decode abort (spectui.engine.llama.abort) on the real llama.cpp: a tripped abort makes llama_decode return 2 at
its first graph node, which the models raise as DecodeAborted; it is scoped to a RunControl (its stop trips it,
the scope's end resets it); the KV cells an aborted decode wrote never reach a later run (it runs exactly as a
fresh one); a stop signal trips it from a thread while the main thread would be inside llama.cpp. The abort
of a run mid-pass, end to end, is tests/tui/test_stop_mid_pass.py's (a slow pass, real terminals)."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from waits import wait_until  # noqa: E402

from spectui.contract.control import RunControl  # noqa: E402
from spectui.contract.events import PassEvent, RunEnded, Settings  # noqa: E402
from spectui.engine.llama.abort import DecodeAbort, DecodeAborted, aborting_on_signals  # noqa: E402


def _text(engine, n: int = 24) -> tuple[list[int], RunEnded]:
    events = list(engine.run("the cat", RunControl(Settings(draft_max=3)), n))
    ids = [t.id for e in events if isinstance(e, PassEvent) for t in e.emitted]
    return ids, events[-1]


def test_a_tripped_abort_stops_the_decode_and_the_engine_runs_on(make_engine, tiny_target, tiny_draft_noisy):
    engine = make_engine(tiny_target, tiny_draft_noisy)
    assert engine.abort.attached == 2  # the target's and the draft's contexts
    ref, end = _text(engine)
    assert end.reason == "n_predict"
    control = RunControl()
    with engine.abort.watching(control):
        assert not engine.abort.tripped
        control.stop()  # the run's stop trips it
        assert engine.abort.tripped
        for model in (engine.target, engine.draft):
            model.rollback(3)  # positions follow the cells kept (llama.cpp refuses a gap: code -1)
            with pytest.raises(DecodeAborted):
                model.decode([5, 6, 7, 8], 3, "all")  # cells 3.. written or not: the next run clears them
    assert not engine.abort.tripped  # the scope is over
    again, end = _text(engine)
    assert again == ref and end.reason == "n_predict"  # nothing of the aborted decodes reached the run
    assert engine.measure_verify_ms(2, repeats=1) > 0


def test_a_control_stopped_before_its_run_starts_it_stopped(noisy_engine):
    control = RunControl(Settings(draft_max=2))
    control.stop()
    events = list(noisy_engine.run("the cat", control, 16))
    assert events[0].type == "start" and isinstance(events[-1], RunEnded)
    assert events[-1].reason == "stopped" and not any(isinstance(e, PassEvent) for e in events)
    assert not noisy_engine.abort.tripped
    ids, end = _text(noisy_engine, 8)
    assert end.reason == "n_predict" and len(ids) == 8


def test_the_scope_of_an_old_control_is_over():
    abort = DecodeAbort()
    old, new = RunControl(), RunControl()
    with abort.watching(old):
        pass
    with abort.watching(new):
        old.stop()  # an earlier run's control: its stop aborts nothing now
        assert not abort.tripped
        new.stop()
        assert abort.tripped
    assert not abort.tripped


def test_a_stop_signal_trips_the_abort_from_a_thread_of_its_own():
    abort = DecodeAbort()
    seen = []
    old = signal.signal(signal.SIGTERM, lambda s, f: seen.append(s))  # a Python handler: the C one then writes
    try:
        with aborting_on_signals(abort):
            signal.raise_signal(signal.SIGTERM)
            wait_until(lambda: abort.tripped, 10, "the abort tripped by the signal's byte")
        assert seen == [signal.SIGTERM]  # the Python handler still ran
    finally:
        signal.signal(signal.SIGTERM, old)
