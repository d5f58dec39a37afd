"""Greedy losslessness on tiny real models (llama.cpp), as defined in shared/NOTES-llama-cpp-python.md:
the speculative output equals the target-only greedy output up to the first step whose top-two logit
margin (in the target-only run) is below a small threshold, and every emitted token equals the argmax of
the target logits computed in the pass that emitted it."""

from __future__ import annotations

import pytest
from greedy_checks import N, assert_argmax_of_verify_pass, assert_lossless, emitted_ids, reference, run_with_hook

from spectui.analysis import stats
from spectui.contract.events import ACCEPTED, BONUS, PassEvent, RunEnded, RunStarted, Settings, SettingsChanged


@pytest.fixture(scope="module")
def ref(noisy_engine):
    return reference(noisy_engine)


@pytest.mark.parametrize("k", [1, 2, 5, 8])
def test_greedy_lossless_fixed_k(noisy_engine, ref, k):
    events, records = run_with_hook(noisy_engine, Settings(draft_max=k, drafter="model"))
    toks = emitted_ids(events)
    assert len(toks) == N and events[-1].reason == "n_predict"
    assert_argmax_of_verify_pass(records)
    assert_lossless(toks, *ref)
    snap = stats.compute(events)
    assert 0.3 < snap.acceptance_by_position[0].rate < 0.9  # the noisy draft: partial acceptance
    assert any(r["n_accepted"] < len(r["draft_ids"]) for r in records)  # rejections happened
    assert max(len(ev.drafts) for ev in events if isinstance(ev, PassEvent)) == k


def test_greedy_lossless_k_changed_mid_run(noisy_engine, ref):
    schedule = {3: 5, 8: 1, 12: 0, 16: 8, 20: 2}

    def on_pass(control, ev):
        if ev.index in schedule:
            control.update(draft_max=schedule[ev.index])

    events, records = run_with_hook(noisy_engine, Settings(draft_max=2, drafter="model"), on_pass=on_pass)
    assert_argmax_of_verify_pass(records)
    assert_lossless(emitted_ids(events), *ref)
    changes = [ev for ev in events if isinstance(ev, SettingsChanged)]
    assert [c.new.draft_max for c in changes] == [5, 1, 0, 8, 2]
    assert [c.before_pass for c in changes] == [i + 1 for i in schedule]
    passes = {ev.index: ev for ev in events if isinstance(ev, PassEvent)}
    assert passes[13].k == 0 and passes[13].drafts == () and passes[13].target.kind == "plain"
    assert passes[17].settings.draft_max == 8


def test_identical_draft_accepts_everything(make_engine, tiny_target, tiny_draft_same):
    with make_engine(tiny_target, tiny_draft_same) as e:
        ref_toks, margins = reference(e)
        events, records = run_with_hook(e, Settings(draft_max=4, drafter="model"))
    passes = [ev for ev in events if isinstance(ev, PassEvent) and not ev.prefill]
    drafts = [d for ev in passes for d in ev.drafts]
    assert drafts and all(d.verdict == ACCEPTED for d in drafts)
    assert all(ev.target.kind == BONUS for ev in passes if ev.drafts)
    end = events[-1]
    assert isinstance(end, RunEnded) and end.n_accepted == end.n_drafted > 0
    assert stats.compute(events).acceptance_rate == 1.0
    # each pass drafts min(4, remaining - 1) tokens: 1 prefill token + 15 passes x 5 + a last pass of 4
    assert [len(ev.drafts) for ev in passes] == [4] * 15 + [3]
    assert_argmax_of_verify_pass(records)
    assert_lossless(emitted_ids(events), ref_toks, margins)


def test_events_are_consistent(noisy_engine):
    events, _ = run_with_hook(noisy_engine, Settings(draft_max=3, drafter="model"))
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunEnded)
    start, end = events[0], events[-1]
    assert start.target_decode_ms > 0 and start.draft_decode_ms > 0 and start.prompt_tokens > 1
    assert start.target.name == "tiny-target" and start.draft.name == "tiny-draft-noisy"
    snap = stats.compute(events)
    assert (end.n_emitted, end.n_drafted, end.n_accepted, end.n_passes) == (
        snap.n_emitted, snap.n_drafted, snap.n_accepted, snap.n_passes)
    passes = [ev for ev in events if isinstance(ev, PassEvent)]
    assert passes[0].prefill and passes[0].index == 0 and passes[0].target.kind == "plain"
    assert [p.index for p in passes] == list(range(len(passes)))
    for p in passes:
        t = p.timing
        assert t.wall_ms >= t.draft_ms + t.verify_ms - 1e-6 and t.verify_ms > 0
        assert abs(t.wall_ms - (t.draft_ms + t.verify_ms + t.other_ms)) < 1e-6
        assert 0.0 < p.target.prob <= 1.0
        if not p.prefill:
            assert p.n_ctx_used == passes[passes.index(p) - 1].n_ctx_used + p.n_accepted + 1
            assert len(p.emitted) == p.n_accepted + 1
            for d in p.drafts:
                assert 0.0 < d.prob <= 1.0
                assert (d.target_prob > 0.0) == (d.verdict != "discarded")
    assert passes[-1].timing.t_end <= end.wall_s
    text = "".join(t.text for p in passes for t in p.emitted)
    assert text == noisy_engine.detokenize(emitted_ids(events))
