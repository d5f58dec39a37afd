"""--pipeline's record in a trace (old traces read unchanged), the statistics it feeds and their words, the cost
model of a pipelined pass and auto's choice."""

from __future__ import annotations

import dataclasses
import json

import pytest

from spectui.analysis import stats
from spectui.analysis.cost.pipeline_cost import choose, hit_chance, pipelined_ms, predict, sequential_ms
from spectui.contract.event_json import EventFormatError, from_dict, to_dict
from spectui.contract.events import (
    SPEC_GUESS,
    SPEC_REJECTED,
    DraftToken,
    PassEvent,
    PipeInfo,
    RunStarted,
    Settings,
    TargetToken,
    Timing,
    Token,
)
from spectui.engine.probes.pipeline_probe import SplitCosts
from spectui.views.pipeline import summary


def piped_pass(index, overlapped=False, hit=False, thrown=(), why="", k=2, acc=2, busy=10.0, wait=2.0):
    drafts = tuple(DraftToken(id=5 + i, text="x", prob=0.5, verdict="accepted" if i < acc else "rejected")
                   for i in range(k))
    return PassEvent(
        index=index, settings=Settings(draft_max=k, pipeline=True), k=k, drafts=drafts, n_accepted=acc,
        target=TargetToken(id=9, text="y", prob=0.4, kind="bonus" if acc == k else "correction"),
        emitted=tuple(Token(id=1, text="t") for _ in range(acc + 1)),
        timing=Timing(draft_ms=wait, verify_ms=20.0, wall_ms=25.0, t_end=index * 0.025),
        pipeline=PipeInfo(overlapped=overlapped, guess=9, hit=hit, thrown=tuple(Token(id=t, text="z") for t in thrown),
                          thrown_why=why, overlap_ms=15.0, draft_busy_ms=busy, cut_wait_ms=1.0),
    )


def test_the_pipeline_record_round_trips_and_old_passes_read_as_sequential():
    ev = piped_pass(3, overlapped=True, thrown=(4, 5), why=SPEC_REJECTED)
    assert from_dict(json.loads(json.dumps(to_dict(ev)))) == ev
    old = to_dict(piped_pass(1))
    del old["pipeline"]
    del old["settings"]["pipeline"]
    back = from_dict(old)  # a trace from before the mode
    assert back.pipeline is None and back.settings.pipeline is False
    start = to_dict(RunStarted(threads=2))
    for key in ("threads_draft", "pipeline_threads", "pipeline_choice"):
        del start[key]
    s = from_dict(start)
    assert (s.threads_draft, s.pipeline_threads, s.pipeline_choice) == (0, (), "")
    bad = to_dict(ev)
    bad["pipeline"]["thrown_why"] = "because"
    with pytest.raises(EventFormatError, match="thrown_why"):
        from_dict(bad)


def test_statistics_of_pipelined_passes():
    events = [piped_pass(1, hit=True), piped_pass(2, overlapped=True, thrown=(7,), why=SPEC_GUESS, busy=8.0),
              piped_pass(3, thrown=(4, 5, 6), why=SPEC_REJECTED, acc=1)]
    p = stats.compute(events).pipeline
    assert (p.passes, p.hits, p.overlapped, p.drafted, p.thrown) == (3, 1, 1, 6, 4)
    assert dict(p.thrown_by) == {SPEC_GUESS: 1, SPEC_REJECTED: 3}
    assert p.hit_rate == pytest.approx(1 / 3) and p.waste == pytest.approx(4 / 10)
    assert p.overlap_share == pytest.approx(45 / 60) and p.hidden_share == pytest.approx(1 - 6 / 28)
    snap = stats.compute(events)
    assert snap.draft_ms_total == pytest.approx(6.0)  # the loop's waits (the pass's path) ...
    assert snap.draft_ms_per_token == pytest.approx(28 / 6)  # ... c from the draft thread's own drafting
    assert stats.compute([dataclasses.replace(piped_pass(1), pipeline=None)]).pipeline is None
    line = summary(p, RunStarted(pipeline_threads=(1, 1)))
    assert "3 pipelined passes at 1 + 1 threads" in line and "waste 40%" in line and "rejected 3" in line


def costs(d, v, d2, v2, ks=(1, 2, 3, 4)):
    return SplitCosts((2, 2), (1, 1), d, {k: v + 2 * k for k in ks}, d2, {k: v2 + 2 * k for k in ks})


def test_the_pipelined_pass_cost_model():
    assert hit_chance(0.5, 2) == pytest.approx(0.125)
    assert sequential_ms(10, 30, 3) == 60
    # every block used (a = 1) and the draft faster than the verify: the pass costs the verify alone
    assert pipelined_ms(5, 40, 3, 1.0) == pytest.approx(40)
    # nothing used (a = 0): the verify plus drafting afresh, plus half a step waited for after each miss
    assert pipelined_ms(10, 30, 3, 0.0) == pytest.approx(30 + 30 + 5)
    # one thread per model as fast as two taking turns: the pipeline wins; twice as slow: the sequential loop
    assert choose(costs(10, 30, 10, 30)).pipeline is True
    c = choose(costs(10, 30, 20, 60))
    assert c.pipeline is False and c.ratio < 1 and c.reason.startswith("sequential (2 threads)")
    seq, pipe = predict(costs(10, 30, 10, 30), 0.7, 3)
    assert pipe > seq > 0
