"""run(overlap=True): each pass is finished (inspector top-N, reported probabilities, texts, the event) on the
finishing thread while the next pass drafts and verifies. What is recorded must not change: the same events,
field for field (timings aside, which are measurements), in the same order, ending the same way, on the real
llama.cpp with the tiny models; and what overlapping changes is only when an event arrives."""

from __future__ import annotations

import dataclasses
import threading

import pytest

from spectui.contract.control import RunControl
from spectui.contract.events import PassEvent, RunEnded, RunStarted, Settings, SettingsChanged
from spectui.engine.cpu import spare_core
from spectui.engine.run.eventmaker import PassEventMaker

PROMPT = "the hash map handles collisions by chaining entries"
LOOKUP_PROMPT = "a b c d a b c d a b c d a b c"


def recorded(ev):
    """An event as a dict without what is measured (times, other processes' CPU, ids and clocks of the run)."""
    d = dataclasses.asdict(ev)
    for key in ("timing", "others_cpu", "t", "wall_s", "run_id", "started_at", "target_decode_ms",
                "draft_decode_ms"):
        d.pop(key, None)
    for key in ("target", "draft"):  # RunStarted's models: their load times are measurements too
        if isinstance(d.get(key), dict):
            d[key].pop("load_s", None)
    return d


def run(engine, settings, n_predict, prompt=PROMPT, overlap=False, on_pass=None):
    control = RunControl(settings)
    out = []
    for ev in engine.run(prompt, control, n_predict, overlap=overlap):
        out.append(ev)
        if on_pass is not None and isinstance(ev, PassEvent):
            on_pass(control, ev)
    return out


CASES = {
    "greedy k=3": (Settings(draft_max=3, drafter="model"), 48, PROMPT),
    "greedy k=8": (Settings(draft_max=8, drafter="model"), 48, PROMPT),
    "sampled k=3 T=0.8": (Settings(draft_max=3, drafter="model", temperature=0.8, seed=7), 48, PROMPT),
    "sampled k=5 T=1.2": (Settings(draft_max=5, drafter="model", temperature=1.2, seed=2), 40, PROMPT),
    "p-min 0.6": (Settings(draft_max=6, drafter="model", draft_p_min=0.6, draft_min=1), 40, PROMPT),
    "prompt lookup k=3": (Settings(draft_max=3, drafter="ngram"), 40, LOOKUP_PROMPT),
    "prompt lookup T=0.9": (Settings(draft_max=3, drafter="ngram", temperature=0.9, seed=4), 40, LOOKUP_PROMPT),
    "target alone": (Settings(draft_max=0, drafter="none"), 20, PROMPT),
    # the schedule (+2 / -1 by acceptance) is deterministic; the cost policy reads measured times, so two of
    # its runs may choose differently whatever the finishing (test_auto_k_finishes_on_the_loop covers it)
    "auto k (schedule)": (Settings(draft_max=2, drafter="model", auto="schedule"), 32, PROMPT),
    "n_predict mid-pass": (Settings(draft_max=5, drafter="model"), 13, PROMPT),
}


@pytest.fixture(scope="module")
def engine(make_engine, tiny_target, tiny_draft_noisy):
    return make_engine(tiny_target, tiny_draft_noisy, spare_core=True)


@pytest.mark.parametrize("inspect_top", [5, 0])
@pytest.mark.parametrize("case", list(CASES))
def test_overlapped_passes_record_exactly_what_inline_passes_record(engine, case, inspect_top):
    settings, n, prompt = CASES[case]
    engine.inspect_top = inspect_top
    try:
        inline = run(engine, settings, n, prompt, overlap=False)
        over = run(engine, settings, n, prompt, overlap=True)
    finally:
        engine.inspect_top = 5
    assert isinstance(over[0], RunStarted) and isinstance(over[-1], RunEnded)
    assert [type(e).__name__ for e in over] == [type(e).__name__ for e in inline]
    assert [recorded(e) for e in over] == [recorded(e) for e in inline]
    passes = [e for e in over if isinstance(e, PassEvent)]
    assert [p.index for p in passes] == list(range(len(passes)))  # in order, none lost, none twice
    assert over[-1].n_passes == len(passes) - 1 and over[-1].n_emitted == sum(len(p.emitted) for p in passes)
    if inspect_top:
        assert all(len(p.inspect) == len(p.drafts) + 1 for p in passes if not p.prefill)


GREEDY_CASES = [c for c in CASES if CASES[c][0].temperature == 0]


@pytest.fixture(scope="module")
def graph_engine(make_engine, tiny_target, tiny_draft_noisy):
    """The same pair with --sampling graph: the draft's token and the target's argmax from llama.cpp backend
    sampler chains (engine/run/graph_path.py)."""
    return make_engine(tiny_target, tiny_draft_noisy, spare_core=True, sampling="graph")


def without_path(ev):
    """recorded(ev) without the one field that says which path ran (RunStarted.sampling)."""
    d = recorded(ev)
    d.pop("sampling", None)
    return d


