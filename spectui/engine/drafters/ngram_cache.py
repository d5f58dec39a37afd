"""llama.cpp's ``ngram-cache`` spec type over plain token-id lists: three n-gram -> next-token count caches,
drafted from one token at a time (up to 8).

- the context layer counts the 1- to 4-grams of the generation; it learns only the n-grams that lie inside each
  batch of new tokens it is given (the accepted tokens since its last update, then the sampled one), never those
  across two batches, and it is never cleared (``begin`` does nothing, as in llama.cpp);
- the dynamic layer (``--lookup-cache-dynamic``) is read from a file and, in this llama.cpp, never updated;
- the static layer (``--lookup-cache-static``) holds 2-grams from a corpus (llama-lookup-create's file, or
  ``static_from_tokens`` in memory): it weights the other layers' candidates (x100 per static count) and drafts
  by itself when they have none.

Each drafted token comes from the first layer with a confident candidate: the context layer with lax
thresholds, then the dynamic layer with strict ones, each trying its longest n-gram first; then the static
layer. Among equally weighted candidates the first in libstdc++'s walk of the counts wins (``IntCounts``).
Files are read, never written; a file that is not a well-formed cache is refused in one line.

Follows common/ngram-cache.cpp (``common_ngram_cache_update``, ``try_draft`` both forms,
``common_ngram_cache_draft``, ``common_ngram_cache_load``), common/ngram-cache.h (``LLAMA_NGRAM_MIN``, ``_MAX``,
``_STATIC``, ``common_ngram``) and common/speculative.cpp ``common_speculative_impl_ngram_cache``
(``draft_one``) of the llama.cpp vendored in llama-cpp-python 0.3.36.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...contract.errors import SpectuiError
from .base import DrafterSpec
from .libstdcxx_map import IntCounts
from .llama_spec import NGRAM_CACHE_N_DRAFT, cap
from .point_mass import PointMassDrafter

NGRAM_MIN, NGRAM_MAX, NGRAM_STATIC = 1, 4, 2  # LLAMA_NGRAM_MIN, LLAMA_NGRAM_MAX, LLAMA_NGRAM_STATIC
TOKEN_NULL = -1  # LLAMA_TOKEN_NULL
# below these sample sizes or percentages a layer's candidate is not drafted (index: n-gram size - 1)
MIN_SAMPLE_LAX, MIN_PERCENT_LAX = (2, 2, 1, 1), (66, 50, 50, 50)
MIN_SAMPLE_STRICT, MIN_PERCENT_STRICT = (4, 3, 2, 2), (75, 66, 66, 66)
MAX_FILE_BYTES = 256 * 1024 * 1024  # the largest cache file read

Ngram = tuple[int, int, int, int]  # common_ngram: the tokens, padded with LLAMA_TOKEN_NULL
NgramCounts = dict[Ngram, IntCounts]  # common_ngram_cache


@dataclass(frozen=True)
class NgramCacheParams:
    """``--lookup-cache-static`` and ``--lookup-cache-dynamic`` (common_params_speculative_ngram_cache): paths
    of cache files, "" for none."""

    lookup_cache_static: str = ""
    lookup_cache_dynamic: str = ""


def _i32(x: int) -> int:
    """``x`` wrapped to a 32-bit int, as the C++ ``int`` arithmetic wraps on the machines llama.cpp runs on."""
    return (x + (1 << 31)) % (1 << 32) - (1 << 31)


def _ngram(tokens: Sequence[int], start: int, size: int) -> Ngram:
    return tuple(tokens[start:start + size]) + (TOKEN_NULL,) * (NGRAM_MAX - size)  # type: ignore[return-value]


def cache_update(cache: NgramCounts, ngram_min: int, ngram_max: int, inp: Sequence[int], nnew: int) -> None:
    """``common_ngram_cache_update``: count, for each n-gram size, the token after each n-gram that ends in the
    last ``nnew`` tokens of ``inp``.

    Args:
        cache: the cache to update.
        ngram_min: the shortest n-gram.
        ngram_max: the longest n-gram (at most 4).
        inp: the tokens.
        nnew: how many of them are new.
    """
    size = len(inp)
    for n in range(ngram_min, ngram_max + 1):
        for i in range(max(size - nnew, n), size):
            key = _ngram(inp, i - n, n)
            part = cache.get(key)
            if part is None:
                part = cache[key] = IntCounts()
            part.add(int(inp[i]), 1)


def static_from_tokens(tokens: Sequence[int]) -> NgramCounts:
    """A static layer built in memory from a corpus, as llama-lookup-create builds its file (2-grams).

    Args:
        tokens: the corpus' token ids.

    Returns:
        The cache.
    """
    cache: NgramCounts = {}
    cache_update(cache, NGRAM_STATIC, NGRAM_STATIC, tokens, len(tokens))
    return cache


def _try_static(nc_static: NgramCounts, ngram: Ngram) -> int:
    """``try_draft`` from the static layer alone: its most frequent next token when confident enough."""
    part = nc_static.get(ngram)
    if part is None:
        return TOKEN_NULL
    max_count, total, max_token = 0, 0, TOKEN_NULL
    for token, count in part.items():
        if count > max_count:
            max_token, max_count = token, count
        total = _i32(total + count)
    i = NGRAM_STATIC - 1
    if total < MIN_SAMPLE_LAX[i] or _i32(100 * max_count) < _i32(MIN_PERCENT_LAX[i] * total):
        return TOKEN_NULL
    return max_token


def _try_primary(nc_primary: NgramCounts, ngrams: list[Ngram | None], part_static: IntCounts,
                 min_sample: tuple[int, ...], min_percent: tuple[int, ...]) -> int:
    """``try_draft`` from the context or dynamic layer, longest n-gram first, candidates weighted by the static
    layer's counts."""
    for i in range(len(ngrams) - 1, -1, -1):
        part = nc_primary.get(ngrams[i]) if ngrams[i] is not None else None
        if part is None:
            continue
        max_primary, max_static, total, max_token = 0, 0, 0, TOKEN_NULL
        for token, count in part.items():
            count_static = _i32(100 * part_static.counts[token]) if token in part_static.counts else 1
            if _i32(count * count_static) > _i32(max_primary * max_static):
                max_token, max_primary, max_static = token, count, count_static
            total = _i32(total + count)
        if total < min_sample[i] or _i32(100 * max_primary) < _i32(min_percent[i] * total):
            continue
        if max_token != TOKEN_NULL:
            return max_token
    return TOKEN_NULL


