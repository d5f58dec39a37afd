"""llama.cpp's ``ngram-mod`` spec type over plain token-id lists: a pool of 4 Mi slots maps the hash of an
``n_match``-gram (a 64-bit LCG, modulo the pool size) to the token that followed it, with no check that the slot
holds that n-gram. A draft rolls the window forward one pooled token at a time, up to ``n_max`` tokens; a miss
before ``n_min`` tokens drops the draft. The pool is shared (across the runs of a session, and across the
sequences of a server), so it lives in ``NgramModPool``; each drafter keeps its own sequence's position.

Reset rules: ``begin`` adds the prompt's n-grams and empties the pool when more than a quarter of its slots are
used; five accepts in a row that keep less than a quarter of a draft empty it too (and the context is pooled
again from its start once more than 32 of its tokens are unpooled). New context n-grams are added in chunks,
once more than 32 tokens are new.

Follows common/ngram-mod.cpp (``common_ngram_mod::idx``, ``add``, ``get``, ``reset``) and common/speculative.cpp
``common_speculative_impl_ngram_mod`` (``begin``, ``draft_one``, ``accept``) of the llama.cpp vendored in
llama-cpp-python 0.3.36.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .base import DrafterSpec
from .llama_spec import NGRAM_MOD_POOL_SIZE, cap, check_options
from .point_mass import PointMassDrafter

EMPTY = -1  # common_ngram_mod::EMPTY
LCG_MULT = 6364136223846793005
_U64 = (1 << 64) - 1
OCCUPANCY_RESET = 0.25  # begin: f_thold
LOW_ACCEPT = 0.25  # accept: a draft counts as poorly accepted below this fraction
LOW_STREAK = 5  # accept: this many poor drafts in a row empty the pool
CHUNK = 32  # draft_one: add new n-grams once more than this many tokens are new


@dataclass(frozen=True)
class NgramModParams:
    """``--spec-ngram-mod-n-match``, ``-n-min`` and ``-n-max`` (common_params_speculative_ngram_mod)."""

    n_match: int = 24
    n_min: int = 48
    n_max: int = 64

    def __post_init__(self) -> None:
        check_options("ngram-mod", self)


class NgramModPool:
    """``common_ngram_mod``: the hash pool, ``size`` slots of one token each (-1: empty)."""

    def __init__(self, n: int, size: int = NGRAM_MOD_POOL_SIZE) -> None:
        self.n = n
        self.entries = np.full(size, EMPTY, dtype=np.int32)
        self.used = 0

    @property
    def size(self) -> int:
        """The number of slots."""
        return int(self.entries.shape[0])

    def idx(self, window: Sequence[int]) -> int:
        """``common_ngram_mod::idx``: the slot of the n-gram ``window[:n]``."""
        h = 0
        for t in window[:self.n]:
            h = (h * LCG_MULT + t) & _U64
        return h % self.size

    def get(self, window: Sequence[int]) -> int:
        """The token pooled for the n-gram ``window[:n]`` (or for whatever n-gram shares its slot), or -1."""
        return int(self.entries[self.idx(window)])

    def add_all(self, tokens: Sequence[int], start: int, stop: int) -> None:
        """``common_ngram_mod::add`` for every position in [start, stop), in order: the slot of
        ``tokens[i:i+n]`` takes ``tokens[i+n]`` (a later n-gram overwrites an earlier one in the same slot)."""
        if stop <= start:
            return
        t = np.asarray(tokens[start:stop + self.n], dtype=np.int64).astype(np.uint64)
        count = stop - start
        h = np.zeros(count, dtype=np.uint64)
        mult = np.uint64(LCG_MULT)
        with np.errstate(over="ignore"):
            for k in range(self.n):
                h = h * mult + t[k:k + count]  # wraps modulo 2^64, as size_t does
        slots = (h % np.uint64(self.size)).astype(np.int64)
        values = t[self.n:self.n + count].astype(np.int64).astype(np.int32)
        # the last write to a slot wins: keep each slot's last position
        rev_slots, rev_first = np.unique(slots[::-1], return_index=True)
        last = count - 1 - rev_first
        self.used += int(np.count_nonzero(self.entries[rev_slots] == EMPTY))
        self.entries[rev_slots] = values[last]

    def reset(self) -> None:
        """``common_ngram_mod::reset``: every slot empty."""
        self.entries.fill(EMPTY)
        self.used = 0


class NgramMod:
    """``ngram-mod`` for one sequence, over a pool it may share with other sequences."""

    def __init__(self, params: NgramModParams | None = None, pool: NgramModPool | None = None) -> None:
        self.params = params or NgramModParams()
        if pool is not None and pool.n != self.params.n_match:
            raise ValueError(f"the pool hashes {pool.n}-grams, not {self.params.n_match}-grams")
        self.pool = pool if pool is not None else NgramModPool(self.params.n_match)
        self.i_last = 0  # the next context position whose n-gram is not pooled yet
        self.n_draft_last = 0  # the length of the last draft (before the caller's limit)
        self.n_low = 0  # poorly accepted drafts in a row

    @property
    def n_max(self) -> int:
        """The longest draft it makes (the impl's ``n_max``: ``--spec-ngram-mod-n-max``)."""
        return self.params.n_max

    def begin(self, prompt: Sequence[int]) -> None:
        """A new generation: pool the n-grams of ``prompt`` (the tokens before the first sampled one), then
        empty the pool if more than a quarter of it is used.

        Args:
            prompt: the context the next drafts extend.
        """
        self.i_last = 0
        self.n_draft_last = 0
        n = self.pool.n
        if len(prompt) < n:
            return
        self.pool.add_all(prompt, 0, len(prompt) - n)
        self.i_last = len(prompt) - n
        if self.pool.used / self.pool.size > OCCUPANCY_RESET:
            self.pool.reset()

    def draft(self, tokens: Sequence[int], n_max: int = -1) -> list[int]:
        """``draft_one`` for the context ``tokens``.

        Args:
            tokens: the whole accepted context, its last token the one just sampled (llama.cpp's ``id_last``).
            n_max: the caller's limit (0 or less: none), applied as ``common_speculative_draft`` does, after
                the drafter has recorded the whole draft's length.

        Returns:
            The drafted token ids, up to ``n_max`` (the pool's tokens until its first miss); [] when it misses
            before ``n_min`` tokens.
        """
        self.n_draft_last = 0
        if not tokens:
            return []
        prompt_len = len(tokens) - 1
        n = self.pool.n
        if prompt_len < n:
            return []
        if self.i_last + CHUNK < prompt_len:
            self.pool.add_all(tokens, self.i_last, prompt_len - n)
            self.i_last = prompt_len - n
        window = list(tokens[len(tokens) - n:])
        out: list[int] = []
        for i in range(self.params.n_max):
            token = self.pool.get(window[i:i + n])
            if token == EMPTY:
                if i < self.params.n_min:
                    return []
                break
            window.append(token)
            out.append(token)
        self.n_draft_last = len(out)
        return cap(out, n_max)

    def accept(self, n_accepted: int) -> None:
        """The target accepted ``n_accepted`` of the last draft: a fifth poorly accepted draft in a row (under a
        quarter kept) empties the pool.

        Args:
            n_accepted: how many drafted tokens the target accepted.
        """
        if self.n_draft_last <= 0:
            return
        if n_accepted / self.n_draft_last < LOW_ACCEPT:
            self.n_low += 1
            if self.n_low >= LOW_STREAK:
                self.pool.reset()
                self.n_low = 0
                self.i_last = 0
        else:
            self.n_low = 0


SPEC = DrafterSpec(name="ngram-mod", spec_type="ngram-mod", needs="nothing", shape="chain", order=24, priority=4,
                   params=NgramModParams,
                   summary="llama.cpp's ngram-mod: a hash pool of n-grams shared by the session's runs, n-min..n-max",
                   make=lambda res: PointMassDrafter("ngram-mod", lambda: NgramMod(res.params.get("ngram-mod"))))
