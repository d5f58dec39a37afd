"""Drafters: n-gram prompt lookup as a unit, drafter switches mid-run (lossless), the 'model' fallback."""

from __future__ import annotations

import numpy as np
from greedy_checks import assert_argmax_of_verify_pass, assert_lossless, emitted_ids, reference, run_with_hook

from spectui.contract.control import RunControl
from spectui.contract.events import PassEvent, Settings, SettingsChanged
from spectui.engine.drafters.none import NoDrafter
from spectui.engine.drafters.prompt_lookup import NgramDrafter

RNG = np.random.default_rng(0)


def test_ngram_longest_suffix_match():
    d = NgramDrafter()
    d.start()
    # suffix (1, 2, 3) occurred at 0..2 followed by 4, 9
    assert d.propose([1, 2, 3, 4, 9, 7, 1, 2, 3], 2, 0.0, RNG).ids == [4, 9]
    d.start()
    # 3-gram (5, 2, 3) never occurred; 2-gram (2, 3) did (most recent: followed by 8)
    p = d.propose([2, 3, 4, 2, 3, 8, 5, 2, 3], 3, 0.0, RNG)
    assert p.ids == [8, 5, 2] and p.q_probs == [1.0, 1.0, 1.0] and p.q_rows is None
    d.start()
    assert d.propose([7, 8, 9, 7], 4, 0.0, RNG).ids == [8, 9, 7]  # 1-gram, continuation up to the end
    d.start()
    assert d.propose([1, 2, 3, 4], 4, 0.0, RNG).ids == []  # no match
    assert d.propose([1, 2, 3, 4, 5], 0, 0.0, RNG).ids == []  # k = 0


def test_ngram_is_incremental():
    d = NgramDrafter()
    d.start()
    toks = [1, 2, 3]
    assert d.propose(toks, 2, 0.0, RNG).ids == []
    toks += [1, 2]
    assert d.propose(toks, 2, 0.0, RNG).ids == [3, 1]
    toks += [5, 6, 1, 2]  # (1, 2) now most recently followed by 5
    assert d.propose(toks, 2, 0.0, RNG).ids == [5, 6]
    assert d.propose([4, 4], 2, 0.0, RNG).ids == [4]  # a shorter context resets the index


def test_no_drafter():
    assert NoDrafter().propose([1, 2, 1, 2], 5, 0.0, RNG).ids == []


def test_ngram_end_to_end_lossless(noisy_engine):
    prompt = "at if false same it true at if false same"
    ref = reference(noisy_engine, prompt=prompt)
    events, records = run_with_hook(noisy_engine, Settings(draft_max=4, drafter="ngram"), prompt=prompt)
    assert_argmax_of_verify_pass(records)
    assert_lossless(emitted_ids(events), *ref)
    passes = [ev for ev in events if isinstance(ev, PassEvent) and not ev.prefill]
    assert sum(len(p.drafts) for p in passes) > 0
    assert all(d.prob == 1.0 for p in passes for d in p.drafts)  # point-mass proposals


def test_drafter_switch_mid_run_lossless(noisy_engine):
    ref = reference(noisy_engine)
    plan = {2: "ngram", 6: "none", 10: "model", 14: "ngram", 18: "model"}

    def on_pass(control, ev):
        if ev.index in plan:
            control.update(drafter=plan[ev.index])

    events, records = run_with_hook(noisy_engine, Settings(draft_max=3, drafter="model"), on_pass=on_pass)
    assert_argmax_of_verify_pass(records)
    assert_lossless(emitted_ids(events), *ref)
    passes = {ev.index: ev for ev in events if isinstance(ev, PassEvent)}
    assert [c.new.drafter for c in events if isinstance(c, SettingsChanged)] == list(plan.values())
    for i in range(7, 11):
        assert passes[i].settings.drafter == "none" and passes[i].drafts == ()
    assert passes[11].settings.drafter == "model" and len(passes[11].drafts) == 3
    assert passes[19].settings.drafter == "model" and len(passes[19].drafts) == 3
    # the draft model caught up after sitting out (its cache re-synced): it still drafts well
    model_passes = [p for i, p in passes.items() if i > 11 and p.settings.drafter == "model"]
    assert sum(p.n_accepted for p in model_passes) > 0


def test_model_drafter_without_draft_falls_back_to_ngram(make_engine, tiny_target):
    warnings = []
    with make_engine(tiny_target, n_ctx=256, warn=warnings.append) as e:
        assert e.draft_info is None
        for _ in range(2):
            events = list(e.run("at if false same it true at if false same", RunControl(Settings(draft_max=3)), 30))
            assert events[-1].reason == "n_predict"
    assert len([w for w in warnings if "n-gram" in w]) == 1  # warned once
    passes = [ev for ev in events if isinstance(ev, PassEvent) and not ev.prefill]
    assert any(p.drafts for p in passes)
    assert events[0].draft is None and events[0].draft_decode_ms == 0.0
