"""The block drafters, llama.cpp's ``draft-dflash`` and ``draft-dspark``: a draft model that reads the target's
hidden states (``block_head.BlockHead``) and proposes a whole block of drafts in ONE draft decode, so a pass's
draft cost does not grow with k.

What each position proposes, as common/speculative.cpp's ``common_speculative_impl_draft_dflash::draft``:

- DFlash: the block is ``[anchor, mask x k]``; slot i (1..k) proposes draft i. At T = 0 the draft is the slot's
  best token (the reference's top-k 10 sampler); with --draft-p-min the block stops at the first slot whose top
  candidate's probability (softmax over its 10 best logits) is below it;
- DSpark: the same block, but the Markov head has biased each slot's logits in the graph by the slot before
  (``prev = argmax``, chained), and, when ``dflash.sample_from_anchor``, slot 0 predicts too (a block of k slots,
  k drafts). With --draft-p-min the block stops at the first slot whose *confidence head* value is below it (no
  top-10 check);
- both: a block shorter than --draft-min is dropped whole (``result.clear()``), not padded.

At T > 0 each slot's draft is sampled from softmax(row / T) and its q row goes to the verifier: the rows do not
depend on the drafts sampled (DSpark's chain is the graph's argmax), so the speculative-sampling rule stays exact.
No UI imports.
"""

from __future__ import annotations

import numpy as np

from ...contract.errors import SpectuiError
from ...contract.events import DRAFT_STOP_K, DRAFT_STOP_P_MIN
from ..topn import LLAMA_DRAFT_TOP_K, llama_confidence, top_ids
from ..verify import sample, softmax
from .base import DrafterSpec, DraftLimits, Proposal, finish_row, loaded_head
from .head import HeadDrafter


class BlockDrafter(HeadDrafter):
    """A ``BlockHead`` behind the drafter interface. The pass loop hands it every target decode
    (``target_decoded``: the features go into the draft's cache; after a verify the rejected positions go)."""

    block = True  # one draft decode per pass, whatever k (probes.head_probe: its step is the whole propose)
    reads_tree = False  # its head reads a decode's first rows only: no tree verify beside it

    def start(self) -> None:
        """A new run: the draft's cache is empty."""
        self.head.rollback(0)

    def propose(self, tokens, k, temperature, rng) -> Proposal:
        lim = k if isinstance(k, DraftLimits) else DraftLimits(int(k))
        if lim.k <= 0 or not tokens:
            return Proposal()
        h = self.head
        with_conf = h.dspark and lim.p_min > 0
        if with_conf and not h.has_conf:
            raise SpectuiError("DSpark draft has no confidence head: please set --draft-p-min 0")
        block = h.draft(tokens[-1], len(tokens) - 1, lim.k, with_conf=with_conf)
        keep: list[np.ndarray] | None = [] if self.keep_rows else None
        prop = Proposal(ids=[], q_probs=[], q_rows=[] if temperature > 0 else None, logit_rows=keep,
                        top=[] if lim.top_n > 0 else None, stop=DRAFT_STOP_K)
        n_top = max(lim.top_n, LLAMA_DRAFT_TOP_K if lim.p_min > 0 else 0)
        greedy = block.rows.argmax(axis=1) if len(block.rows) else []  # T = 0: each slot's first best, at once
        for j, row in enumerate(block.rows):
            if self._refused(prop, row, j, block.conf, lim.p_min, n_top):
                break
            best = top_ids(row, n_top) if n_top else None
            if temperature > 0:
                q = softmax(row, temperature)
                d = sample(q, rng)
                prop.q_rows.append(q)  # type: ignore[union-attr]
                prop.q_probs.append(float(q[d]))
            else:
                q, d = None, greedy[j]  # the reference's top-k 10 sampler's choice (llama_ext.top_of_row's)
            if keep is not None:
                keep.append(row)
            finish_row(prop, row, best, q, int(d), temperature, lim.top_n, n_top)
            prop.ids.append(int(d))
        if len(prop.ids) < lim.n_min:  # the reference drops a block shorter than n_min
            prop.ids, prop.q_probs, prop.heads = [], [], []
            prop.q_rows = [] if prop.q_rows is not None else None
            prop.top = [] if prop.top is not None else None
            prop.stop = DRAFT_STOP_P_MIN if lim.p_min > 0 else prop.stop
        return prop

    def _refused(self, prop: Proposal, row: np.ndarray, j: int, conf, p_min: float, n_top: int) -> bool:
        """Slot j is below --draft-p-min (DSpark: its confidence; DFlash: its top candidate's top-10 softmax):
        the proposal stops there (said in ``prop``)."""
        if p_min <= 0:
            return False
        p = float(conf[j]) if conf is not None else (
            -1.0 if self.head.dspark else llama_confidence(row, top_ids(row, n_top)))
        if p < 0 or p >= p_min:
            return False
        prop.stop, prop.stop_p = DRAFT_STOP_P_MIN, p
        if self.keep_rows:
            prop.stop_row = row
        return True


SPECS = (
    DrafterSpec(name="dflash", spec_type="draft-dflash", needs="target's hidden states", shape="chain",
                order=13, priority=13, head=True, block=True,
                summary="a DFlash block drafter (--draft) proposes a whole block from the target's hidden states "
                        "in one draft pass",
                make=loaded_head("dflash")),
    DrafterSpec(name="dspark", spec_type="draft-dspark", needs="target's hidden states", shape="chain",
                order=14, priority=14, head=True, block=True,
                summary="a DSpark block drafter (--draft): DFlash plus a Markov head chaining the block's slots",
                make=loaded_head("dspark")),
)