def cache_draft(inp: Sequence[int], draft: list[int], n_draft: int, layers: tuple[NgramCounts, ...]) -> None:
    """``common_ngram_cache_draft`` with n-grams of 1 to 4 tokens: extend ``draft`` (which holds the sampled
    token) by up to ``n_draft`` tokens, one layer's confident candidate at a time.

    Args:
        inp: the context, the sampled token last.
        draft: [the sampled token]; the drafted tokens are appended.
        n_draft: the most tokens to draft.
        layers: the (context, dynamic, static) caches.
    """
    nc_context, nc_dynamic, nc_static = layers
    inp_size = len(inp)
    if inp_size < NGRAM_STATIC:
        return
    while len(draft) - 1 < n_draft:
        seq = list(inp[max(0, inp_size - NGRAM_MAX):]) + draft[1:]  # the context's last 4 tokens, then the draft
        end = len(seq)
        ngram_static = _ngram(seq, end - NGRAM_STATIC, NGRAM_STATIC)
        part_static = nc_static.get(ngram_static) or IntCounts()
        # an n-gram reaching before the context's start is a read out of bounds in llama.cpp: no cache holds it
        ngrams: list[Ngram | None] = [
            _ngram(seq, end - n, n) if inp_size - n + len(draft) - 1 >= 0 else None
            for n in range(NGRAM_MIN, NGRAM_MAX + 1)]
        token = _try_primary(nc_context, ngrams, part_static, MIN_SAMPLE_LAX, MIN_PERCENT_LAX)
        if token == TOKEN_NULL:
            token = _try_primary(nc_dynamic, ngrams, part_static, MIN_SAMPLE_STRICT, MIN_PERCENT_STRICT)
        if token == TOKEN_NULL:
            token = _try_static(nc_static, ngram_static)
        if token == TOKEN_NULL:
            break
        draft.append(token)


def _refuse(path: str, what: str) -> SpectuiError:
    return SpectuiError(f"{path}: not an n-gram lookup cache: {what}")


def _read_ints(path: str, max_bytes: int) -> np.ndarray:
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > max_bytes:
                raise SpectuiError(f"{path}: a lookup cache of {size} bytes is over the limit of {max_bytes}")
            data = f.read(max_bytes + 1)
    except OSError as e:
        raise SpectuiError(f"{path}: cannot read the lookup cache: {e.strerror or e}") from e
    if len(data) > max_bytes:
        raise SpectuiError(f"{path}: the lookup cache is over the limit of {max_bytes} bytes")
    if len(data) % 4:
        raise _refuse(path, f"{len(data)} bytes is not a whole number of 32-bit fields")
    return np.frombuffer(data, dtype="<i4")


