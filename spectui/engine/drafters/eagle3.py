"""An EAGLE-3 head drafting from the target's hidden states, step for step as llama.cpp's reference driver.

common/speculative.cpp, ``common_speculative_impl_draft_eagle3``, is the reference; this class keeps its state
and calls in the same order, through spectui.engine.llama.llama_ext:

- the head reads the target's hidden states at the three layers ``llama_model_target_layer_ids`` names
  (inputs of those blocks; id n_layer would be the last block's output, llama_set_embeddings_nextn), so the
  target context must be set to extract them before it decodes (``Eagle3Head`` does that when made);
- ``process(tokens, pos0)``, after every target decode of ``tokens`` at ``pos0..``: the head's encoder fuses
  the three feature rows of each token into g (``fc``); its decoder then writes KV for the pairs
  (token[P+1], g[P]) at position P. The last position's pair needs the token the target has not sampled yet:
  it is deferred (``pending_pos`` / ``pending_g``);
- ``draft(id_last, n_max, p_min)``: completes the deferred pair with the target's freshest token, then
  drafts greedily, feeding each step's pre-norm state back as the next g; stops at n_max tokens or when
  the top candidate's probability (softmax over the 10 best logits, as the reference's top-k 10 sampler)
  falls below p_min; then drops the draft steps' KV past the deferred position (the server's step);
- ``accept(n_accepted)``: rebases the deferred pair to the first position not accepted.

The accepted context is sequence 0. Made with ``n_seq`` > 1 (one unified KV buffer), the head drafts trees too
(``eagle3_tree.py``: each branch in its own sequence, sharing its parent's cells); after a tree's verify
``process`` reads the target's rows of the chain the tree pass is seen as (``rows``). No UI imports.
"""

from __future__ import annotations

import numpy as np

from ...contract.errors import SpectuiError
from ..llama.llama_ext import (
    PROCESS_DECODE,
    PROCESS_ENCODE,
    TOP_K,
    DraftStep,
    ExtBatch,
    HeadContext,
    ext,
)
from ..llama.llama_lib import llama
from .base import DrafterSpec, loaded_head

__all__ = ["TOP_K", "DraftStep", "Eagle3Head"]  # TOP_K and DraftStep live in llama_ext (both heads draft with them)


