"""What a pipelined pass costs on this machine against a sequential one (``--pipeline auto``, the benchmark):
``measure_split(engine)`` times a draft step and the target's verify batches at the sequential threads (-t,
-td; each model alone, as they run there) and at the pipelined split (the draft stepping on the draft thread
while the target verifies, as they run there: the two share the cores' memory bandwidth, so each is timed
under the other's load). Between runs only; both KV caches are cleared (a run clears them anyway).
``analysis.pipeline_cost`` turns the figures into a prediction and a choice.
"""

from __future__ import annotations

import statistics
import threading
import time
from dataclasses import dataclass

from ...contract.errors import SpectuiError


@dataclass(frozen=True)
class SplitCosts:
    """Milliseconds measured by ``measure_split``.

    Attributes:
        threads: the sequential passes' (target, draft) threads.
        split: the pipelined passes' (target, draft) threads.
        draft_ms: one draft step at the sequential threads (the draft alone).
        verify_ms: {k: a verify of k + 1 tokens} at the sequential threads (the target alone).
        split_draft_ms: one draft step at the split, while the target verifies.
        split_verify_ms: {k: a verify of k + 1 tokens} at the split, while the draft steps.
        solo_draft_ms: one draft step at the split's draft threads, alone (what the other model's load costs).
        solo_verify_ms: {k: a verify} at the split's target threads, alone.
    """

    threads: tuple[int, int]
    split: tuple[int, int]
    draft_ms: float
    verify_ms: dict[int, float]
    split_draft_ms: float
    split_verify_ms: dict[int, float]
    solo_draft_ms: float = 0.0
    solo_verify_ms: dict[int, float] | None = None


def _timed(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats + 1):  # one warm-up
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000.0)
    return statistics.median(times[1:])


def _verify_ms(target, tok: int, ks, repeats: int) -> dict[int, float]:
    def verify(n):
        target.decode([tok] * n, 0, "all")
        target.rollback(0)

    return {k: _timed(lambda k=k: verify(k + 1), repeats) for k in ks}


def _draft_steps(draft, tok: int, stop: threading.Event, out: list[float]) -> None:
    """On the draft thread: one-token draft decodes back to back until ``stop`` (each rolled back)."""
    while not stop.is_set():
        t = time.perf_counter()
        draft.decode([tok], 0, "last")
        out.append((time.perf_counter() - t) * 1000.0)
        draft.rollback(0)


def measure_split(engine, ks=range(1, 9), repeats: int = 5) -> SplitCosts:
    """The costs of both ways to run the engine's pair (see the module docstring).

    Raises:
        SpectuiError: no draft model, or a run is going on.
    """
    parts = engine.parts()
    setup = parts.pipeline
    if setup is None or parts.draft is None:
        raise SpectuiError("--pipeline needs a draft model (--draft)")
    if engine.in_run:
        raise SpectuiError("the pipeline's costs are measured between runs")
    target, draft = parts.target, parts.draft
    ids = target.tokenize("a", add_special=False)
    tok = ids[0] if ids else 0
    parts.reset_for_run()
    try:
        target.set_threads(setup.threads[0])
        draft.set_threads(setup.threads[1])
        d_seq = _timed(lambda: (draft.decode([tok], 0, "last"), draft.rollback(0)), repeats)
        v_seq = _verify_ms(target, tok, ks, repeats)
        target.set_threads(setup.split[0])
        draft.set_threads(setup.split[1])
        d_solo = _timed(lambda: (draft.decode([tok], 0, "last"), draft.rollback(0)), repeats)
        v_solo = _verify_ms(target, tok, ks, repeats)
        stop, steps = threading.Event(), []
        fut = setup.thread.submit(_draft_steps, draft, tok, stop, steps)
        try:
            while not steps and not fut.done():  # the draft is stepping before the target is timed
                time.sleep(0.001)
            v_split = _verify_ms(target, tok, ks, repeats)
        finally:
            stop.set()
            fut.result()
        d_split = statistics.median(steps[1:] or steps)
    finally:
        target.set_threads(setup.threads[0])
        draft.set_threads(setup.threads[1])
        parts.reset_for_run()
    return SplitCosts(setup.threads, setup.split, d_seq, v_seq, d_split, v_split, d_solo, v_solo)
