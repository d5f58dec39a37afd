"""llama.cpp's ``ngram-map-k`` and ``ngram-map-k4v`` spec types over plain token-id lists.

Both look the context's last ``size_n`` tokens (the key) up in the history, through a hash index of the key
positions (2^18 slots, the first position stored in a slot stays) and, for what the index does not hold, a
descending scan; the draft is the (at most ``size_m``) tokens that followed the match, cut to the number the
target accepted the last time this key (k) or this value (k4v) was drafted. ``ngram-map-k`` drafts on every hit
(its ``--spec-ngram-map-k-min-hits`` is read by no code); ``ngram-map-k4v`` counts up to four different m-grams
seen after the key and drafts only when the key was hit ``min_hits`` times and its most frequent m-gram was seen
at least twice as often as the other three together. ``begin`` with a history shorter than the last one seen
forgets the keys and index entries past the point where the histories may differ.

Follows common/ngram-map.cpp (``common_ngram_map_hash``, ``common_ngram_map_begin``, ``common_ngram_map_draft``,
``common_ngram_map_accept``), common/ngram-map.h (``common_ngram_map``, ``COMMON_NGRAM_MAX_VALUES``,
``COMMON_NGRAM_HASH_MAP_SIZE``) and common/speculative.cpp ``common_speculative_impl_ngram_map_k``
(llama.cpp vendored in llama-cpp-python 0.3.36). Quirks kept on purpose: k4v drafts the tokens after the
current match even when the most frequent value slot is another; a match at ``stat_idx`` is counted again on the
next call; the n_accepted of a value slot emptied by ``begin`` stays behind.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .base import DrafterSpec
from .llama_spec import cap, check_options
from .point_mass import PointMassDrafter

MAX_VALUES = 4  # COMMON_NGRAM_MAX_VALUES
HASH_MAP_SIZE = 262144  # COMMON_NGRAM_HASH_MAP_SIZE
MAX_VALUE_COUNT = 16380  # COMMON_NGRAM_MAX_VALUE_COUNT
LCG_FACTOR = 2654435761
_U32 = 0xFFFFFFFF


@dataclass(frozen=True)
class NgramMapParams:
    """``--spec-ngram-map-k[4v]-size-n``, ``-size-m`` and ``-min-hits`` (common_params_speculative_ngram_map);
    ``key_only`` is true for ``ngram-map-k``, false for ``ngram-map-k4v``."""

    size_n: int = 12
    size_m: int = 48
    min_hits: int = 1
    key_only: bool = True

    def __post_init__(self) -> None:
        check_options("ngram-map-k" if self.key_only else "ngram-map-k4v", self)


def map_hash(tokens: Sequence[int], start: int, length: int) -> int:
    """``common_ngram_map_hash``: the 32-bit LCG hash of ``tokens[start:start+length]``."""
    h = 0
    for t in tokens[start:start + length]:
        h = (h * LCG_FACTOR + t) & _U32
    return h


class _Value:
    """common_ngram_map_value: an m-gram seen after a key."""

    __slots__ = ("idx", "num", "n_accepted")

    def __init__(self, idx: int = 0, num: int = 0, n_accepted: int = -1) -> None:
        self.idx, self.num, self.n_accepted = idx, num, n_accepted

    def copy(self) -> _Value:
        return _Value(self.idx, self.num, self.n_accepted)


class _Key:
    """common_ngram_map_key: a key n-gram that was matched, its hits and its values."""

    __slots__ = ("key_idx", "stat_idx", "key_num", "values")

    def __init__(self, key_idx: int, m: int) -> None:
        self.key_idx, self.stat_idx, self.key_num = key_idx, 0, 0
        self.values = [_Value(0, 0, m) for _ in range(MAX_VALUES)]


class NgramMap:
    """``ngram-map-k`` (``key_only``) or ``ngram-map-k4v``: one sequence's ``common_ngram_map``."""

    def __init__(self, params: NgramMapParams | None = None) -> None:
        self.params = params or NgramMapParams()
        self.n, self.m = self.params.size_n, self.params.size_m
        self.keys: list[_Key] = []
        self.key_map: dict[int, int] = {}  # hash slot -> key position (absent: llama.cpp's 0)
        self.key_map_last_idx = 0
        self.size_last_begin = 0
        self.idx_last_check = 0
        self.last_draft_created = False
        self.last_draft_key_idx = 0
        self.last_draft_value_idx = 0

    @property
    def n_max(self) -> int:
        """The longest draft it makes (the impl's ``n_max``: ``size_m``)."""
        return self.m

    def begin(self, prompt: Sequence[int]) -> None:
        """``common_ngram_map_begin``: a new generation over ``prompt`` (the tokens before the first sampled one).

        Args:
            prompt: the history the next drafts extend; when it is shorter than the last history drafted from,
                keys and index entries past the point the two may differ are forgotten.
        """
        size_begin = len(prompt)
        cleanup = self.size_last_begin
        if cleanup > size_begin:
            nm = self.n + self.m
            cleanup = size_begin - nm if size_begin > nm else 0
        if size_begin < self.idx_last_check:
            self.key_map = {h: j for h, j in self.key_map.items() if j < cleanup}
            self.key_map_last_idx = cleanup - 1 if cleanup > 0 else 0
            if self.keys:
                self._drop_keys(cleanup)
        self.idx_last_check = size_begin
        self.size_last_begin = size_begin

    def _drop_keys(self, cleanup: int) -> None:
        for i in range(len(self.keys) - 1, -1, -1):
            key = self.keys[i]
            if key.key_idx >= cleanup:
                del self.keys[i]
                continue
            if self.params.key_only:
                continue
            vals = key.values
            for j in range(MAX_VALUES - 1, -1, -1):
                if vals[j].idx != 0 and vals[j].idx >= cleanup:
                    for k in range(j, MAX_VALUES - 1):
                        vals[k] = vals[k + 1].copy()
                    vals[-1].idx = 0  # its n_accepted stays, as in llama.cpp
                    vals[-1].num = 0
            if vals[0].idx == 0:
                del self.keys[i]

    def draft(self, tokens: Sequence[int], n_max: int = -1) -> list[int]:
        """``common_ngram_map_draft`` for the context ``tokens``.

        Args:
            tokens: the whole accepted context, its last token the one just sampled (llama.cpp's ``id_last``).
            n_max: the caller's limit (0 or less: none), applied as ``common_speculative_draft`` does, after
                the map has taken its statistics from the whole draft.

        Returns:
            The drafted token ids, possibly [].
        """
        self.last_draft_created = False
        self.last_draft_key_idx = 0
        self.last_draft_value_idx = 0
        if not tokens:
            return []
        inp, n, m = list(tokens[:-1]), self.n, self.m
        cur_len = len(inp)
        if cur_len < 2 * n + m:
            return []
        if self.idx_last_check > cur_len or self.size_last_begin > cur_len:
            raise ValueError(f"the history shrank to {cur_len} tokens without begin() (llama.cpp aborts)")
        self.idx_last_check = cur_len
        key = list(inp[cur_len - n + 1:]) + [tokens[-1]]
        match_pos = self._find(inp, key)
        self._index(inp)
        if match_pos == 0:
            return []
        return cap(self._draft_from(inp, key, match_pos), n_max)

    @staticmethod
    def _matches(inp: list[int], j: int, key: list[int]) -> bool:
        return inp[j] == key[0] and inp[j:j + len(key)] == key

    def _find(self, inp: list[int], key: list[int]) -> int:
        n, m, cur_len = self.n, self.m, len(inp)
        idx_key = self.key_map.get(map_hash(key, 0, n) % HASH_MAP_SIZE, 0)
        if idx_key != 0 and idx_key < cur_len - n - m - 1 and self._matches(inp, idx_key, key):
            return idx_key
        if self.size_last_begin > n + m + 1:
            for j in range(self.size_last_begin - n - m - 1, self.key_map_last_idx, -1):
                if self._matches(inp, j, key):
                    return j
        low = max(self.size_last_begin, self.key_map_last_idx)
        for j in range(cur_len - n - m - 1, low, -1):
            if self._matches(inp, j, key):
                return j
        return 0

    def _index(self, inp: list[int]) -> None:
        """Add the hashes of the key positions not yet indexed, in the order llama.cpp adds them."""
        n, m, cur_len = self.n, self.m, len(inp)
        spans = []
        if self.size_last_begin > n + m + 1:
            spans.append(range(self.size_last_begin - n - m - 1, self.key_map_last_idx, -1))
        spans.append(range(cur_len - n - m - 1, max(self.size_last_begin, self.key_map_last_idx), -1))
        for span in spans:
            for j in span:
                self.key_map.setdefault(map_hash(inp, j, n) % HASH_MAP_SIZE, j)
        self.key_map_last_idx = max((cur_len - n - m - 1) & _U32, self.key_map_last_idx)

    def _key_offset(self, inp: list[int], key: list[int], match_pos: int) -> int:
        for i, k in enumerate(self.keys):
            if self._matches(inp, k.key_idx, key):
                return i
        self.keys.append(_Key(match_pos, self.m))
        return len(self.keys) - 1

    def _draft_from(self, inp: list[int], key: list[int], match_pos: int) -> list[int]:
        n, m = self.n, self.m
        offset = self._key_offset(inp, key, match_pos)
        curr = self.keys[offset]
        curr.key_num = min(curr.key_num + 1, MAX_VALUE_COUNT)
        slot = 0
        if not self.params.key_only:
            if curr.key_num < self.params.min_hits:
                return []
            self._count_values(inp, key, curr, match_pos)
            slot = self._pick_value(curr)
            if slot < 0:
                return []
        n_draft = min(m, curr.values[slot].n_accepted)
        self.last_draft_created = True
        self.last_draft_key_idx = offset
        self.last_draft_value_idx = slot
        return inp[match_pos + n:match_pos + n + max(n_draft, 0)]

    def _count_values(self, inp: list[int], key: list[int], curr: _Key, match_pos: int) -> None:
        """Count the m-grams after each occurrence of the key in [stat_idx, match_pos] (at most four kinds)."""
        n, m = self.n, self.m
        for i in range(curr.stat_idx, match_pos + 1):
            if not self._matches(inp, i, key):
                continue
            begin = i + n
            for v in curr.values:
                if v.idx == 0:  # an empty slot: a new m-gram after the key
                    v.idx, v.num, v.n_accepted = begin, 0, m
                elif inp[begin:begin + m] != inp[v.idx:v.idx + m]:
                    continue
                v.num = min(v.num + 1, MAX_VALUE_COUNT)
                break
        curr.stat_idx = match_pos

    @staticmethod
    def _pick_value(curr: _Key) -> int:
        """The most frequent value's slot (the first of equals), or -1 when it is not at least twice as frequent
        as the others together."""
        nums = [v.num for v in curr.values]
        slot = max(range(MAX_VALUES), key=lambda v: (nums[v], -v))
        others = sum(nums) - nums[slot]
        if others > 0 and nums[slot] < 2 * others:
            return -1
        return slot

    def accept(self, n_accepted: int) -> None:
        """``common_ngram_map_accept``: the target accepted ``n_accepted`` of the last draft; that key's (k) or
        value's (k4v) next drafts are at most this long.

        Args:
            n_accepted: how many drafted tokens the target accepted.
        """
        if not self.last_draft_created:
            return
        value = self.keys[self.last_draft_key_idx].values[self.last_draft_value_idx]
        value.n_accepted = n_accepted


def _map(name: str, key_only: bool):
    """make() for ngram-map-k / ngram-map-k4v."""
    return lambda res: PointMassDrafter(
        name, lambda: NgramMap(res.params.get(name) or NgramMapParams(key_only=key_only)))


SPECS = (
    DrafterSpec(name="ngram-map-k", spec_type="ngram-map-k", needs="nothing", shape="chain", order=22, priority=2,
                params=lambda **kw: NgramMapParams(key_only=True, **kw),
                summary="llama.cpp's ngram-map-k: an index of size-n keys, what followed the latest match",
                make=_map("ngram-map-k", True)),
    DrafterSpec(name="ngram-map-k4v", spec_type="ngram-map-k4v", needs="nothing", shape="chain", order=23, priority=3,
                params=lambda **kw: NgramMapParams(key_only=False, **kw),
                summary="llama.cpp's ngram-map-k4v: keys with up to four counted values, drafted past min-hits",
                make=_map("ngram-map-k4v", False)),
)
