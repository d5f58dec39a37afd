"""A run's own state, made at its start and dropped at its end: ``Generation`` (what it has generated) and
``RunCounters`` (what RunEnded reports). A pass loop keeps them; nothing outlives the run (what does is in
``parts.RunParts``)."""

from __future__ import annotations

import codecs
from typing import Callable

import numpy as np


class RunCounters:
    """The counters and the stop reason of one run (RunEnded's fields)."""

    def __init__(self) -> None:
        self.reason = ""
        self.error = ""
        self.n_passes = 0
        self.n_emitted = 0
        self.n_drafted = 0
        self.n_accepted = 0

    def count_pass(self, n_drafted: int, n_accepted: int, n_emitted: int) -> None:
        """A decode pass decided: its drafts, the accepted ones and the tokens it emits."""
        self.n_passes += 1
        self.n_emitted += n_emitted
        self.n_drafted += n_drafted
        self.n_accepted += n_accepted


class Generation:
    """What one run has generated so far: token history, accepted KV length, RNG, the UTF-8 text decoder.

    Args:
        prompt_tokens: the prompt's tokens (the history starts with them).
        seed: the RNG's seed (None: fresh entropy).
        debug_hook: tests: called with each pass's logits (the engine's hook when the run began), or None.
    """

    def __init__(self, prompt_tokens: list[int], seed: int | None, debug_hook: Callable[[dict], None] | None) -> None:
        self.prompt_tokens = prompt_tokens
        self.tokens = list(prompt_tokens)
        self.n_past = 0
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.debug_hook = debug_hook

    def accepted(self, ids: list[int], tok: int) -> None:
        """A decode pass's accepted drafts ``ids`` and the target's token ``tok`` into the history; the
        accepted KV length grows by the pass's first token and ``ids`` (``tok`` is decoded by the next pass)."""
        self.n_past += 1 + len(ids)
        self.tokens.extend(ids)
        self.tokens.append(tok)

    def reseed(self, seed: int | None) -> None:
        """A new RNG when the seed setting changed mid-run."""
        if seed != self.seed:
            self.rng = np.random.default_rng(seed)
            self.seed = seed
