"""--pipeline on the real Qwen2.5-Coder pair (1.5B target, 0.5B draft): at T = 0 a pipelined run, one core per
model, emits the sequential run's tokens (-t 2) and verifies the same drafts; the pipeline's record says it ran
(hits and misses both). Functional, not timed (benchmarks/bench_pipeline.py measures)."""

from __future__ import annotations

import pytest
from qwen_pair import PROMPT, qwen_marks
from qwen_pair import QWEN_DRAFT as DRAFT
from qwen_pair import QWEN_TARGET as TARGET

from spectui.contract.control import RunControl
from spectui.contract.events import PassEvent, Settings

pytestmark = qwen_marks(900)


@pytest.fixture(scope="module")
def engine(make_engine):
    return make_engine(TARGET, DRAFT, n_ctx=1024, threads=2, threads_draft=2, pipeline_threads=(1, 1))


def run(engine, settings, n=64):
    return list(engine.run(PROMPT, RunControl(settings), n))


def test_pipelined_qwen_emits_the_sequential_tokens(engine):
    s = Settings(draft_max=3, drafter="model")
    seq = run(engine, s)
    pipe = run(engine, Settings(draft_max=3, drafter="model", pipeline=True))
    tokens = [[t.id for e in r if isinstance(e, PassEvent) for t in e.emitted] for r in (seq, pipe)]
    assert tokens[0] == tokens[1] and len(tokens[0]) == 64
    drafts = [[[d.id for d in e.drafts] for e in r if isinstance(e, PassEvent)] for r in (seq, pipe)]
    assert drafts[0] == drafts[1]  # Qwen's draft rounds a batch of two as two single decodes (noise 0 at b <= 3)
    infos = [e.pipeline for e in pipe if isinstance(e, PassEvent) and e.pipeline is not None]
    assert pipe[0].pipeline_threads == (1, 1) and any(i.hit for i in infos) and any(i.thrown for i in infos)
    assert engine.target.threads == 2 and engine.draft.threads == 2  # the sequential counts back after the run
