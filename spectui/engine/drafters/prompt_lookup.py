"""``ngram``: prompt lookup. The longest recent n-gram (n = 3, 2, 1) that ends the context and occurred earlier
proposes what followed it (its most recent occurrence wins). A point mass: q(x) = 1. spectui's own; llama.cpp's
n-gram spec types have their own modules."""

from __future__ import annotations

from ...contract.events import DRAFT_STOP_K, DRAFT_STOP_NO_MATCH
from .base import Drafter, DrafterSpec, DraftLimits, Proposal


class NgramDrafter(Drafter):
    """Prompt lookup over the accepted context, incremental index per n (most recent occurrence wins)."""

    name = "ngram"

    def __init__(self, n_max: int = 3) -> None:
        self.n_max = n_max
        self.start()

    def start(self) -> None:
        self._index: list[dict[tuple, int]] = [dict() for _ in range(self.n_max + 1)]
        self._upto = 0  # end positions < _upto are indexed

    def _update(self, tokens: list[int]) -> None:
        if len(tokens) < self._upto + 1:
            self.start()  # a shorter context: a new run without start() (defensive)
        # index n-grams ending at j for every j <= len - 2 (so a continuation exists and the final
        # suffix itself is never its own match)
        last = len(tokens) - 2
        for j in range(self._upto, last + 1):
            for n in range(1, self.n_max + 1):
                if j - n + 1 < 0:
                    break
                self._index[n][tuple(tokens[j - n + 1 : j + 1])] = j
        self._upto = max(self._upto, last + 1)

    def propose(self, tokens, k, temperature, rng) -> Proposal:
        lim = k if isinstance(k, DraftLimits) else DraftLimits(int(k))
        k = lim.k
        if k <= 0:
            return Proposal()
        if len(tokens) < 2:
            return Proposal(stop=DRAFT_STOP_NO_MATCH)
        self._update(tokens)
        for n in range(min(self.n_max, len(tokens) - 1), 0, -1):
            j = self._index[n].get(tuple(tokens[-n:]))
            if j is not None:
                ids = list(tokens[j + 1 : j + 1 + k])
                # a point mass: q = 1 on each draft, so --draft-p-min never stops it
                top = [[(d, 1.0)] for d in ids] if lim.top_n > 0 else None
                return Proposal(ids=ids, q_probs=[1.0] * len(ids), q_rows=None, top=top,
                                stop=DRAFT_STOP_K if len(ids) == k else DRAFT_STOP_NO_MATCH)
        return Proposal(stop=DRAFT_STOP_NO_MATCH)


SPEC = DrafterSpec(name="ngram", spec_type="", needs="nothing", shape="chain", order=20, priority=6,
                   summary="prompt lookup: what followed the longest earlier match (n = 3, 2, 1) of the text's end",
                   make=lambda res: NgramDrafter())