@pytest.mark.parametrize("overlap", [False, True])
@pytest.mark.parametrize("case", GREEDY_CASES)
def test_the_graph_path_records_exactly_what_the_cpu_path_records_at_t0(engine, graph_engine, case, overlap):
    """At temperature 0 every recorded field of the graph path (inline and overlapped) equals the CPU path's,
    field for field, in the same order, ending the same way; only RunStarted.sampling says which ran."""
    settings, n, prompt = CASES[case]
    cpu = run(engine, settings, n, prompt, overlap=False)
    graph = run(graph_engine, settings, n, prompt, overlap=overlap)
    assert cpu[0].sampling == "cpu" and graph[0].sampling == "graph"
    assert [type(e).__name__ for e in graph] == [type(e).__name__ for e in cpu]
    assert [without_path(e) for e in graph] == [without_path(e) for e in cpu]
    assert graph[-1].n_passes > 3 and graph[-1].reason == cpu[-1].reason
    assert graph_engine.target.chain_rows is False  # the chains come off with the run


@pytest.mark.parametrize("target_p", ["rows", "graph"])
@pytest.mark.parametrize("case", [c for c in CASES if CASES[c][0].temperature > 0])
def test_the_graph_path_overlapped_records_what_it_records_inline_at_t_positive(graph_engine, case, target_p):
    """At T > 0 the graph path's draws are its own (the draft chain's), so it is compared with itself: a seeded
    run overlapped records exactly what it records inline, where the finishing thread reads the chains' p rows
    in place (a draft model) or from copies (prompt lookup: the next verify does not wait for it). Both ways
    of the target's p (graph_path.TARGET_P: the CPU backend's default ``rows``, a device's ``graph``)."""
    settings, n, prompt = CASES[case]
    graph_engine.parts().graph.target_p = target_p
    try:
        inline = run(graph_engine, settings, n, prompt, overlap=False)
        over = run(graph_engine, settings, n, prompt, overlap=True)
    finally:
        graph_engine.parts().graph.target_p = "rows"
    assert inline[0].sampling == over[0].sampling == "graph"
    assert [recorded(e) for e in over] == [recorded(e) for e in inline]
    assert any(p.inspect and p.inspect[p.n_accepted].residual_top for p in over if isinstance(p, PassEvent)
               and not p.prefill and p.n_accepted < len(p.drafts))  # rejections drew from the residual


def test_overlap_really_moves_the_finishing_off_the_loop(engine):
    """Black box: with overlap a consumer sees pass N once pass N + 1 has been decided, so a setting it changes
    on seeing pass N applies from pass N + 2 (inline: N + 1, as tests/engine/test_engine_greedy.py pins), and
    the events are made on the finishing thread."""
    made_on = set()
    real = PassEventMaker.make

    def spy(self, w):
        made_on.add(threading.current_thread().name)
        return real(self, w)

    def on_pass(control, ev):
        if ev.index == 3:
            control.update(draft_max=1)

    PassEventMaker.make = spy
    try:
        inline = run(engine, Settings(draft_max=3, drafter="model"), 30, on_pass=on_pass)
        inline_threads = set(made_on)
        made_on.clear()
        over = run(engine, Settings(draft_max=3, drafter="model"), 30, overlap=True, on_pass=on_pass)
    finally:
        PassEventMaker.make = real
    assert inline_threads == {threading.current_thread().name}
    assert made_on and all(name.startswith("spectui-finish") for name in made_on)
    change = [e for e in inline if isinstance(e, SettingsChanged)]
    assert [c.before_pass for c in change] == [4]
    change = [e for e in over if isinstance(e, SettingsChanged)]
    assert [c.before_pass for c in change] == [5]
    # the change still comes between the passes it separates, in order
    kinds = [(type(e).__name__, getattr(e, "index", None)) for e in over]
    at = kinds.index(("SettingsChanged", None))
    assert kinds[at - 1] == ("PassEvent", 4) and kinds[at + 1] == ("PassEvent", 5)


@pytest.mark.parametrize("auto", ["cost", "schedule"])
def test_auto_k_finishes_on_the_loop(engine, auto):
    """Under automatic k the policy reads pass N before it chooses pass N + 1's k, so even with overlap asked
    for, every pass is finished on the loop's own thread and reaches the consumer before the next pass."""
    made_on = set()
    real = PassEventMaker.make

    def spy(self, w):
        made_on.add(threading.current_thread().name)
        return real(self, w)

    PassEventMaker.make = spy
    try:
        events = run(engine, Settings(draft_max=2, drafter="model", auto=auto), 24, overlap=True)
    finally:
        PassEventMaker.make = real
    assert made_on == {threading.current_thread().name}
    assert isinstance(events[-1], RunEnded) and events[-1].reason == "n_predict"


