"""``none``: proposes nothing; the loop then runs the target alone (the baseline) through the same passes and
events."""

from __future__ import annotations

from .base import Drafter, DrafterSpec, Proposal


class NoDrafter(Drafter):
    name = "none"

    def propose(self, tokens, k, temperature, rng) -> Proposal:
        return Proposal()


SPEC = DrafterSpec(name="none", spec_type="none", needs="nothing", shape="chain", order=30, priority=99,
                   summary="no drafts: the target alone, one token a pass (the baseline)",
                   make=lambda res: NoDrafter())
