"""The adapter that puts one of llama.cpp's n-gram spec types (``ngram_simple``, ``ngram_map``, ``ngram_mod``,
``ngram_cache``: ``begin`` / ``draft`` / ``accept`` over token ids) behind the drafter interface. Not a drafter of its
own: each type's module names it in its SPEC.

A point mass: q = 1 on every draft, so the acceptance test is the target's own (T = 0: its argmax; T > 0: accept
d with probability p(d), else sample the residual), exact for any proposal that does not depend on the target's
draw. ``prefill(prompt)`` starts the type as llama-speculative-simple does (``prefill``); each proposal is
``draft(tokens)`` cut to the pass's k (``common_speculative_draft``'s cut; spectui's k is at most 32, where
llama.cpp lets a type draft up to its own size: ``size_m`` 48, mod's ``n_max`` 64); ``accept(n)`` is passed on, as
llama.cpp passes it, once the type has drafted (``common_speculative_accept``: to the type that drafted last, also
after a pass without a draft).
"""

from __future__ import annotations

from typing import Callable

from ...contract.events import DRAFT_STOP_K, DRAFT_STOP_NO_MATCH
from .base import Drafter, DraftLimits, Proposal


class PointMassDrafter(Drafter):
    """An n-gram type behind the drafter interface.

    Args:
        name: the drafter's name (its SPEC's).
        make: a fresh instance of the type (a new engine's; ``start`` keeps it: llama.cpp keeps a type's state
            across the generations of a session, and ``begin`` says what to forget).
    """

    def __init__(self, name: str, make: Callable[[], object]) -> None:
        self.name = name
        self.algo = make()
        self.drafted = False  # llama.cpp's impl_last: accept reaches a type only once it has drafted

    def prefill(self, prompt: list[int]) -> None:
        """llama-speculative-simple's start: ``begin`` on the prompt but its last token (the one its first pass
        decodes), then the draft its first pass asks for after the whole prompt. That draft is dropped: spectui's
        prefill pass verifies none (its first token comes from the prompt alone), so the passes after it meet the
        type in the state llama.cpp's do whenever that first draft is empty."""
        self.algo.begin(list(prompt[:-1]))
        if len(prompt) >= 2:
            self.algo.draft(list(prompt), -1)

    def propose(self, tokens, k, temperature, rng) -> Proposal:
        lim = k if isinstance(k, DraftLimits) else DraftLimits(int(k))
        if lim.k <= 0 or len(tokens) < 2:
            return Proposal()
        ids = [int(t) for t in self.algo.draft(tokens, lim.k)][: lim.k]
        if not ids:
            return Proposal(stop=DRAFT_STOP_NO_MATCH)
        self.drafted = True
        top = [[(d, 1.0)] for d in ids] if lim.top_n > 0 else None
        return Proposal(ids=ids, q_probs=[1.0] * len(ids), q_rows=None, top=top,
                        stop=DRAFT_STOP_K if len(ids) == lim.k else DRAFT_STOP_NO_MATCH)

    def accept(self, n_accepted: int) -> None:
        if self.drafted:
            self.algo.accept(int(n_accepted))