def test_a_stop_delivers_every_decided_pass_before_run_ended(engine):
    def on_pass(control, ev):
        if ev.index == 5:
            control.stop()

    over = run(engine, Settings(draft_max=3, drafter="model"), 200, overlap=True, on_pass=on_pass)
    passes = [e for e in over if isinstance(e, PassEvent)]
    end = over[-1]
    assert isinstance(end, RunEnded) and end.reason == "stopped"
    # pass 6 was decided before the consumer saw pass 5: it is delivered, and RunEnded counts it
    assert [p.index for p in passes] == list(range(7))
    assert end.n_passes == 6 and end.n_emitted == sum(len(p.emitted) for p in passes)


def test_a_full_context_ends_the_same_way(make_engine, tiny_target, tiny_draft_noisy):
    with make_engine(tiny_target, tiny_draft_noisy, n_ctx=40, spare_core=True) as e:
        inline = run(e, Settings(draft_max=4, drafter="model"), -1, overlap=False)
        over = run(e, Settings(draft_max=4, drafter="model"), -1, overlap=True)
    assert over[-1].reason == inline[-1].reason == "ctx_full"
    assert [recorded(x) for x in over] == [recorded(x) for x in inline]


def test_a_paused_consumer_sees_every_decided_pass(engine):
    """The TUI pauses between passes: every pass decided before the pause reaches the screen while paused."""
    control = RunControl(Settings(draft_max=3, drafter="model"))
    seen_paused = []
    for ev in engine.run(PROMPT, control, 30, overlap=True):
        if isinstance(ev, PassEvent):
            if control.paused:
                seen_paused.append(ev.index)
                control.resume()
            elif ev.index == 3:
                control.pause()
    assert seen_paused == [4]


def test_without_a_spare_core_overlap_is_inline(make_engine, tiny_target, tiny_draft_noisy):
    made_on = set()
    with make_engine(tiny_target, tiny_draft_noisy, spare_core=False) as e:
        real = PassEventMaker.make

        def spy(self, w):
            made_on.add(threading.current_thread().name)
            return real(self, w)

        PassEventMaker.make = spy
        try:
            run(e, Settings(draft_max=3, drafter="model"), 12, overlap=True)
        finally:
            PassEventMaker.make = real
    assert made_on == {threading.current_thread().name}


def test_spare_core_counts_affinity_quota_and_offload(tmp_path):
    assert spare_core(1, cpus={0, 1}, cgroup=str(tmp_path)) is True
    assert spare_core(2, cpus={0, 1}, cgroup=str(tmp_path)) is False
    assert spare_core(2, on_cpu=False, cpus={0, 1}, cgroup=str(tmp_path)) is True  # all layers on a GPU
    (tmp_path / "cpu.max").write_text("150000 100000\n")  # a 1.5-CPU container quota on 4 CPUs
    assert spare_core(1, cpus={0, 1, 2, 3}, cgroup=str(tmp_path)) is False
    (tmp_path / "cpu.max").write_text("300000 100000\n")
    assert spare_core(2, cpus={0, 1, 2, 3}, cgroup=str(tmp_path)) is True


def test_an_abandoned_overlapped_run_leaves_nothing_running(make_engine, tiny_target, tiny_draft_noisy):
    """A consumer that stops iterating mid-run (closing the generator) and then closes the engine: the passes
    still being finished end first (no hang, no read of a freed model), and the next run is unaffected."""
    e = make_engine(tiny_target, tiny_draft_noisy, spare_core=True)
    ref = run(e, Settings(draft_max=3, drafter="model"), 20, overlap=True)
    gen = e.run(PROMPT, RunControl(Settings(draft_max=3, drafter="model")), 200, overlap=True)
    for ev in gen:
        if isinstance(ev, PassEvent) and ev.index == 4:
            break
    gen.close()
    again = run(e, Settings(draft_max=3, drafter="model"), 20, overlap=True)
    assert [recorded(x) for x in again] == [recorded(x) for x in ref]
    gen = e.run(PROMPT, RunControl(Settings(draft_max=3, drafter="model")), 200, overlap=True)
    next(gen), next(gen), next(gen)
    e.close()  # with a pass possibly waiting at the gate: returns
    assert e.target is None


@pytest.mark.parametrize("overlap", [False, True], ids=["inline", "overlapped"])
@pytest.mark.timing  # wall times between passes
def test_pass_times_cover_the_work_on_the_loops_path(engine, overlap):
    """Accounting, not speed: inline, a pass's wall time includes making its event (the inspector's top-N,
    the texts), so the passes' wall times add up to nearly all the time between the first and the last pass's
    end; overlapped the same holds with the event made off the path (what remains between passes is the
    loop's own hand-over)."""
    events = run(engine, Settings(draft_max=3, drafter="model"), 60, overlap=overlap)
    passes = [e for e in events if isinstance(e, PassEvent) and not e.prefill]
    span = passes[-1].timing.t_end - passes[0].timing.t_end
    covered = sum(p.timing.wall_ms for p in passes[1:]) / 1000.0
    assert 0.8 * span <= covered <= span * 1.0001
