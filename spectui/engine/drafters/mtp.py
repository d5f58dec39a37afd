"""A target's own MTP (NextN) blocks drafting, step for step as llama.cpp's reference driver.

common/speculative.cpp, ``common_speculative_impl_draft_mtp``, in its two modes without a shared KV cache:

- a single head (one trained NextN block, repeated for every draft position: qwen35 / qwen35moe, and the
  tiny mimo2 target of benchmarks/make_spec_models.py);
- chained heads (``n_layer_nextn`` > 1 and the KV not shared: step35's rule; head i drafts position i,
  selected with ``llama_set_nextn_layer_offset``). Each draft step drops the draft region's KV and rebuilds
  it under head i from the whole prefix, (id_last, d_0 .. d_{i-1}) paired with ``chain_h`` = (pending h,
  h of step 0 .. i-1); ``process()`` writes every head's KV for the target's batch, one decode per head.
  The reference caps the draft at N tokens (``params.n_max = min(n_max, n_mtp_layers)``): asked for k > N
  drafts, the chained head drafts N.

Shared-KV heads (gemma4 assistants, whose context reads the target's KV through ``ctx_other``) are refused.

- The MTP context is a second context on the *target's* model (loaded with ``load_mtp``), of type
  LLAMA_CONTEXT_TYPE_MTP, with ``ctx_other`` = the target context; its KV holds only the NextN blocks.
- The MTP block at position P takes the pair (token[P], h[P-1]), h being the target's pre-norm hidden state
  after its last block (llama_get_embeddings_nextn on the target, every row: unmasked).
- ``process(tokens, pos0)`` after every target decode: writes those pairs for the decoded tokens (the first
  one pairs with the pending h of the previous batch), keeps the batch's h rows;
- ``draft(id_last, pos0, n_max, p_min)``: (id_last, pending h) at pos0, then steps feeding the block's own
  pre-norm output back as h; then drops the draft region's KV (the server's step);
- ``accept(n_accepted)``: the pending h becomes the verify batch's row n_accepted.

One sequence (seq 0): the head drafts chains; after a tree's verify (a draft model's tree, the head reading every
decode) ``process`` reads the target's rows of the chain the tree pass is seen as (``rows``). No UI imports.
"""

from __future__ import annotations

import numpy as np

from ...contract.errors import SpectuiError
from ..llama.llama_ext import CONTEXT_TYPE_MTP, PROCESS_DECODE, DraftStep, ExtBatch, HeadContext, ext, head_context
from ..llama.llama_lib import address, llama
from .base import DrafterSpec, loaded_head


