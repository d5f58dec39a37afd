"""The kernels' own noise: how far the target's logits move when the same tokens are verified in a batch of
k + 1 instead of decoded one at a time (the only difference between a greedy speculative run and the
target-only run it is compared with).

llama.cpp is not batch-invariant: a batch of several tokens may run other kernels (another matrix-multiply
path, another quantisation of the activations, another reduction order) than a one-token decode, and the KV
cells a batch writes carry that rounding into every later row. A greedy step whose top-two margin is within
that noise may then choose the other token, and the texts part there: numerics, not a fault of speculation.

``measure_noise(engine)`` measures it on the loaded target, between runs:

1. the target greedy-decodes ``n_tokens`` after a fixed prompt one token at a time (the prompt in
   ``decode_chunked``, then one ``llama_decode`` of one token per step, as a target-only run does),
   keeping every row of logits;
2. for each batch size b, the same tokens are decoded again after the same prompt in consecutive batches
   of b with every row's logits (a verify of k = b - 1 drafts, all accepted: the batch's kernels and a KV
   cache the batches wrote), and each row is compared with the one-token row of the same position.

Per batch size (:class:`BatchNoise`):

- ``max_abs``: the largest |batched - single| over every logit of every row (the largest logit difference);
- ``max_gap``: the largest change the batch made to a logit's gap to the row's top token,
  max_j |d_j - d_top| with d = batched - single. Speculation's token can differ from the target-only
  run's only where their gap, at least the top-two margin, is at most this: the near-tie threshold;
- ``flips``: rows whose argmax differs.

Only the target's shared ids (``LoadedModel.n_use``) are compared. The target's KV cache is left empty
(``Engine.run`` starts from an empty cache; ``measure_verify_ms`` decodes into an empty one). No UI imports.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ...contract.errors import SpectuiError
from ...contract.prompt import DEFAULT_PROMPT

DEFAULT_TOKENS = 64  # tokens decoded both ways (rows compared per batch size: DEFAULT_TOKENS - 1)
DEFAULT_MAX_BATCH = 9  # batch sizes 2..9: k = 1..8
MAX_BATCH_LIMIT = 64
MIN_TOKENS = 8


@dataclass(frozen=True)
class BatchNoise:
    """One batch size's comparison with the one-token decodes."""

    batch: int  # tokens per verify batch (k + 1)
    max_abs: float  # largest |batched - single| logit difference
    max_gap: float  # largest change of a logit's gap to the row's top token (the near-tie threshold)
    rows: int  # rows compared
    flips: int  # rows whose argmax differs
    worst_row: int  # the compared row where max_gap was seen (in measure_noise: generated step worst_row + 1)

    @property
    def k(self) -> int:
        return self.batch - 1


@dataclass(frozen=True)
class NoiseMeasurement:
    n_tokens: int  # tokens decoded one at a time
    prompt_tokens: int
    batches: tuple[BatchNoise, ...]
    min_margin: float  # the smallest top-two margin of the one-token rows (a near tie in the sample itself)
    wall_s: float


def _check(engine, batches: Sequence[int], n_tokens: int) -> list[int]:
    tgt = getattr(engine, "target", None)
    if tgt is None:
        raise SpectuiError("the engine is closed")
    if getattr(engine, "in_run", False):  # Engine.in_run: a run's events are not all consumed
        raise SpectuiError("the noise is measured between runs, not during one")
    if n_tokens < MIN_TOKENS:
        raise SpectuiError(f"the noise needs at least {MIN_TOKENS} tokens, not {n_tokens}")
    sizes = sorted({int(b) for b in batches})
    if not sizes or sizes[0] < 2 or sizes[-1] > MAX_BATCH_LIMIT:
        raise SpectuiError(f"batch sizes must be between 2 and {MAX_BATCH_LIMIT}, not {list(batches)}")
    if sizes[-1] > tgt.n_batch:
        raise SpectuiError(f"a verify batch of {sizes[-1]} tokens exceeds the batch size {tgt.n_batch}")
    return sizes


