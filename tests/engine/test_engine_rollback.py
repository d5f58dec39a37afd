"""KV rollback: after a rejection (and after a fully accepted pass, where the draft never decoded d_k),
the next pass's target logits and draft logits equal those of a fresh context on the accepted text."""

from __future__ import annotations

import numpy as np
import pytest

from spectui.contract.control import RunControl
from spectui.contract.events import PassEvent, Settings
from spectui.engine.llama.models import LoadedModel

PROMPT = "the hash map handles collisions"
TOL = 1e-2  # kernel tolerance: f16 KV cache and batched vs one-by-one kernels (logits are O(1..10))
STALE = 0.1  # a context that kept a rejected token differs by far more than TOL (checked below)


def fresh_logits(path, tokens):
    m = LoadedModel(str(path), "fresh", 512, 1, True)
    try:
        m.decode_chunked(tokens, 0)
        return m.logits_last().copy()
    finally:
        m.close()


@pytest.mark.parametrize("temperature", [0.0, 0.9])
def test_rollback_matches_fresh_context(make_engine, tiny_target, tiny_draft_noisy, temperature):
    with make_engine(tiny_target, tiny_draft_noisy) as e:
        records = []
        e.debug_hook = records.append
        events = list(e.run(PROMPT, RunControl(Settings(draft_max=3, temperature=temperature, seed=5)), 60))
        prompt = e.tokenize(PROMPT)
    context = prompt + [t.id for ev in events if isinstance(ev, PassEvent) for t in ev.emitted]
    after_reject, after_full = [], []
    for prev, rec in zip(records[1:], records[2:]):
        if prev["draft_ids"] and prev["n_accepted"] < len(prev["draft_ids"]):
            after_reject.append(rec)
            rec = dict(rec, rejected=prev["draft_ids"][prev["n_accepted"]])
            after_reject[-1] = rec
        elif prev["draft_ids"] and prev["n_accepted"] == len(prev["draft_ids"]):
            after_full.append(rec)
    assert len(after_reject) >= 3 and len(after_full) >= 2, (len(after_reject), len(after_full))
    for rec in after_reject[:4] + after_full[:3]:
        ctx = context[: rec["n_past"] + 1]
        np.testing.assert_allclose(rec["target_logits"][0], fresh_logits(tiny_target, ctx), atol=TOL, rtol=0)
        assert rec["draft_logits"], "the draft model drafted in this pass"
        np.testing.assert_allclose(rec["draft_logits"][0], fresh_logits(tiny_draft_noisy, ctx), atol=TOL, rtol=0)
        if "rejected" in rec and rec["rejected"] != ctx[-1]:
            # negative control: had the rejected draft stayed in the cache, the logits would differ a lot
            stale = fresh_logits(tiny_target, ctx[:-1] + [rec["rejected"]])
            assert np.abs(stale - rec["target_logits"][0]).max() > STALE


def test_batched_rows_match_single_decodes(tiny_target):
    """logits_rows() of a k+1 batch (the verify decode) equals decoding the same tokens one by one."""
    m = LoadedModel(str(tiny_target), "t", 256, 1, True)
    try:
        toks = m.tokenize(PROMPT)
        m.decode_chunked(toks[:3], 0)
        m.decode(toks[3:], 3, "all")
        batched = m.logits_rows(len(toks) - 3).copy()
        m.rollback(3)
        singles = []
        for i, t in enumerate(toks[3:]):
            m.decode([t], 3 + i, "last")
            singles.append(m.logits_last().copy())
        np.testing.assert_allclose(batched, np.stack(singles), atol=TOL, rtol=0)
    finally:
        m.close()
