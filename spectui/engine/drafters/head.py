"""The adapter that puts a head (an EAGLE-3 head, ``eagle3.py``, or the target's own MTP layers, ``mtp.py``)
behind the drafter interface. Not a drafter of its own: ``eagle3`` and ``mtp`` name it in their SPECs."""

from __future__ import annotations

import numpy as np

from ...contract.events import DRAFT_STOP_K, DRAFT_STOP_P_MIN
from ..llama.llama_ext import top_of_row
from ..llama.llama_lib import llama
from ..topn import LLAMA_DRAFT_TOP_K, llama_confidence, top_ids
from ..verify import sample, softmax
from .base import Drafter, DraftLimits, Proposal, finish_row
from .eagle3 import TOP_K


class HeadDrafter(Drafter):
    """An EAGLE-3 head (``eagle3.Eagle3Head``) or the target's own MTP block (``mtp.MtpHead``) behind the
    drafter interface. The head drafts from the target's hidden states, so it sees every target decode
    (``target_decoded``, called by the pass loop after the prefill chunks and after each verify, with the
    pass's verdict: the head writes its KV for the batch, keeps the accepted row's state and drops the rest,
    as llama-server does). Each drafted position's q is the head's own logit row, as for a draft model: the
    greedy token at T = 0 (the reference's top-k 10 choice, so the drafts equal llama.cpp's), a sample of
    softmax(row / T) above, and the same acceptance rules in the loop."""

    reads_target = True
    reads_tree = True
    info = None  # events.HeadInfo, set by spec_heads.make_head_drafter (RunStarted.head)

    def __init__(self, name: str, head) -> None:
        self.name = name
        self.head = head
        self._n_vocab = int(head.n_vocab)

    def start(self) -> None:
        """A new run: the head's cache and its carried state are empty, as when it was made."""
        h = self.head
        h.rollback(0)
        if hasattr(h, "pending_pos"):  # EAGLE-3
            h.pending_pos, h.verify_pos_first = -1, -1
            h.pending_g = np.zeros_like(h.pending_g)
            h.verify_g = h.verify_g[:0]
        else:  # MTP
            h.pending_h = np.zeros_like(h.pending_h)
            h.verify_h = h.verify_h[:0]

    def _row(self, i: int = 0) -> np.ndarray:
        L = llama()
        return np.ctypeslib.as_array(L.llama_get_logits_ith(self.head.ctx, int(i)), shape=(self._n_vocab,))

    def target_decoded(self, tokens: list[int], pos0: int, n_accepted: int | None = None, rows=None) -> None:
        """The target decoded ``tokens`` at ``pos0``.. (its hidden states are in its context now). After a
        verify, ``n_accepted`` drafts of ``tokens[1:]`` were accepted: keep those, drop the rest. ``rows``: the
        decode's row of each token, where they are not its first rows (a tree verify: the rows of the chain it is
        seen as, ``tree_pass.chain_rows``)."""
        h = self.head
        if rows is None:
            h.process(list(tokens), int(pos0))
        else:  # EAGLE-3's and MTP's process read a tree verify's rows (reads_tree)
            h.process(list(tokens), int(pos0), rows)
        if n_accepted is not None:
            h.accept(int(n_accepted))
            h.rollback(int(pos0) + 1 + int(n_accepted))

    def propose(self, tokens, k, temperature, rng) -> Proposal:
        lim = k if isinstance(k, DraftLimits) else DraftLimits(int(k))
        if lim.k <= 0 or not tokens:
            return Proposal()
        keep: list[np.ndarray] | None = [] if self.keep_rows else None
        q_rows: list[np.ndarray] | None = [] if temperature > 0 else None
        top: list[list[tuple[int, float]]] | None = [] if lim.top_n > 0 else None
        n_top = max(lim.top_n, LLAMA_DRAFT_TOP_K if lim.p_min > 0 else 0)
        prop = Proposal(ids=[], q_probs=[], q_rows=q_rows, logit_rows=keep, top=top, stop=DRAFT_STOP_K)
        steps: list[tuple] = []  # per position the head evaluated: (raw row copy, best, q, d, confidence)

        def pick(ctx, i: int = 0) -> tuple[int, float]:
            row = self._row(i).copy()
            best = top_ids(row, n_top) if n_top else None
            if temperature > 0:
                q = softmax(row, temperature)
                d = sample(q, rng)
            else:
                q = None
                d, _ = top_of_row(row, TOP_K)
            conf = llama_confidence(row, best) if lim.p_min > 0 else 1.0
            steps.append((row, best, q, int(d), conf))
            if len(steps) <= lim.n_min:  # --draft-min: never stop for --draft-p-min before N drafts
                conf = max(conf, lim.p_min)
            return int(d), conf

        h = self.head
        if self.name == "mtp":
            out = h.draft(tokens[-1], len(tokens) - 1, lim.k, lim.p_min, pick=pick)
        else:
            out = h.draft(tokens[-1], lim.k, lim.p_min, pick=pick)
        for i, (row, best, q, d, conf) in enumerate(steps):
            if i >= len(out):  # the position refused for confidence
                prop.stop, prop.stop_p = DRAFT_STOP_P_MIN, conf
                if keep is not None:
                    prop.stop_row = row
                break
            if keep is not None:
                keep.append(row)
            if q is not None:
                q_rows.append(q)  # type: ignore[union-attr]
                prop.q_probs.append(float(q[d]))
            finish_row(prop, row, best, q, d, temperature, lim.top_n, n_top)
            prop.ids.append(d)
            prop.heads.append(h.head_of(i) if hasattr(h, "head_of") else 0)
        return prop
