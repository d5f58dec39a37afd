"""A block drafter's draft model and context (DFlash, DSpark), call for call as llama.cpp's driver.

common/speculative.cpp, ``common_speculative_impl_draft_dflash`` (DSpark is the same class with ``is_dspark``),
is the reference; this class keeps its state and makes its calls in the same order, through
spectui.engine.llama.llama_ext:

- made: the draft (architecture ``dflash``) names the target layers it reads (``llama_model_target_layer_ids``:
  the *inputs* of those blocks, ``llama_set_embeddings_layer_inp`` on the target's context) and its trained block
  size (``dflash.block_size``, 16 when absent), whether slot 0 of a block predicts (``dflash.sample_from_anchor``,
  read by DSpark only), whether attention inside the block is causal (``dflash.attention.causal``, else not) and
  its mask token (``llama_vocab_mask``). A DSpark draft carries the Markov head (tensor ``markov_w1.weight``);
  its confidence head is assumed unless ``dflash.has_confidence_head`` says false, and then a p_min > 0 is
  refused, as llama.cpp refuses it;
- ``process(tokens, pos0)``, after every target decode of ``tokens`` at ``pos0..`` (the prompt's chunks, each
  verify batch): the target's features of each token (its layers' rows side by side) are injected into the
  draft's KV cache at the token's position (an embedding batch; the draft's ``fc`` fuses them);
- ``draft(id_last, pos0, n_max)``: ONE decode of the noise block ``[id_last, mask, mask, ...]`` at positions
  ``pos0..``: ``n_max + 1`` tokens for DFlash (slot 0 is the anchor, slots 1..n_max are read), ``n_max`` for DSpark
  when its slot 0 predicts. The block's rows are read as ``BlockRows``; the block's KV is dropped again (the
  caller's ``llama_memory_seq_rm(ctx_dft, pos_max + 1)`` in examples/speculative-simple).

``n_max`` is clamped to the trained block (``block_size - 1``; ``block_size`` for DSpark with sample_from_anchor).
DFlash2 drafts (a candidate selector: ``llama_model_dflash_selector_top_k`` > 0), drafts for M-RoPE targets
and DeepSeek-V4 DSpark backbones are refused in one line. One sequence (seq 0). No UI imports.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

from ...contract.errors import SpectuiError
from ..files import spec_kinds
from ..llama.llama_ext import PROCESS_DECODE, ExtBatch, HeadContext, ext
from ..llama.llama_lib import llama

DEFAULT_BLOCK_SIZE = 16  # common_speculative_impl_draft_dflash: block_size = 16 unless the draft says


@dataclass
class BlockRows:
    """One draft pass's output: the logit rows of the positions that propose (``rows[j]``: draft j), and for
    DSpark with a p_min, the confidence head's value at each (else None). Copies: valid after the next decode."""

    rows: np.ndarray
    conf: np.ndarray | None = None


def _meta(model, key: str) -> str | None:
    """A draft's metadata value as llama.cpp prints it (``llama_model_meta_val_str``), None when absent."""
    buf = ctypes.create_string_buffer(64)
    n = llama().llama_model_meta_val_str(model, key.encode(), buf, len(buf))
    return buf.value.decode(errors="replace") if n >= 0 else None


