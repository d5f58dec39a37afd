"""The lesson's kind of pair for real: a target whose vocabulary is padded as Qwen2.5 7B's is (152,064
rows) against the 0.5B draft's 151,936. The test derives the padded target from the Qwen2.5-Coder 1.5B
GGUF (128 ``[PAD<id>]`` tokens, zero rows in token_embd and output; tests/padded_gguf.py) and runs it
with the 0.5B draft, as llama.cpp's llama-speculative-simple does.

- greedy (k = 2): the output equals the padded target's own greedy output up to its first near tie,
  and every emitted token is the argmax of its verify pass;
- T = 0.8 (k = 3): the run ends with exact counts (RunEnded == statistics of the events), and no
  drafted or emitted id is a padding id.

Skipped (with the reason) when the Qwen pair is absent (../shared/models/fetch-qwen-coder-pair.sh).
"""

from __future__ import annotations

import os
from pathlib import Path

import greedy_checks as G
import pytest
from padded_gguf import pad_vocabulary
from qwen_pair import NEAR_TIE, PROMPT, qwen_marks
from qwen_pair import QWEN_DRAFT as DRAFT
from qwen_pair import QWEN_TARGET as TARGET

from spectui.analysis import stats
from spectui.contract.events import PassEvent, RunEnded, Settings

N = 64
QWEN_7B_VOCAB = 152064

pytestmark = qwen_marks(1800)


@pytest.fixture(scope="module")
def padded_target(tmp_path_factory) -> Path:
    path = pad_vocabulary(TARGET, tmp_path_factory.mktemp("qwen-padded") / "qwen-1.5b-padded.gguf", 128)
    yield path
    path.unlink(missing_ok=True)  # 1.1 GB


@pytest.fixture(scope="module")
def threads():
    return min(os.cpu_count() or 2, 8)


def test_padded_file_is_what_the_7b_looks_like(padded_target):
    import gguf

    r = gguf.GGUFReader(str(padded_target))
    tokens = r.fields["tokenizer.ggml.tokens"]
    assert len(tokens.data) == QWEN_7B_VOCAB
    assert tokens.contents(QWEN_7B_VOCAB - 1) == f"[PAD{QWEN_7B_VOCAB - 1}]"
    shapes = {t.name: [int(x) for x in t.shape] for t in r.tensors if t.name in ("token_embd.weight", "output.weight")}
    assert shapes == {"token_embd.weight": [1536, QWEN_7B_VOCAB], "output.weight": [1536, QWEN_7B_VOCAB]}


def test_padded_pair_greedy_is_the_padded_targets_own_text(make_engine, padded_target, threads):
    alone = make_engine(padded_target, n_ctx=1024, threads=threads)
    assert alone.target.n_vocab == QWEN_7B_VOCAB
    ref_toks, margins = G.reference(alone, N, PROMPT)
    alone.close()

    e = make_engine(padded_target, DRAFT, n_ctx=1024, threads=threads)
    assert (e.target.n_vocab, e.draft.n_vocab, e.target.n_use) == (QWEN_7B_VOCAB, 151936, 151936)
    events, records = G.run_with_hook(e, Settings(draft_max=2, drafter="model"), N, PROMPT)
    end = events[-1]
    assert isinstance(end, RunEnded) and end.reason in ("n_predict", "eog") and end.error == ""
    G.assert_argmax_of_verify_pass(records)
    toks = G.emitted_ids(events)
    cut = next((i for i, m in enumerate(margins) if m < NEAR_TIE), len(margins))
    assert toks[:cut] == ref_toks[:cut], f"split before the first near tie (step {cut})"
    first_diff = next((i for i, (a, b) in enumerate(zip(toks, ref_toks)) if a != b), None)
    if first_diff is not None:
        assert margins[first_diff] < NEAR_TIE, (first_diff, margins[first_diff])
    snap = stats.compute(events)
    assert snap.n_drafted > 0 and snap.acceptance_rate > 0.3  # the pair really speculates (95.8% in llama.cpp)


def test_padded_pair_sampled_exact_counts(make_engine, padded_target, threads):
    e = make_engine(padded_target, DRAFT, n_ctx=1024, threads=threads)
    events, _ = G.run_with_hook(e, Settings(draft_max=3, temperature=0.8, drafter="model", seed=3), N, PROMPT)
    end = events[-1]
    assert isinstance(end, RunEnded) and end.reason in ("n_predict", "eog") and end.error == ""
    snap = stats.compute(events)
    assert (end.n_emitted, end.n_drafted, end.n_accepted, end.n_passes) == (
        snap.n_emitted, snap.n_drafted, snap.n_accepted, snap.n_passes)
    ids = G.emitted_ids(events) + [d.id for ev in events if isinstance(ev, PassEvent) for d in ev.drafts]
    assert ids and max(ids) < 151936
    assert snap.n_drafted > 0
