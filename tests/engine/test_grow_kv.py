"""KV caches sized to the run (``Engine(grow_kv=True)``, what a headless run asks for): the caches start at
``n_batch`` cells and a run grows them to its prompt and ``n_predict`` tokens, never past ``-c``, which stays the
limit recorded and enforced. The runs are the same to the last bit of every probability (llama.cpp attends over
the cells in use, padded to 256, whatever the cache's size); the abort follows the new contexts; the headless
run on the Qwen pair stays within 300 MiB of its model files (it was 313 MiB over them with 4096 cells)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from hostile.peak_rss import run_peak  # noqa: E402
from qwen_pair import QWEN_DRAFT, QWEN_TARGET, needs_qwen  # noqa: E402

from spectui.contract.control import RunControl  # noqa: E402
from spectui.contract.events import PassEvent, RunEnded, RunStarted, Settings  # noqa: E402
from spectui.engine.llama.abort import DecodeAborted  # noqa: E402


def _run(engine, n: int, temp: float = 0.0, prompt: str = "the cat"):
    """(start, every pass's tokens and probabilities, the end) of one run."""
    events = list(engine.run(prompt, RunControl(Settings(draft_max=3, temperature=temp, seed=5)), n))
    start = events[0]
    passes = [(tuple(t.id for t in e.emitted), e.drafts, e.target, e.n_accepted, e.n_ctx_used)
              for e in events if isinstance(e, PassEvent)]
    end = events[-1]
    assert isinstance(start, RunStarted) and isinstance(end, RunEnded)
    return start, passes, (end.reason, end.n_emitted, end.n_drafted, end.n_accepted)


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_grown_caches_give_the_same_runs_and_record_the_same_context(make_engine, tiny_target, tiny_draft_noisy):
    full = make_engine(tiny_target, tiny_draft_noisy, n_ctx=2048, n_batch=64)
    grown = make_engine(tiny_target, tiny_draft_noisy, n_ctx=2048, n_batch=64, grow_kv=True)
    assert full.target.n_ctx == 2048 and grown.target.n_ctx == grown.draft.n_ctx == 256  # n_batch, padded
    assert grown.n_ctx == full.n_ctx == 2048
    for n, temp in ((8, 0.0), (600, 0.0), (40, 0.8), (700, 0.8)):
        a, b = _run(full, n, temp), _run(grown, n, temp)
        assert b[1] == a[1] and b[2] == a[2], (n, temp)  # every token, draft, probability and count
        assert a[0].n_ctx == b[0].n_ctx == 2048  # the limit recorded, not the cells made
        assert len(b[1]) > 1
    assert grown.target.n_ctx == grown.draft.n_ctx == 768  # grown for 700 tokens (256-cell steps), never shrunk
    assert grown.abort.attached == 2  # the new contexts carry the abort, counted once each
    grown.target.clear()  # the cells the last run left: a decode at 0 would collide with them
    control = RunControl()
    with grown.abort.watching(control):
        control.stop()
        with pytest.raises(DecodeAborted):
            grown.target.decode([1, 2, 3], 0, "last")


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_a_full_context_stops_where_it_did(make_engine, tiny_target, tiny_draft_noisy):
    full = make_engine(tiny_target, tiny_draft_noisy, n_ctx=300, n_batch=64)
    grown = make_engine(tiny_target, tiny_draft_noisy, n_ctx=300, n_batch=64, grow_kv=True)
    for n in (1000, -1):  # more than fits, and "until the context is full"
        a, b = _run(full, n), _run(grown, n)
        assert b[1] == a[1] and b[2] == a[2] and a[2][0] == "ctx_full"
    assert grown.n_ctx == 300


def test_no_growing_where_something_else_holds_the_contexts(make_engine, tiny_target, tiny_draft_noisy):
    graph = make_engine(tiny_target, tiny_draft_noisy, n_ctx=2048, n_batch=64, grow_kv=True, sampling="graph")
    assert graph.target.n_ctx == graph.draft.n_ctx == 2048  # the graph path's chains: full size from the start
    a = _run(graph, 300)
    assert a[2][0] == "n_predict" and graph.target.n_ctx == 2048


@pytest.mark.qwen
@needs_qwen
@pytest.mark.timeout(600)
def test_a_headless_run_on_the_qwen_pair_stays_within_300_mib_of_its_files():
    files = QWEN_TARGET.stat().st_size + QWEN_DRAFT.stat().st_size
    rc, _, peak_mb, out, err = run_peak("--target", QWEN_TARGET, "--draft", QWEN_DRAFT, "--headless", "-k", "2",
                                        "-n", "32", "-t", "2", timeout=500)
    assert rc == 0, err.decode("utf-8", "replace")[-2000:]
    over_mib = (peak_mb * 1024 * 1024 - files) / 2**20  # run_peak's MB are ru_maxrss KiB / 1024: MiB
    assert over_mib <= 300, f"peak {peak_mb:.0f} MiB, {over_mib:+.0f} MiB over the model files"
    assert b"n_accept" in out