class Eagle3Head(HeadContext):
    """An ``eagle3`` draft model and its context, drafting for one target context."""

    def __init__(self, path: str, model_tgt, ctx_tgt, n_ctx: int, threads: int = 1, n_ubatch: int = 512,
                 n_seq: int = 1) -> None:
        self.x = x = ext()
        self.open_own(path, "EAGLE-3 head", ctx_tgt, n_ctx, n_ubatch, threads,
                      lambda: self._read_layers(path, model_tgt), n_seq)
        # the target extracts the three layers for every token it decodes; the head its pre-norm state
        for lid in self.layer_ids:
            if lid < self.n_layer_tgt:
                x.set_embeddings_layer_inp(ctx_tgt, lid, True)
            else:
                x.set_embeddings_nextn(ctx_tgt, True, False)
        x.set_embeddings_nextn(self.ctx, True, True)
        self.batch = ExtBatch(self.ctx, self.n_embd_dec, "EAGLE-3 head")
        self.pending_g = np.zeros(self.n_embd_dec, dtype=np.float32)
        self.pending_pos = -1
        self.verify_g = np.zeros((0, self.n_embd_dec), dtype=np.float32)
        self.verify_pos_first = -1

    def _read_layers(self, path: str, model_tgt) -> None:
        """The three target layers the head reads, checked against the target's depth."""
        L = llama()
        self.layer_ids = self.x.target_layer_ids(self.model)
        if len(self.layer_ids) != 3:
            raise SpectuiError(f"draft model is not eagle3 (expected 3 extract layers, got {len(self.layer_ids)})"
                               f": {path}")
        self.n_embd_tgt = int(L.llama_model_n_embd(model_tgt))
        self.n_embd_dec = int(L.llama_model_n_embd(self.model))
        self.n_embd_enc = len(self.layer_ids) * self.n_embd_tgt
        self.n_layer_tgt = int(L.llama_model_n_layer(model_tgt))
        bad = [i for i in self.layer_ids if not 0 <= i <= self.n_layer_tgt]
        if bad:
            raise SpectuiError(f"the EAGLE-3 head {path} reads target layers {self.layer_ids}, but the target has "
                               f"{self.n_layer_tgt} (ids 0..{self.n_layer_tgt})")

    def features(self, n_tokens: int, rows=None) -> np.ndarray:
        """The (n_tokens, 3 x n_embd_tgt) features of the target's last decode, in target_layer_ids order; with
        ``rows``, those rows of the decode (a tree verify's chain), in that order."""
        x = self.x
        n_read = n_tokens if rows is None else max(rows) + 1
        cols = []
        for lid in self.layer_ids:
            addr = x.get_embeddings_layer_inp(self.ctx_tgt, lid) if lid < self.n_layer_tgt \
                else x.get_embeddings_nextn(self.ctx_tgt)
            got = x.rows(addr, n_read, self.n_embd_tgt)
            cols.append(got if rows is None else got[list(rows)])
        return np.concatenate(cols, axis=1)

    # ---- the reference's three calls

    def encode(self, feats: np.ndarray) -> np.ndarray:
        """g for each feature row (the head's fc), in chunks of n_ubatch as the reference."""
        L = llama()
        out = np.empty((len(feats), self.n_embd_dec), dtype=np.float32)
        feats = np.ascontiguousarray(feats, dtype=np.float32)
        for i in range(0, len(feats), self.n_ubatch):
            chunk = feats[i:i + self.n_ubatch]
            b = self.batch
            b.clear()
            pos = int(L.llama_memory_seq_pos_max(self.mem, 0)) + 1  # placeholders (the encoder ignores them)
            for j in range(len(chunk)):
                b.add_embd(chunk[j], pos + j, self.n_embd_enc)
            b.run(PROCESS_ENCODE)
            out[i:i + len(chunk)] = self.x.rows(self.x.get_embeddings_nextn(self.ctx), len(chunk), self.n_embd_dec)
        return out

    def process(self, tokens, pos0: int, rows=None) -> None:
        """After the target decoded ``tokens`` at positions pos0.. (every row's features extracted); ``rows``: the
        decode's row of each token, where they are not its first rows in order (a tree verify's chain:
        ``tree_pass.chain_rows``)."""
        L = llama()
        n = len(tokens)
        if n == 0:
            return
        g = self.encode(self.features(n, rows))
        b = self.batch
        b.clear()
        if self.pending_pos >= 0 and self.pending_pos + 1 == pos0 \
                and self.pending_pos > int(L.llama_memory_seq_pos_max(self.mem, 0)):
            b.add(tokens[0], self.pending_pos, self.pending_g, False)  # the cross-ubatch bridge
        for k in range(n - 1):
            b.add(tokens[k + 1], pos0 + k, g[k], False)
        self.verify_pos_first = pos0
        self.pending_pos = pos0 + n - 1
        self.verify_g = g
        self.pending_g = g[n - 1].copy()
        if b.n:
            b.run(PROCESS_DECODE)

    def draft(self, id_last: int, n_max: int, p_min: float = 0.0, pick=None) -> list[DraftStep]:
        """``pick(ctx, i)`` (the engine's drafter): choose each step's (token, confidence) from the head's output
        row i instead of the reference's top-k 10 choice (sampling at T > 0, --draft-min)."""
        L = llama()
        if self.pending_pos < 0 or n_max <= 0:
            return []
        L.llama_memory_seq_rm(self.mem, 0, self.pending_pos, -1)
        b = self.batch
        b.clear()
        b.add(id_last, self.pending_pos, self.pending_g, True)

        def step(tok: int, prenorm: np.ndarray, n: int) -> None:  # the step's pre-norm state is the next g
            b.add(tok, self.pending_pos + n, prenorm, True)

        out = self.draft_loop(n_max, p_min, pick, self.n_embd_dec, step)
        # the caller's step in the reference (tools/server/server-context.cpp: after drafting, the draft context
        # drops every position past the target's last one, so that process() can write the verify batch's pairs)
        L.llama_memory_seq_rm(self.mem, 0, self.pending_pos + 1, -1)
        return out

    def accept(self, n_accepted: int) -> None:
        rows = len(self.verify_g)
        if rows <= 0:
            return
        i_g = min(int(n_accepted), rows - 1)
        self.pending_pos = self.verify_pos_first + i_g
        self.pending_g = self.verify_g[i_g].copy()


SPEC = DrafterSpec(name="eagle3", spec_type="draft-eagle3", needs="EAGLE-3 head", shape="chain or tree",
                   order=11, priority=11, head=True,
                   summary="an EAGLE-3 head (--draft) drafts from the target's hidden states; a tree with -np, "
                           "--spec-eagle-topk ... (docs/trees.md)",
                   make=loaded_head("eagle3"))