def load_cache(path: str, max_bytes: int = MAX_FILE_BYTES) -> NgramCounts:
    """``common_ngram_cache_load``: read a cache file (llama-lookup-create's, llama-lookup's); the file is only
    read. Records: 4 int32 n-gram tokens, an int32 count of entries, then that many (int32 token, int32 count).
    A repeated n-gram, or a repeated token within a record, keeps its first occurrence, as llama.cpp does.

    Args:
        path: the file.
        max_bytes: the largest file read.

    Returns:
        The cache.

    Raises:
        SpectuiError: the file cannot be read, is over ``max_bytes``, or is not a well-formed cache (llama.cpp
            aborts on those; a trailing fragment it would ignore is refused too).
    """
    ints = _read_ints(path, max_bytes).tolist()
    cache: NgramCounts = {}
    pos, total = 0, len(ints)
    while pos < total:
        if pos + 5 > total:
            raise _refuse(path, f"the file ends inside the record at byte {4 * pos}")
        key, n = tuple(ints[pos:pos + 4]), ints[pos + 4]
        end = pos + 5 + 2 * n
        if n <= 0 or end > total:
            raise _refuse(path, f"the record at byte {4 * pos} claims {n} entries")
        part = IntCounts()
        for j in range(pos + 5, end, 2):
            if ints[j + 1] <= 0:
                raise _refuse(path, f"a count of {ints[j + 1]} at byte {4 * (j + 1)}")
            part.emplace(ints[j], ints[j + 1])
        cache.setdefault(key, part)  # type: ignore[arg-type]
        pos = end
    return cache


class NgramCache:
    """``ngram-cache`` for one sequence: its context layer, and the dynamic and static layers it reads."""

    def __init__(self, params: NgramCacheParams | None = None, static: NgramCounts | None = None,
                 dynamic: NgramCounts | None = None) -> None:
        self.params = params or NgramCacheParams()
        p = self.params
        self.static = static if static is not None else (
            load_cache(p.lookup_cache_static) if p.lookup_cache_static else {})
        self.dynamic = dynamic if dynamic is not None else (
            load_cache(p.lookup_cache_dynamic) if p.lookup_cache_dynamic else {})
        self.context: NgramCounts = {}
        self.cache_size = 0  # context tokens (and the sampled one) given to the context layer so far

    @property
    def n_max(self) -> int:
        """The longest draft it makes (8, fixed in llama.cpp)."""
        return NGRAM_CACHE_N_DRAFT

    def begin(self, prompt: Sequence[int]) -> None:
        """A new generation starts from ``prompt``: nothing to do (llama.cpp's ``begin`` is a no-op here, and the
        context layer carries over)."""

    def draft(self, tokens: Sequence[int], n_max: int = -1) -> list[int]:
        """``draft_one`` for the context ``tokens``: feed the new tokens to the context layer, then draft.

        Args:
            tokens: the whole accepted context, its last token the one just sampled (llama.cpp's ``id_last``).
            n_max: the caller's limit (0 or less: none), applied as ``common_speculative_draft`` does.

        Returns:
            The drafted token ids (at most 8), possibly [].
        """
        if not tokens:
            return []
        prompt_len = len(tokens) - 1
        if self.cache_size < prompt_len + 1:
            new = list(tokens[self.cache_size:prompt_len]) + [tokens[-1]]
            cache_update(self.context, NGRAM_MIN, NGRAM_MAX, new, len(new))
            self.cache_size = prompt_len + 1
        result = [int(tokens[-1])]
        cache_draft(tokens, result, NGRAM_CACHE_N_DRAFT, (self.context, self.dynamic, self.static))
        return cap(result[1:], n_max)

    def accept(self, n_accepted: int) -> None:
        """The target accepted ``n_accepted`` of the last draft: nothing to record (a no-op in llama.cpp)."""


SPEC = DrafterSpec(name="ngram-cache", spec_type="ngram-cache", needs="nothing", shape="chain", order=25, priority=5,
                   params=NgramCacheParams,
                   summary="llama.cpp's ngram-cache: n-gram counts of the context (and a static cache file), 8 drafts",
                   make=lambda res: PointMassDrafter("ngram-cache", lambda: NgramCache(res.params.get("ngram-cache"))))
