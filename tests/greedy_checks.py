"""Greedy-losslessness checks shared by the engine tests (no tests here): run with the debug hook, the
target-only reference run and its top-two logit margins, and the two assertions of
tests/engine/test_engine_greedy.py's definition of lossless."""

from __future__ import annotations

import numpy as np

from spectui.contract.control import RunControl
from spectui.contract.events import PassEvent, Settings
from spectui.analysis.lossless import LOSSLESS_MARGIN, first_near_tie

PROMPT = "the hash map handles collisions"
N = 80
MARGIN = LOSSLESS_MARGIN  # top-two logit gap below which kernel numerics may legitimately flip the argmax


def run_with_hook(engine, settings, n_predict=N, prompt=PROMPT, on_pass=None, overlap=False):
    """Run to the end; returns (events, debug records). ``on_pass(control, event)`` may change settings.
    ``overlap``: Engine.run(overlap=...) (passes finished on the finishing thread where a core is spare)."""
    records = []
    engine.debug_hook = records.append
    control = RunControl(settings)
    events = []
    try:
        for ev in engine.run(prompt, control, n_predict, overlap=overlap):
            events.append(ev)
            if on_pass is not None and isinstance(ev, PassEvent):
                on_pass(control, ev)
    finally:
        engine.debug_hook = None
    return events, records


def emitted_ids(events):
    return [t.id for ev in events if isinstance(ev, PassEvent) for t in ev.emitted]


def reference(engine, n_predict=N, prompt=PROMPT):
    """Target-only greedy run through the same loop: tokens and the top-two margin of each step."""
    events, records = run_with_hook(engine, Settings(draft_max=0, drafter="none"), n_predict, prompt)
    toks = emitted_ids(events)
    margins = []
    for r in records:
        s = np.sort(r["target_logits"][0])
        margins.append(float(s[-1] - s[-2]))
    assert len(margins) == len(toks)
    return toks, margins


def assert_argmax_of_verify_pass(records):
    for r in records:
        rows = r["target_logits"]
        n_acc = r["n_accepted"]
        assert rows.shape[0] == n_acc + 1
        for i in range(n_acc):
            assert r["draft_ids"][i] == int(np.argmax(rows[i])), r["index"]
        assert r["token"] == int(np.argmax(rows[n_acc])), r["index"]


def assert_lossless(spec_toks, ref_toks, margins, min_checked=30):
    cut = first_near_tie(margins, MARGIN)
    assert cut >= min_checked, f"near-tie at step {cut}: pick another seed/prompt, the check would be vacuous"
    assert spec_toks[:cut] == ref_toks[:cut]
