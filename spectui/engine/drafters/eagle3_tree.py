"""An EAGLE-3 head drafting a tree (EAGLE-2/3's dynamic tree; docs/trees.md): the ``eagle3`` drafter when the
tree's options are given (``-np`` above 1, ``--draft-p-split``, ``--spec-eagle-topk``, ``--spec-num-steps``,
``--spec-num-draft-tokens``: ``draft_tree.drafts_tree``).

The search is the draft model's (``draft_tree.TreeSearch``): top-k children per node, best first by path score
within the node budget, the children drawn from the head's q without replacement at T > 0, so the target's tree
verify (``run/tree_pass.py``, ``tree_verify``) stays lossless at T = 0 and exact above. Each expansion runs the
head once on the frontier: the nodes whose rows the search needs next, in one ``llama_process``.

The head's own KV: its context is made with ``TREE_SEQS`` sequences sharing one unified buffer
(``llama_ext.head_context``). The accepted context is sequence 0 and ends, as in a chain's draft, with the root:
the last accepted token paired with the pending g at the pending position. A node at depth d is the head's pair
(its token, the pre-norm state of its parent's step) at the pending position + d, decoded in its parent's sequence
when it is the parent's first decoded child, else in a new sequence that first shares the parent's cells
(llama_memory_seq_cp up to the parent's position: no KV data copied), so llama.cpp's mask lets each node see the
context and its own ancestors only. After the search every sequence but 0 is dropped and sequence 0 keeps the
root, the state a chain's draft leaves; after the verify the head reads the target's rows of the chain the pass
is seen as (the root, the accepted path, the first child refused after it: ``tree_pass.chain_rows``, through
``HeadDrafter.target_decoded``'s ``rows``) and keeps the accepted pairs, as after a chain's verify.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..llama.llama_ext import PROCESS_DECODE
from ..llama.llama_lib import llama
from ..rowmath import RowPool
from .base import DraftLimits, Proposal
from .draft_tree import TREE_SEQS, RankRates, TreeParams, TreeSearch
from .head import HeadDrafter


class HeadTreeDrafter(HeadDrafter):
    """An EAGLE-3 head (``eagle3.Eagle3Head`` made with ``TREE_SEQS`` sequences) drafting trees (see the module
    docstring); it reads the target's decodes as the chain's ``HeadDrafter`` does.

    Args:
        name: the drafter's name ("eagle3").
        head: the head.
        params: the tree's limits.
    """

    def __init__(self, name: str, head, params: TreeParams) -> None:
        super().__init__(name, head)
        self.params = params
        self.pool = RowPool()
        self.rates = RankRates()  # the run's verdicts by rank and confidence (draft_tree.RankRates)
        self._judged: tuple | None = None
        self._seq_of: dict[int, int] = {}  # decoded node (-1 root) -> its sequence
        self._extended: set[int] = set()  # decoded nodes whose sequence a child extends
        self._next_seq = 1
        self._h: dict[int, np.ndarray] = {}  # decoded node (-1 root) -> its step's pre-norm state (its children's g)
        self._pos0 = -1  # the root's position in the head's cache (the pending position)

    def start(self) -> None:
        """A new run: the head as the chain's ``start`` leaves it, and nothing learned yet."""
        super().start()
        self.rates = RankRates()
        self._judged = None

    def propose(self, tokens, k, temperature, rng) -> Proposal:
        lim = k if isinstance(k, DraftLimits) else DraftLimits(int(k))
        h = self.head
        if lim.k <= 0 or not tokens or h.pending_pos < 0 or h.n_seq < TREE_SEQS:
            return Proposal()
        s = TreeSearch(self, lim, temperature, rng)
        self._seq_of, self._extended, self._next_seq, self._h = {-1: 0}, set(), 1, {}
        self._pos0 = h.pending_pos
        llama().llama_memory_seq_rm(h.mem, 0, self._pos0, -1)
        b = h.batch
        b.clear()
        try:
            idx = b.add(int(tokens[-1]), self._pos0, h.pending_g, True)  # the root: the chain's first step
            b.run(PROCESS_DECODE)
            s.read_row(-1, self._read(idx, -1))
            s.run()
        finally:
            self._drop_branches()
        self._judged = s.judged()
        return s.proposal()

    def decode_nodes(self, s: TreeSearch, v: int) -> bool:
        """Run the head on ``v`` and the nodes the search needs next, in one batch, each in its sequence (see the
        module docstring), and read their rows. False: no sequence is left for ``v``."""
        b = self.head.batch
        b.clear()
        batch: list[tuple[int, int]] = []  # (node, its batch index)
        for w in s.pending(v, s.topk):
            par = s.parents[w]
            seq = self._seq_for(par, s)
            if seq is None:
                continue
            self._seq_of[w] = seq
            batch.append((w, b.add(s.ids[w], self._pos(w, s), self._h[par], True, seq=seq)))
        if not batch:
            return False
        b.run(PROCESS_DECODE)
        for w, idx in batch:
            s.read_row(w, self._read(idx, w))
        return v in s.info

    def _seq_for(self, par: int, s: TreeSearch) -> int | None:
        """The sequence a child of ``par`` is decoded in: the parent's for its first decoded child, else a new one
        sharing the parent's cells up to the parent's position; None when every sequence is taken."""
        if par not in self._extended:
            self._extended.add(par)
            return self._seq_of[par]
        if self._next_seq >= self.head.n_seq:
            return None
        seq, self._next_seq = self._next_seq, self._next_seq + 1
        llama().llama_memory_seq_cp(self.head.mem, self._seq_of[par], seq, -1, self._pos(par, s) + 1)
        return seq

    def _pos(self, v: int, s: TreeSearch) -> int:
        """Node v's position in the head's cache (the root's: the pending position)."""
        return self._pos0 + (s.depth[v] if v >= 0 else 0)

    def _read(self, idx: int, v: int) -> np.ndarray:
        """The head's logit row at batch index ``idx`` (read in place), keeping node v's pre-norm state."""
        h = self.head
        x = h.x
        self._h[v] = x.rows(x.get_embeddings_nextn_ith(h.ctx, idx), 1, h.n_embd_dec)[0].copy()
        return self._row(idx)

    def _drop_branches(self) -> None:
        """Every sequence but 0 leaves the cache, and sequence 0 keeps the context and the root (a chain's draft
        leaves the same: the verify's pairs are written after it)."""
        L = llama()
        mem = self.head.mem
        for seq in range(1, self._next_seq):
            L.llama_memory_seq_rm(mem, seq, -1, -1)
        L.llama_memory_seq_rm(mem, 0, self._pos0 + 1, -1)
        self._h = {}

    def accept_tree(self, path: Sequence[int]) -> None:
        """The verdicts into the learned rates; the head's cache was left as a chain's draft leaves it, and the
        verify's rows reach it through ``target_decoded``.

        Args:
            path: the accepted nodes, the root's child first.
        """
        if self._judged is not None:
            self.rates.learn_tree(self._judged, path)
            self._judged = None