class MtpHead(HeadContext):
    """An MTP context on the target's own model, drafting for the target context ``ctx_tgt``."""

    def __init__(self, model_tgt, ctx_tgt, n_ctx: int, threads: int = 1, n_ubatch: int = 512,
                 path: str = "the target") -> None:
        L = llama()
        self.x = x = ext()
        self.n_mtp_layers = x.n_layer_nextn(model_tgt)
        if self.n_mtp_layers <= 0:
            raise SpectuiError(f"--drafter mtp needs a target with MTP (NextN) layers, and {path} has none")
        self.n_embd = x.n_embd_out(model_tgt)
        # (llama.cpp aborts building the MTP graph of a model loaded without load_mtp: load the target with it)
        self.ctx = head_context(model_tgt, ctx_tgt, n_ctx, n_ubatch, threads, CONTEXT_TYPE_MTP)
        if not self.ctx:
            raise SpectuiError(f"llama.cpp could not create an MTP context on {path}")
        self.ctx_tgt = ctx_tgt
        self.mem = L.llama_get_memory(self.ctx)
        # the reference's modes: llama.cpp keeps ctx_other only for a head that reads the target's KV (gemma4)
        if x.get_ctx_other(self.ctx) == address(ctx_tgt):
            L.llama_free(self.ctx)
            self.ctx = None
            raise SpectuiError(f"{path}'s MTP head shares the target's KV cache (a gemma4 assistant); spectui drafts "
                               "only with MTP heads that keep their own")
        self.chain = self.n_mtp_layers > 1  # step35's rule: n_layer_nextn > 1 and the KV not shared
        self.n_vocab = int(L.llama_vocab_n_tokens(L.llama_model_get_vocab(model_tgt)))
        x.set_embeddings_nextn(ctx_tgt, True, False)
        x.set_embeddings_nextn(self.ctx, True, True)
        self.batch = ExtBatch(self.ctx, self.n_embd, "MTP head")
        self.pending_h = np.zeros(self.n_embd, dtype=np.float32)
        self.verify_h = np.zeros((0, self.n_embd), dtype=np.float32)

    def max_drafts(self, k: int) -> int:
        """How many drafts one pass asks of the head: chained heads draft one position each, so at most N (the
        reference caps --spec-draft-n-max there); a single head repeats, as many as asked."""
        return min(int(k), self.n_mtp_layers) if self.chain else int(k)

    def head_of(self, i: int) -> int:
        """The NextN block (0-based) that drafts position i of a pass."""
        return i if self.chain else 0

    def _select(self, head: int, pos0: int) -> None:
        """Chained heads: drop the KV from pos0 on and select NextN block ``head`` (the reference's steps)."""
        llama().llama_memory_seq_rm(self.mem, 0, pos0, -1)
        self.x.set_nextn_layer_offset(self.ctx, head)

    def process(self, tokens, pos0: int, rows=None) -> None:
        """After the target decoded ``tokens`` at positions pos0..; ``rows``: the decode's row of each token, where
        they are not its first rows in order (a tree verify's chain: ``tree_pass.chain_rows``)."""
        n = len(tokens)
        if n == 0:
            return
        if rows is None:
            h_tgt = self.x.rows(self.x.get_embeddings_nextn(self.ctx_tgt), n, self.n_embd).copy()
        else:
            h_tgt = self.x.rows(self.x.get_embeddings_nextn(self.ctx_tgt), max(rows) + 1, self.n_embd)[list(rows)]
        b = self.batch
        b.clear()
        for k in range(n):
            b.add(tokens[k], pos0 + k, self.pending_h if k == 0 else h_tgt[k - 1], False)
        for head in range(self.n_mtp_layers):  # every head writes its own layer's KV for the batch
            if self.chain:
                self._select(head, pos0)
            b.run(PROCESS_DECODE)
        if self.chain:
            self.x.set_nextn_layer_offset(self.ctx, 0)  # the default for other decodes, as the reference
        self.verify_h = h_tgt
        self.pending_h = h_tgt[n - 1].copy()

    def draft(self, id_last: int, pos0: int, n_max: int, p_min: float = 0.0, pick=None) -> list[DraftStep]:
        """``pick(ctx, i)`` (the engine's drafter): choose each step's (token, confidence) from the head's output
        row i instead of the reference's top-k 10 choice (sampling at T > 0, --draft-min)."""
        n_max = self.max_drafts(n_max)
        if n_max <= 0:
            return []
        b = self.batch
        b.clear()
        b.add(id_last, pos0, self.pending_h, True)
        toks, chain_h = [int(id_last)], [self.pending_h.copy()]

        def step(tok: int, h: np.ndarray, n: int) -> None:
            if not self.chain:  # the growing KV: only the new token, at the next position
                b.add(tok, pos0 + n, h, True)
                return
            toks.append(int(tok))  # chained: the whole prefix again, for head n to rebuild its KV
            chain_h.append(h)
            for t in range(n + 1):
                b.add(toks[t], pos0 + t, chain_h[t], t == n)

        before = (lambda i: self._select(i, pos0)) if self.chain else None
        try:
            out = self.draft_loop(n_max, p_min, pick, self.n_embd, step, before)
        finally:
            if self.chain:
                self.x.set_nextn_layer_offset(self.ctx, 0)
        # the server's step (tools/server/server-context.cpp): the draft region's KV goes before the verify
        llama().llama_memory_seq_rm(self.mem, 0, pos0, -1)
        return out

    def accept(self, n_accepted: int) -> None:
        rows = len(self.verify_h)
        if rows > 0:
            self.pending_h = self.verify_h[min(int(n_accepted), rows - 1)].copy()


SPEC = DrafterSpec(name="mtp", spec_type="draft-mtp", needs="target's MTP layers", shape="chain",
                   order=12, priority=12, head=True,
                   summary="the target's own MTP (NextN) layers draft, no second file",
                   make=loaded_head("mtp"))