class BlockHead(HeadContext):
    """A ``dflash`` draft model and its context, drafting blocks for one target context (see the module
    docstring). ``dspark``: drive it as llama.cpp's ``draft-dspark`` (the draft must carry the Markov head)."""

    def __init__(self, path: str, model_tgt, ctx_tgt, n_ctx: int, dspark: bool, threads: int = 1,
                 n_ubatch: int = 512) -> None:
        L = llama()
        self.x = x = ext()
        self.name = "dspark" if dspark else "dflash"
        self.open_own(path, f"{self.name} draft", ctx_tgt, n_ctx, n_ubatch, threads,
                      lambda: self._read_model(path, model_tgt, dspark))
        self.dspark = dspark
        for lid in self.layer_ids:  # the target extracts its layers' inputs for every token it decodes
            x.set_embeddings_layer_inp(ctx_tgt, lid, True)
        x.set_embeddings_nextn(self.ctx, True, True)  # DSpark's confidence rides in the nextn rows
        L.llama_set_causal_attn(self.ctx, self.causal)
        self.batch = ExtBatch(self.ctx, self.n_embd_dec, f"{self.name} draft")
        self.n_runs = 0  # draft decodes (one per block)

    def _read_model(self, path: str, model_tgt, dspark: bool) -> None:
        """The facts the reference's constructor reads (and its refusals), before a context is made."""
        L, x = llama(), self.x
        self.layer_ids = x.target_layer_ids(self.model)
        if not self.layer_ids:
            raise SpectuiError(f"the {self.name} draft {path} names no target layers (dflash.target_layers)")
        self.n_embd_tgt = int(L.llama_model_n_embd(model_tgt))
        self.n_embd_dec = int(L.llama_model_n_embd(self.model))
        self.n_embd_enc = len(self.layer_ids) * self.n_embd_tgt
        n_layer_tgt = int(L.llama_model_n_layer(model_tgt))
        if any(not 0 <= i < n_layer_tgt for i in self.layer_ids):
            raise SpectuiError(f"the {self.name} draft {path} reads target layers {self.layer_ids}, but the target "
                               f"has {n_layer_tgt} blocks (ids 0..{n_layer_tgt - 1})")
        size = _meta(self.model, "dflash.block_size")
        self.block_size = int(size) if size is not None and size.isdigit() else DEFAULT_BLOCK_SIZE
        self.sample_from_anchor = _meta(self.model, "dflash.sample_from_anchor") in (None, "true")
        self.causal = _meta(self.model, "dflash.attention.causal") == "true"
        self.has_conf = _meta(self.model, "dflash.has_confidence_head") in (None, "true")
        self.mask_id = int(L.llama_vocab_mask(L.llama_model_get_vocab(self.model)))
        if self.mask_id < 0:
            raise SpectuiError(f"the {self.name} draft {path} has no mask token (tokenizer.ggml.mask_token_id)")
        if x.dflash_selector_top_k(self.model) > 0:
            raise SpectuiError(f"the draft {path} is a DFlash2 draft (a candidate selector); spectui drafts with "
                               "DFlash and DSpark drafts only (llama.cpp runs it: --spec-type draft-dflash)")
        if int(L.llama_model_rope_type(self.model)) == int(L.LLAMA_ROPE_TYPE_MROPE):  # 4 positions a token
            raise SpectuiError(f"the draft {path} is an M-RoPE {self.name} draft; spectui drafts with 1-D positions "
                               f"only (llama.cpp runs it: --spec-type draft-{self.name})")
        if _meta(self.model, "dflash.hyper_connection_count") is not None:
            raise SpectuiError(f"the draft {path} is a DeepSeek-V4 DSpark draft; spectui drafts with DFlash-backbone "
                               "drafts only (llama.cpp runs it: --spec-type draft-dspark)")
        kind = spec_kinds.spec_info(path).kind  # DSpark: the Markov head's tensor is there (llama.cpp's rule)
        if kind != self.name:
            raise SpectuiError(f"--drafter {self.name} needs a {self.name} draft, but {path} is a "
                               f"{kind} model" + (f" (use --drafter {kind})" if kind in ("dflash", "dspark") else ""))

    # ---- the reference's calls
    @property
    def n_draft_max(self) -> int:
        """The most drafts one block gives: block_size - 1 (slot 0 is the anchor), block_size for DSpark whose
        slot 0 predicts."""
        return self.block_size if self.anchor_predicts else self.block_size - 1

    @property
    def anchor_predicts(self) -> bool:
        return self.dspark and self.sample_from_anchor

    def features(self, n_tokens: int) -> np.ndarray:
        """The (n_tokens, n_layers x n_embd_tgt) features of the target's last decode, in target_layer_ids order."""
        x = self.x
        return np.concatenate([x.rows(x.get_embeddings_layer_inp(self.ctx_tgt, lid), n_tokens, self.n_embd_tgt)
                               for lid in self.layer_ids], axis=1)

    def process(self, tokens, pos0: int) -> None:
        """After the target decoded ``tokens`` at positions pos0..: inject their features, in chunks of n_ubatch."""
        n = len(tokens)
        if n == 0:
            return
        feats = np.ascontiguousarray(self.features(n), dtype=np.float32)
        b = self.batch
        for off in range(0, n, self.n_ubatch):
            b.clear()
            for i in range(off, min(n, off + self.n_ubatch)):
                b.add_embd(feats[i], pos0 + i, self.n_embd_enc, output=False)
            b.run(PROCESS_DECODE)

    def draft(self, id_last: int, pos0: int, n_max: int, with_conf: bool = False) -> BlockRows:
        """One decode of the noise block after ``id_last`` (at ``pos0``, not yet in the draft's cache): the rows
        of the ``min(n_max, n_draft_max)`` positions that propose, and DSpark's confidences when ``with_conf``."""
        L = llama()
        n_draft = max(0, min(int(n_max), self.n_draft_max))
        if n_draft == 0:
            return BlockRows(np.zeros((0, self.n_vocab), dtype=np.float32))
        first = 0 if self.anchor_predicts else 1
        n_block = n_draft + first
        L.llama_memory_seq_rm(self.mem, 0, int(pos0), -1)
        b = self.batch
        b.clear()
        for i in range(n_block):
            b.add_token(id_last if i == 0 else self.mask_id, pos0 + i, True)
        b.run(PROCESS_DECODE)
        self.n_runs += 1
        logits = np.ctypeslib.as_array(L.llama_get_logits(self.ctx), shape=(n_block, self.n_vocab))
        rows = logits[first:].copy()
        conf = None
        addr = self.x.get_embeddings_nextn(self.ctx) if with_conf and self.dspark else 0
        if addr:  # the reference reads no confidence where the draft returns none
            conf = self.x.rows(addr, n_block, self.n_embd_dec)[first:, 0].copy()
        L.llama_memory_seq_rm(self.mem, 0, int(pos0), -1)  # the block's KV goes: process() writes the verify's
        return BlockRows(rows, conf)

    def accept(self, n_accepted: int) -> None:
        """Nothing to carry (the reference's accept is a no-op): the caller rolls the cache back."""
