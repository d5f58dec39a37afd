"""``model``: a small draft model with its own llama.cpp context, greedy at temperature 0 and sampled from q at
the same temperature otherwise (llama.cpp's ``draft-simple``). Its KV cache is kept exactly in sync with the
accepted text: before drafting it decodes, as one batch, every accepted token it has not decoded yet (the last
emitted token, plus d_k when all k drafts were accepted: d_k is proposed, never decoded); after verification
``accept()`` removes its rejected positions with llama_memory_seq_rm."""

from __future__ import annotations

import numpy as np

from ...contract.events import DRAFT_STOP_K, DRAFT_STOP_P_MIN
from ..llama.models import LoadedModel
from ..rowmath import RowPool
from ..topn import LLAMA_DRAFT_TOP_K, llama_confidence, top_ids
from ..verify import sample, softmax
from .base import Drafter, DrafterSpec, DraftLimits, Proposal, finish_row


class DraftModelDrafter(Drafter):
    name = "model"

    def __init__(self, model: LoadedModel) -> None:
        self.model = model
        self.n_past = 0  # draft KV positions holding accepted context
        self._decoded_drafts = 0  # drafts of the last proposal that sit in the draft KV (k - 1 at most)
        self._rows = RowPool()  # row copies of deferred positions and q rows, returned when a pass is finished
        self.graph = False  # the run's graph path (graph_path.py): a backend chain on the draft's context
        self.scale = 1.0  # raw logits = the rows read x this (the graph path at T > 0: T)

    def start(self) -> None:
        self.n_past = 0
        self._decoded_drafts = 0

    def prefill(self, prompt: list[int]) -> None:
        self.model.decode_chunked(prompt, 0)
        self.n_past = len(prompt)
        self.model.kv_user = self

    def _catch_up(self, tokens) -> None:
        """Decode, as one batch, every accepted token the draft KV does not hold yet."""
        m = self.model
        if m.kv_user is not self:  # another drafter (the tree's) kept the cache meanwhile: its context, afresh
            m.rollback(0)
            self.n_past, self._decoded_drafts, m.kv_user = 0, 0, self
        pending = tokens[self.n_past :]
        if not pending:  # cannot happen in the loop (the last token is never decoded yet); be safe
            m.rollback(len(tokens) - 1)
            self.n_past = len(tokens) - 1
            pending = tokens[-1:]
        m.decode_chunked(pending, self.n_past)
        self.n_past = len(tokens)

    def propose(self, tokens, k, temperature, rng) -> Proposal:
        m = self.model
        self._decoded_drafts = 0
        lim = k if isinstance(k, DraftLimits) else DraftLimits(int(k))
        k = lim.k
        if k <= 0:
            return Proposal()
        self._catch_up(tokens)
        ids: list[int] = []
        q_probs: list[float] = []
        q_rows: list[np.ndarray] | None = [] if temperature > 0 else None
        keep: list[np.ndarray] | None = [] if self.keep_rows else None
        top: list[list[tuple[int, float]]] | None = [] if lim.top_n > 0 else None
        n_top = max(lim.top_n, LLAMA_DRAFT_TOP_K if lim.p_min > 0 else 0)
        prop = Proposal(ids=ids, q_probs=q_probs, q_rows=q_rows, logit_rows=keep, top=top, stop=DRAFT_STOP_K,
                        pool=self._rows, own_rows=lim.defer and keep is None)
        for i in range(k):
            row = m.logits_last()
            # the top-N is what the inspector reads; with --draft-p-min the confidence test needs the top 10 now
            need_best = lim.p_min > 0 and i >= lim.n_min
            best = top_ids(row, n_top) if n_top and (need_best or not lim.defer) else None
            if need_best:  # (the graph path's rows at T > 0 are row / T: the top 10 scaled back)
                conf = llama_confidence(row, best) if self.scale == 1.0 else llama_confidence(
                    row[best] * np.float32(self.scale), np.arange(len(best)))
                if conf < lim.p_min:  # llama.cpp: this position's token is not drafted
                    prop.stop, prop.stop_p = DRAFT_STOP_P_MIN, conf
                    if keep is not None:
                        prop.stop_row = row.copy()
                    break
            if keep is not None:
                raw = row.copy() if self.scale == 1.0 else row * np.float32(self.scale)
            elif lim.defer:  # a reused buffer: a fresh 600 KB array per position costs its page faults
                raw = self._rows.take(len(row))
                np.copyto(raw, row)
            else:
                raw = row
            if keep is not None:
                keep.append(raw)
            d, q = self._draw(row, best, temperature, rng)
            if q is not None:
                q_rows.append(q)  # type: ignore[union-attr]
                q_probs.append(float(q[d]))
            entry = (raw, best, q, d, temperature, lim.top_n, n_top)
            if lim.defer:
                prop.pending.append(entry)
            else:
                finish_row(prop, *entry)
            ids.append(d)
            if i < k - 1:
                if lim.cancel is not None and lim.cancel.is_set():
                    break
                m.decode([d], self.n_past + i, "last")
                self._decoded_drafts += 1
        return prop

    @property
    def decoded_drafts(self) -> int:
        """Drafts of the last proposal whose cells are in the draft's KV (after the accepted context)."""
        return self._decoded_drafts

    def hold(self, n_past: int, rollback: bool = False) -> None:
        """The draft's KV holds accepted context up to ``n_past`` and no draft after it (``rollback``: drop every
        cell from there on first). The pipelined loop (pipeline.py) moves the KV this way past a guess it
        decoded, and back to the accepted context after a block it threw away."""
        if rollback:
            self.model.rollback(n_past)
        self.n_past = n_past
        self._decoded_drafts = 0

    def _draw(self, row: np.ndarray, best: np.ndarray | None, temperature: float,
              rng: np.random.Generator) -> tuple[int, np.ndarray | None]:
        """One position's draft token and its q row (None at T = 0). ``graph`` (graph_path: a backend chain on
        the draft context): the chain's token, and at T > 0 its probability row copied (the next draft decode
        overwrites it); otherwise q = softmax(row / T) and a draw with the run's RNG, or the argmax."""
        if self.graph:
            d = self.model.sampled_token(-1)
            if temperature > 0:
                q = self._rows.take(len(row))
                np.copyto(q, self.model.probs_last())
                return d, q
            return d, None
        if temperature > 0:
            q = softmax(row, temperature, out=self._rows.take(len(row)))
            return sample(q, rng), q
        # argmax = top_ids(row)[0]: both break ties by the lower id
        return (int(best[0]) if best is not None else int(np.argmax(row))), None

    def accept(self, n_accepted: int) -> None:
        keep = min(n_accepted, self._decoded_drafts)
        if keep < self._decoded_drafts:
            self.model.rollback(self.n_past + keep)
        self.n_past += keep
        self._decoded_drafts = 0


SPEC = DrafterSpec(name="model", spec_type="draft-simple", needs="draft model", shape="chain",
                   order=10, priority=10,
                   summary="a small draft model (--draft) proposes k tokens, one decode each",
                   make=lambda res: DraftModelDrafter(res.draft) if res.draft is not None else None)
