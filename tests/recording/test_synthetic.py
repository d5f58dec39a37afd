"""A made-up run counts as the engine counts: RunEnded's n_passes (decode passes: pass 0, the prefill, is not
one), n_emitted, n_drafted and n_accepted are what the statistics of its passes say, and what its passes
add up to. The same check, ``check_counts``, on spectui.recording.synthetic's runs and on real engine runs
(llama.cpp on the tests' tiny models)."""

from __future__ import annotations

import pytest

from spectui.analysis import stats
from spectui.contract.control import RunControl
from spectui.contract.events import ACCEPTED, DISCARDED, REJECTED, PassEvent, RunEnded, Settings
from spectui.recording.synthetic import sample_events, synthetic_run


def check_counts(events) -> RunEnded:
    """RunEnded's counts against the statistics of the passes and against the passes themselves; each pass's
    verdicts as the engine gives them (accepted drafts first, then one rejected, the rest discarded)."""
    end = events[-1]
    assert isinstance(end, RunEnded) and sum(isinstance(e, RunEnded) for e in events) == 1
    passes = [e for e in events if isinstance(e, PassEvent)]
    assert [e.index for e in passes] == list(range(len(passes))) and passes[0].prefill
    decode = passes[1:]
    assert not any(e.prefill for e in decode)
    said = (end.n_passes, end.n_emitted, end.n_drafted, end.n_accepted)
    snap = stats.compute(events)
    assert said == (snap.n_passes, snap.n_emitted, snap.n_drafted, snap.n_accepted)
    assert said == (len(decode), sum(len(e.emitted) for e in passes), sum(len(e.drafts) for e in decode),
                    sum(e.n_accepted for e in decode))
    for e in decode:
        v = [d.verdict for d in e.drafts]
        n_acc = e.n_accepted
        assert v == [ACCEPTED] * n_acc + [REJECTED] * (n_acc < len(v)) + [DISCARDED] * (len(v) - n_acc - 1), e
        assert len(e.drafts) <= e.k and [t.id for t in e.emitted[:n_acc]] == [d.id for d in e.drafts[:n_acc]]
    return end


@pytest.mark.parametrize("n", [0, 1, 2, 7, 60])
@pytest.mark.parametrize("k, p_accept", [(0, 0.7), (1, 0.0), (3, 0.7), (4, 1.0)])
def test_a_synthetic_run_counts_as_the_engine_does(n, k, p_accept):
    events = list(synthetic_run(n, seed=n + k, k=k, p_accept=p_accept))
    end = check_counts(events)
    assert end.n_passes == n  # the decode passes asked for, the prefill not among them
    if n > 1 and k > 1 and p_accept == 1.0:
        assert end.n_accepted == end.n_drafted > 0


@pytest.mark.parametrize("n", [0, 5, 12, 38, 40])
def test_the_sample_run_counts_as_the_engine_does(n):
    end = check_counts(sample_events(n))
    assert end.n_passes == n
    assert sample_events(n, ended=False) == sample_events(n)[:-1]  # a run still going: the same, without its end


@pytest.mark.parametrize("settings", [Settings(draft_max=0), Settings(draft_max=3),
                                      Settings(draft_max=2, temperature=0.8, seed=5),
                                      Settings(draft_max=3, drafter="ngram")])
def test_an_engine_run_passes_the_same_check(noisy_engine, settings):
    events = list(noisy_engine.run("the hash map handles collisions", RunControl(settings), 30))
    end = check_counts(events)
    assert end.reason == "n_predict" and end.n_emitted == 30 and end.n_passes >= 1
    if settings.draft_max:
        assert end.n_drafted > 0
