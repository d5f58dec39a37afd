"""Several drafters as one, as llama.cpp chains its spec types (``--spec-type ngram-mod,draft-simple``;
common/speculative.cpp, ``common_speculative_draft`` / ``common_speculative_accept``).

The members are tried in priority order (``DrafterSpec.priority``: llama.cpp's, whatever order the user wrote);
the first whose proposal is not empty drafts the pass, and the rest are not asked. After the verdict the member
that drafted last (this pass, or an earlier one when no member drafted: llama.cpp's ``impl_last``) is told how
many were accepted; the others are not told (llama.cpp's ``is_other`` accept, a no-op for every type spectui
chains; a draft model's KV catches up with the accepted text at its next proposal, as draft-simple's does). The
proposal names its member (``Proposal.drafter``), so every pass says which drafter proposed it.

Under ``--draft-max auto`` the pass's ``DraftLimits.members`` caps each member's drafts (the cost model's choice
for that member: spectui/analysis/cost/chain_cost.py); a member capped at 0 is left out of the pass, not asked.
"""

from __future__ import annotations

import dataclasses

from ...contract.events import CHAIN_SEPARATOR, DRAFT_STOP_NO_MATCH
from .base import Drafter, DraftLimits, Proposal


class ChainDrafter(Drafter):
    """Drafters in priority order; the first that proposes anything drafts the pass.

    Args:
        members: (name, drafter) pairs, highest priority first.
    """

    def __init__(self, members: list[tuple[str, Drafter]]) -> None:
        self.members = list(members)
        self.name = CHAIN_SEPARATOR.join(n for n, _ in self.members)
        self.keep_rows = any(d.keep_rows for _, d in self.members)
        self._last: Drafter | None = None  # the member that drafted last (llama.cpp's impl_last)

    def start(self) -> None:
        for _, d in self.members:
            d.start()

    def prefill(self, prompt: list[int]) -> None:
        for _, d in self.members:
            d.prefill(prompt)

    def propose(self, tokens, k, temperature, rng) -> Proposal:
        lim = k if isinstance(k, DraftLimits) else DraftLimits(int(k))
        caps = dict(lim.members)
        prop = Proposal(stop=DRAFT_STOP_NO_MATCH)
        for name, d in self.members:
            most = min(lim.k, caps.get(name, lim.k))
            if most <= 0:  # --draft-max auto left this member out of the pass: it is not asked (no lookup)
                continue
            prop = d.propose(tokens, dataclasses.replace(lim, k=most, members=()), temperature, rng)
            if prop.ids:
                prop.drafter = name
                self._last = d
                return prop
        return prop

    def accept(self, n_accepted: int) -> None:
        if self._last is not None:
            self._last.accept(n_accepted)

    def accept_tree(self, path) -> None:
        """A tree member's verdict goes to it whole (draft_tree.py: the accepted path, not a count)."""
        if self._last is not None:
            self._last.accept_tree(path)


def chain_names(value: str) -> list[str]:
    """A chain's member names as written: "ngram-mod,model" -> ["ngram-mod", "model"] (blanks dropped)."""
    return [p.strip() for p in str(value).split(CHAIN_SEPARATOR) if p.strip()]
