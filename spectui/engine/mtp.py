"""A target's own MTP (NextN) block drafting, step for step as llama.cpp's reference driver.

common/speculative.cpp, ``common_speculative_impl_draft_mtp``, in its single-head mode (one trained NextN
block, repeated for every draft position: qwen35 / qwen35moe, and the tiny mimo2 target of
benchmarks/make_spec_models.py). Not here yet: chained heads (step35: one NextN block per position,
``llama_set_nextn_layer_offset``) and shared-KV heads (gemma4 assistants).

- The MTP context is a second context on the *target's* model (loaded with ``load_mtp``), of type
  LLAMA_CONTEXT_TYPE_MTP, with ``ctx_other`` = the target context; its KV holds only the NextN block.
- The MTP block at position P takes the pair (token[P], h[P-1]), h being the target's pre-norm hidden state
  after its last block (llama_get_embeddings_nextn on the target, every row: unmasked).
- ``process(tokens, pos0)`` after every target decode: writes those pairs for the decoded tokens (the first
  one pairs with the pending h of the previous batch), keeps the batch's h rows;
- ``draft(id_last, pos0, n_max, p_min)``: (id_last, pending h) at pos0, then greedy steps feeding the
  block's own pre-norm output back as h; then drops the draft region's KV (the server's step);
- ``accept(n_accepted)``: the pending h becomes the verify batch's row n_accepted.

One sequence (seq 0). No UI imports.
"""

from __future__ import annotations

import numpy as np

from ..contract.errors import SpectuiError
from .eagle3 import TOP_K, DraftStep
from .llama_ext import HeadContext, CONTEXT_TYPE_MTP, PROCESS_DECODE, ExtBatch, ext, top_candidate
from .models import llama


class MtpHead(HeadContext):
    """An MTP context on the target's own model, drafting for the target context ``ctx_tgt``."""

    def __init__(self, model_tgt, ctx_tgt, n_ctx: int, threads: int = 1, n_ubatch: int = 512,
                 path: str = "the target") -> None:
        L = llama()
        self.x = x = ext()
        self.n_mtp_layers = x.n_layer_nextn(model_tgt)
        if self.n_mtp_layers <= 0:
            raise SpectuiError(f"--drafter mtp needs a target with MTP (NextN) layers, and {path} has none")
        if self.n_mtp_layers > 1:
            raise SpectuiError(f"{path} has {self.n_mtp_layers} chained MTP heads; spectui drafts with a single "
                               "repeated MTP head only so far")
        self.n_embd = x.n_embd_out(model_tgt)
        cp = L.llama_context_default_params()
        cp.n_ctx = n_ctx
        cp.n_batch = cp.n_ubatch = max(1, n_ubatch)
        cp.n_seq_max = 1
        cp.n_threads = cp.n_threads_batch = threads
        cp.ctx_type = CONTEXT_TYPE_MTP
        cp.n_rs_seq = 0
        cp.ctx_other = ctx_tgt
        # (llama.cpp aborts building the MTP graph of a model loaded without load_mtp: load the target with it)
        self.ctx = L.llama_init_from_model(model_tgt, cp)
        if not self.ctx:
            raise SpectuiError(f"llama.cpp could not create an MTP context on {path}")
        self.ctx_tgt = ctx_tgt
        self.mem = L.llama_get_memory(self.ctx)
        self.n_vocab = int(L.llama_vocab_n_tokens(L.llama_model_get_vocab(model_tgt)))
        x.set_embeddings_nextn(ctx_tgt, True, False)
        x.set_embeddings_nextn(self.ctx, True, True)
        self.batch = ExtBatch(self.ctx, self.n_embd, "MTP head")
        self.pending_h = np.zeros(self.n_embd, dtype=np.float32)
        self.verify_h = np.zeros((0, self.n_embd), dtype=np.float32)

    def process(self, tokens, pos0: int) -> None:
        n = len(tokens)
        if n == 0:
            return
        h_tgt = self.x.rows(self.x.get_embeddings_nextn(self.ctx_tgt), n, self.n_embd).copy()
        b = self.batch
        b.clear()
        for k in range(n):
            b.add(tokens[k], pos0 + k, self.pending_h if k == 0 else h_tgt[k - 1], False)
        b.run(PROCESS_DECODE)
        self.verify_h = h_tgt
        self.pending_h = h_tgt[n - 1].copy()

    def draft(self, id_last: int, pos0: int, n_max: int, p_min: float = 0.0, pick=None) -> list[DraftStep]:
        """``pick(ctx)`` (the engine's drafter): choose each step's (token, confidence) from the head's output
        row instead of the reference's top-k 10 choice (sampling at T > 0, --draft-min)."""
        if n_max <= 0:
            return []
        L = llama()
        b = self.batch
        b.clear()
        b.add(id_last, pos0, self.pending_h, True)
        out: list[DraftStep] = []
        i = 0
        while True:
            b.run(PROCESS_DECODE)
            tok, p = top_candidate(self.ctx, 0, self.n_vocab, TOP_K) if pick is None else pick(self.ctx)
            h = self.x.rows(self.x.get_embeddings_nextn_ith(self.ctx, 0), 1, self.n_embd)[0].copy()
            if p < p_min:
                break
            out.append(DraftStep(tok, p))
            if len(out) >= n_max:
                break
            b.clear()
            b.add(tok, pos0 + i + 1, h, True)
            i += 1
        # the server's step (tools/server/server-context.cpp): the draft region's KV goes before the verify
        L.llama_memory_seq_rm(self.mem, 0, pos0, -1)
        return out

    def accept(self, n_accepted: int) -> None:
        rows = len(self.verify_h)
        if rows > 0:
            self.pending_h = self.verify_h[min(int(n_accepted), rows - 1)].copy()