def one_token_rows(target, prompt_ids: Sequence[int], n_tokens: int) -> tuple[list[int], np.ndarray]:
    """Greedy tokens and their rows, one token per decode: row 0 after the prompt, row i after token i - 1."""
    target.clear()
    target.decode_chunked(list(prompt_ids), 0)
    first = target.logits_last()
    rows = np.empty((n_tokens, first.shape[0]), dtype=np.float32)
    rows[0] = first
    toks = [int(np.argmax(first))]
    p0 = len(prompt_ids)
    for i in range(1, n_tokens):
        target.decode([toks[-1]], p0 + i - 1, "last")
        rows[i] = target.logits_last()
        toks.append(int(np.argmax(rows[i])))
    return toks, rows


def batched_rows(target, p0: int, tokens: Sequence[int], batch: int, out: np.ndarray) -> np.ndarray:
    """``tokens`` decoded at p0.. in consecutive batches of ``batch`` with every row (the last batch may be
    shorter), into ``out`` (len(tokens) rows); the KV cache is rolled back to p0 first."""
    target.rollback(p0)
    for j in range(0, len(tokens), batch):
        chunk = list(tokens[j: j + batch])
        target.decode(chunk, p0 + j, "all")
        out[j: j + len(chunk)] = target.logits_rows(len(chunk))
    return out


def compare(single: np.ndarray, batched: np.ndarray, batch: int) -> BatchNoise:
    """The noise of ``batched`` rows against the ``single`` rows of the same positions."""
    d = batched.astype(np.float64) - single.astype(np.float64)
    top = np.argmax(single, axis=1)
    d_top = d[np.arange(len(d)), top]
    gaps = np.max(np.abs(d - d_top[:, None]), axis=1)
    worst = int(np.argmax(gaps)) if len(gaps) else 0
    return BatchNoise(
        batch=int(batch),
        max_abs=float(np.max(np.abs(d))) if d.size else 0.0,
        max_gap=float(gaps[worst]) if len(gaps) else 0.0,
        rows=int(len(d)),
        flips=int(np.sum(np.argmax(batched, axis=1) != top)),
        worst_row=worst,
    )


def measure_noise(engine, batches: Sequence[int] = tuple(range(2, DEFAULT_MAX_BATCH + 1)),
                  n_tokens: int = DEFAULT_TOKENS, prompt: str = DEFAULT_PROMPT,
                  progress: Callable[[str], None] | None = None) -> NoiseMeasurement:
    """Measure the noise of each batch size on the engine's target (see the module docstring)."""
    sizes = _check(engine, batches, n_tokens)
    tgt = engine.target
    t0 = time.perf_counter()
    ids = engine.tokenize(prompt)
    if not ids:
        raise SpectuiError("the noise prompt has no tokens")
    if len(ids) + n_tokens > engine.n_ctx:
        raise SpectuiError(f"the noise needs {len(ids) + n_tokens} cells, more than the context (-c {engine.n_ctx})")
    try:
        if progress:
            progress(f"{n_tokens} tokens one at a time")
        toks, single = one_token_rows(tgt, ids, n_tokens)
        s = np.sort(single, axis=1)
        min_margin = float(np.min(s[:, -1] - s[:, -2]))
        seq = toks[:-1]  # the tokens the one-token run decoded (the last one is only predicted)
        ref = single[1:]
        buf = np.empty_like(ref)
        out = []
        for b in sizes:
            if progress:
                progress(f"verify batches of {b}")
            out.append(compare(ref, batched_rows(tgt, len(ids), seq, b, buf), b))
    finally:
        tgt.clear()
    return NoiseMeasurement(n_tokens=n_tokens, prompt_tokens=len(ids), batches=tuple(out), min_margin=min_margin,
                            wall_s=time.perf_counter() - t0)
