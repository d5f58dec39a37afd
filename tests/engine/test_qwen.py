"""The issue's acceptance check on the real Qwen2.5-Coder pair (1.5B target, 0.5B draft, Q4_K_M):
prompt "Write a step-by-step explanation of how a hash map handles collisions.", -n 128, temperature 0,
k = 2 and 5. The output passes the losslessness check against a target-only run (equal up to the first
near-tie step of the target-only run; every emitted token is the argmax of its verify pass's logits) and
the RunEnded counts match spectui.analysis.stats.compute(events).

Skipped (with the reason) when the GGUF files are absent; ../shared/models/fetch-qwen-coder-pair.sh
fetches them. About a minute on 2 cores.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from qwen_pair import NEAR_TIE, PROMPT, qwen_marks
from qwen_pair import QWEN_DRAFT as DRAFT
from qwen_pair import QWEN_TARGET as TARGET

from spectui.analysis import stats
from spectui.contract.control import RunControl
from spectui.contract.events import PassEvent, RunEnded, Settings

N = 128

pytestmark = qwen_marks(1800)


@pytest.fixture(scope="module")
def engine(make_engine):
    return make_engine(TARGET, DRAFT, n_ctx=2048, threads=min(os.cpu_count() or 2, 8))


def run(engine, settings):
    """Run with a debug hook that keeps, per pass, (argmax, top-two margin) of each target row."""
    rows_info = []

    def hook(rec):
        info = []
        for row in rec["target_logits"]:
            top2 = np.partition(row, -2)[-2:]
            info.append((int(np.argmax(row)), float(abs(top2[1] - top2[0]))))
        rows_info.append((list(rec["draft_ids"]), rec["n_accepted"], rec["token"], info))

    engine.debug_hook = hook
    try:
        events = list(engine.run(PROMPT, RunControl(settings), N))
    finally:
        engine.debug_hook = None
    return events, rows_info


def emitted(events):
    return [t.id for ev in events if isinstance(ev, PassEvent) for t in ev.emitted]


@pytest.fixture(scope="module")
def reference(engine):
    events, info = run(engine, Settings(draft_max=0, drafter="none"))
    assert events[-1].reason in ("n_predict", "eog")
    margins = [i[3][0][1] for i in info]
    return emitted(events), margins


@pytest.mark.parametrize("k", [2, 5])
def test_qwen_greedy_lossless_and_counts(engine, reference, k):
    ref_toks, margins = reference
    events, info = run(engine, Settings(draft_max=k, drafter="model"))
    toks = emitted(events)
    end = events[-1]
    assert isinstance(end, RunEnded) and end.reason in ("n_predict", "eog") and end.error == ""
    # every emitted token is the argmax of the target logits of the pass that emitted it
    for draft_ids, n_acc, token, rows in info:
        assert [r[0] for r in rows[:n_acc]] == draft_ids[:n_acc]
        assert rows[n_acc][0] == token
    # equal to the target-only run up to its first near-tie step
    cut = next((i for i, m in enumerate(margins) if m < NEAR_TIE), len(margins))
    assert toks[:cut] == ref_toks[:cut], f"split before the first near-tie (step {cut})"
    first_diff = next((i for i, (a, b) in enumerate(zip(toks, ref_toks)) if a != b), None)
    if first_diff is not None:  # a later split must itself sit on a near-tie of the reference run
        assert margins[first_diff] < NEAR_TIE, (first_diff, margins[first_diff])
    # the summary's counts match the events
    snap = stats.compute(events)
    assert (end.n_emitted, end.n_drafted, end.n_accepted, end.n_passes) == (
        snap.n_emitted, snap.n_drafted, snap.n_accepted, snap.n_passes)
    assert end.n_emitted == len(toks) == N
    assert 0.2 < snap.acceptance_rate < 0.95
