"""The costs a served step has beyond the batched curve (``batch_probe``): prompt chunks and sampling.

llama-server's step at concurrency B is not only B decodes or verifies (docs/batch-knee.md, "the server's own
batch shapes"): new requests' prompts join the same ``llama_decode`` in chunks (continuous batching), the draft
model evaluates every batch the target does (``common_speculative_process``), and every row with logits is
sampled on the CPU. This module measures, on the loaded models, what ``spectui.analysis.knee.server_steps`` needs
for those:

- ``chunk_ms[T]``: one sequence of T prompt tokens in one ``llama_decode``, the last row's logits only (a
  prompt chunk), for T in ``CHUNKS``, on the target and on the draft;
- ``sample_ms``: one row sampled as llama-server samples it (the full-vocabulary candidate array, top-k 40,
  then the greedy pick: ``common_sampler`` at temperature 0), the median over a decoded batch's rows.

Each in a one-sequence context of its own (the engine's contexts are left alone), rounds forward then backward
after one discarded warm-up round, the median of ``repeats`` kept, as the batched probe does.

No Textual imports; llama.cpp only through ``spectui.engine.llama.llama_lib``.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable

from ...contract.errors import SpectuiError
from ..llama.llama_lib import llama
from .batch_probe import DEFAULT_BATCH_REPEATS, BatchContext, prefill_sequences

CHUNKS = (8, 16, 32, 64, 128, 256)  # prompt tokens in one step (bench prompts: 40-200 tokens; n_ubatch 512)
SAMPLE_ROWS = 8
TOP_K = 40  # llama.cpp common_params_sampling.top_k


@dataclass(frozen=True)
class StepPoints:
    chunks: tuple[int, ...]
    target_chunk_ms: dict[int, float]
    draft_chunk_ms: dict[int, float]  # empty without a draft model
    sample_ms: float  # one row
    context_tokens: int
    repeats: int
    wall_s: float


def _sample_row_ms(bc: BatchContext, tok: int, pos0: int, repeats: int) -> float:
    """Median ms to sample one row of logits with llama.cpp's sampler (candidates, top-k, greedy)."""
    L = llama()
    chain = L.llama_sampler_chain_init(L.llama_sampler_chain_default_params())
    if not chain:
        raise SpectuiError("probe: llama.cpp could not make a sampler chain")
    try:
        L.llama_sampler_chain_add(chain, L.llama_sampler_init_top_k(TOP_K))
        L.llama_sampler_chain_add(chain, L.llama_sampler_init_greedy())
        times = []
        for rnd in range(repeats + 1):
            bc.decode([(tok, pos0 + j, 0) for j in range(SAMPLE_ROWS)], logits=True)
            for i in range(SAMPLE_ROWS):
                t = time.perf_counter()
                L.llama_sampler_sample(chain, bc.ctx, i)
                if rnd:
                    times.append((time.perf_counter() - t) * 1000.0)
            bc.drop_after(pos0)
        return statistics.median(times)
    finally:
        L.llama_sampler_free(chain)


def measure_steps(engine, *, chunks=CHUNKS, repeats: int = DEFAULT_BATCH_REPEATS, prompt: str = "",
                  progress: Callable[[str], None] | None = None) -> StepPoints:
    """Prompt-chunk costs on the target (and draft) and the cost of sampling a row, on a loaded ``Engine``."""
    if getattr(engine, "target", None) is None:
        raise SpectuiError("the engine is closed")
    if repeats < 1:
        raise SpectuiError(f"--repeats must be at least 1, not {repeats}")
    chunks = tuple(sorted(set(int(c) for c in chunks)))
    t0 = time.perf_counter()
    ids = engine.target.tokenize(prompt or "a", add_special=True)
    ctx_ids = ids if prompt else ids[:1]
    tok = ids[-1] if ids else 0
    n_batch = max(chunks[-1], SAMPLE_ROWS, min(len(ctx_ids), 512))
    n_ctx = len(ctx_ids) + chunks[-1] + 256
    models = [("target", engine.target)] + ([("draft", engine.draft)] if engine.draft is not None else [])
    made: dict[str, BatchContext] = {}
    try:
        for role, m in models:
            made[role] = BatchContext(m, 1, n_batch, n_ctx, int(engine.threads))
            prefill_sequences(made[role], ctx_ids, 1)
        pos0 = len(ctx_ids)
        points = [(role, c) for role, _ in models for c in chunks]
        samples: dict[tuple[str, int], list[float]] = {p: [] for p in points}
        for rnd in range(repeats + 1):  # round 0: warm-up, discarded
            if progress:
                progress(f"steps: round {rnd} of {repeats}" if rnd else "steps: warm-up round")
            for role, c in (points if rnd % 2 == 0 else points[::-1]):
                bc = made[role]
                ms = bc.decode([(tok, pos0 + j, 0) for j in range(c)], logits=False)
                bc.drop_after(pos0)
                if rnd:
                    samples[(role, c)].append(ms)
        sample_ms = _sample_row_ms(made["target"], tok, pos0, repeats)
    finally:
        for bc in made.values():
            bc.close()
    med = {p: statistics.median(v) for p, v in samples.items()}
    return StepPoints(
        chunks=chunks,
        target_chunk_ms={c: med[("target", c)] for c in chunks},
        draft_chunk_ms={c: med[("draft", c)] for c in chunks} if "draft" in made else {},
        sample_ms=sample_ms, context_tokens=len(ctx_ids), repeats=repeats, wall_s=time.perf_counter() - t0,
    )
