"""The batched cost curve: what one target step costs when B sequences share it, as a serving engine batches them.

A serving engine (llama-server with ``-np N`` slots, vLLM) puts every running request's tokens into one forward
pass. Without speculation each of B requests adds one token; with speculation at draft length k each adds
k + 1 (its last token and its k drafts, every row's logits kept for verification). This module measures both
on the loaded target, in a llama.cpp context of its own (``n_seq_max`` = the most sequences measured, one
KV stream a sequence, as llama-server with ``-np N`` has; the engine's own single-sequence context is left
untouched):

- every sequence 0..B_max-1 first holds the same short prompt in the KV cache
  (``contract.prompt.DEFAULT_PROMPT``, decoded per sequence, so the cells are distinct as a server's slots are);
- one measurement is one ``llama_decode`` of B x n tokens (sequence s at positions L..L+n-1, s < B, every
  row's logits), then every cell past the prompt is removed (``llama_memory_seq_rm(mem, -1, L, -1)``);
- the points are B in 1, 2, 4, ... ``max_seqs`` times n in {1} and {k + 1 for k in ``ks``}; rounds alternate
  their order (forward, then backward) after one discarded warm-up round and the median of ``repeats`` is
  kept, as ``spectui probe``'s own curve does;
- with a draft model, the draft's plain batched decode (B sequences of one token) too: a drafting step of B
  requests costs that (k steps per pass).

The largest point is bounded by what the context allows: at most ``llama_max_parallel_sequences()``
sequences and ``MAX_BATCH_TOKENS`` tokens in one batch (the default ``n_batch`` of llama.cpp and
llama-server), and the sizes measured stop at the largest power of two that fits.

No Textual imports; llama.cpp only through ``spectui.engine.llama.llama_lib``.
"""

from __future__ import annotations

import ctypes
import statistics
import time
from dataclasses import dataclass
from typing import Callable

from ...contract.draft_length import K_MAX
from ...contract.errors import SpectuiError
from ..llama.devices import gpu_devices, is_lavapipe
from ..llama.llama_lib import llama
from ..llama.models import LoadedModel

DEFAULT_MAX_SEQS = 32
DEFAULT_KS = (1, 2, 4)
DEFAULT_BATCH_REPEATS = 3
MAX_BATCH_TOKENS = 512  # tokens in one llama_decode (llama.cpp's and llama-server's default n_batch)


@dataclass(frozen=True)
class BatchPoints:
    """The raw medians: ``target_ms[(B, n)]`` (B sequences of n tokens), ``draft_ms[B]`` (B sequences of one
    token on the draft; empty without a draft), ``spread[(B, n)]`` ((max - min) / median)."""

    seqs: tuple[int, ...]
    ks: tuple[int, ...]
    target_ms: dict[tuple[int, int], float]
    draft_ms: dict[int, float]
    spread: dict[tuple[int, int], float]
    context_tokens: int
    repeats: int
    wall_s: float


def seq_sizes(max_seqs: int) -> tuple[int, ...]:
    """1, 2, 4, ... up to ``max_seqs`` (and ``max_seqs`` itself when it is not a power of two)."""
    out, b = [], 1
    while b <= max_seqs:
        out.append(b)
        b *= 2
    if out[-1] != max_seqs:
        out.append(max_seqs)
    return tuple(out)


def check_ks(ks) -> tuple[int, ...]:
    given = [int(k) for k in ks]
    out = tuple(sorted(set(given)))
    if not out or out[0] < 1 or out[-1] > K_MAX:
        raise SpectuiError(f"the batched probe's draft lengths must be between 1 and {K_MAX}, not {given}")
    return out


