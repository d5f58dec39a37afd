"""EngineThread: the engine is built, run and closed on one thread; events reach other threads intact."""

import threading

import pytest

from spectui.contract.control import RunControl
from spectui.contract.errors import SpectuiError
from spectui.contract.events import PassEvent, RunEnded, RunStarted, Settings
from spectui.engine.thread import EngineThread


def test_all_llama_calls_on_the_engine_thread_and_same_events(make_engine, tiny_target, tiny_draft_noisy):
    seen_threads = set()
    et = EngineThread(lambda: make_engine(tiny_target, tiny_draft_noisy))
    try:
        et.engine.debug_hook = lambda info: seen_threads.add(threading.get_ident())
        settings = Settings(draft_max=3, temperature=0.0, drafter="model")
        via_thread = list(et.run("the cat", RunControl(settings), 40))
        assert seen_threads == {et.ident} and et.ident != threading.get_ident()
        et.engine.debug_hook = None
        direct = et.call(lambda: list(et.engine.run("the cat", RunControl(settings), 40)))
    finally:
        et.close()
    assert isinstance(via_thread[0], RunStarted) and isinstance(via_thread[-1], RunEnded)
    ids = lambda evs: [t.id for e in evs if isinstance(e, PassEvent) for t in e.emitted]  # noqa: E731
    assert ids(via_thread) == ids(direct) and len(ids(direct)) == 40
    assert et.target_info.n_vocab > 0


def test_load_errors_reach_the_caller(make_engine, tmp_path):
    bad = tmp_path / "x.gguf"
    bad.write_bytes(b"nope" * 8)
    with pytest.raises(SpectuiError, match="GGUF"):
        EngineThread(lambda: make_engine(bad))


def test_stop_from_another_thread_ends_the_run(make_engine, tiny_target):
    et = EngineThread(lambda: make_engine(tiny_target, n_ctx=4096))
    try:
        control = RunControl(Settings(draft_max=0, drafter="none"))
        events = []
        for ev in et.run("the cat", control, 100000):
            events.append(ev)
            if isinstance(ev, PassEvent) and ev.index == 5:
                control.stop()
        assert events[-1].reason == "stopped"
        # the engine thread serves the next run afterwards
        again = list(et.run("the dog", RunControl(Settings(draft_max=0, drafter="none")), 5))
        assert again[-1].reason == "n_predict"
    finally:
        et.close()