def fit_max_seqs(max_seqs: int, ks: tuple[int, ...]) -> int:
    """The most sequences that fit: llama.cpp's sequence limit and MAX_BATCH_TOKENS for the largest k."""
    if max_seqs < 1:
        raise SpectuiError(f"--batch-seqs must be at least 1, not {max_seqs}")
    L = llama()
    limit = int(L.llama_max_parallel_sequences()) if hasattr(L, "llama_max_parallel_sequences") else 64
    n_max = max(ks) + 1
    return max(1, min(max_seqs, limit, MAX_BATCH_TOKENS // n_max))


class BatchContext:
    """A second llama.cpp context on an already loaded model: ``n_seq_max`` sequences, a KV stream each (llama-server
    with ``-np N`` slots: each slot's attention over its own cells, a batch cut into micro-batches of consecutive
    sequences)."""

    def __init__(self, model: LoadedModel, n_seqs: int, n_batch: int, n_ctx: int, threads: int) -> None:
        L = llama()
        cp = L.llama_context_default_params()
        cp.n_ctx = n_ctx
        cp.n_batch = n_batch
        cp.n_ubatch = n_batch
        cp.n_seq_max = n_seqs
        cp.n_threads = threads
        cp.n_threads_batch = threads
        if hasattr(cp, "kv_unified"):
            cp.kv_unified = False  # a KV stream a sequence, as llama-server with -np N has (its --kv-unified is off)
        if model.n_gpu_layers and any(is_lavapipe(d) for d in gpu_devices()):  # see LoadedModel
            cp.flash_attn_type = getattr(L, "LLAMA_FLASH_ATTN_TYPE_DISABLED", 0)
        self.ctx = L.llama_init_from_model(model.model, cp)
        if not self.ctx:
            raise SpectuiError(f"llama.cpp could not create a context of {n_seqs} sequences for the {model.role} "
                               f"model (n_ctx={n_ctx}, n_batch={n_batch})")
        self.mem = L.llama_get_memory(self.ctx)
        self.n_batch = n_batch
        self.batch = L.llama_batch_init(n_batch, 0, 1)
        self.role = model.role

    def decode(self, rows: list[tuple[int, int, int]], logits: bool) -> float:
        """One llama_decode of (token, position, sequence) rows; its milliseconds (synchronised)."""
        L = llama()
        b = self.batch
        for i, (tok, pos, seq) in enumerate(rows):
            b.token[i] = tok
            b.pos[i] = pos
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = seq
            b.logits[i] = 1 if logits else 0
        if not logits:
            b.logits[len(rows) - 1] = 1
        b.n_tokens = len(rows)
        t = time.perf_counter()
        rc = L.llama_decode(self.ctx, b)
        L.llama_synchronize(self.ctx)
        ms = (time.perf_counter() - t) * 1000.0
        if rc != 0:
            raise SpectuiError(f"probe: llama_decode of a batch of {len(rows)} tokens failed on the {self.role} "
                               f"model (code {rc})")
        return ms

    def drop_after(self, pos: int) -> None:
        if not llama().llama_memory_seq_rm(self.mem, ctypes.c_int32(-1), pos, -1):
            raise SpectuiError(f"probe: llama_memory_seq_rm failed on the {self.role} model")

    def close(self) -> None:
        L = llama()
        if self.batch is not None:
            L.llama_batch_free(self.batch)
            self.batch = None
        if self.ctx:
            L.llama_free(self.ctx)
            self.ctx = None


def prefill_sequences(bc: BatchContext, prompt: list[int], n_seqs: int) -> None:
    """The prompt in each sequence's cells (per sequence, in pieces of the batch size)."""
    for s in range(n_seqs):
        i = 0
        while i < len(prompt):
            j = min(len(prompt), i + bc.n_batch)
            bc.decode([(prompt[p], p, s) for p in range(i, j)], logits=False)
            i = j


def measure_batched(engine, *, max_seqs: int = DEFAULT_MAX_SEQS, ks=DEFAULT_KS,
                    repeats: int = DEFAULT_BATCH_REPEATS, prompt: str = "",
                    progress: Callable[[str], None] | None = None) -> BatchPoints:
    """Measure the batched curve on a loaded ``Engine`` (between runs: its own context is not touched)."""
    if getattr(engine, "target", None) is None:
        raise SpectuiError("the engine is closed")
    if repeats < 1:
        raise SpectuiError(f"--repeats must be at least 1, not {repeats}")
    ks = check_ks(ks)
    seqs = seq_sizes(fit_max_seqs(max_seqs, ks))
    ns = (1,) + tuple(k + 1 for k in ks)
    t0 = time.perf_counter()
    ids = engine.target.tokenize(prompt or "a", add_special=True)
    ctx_ids = ids if prompt else ids[:1]
    tok = ids[-1] if ids else 0
    n_max = ns[-1]
    b_max = seqs[-1]
    n_batch = max(b_max * n_max, min(len(ctx_ids), MAX_BATCH_TOKENS), 1)
    n_ctx = b_max * (len(ctx_ids) + n_max) + 256
    models = [("target", engine.target)] + ([("draft", engine.draft)] if engine.draft is not None else [])
    made: dict[str, BatchContext] = {}
    try:
        for role, m in models:
            made[role] = BatchContext(m, b_max, n_batch, n_ctx, int(engine.threads))
            prefill_sequences(made[role], ctx_ids, b_max)
        pos0 = len(ctx_ids)
        points = [("target", b, n) for b in seqs for n in ns]
        if "draft" in made:
            points += [("draft", b, 1) for b in seqs]
        samples: dict[tuple[str, int, int], list[float]] = {p: [] for p in points}
        for rnd in range(repeats + 1):  # round 0: warm-up, discarded
            if progress:
                progress(f"batched: round {rnd} of {repeats}" if rnd else "batched: warm-up round")
            for role, b, n in (points if rnd % 2 == 0 else points[::-1]):
                bc = made[role]
                rows = [(tok, pos0 + j, s) for s in range(b) for j in range(n)]
                ms = bc.decode(rows, logits=True)
                bc.drop_after(pos0)
                if rnd:
                    samples[(role, b, n)].append(ms)
    finally:
        for bc in made.values():
            bc.close()
    med = {p: statistics.median(v) for p, v in samples.items()}
    return BatchPoints(
        seqs=seqs, ks=ks,
        target_ms={(b, n): med[("target", b, n)] for _, b, n in points if _ == "target"},
        draft_ms={b: med[("draft", b, 1)] for _, b, n in points if _ == "draft"},
        spread={(b, n): (max(samples[("target", b, n)]) - min(samples[("target", b, n)])) / med[("target", b, n)]
                for _, b, n in points if _ == "target"},
        context_tokens=len(ctx_ids), repeats=repeats, wall_s=time.perf_counter() - t0,
    )
