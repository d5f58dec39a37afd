"""llama.cpp's n-gram spec types in pure Python (spectui/engine/drafters/ngram_*.py): literal token arrays in,
drafts out, one test per rule of the C++ (common/ngram-map.cpp, ngram-mod.cpp, ngram-cache.cpp and the impls in
common/speculative.cpp of the llama.cpp in llama-cpp-python 0.3.36). Every expected draft below was also
produced by llama.cpp's own code (those files compiled with stub headers and driven by the same calls)."""

from __future__ import annotations

import os
import struct

import numpy as np
import pytest

from spectui.contract.errors import SpectuiError
from spectui.engine.drafters import by_name, canonical
from spectui.engine.drafters.base import DrafterResources
from spectui.engine.drafters.chain import ChainDrafter
from spectui.engine.drafters.libstdcxx_map import IntCounts
from spectui.engine.drafters.llama_spec import OPTIONS, PRIORITY, cap, chain_order
from spectui.engine.drafters.ngram_cache import NgramCache, NgramCacheParams, load_cache, static_from_tokens
from spectui.engine.drafters.ngram_map import NgramMap, NgramMapParams, map_hash
from spectui.engine.drafters.ngram_mod import NgramMod, NgramModParams, NgramModPool
from spectui.engine.drafters.ngram_simple import NgramSimple, NgramSimpleParams


def write_cache(path, records) -> bytes:
    """A cache file as llama.cpp writes it: per record 4 int32 n-gram tokens (-1 padded), an int32 entry count,
    then (int32 token, int32 count) pairs."""
    data = b""
    for key, toks in records:
        data += struct.pack("<4ii", *(tuple(key) + (-1,) * (4 - len(key))), len(toks))
        data += b"".join(struct.pack("<ii", t, c) for t, c in toks)
    path.write_bytes(data)
    return data


# --- ngram-simple ---------------------------------------------------------------------------------------------

def test_simple_drafts_what_followed_the_latest_earlier_match():
    d = NgramSimple(NgramSimpleParams(size_n=2, size_m=3))
    d.begin([])
    assert d.draft([1, 2, 3, 4, 5, 9, 1, 2, 3, 4, 5, 6, 7, 1, 2]) == [3, 4, 5]
    assert d.draft([1, 2, 3, 4, 5, 9, 1, 2, 3, 4, 5, 6, 7, 1, 2], n_max=2) == [3, 4]  # the caller's limit
    assert d.n_max == 3
    d.accept(3)  # stateless: the same context drafts the same
    assert d.draft([1, 2, 3, 4, 5, 9, 1, 2, 3, 4, 5, 6, 7, 1, 2]) == [3, 4, 5]


def test_simple_needs_more_than_n_plus_m_plus_one_tokens_and_never_matches_position_0():
    d = NgramSimple(NgramSimpleParams(size_n=2, size_m=3))
    assert d.draft([1, 2, 3, 4, 5, 1, 2]) == []  # 6 tokens before the sampled one: not more than 2+3+1
    assert d.draft([1, 2, 3, 4, 5, 6, 7, 8, 1, 2]) == []  # the only earlier [1, 2] is at position 0


def test_simple_drops_a_draft_shorter_than_size_n():
    d = NgramSimple(NgramSimpleParams(size_n=3, size_m=5))
    # [1, 2, 3] occurred at 8, followed by only 2 tokens before the current one: fewer than n = 3
    assert d.draft([9, 9, 9, 9, 9, 9, 9, 9, 1, 2, 3, 1, 2, 3]) == []


def test_simple_ignores_min_hits():
    d = NgramSimple(NgramSimpleParams(size_n=2, size_m=3, min_hits=5))
    assert d.draft([1, 2, 3, 4, 5, 9, 1, 2, 3, 4, 5, 6, 7, 1, 2]) == [3, 4, 5]


# --- ngram-map-k / k4v ----------------------------------------------------------------------------------------

def test_map_hash_is_a_32_bit_lcg():
    assert map_hash([1, 2], 0, 2) == (2654435761 + 2) & 0xFFFFFFFF
    assert map_hash([-1], 0, 1) == 0xFFFFFFFF  # a negative token wraps as uint32


def test_map_k_drafts_on_the_first_hit_and_then_at_most_what_was_accepted():
    prompt = [9, 1, 2, 3, 4, 5, 0, 0, 0, 0, 0, 0]
    d = NgramMap(NgramMapParams(size_n=2, size_m=3, min_hits=3, key_only=True))  # min_hits: read by no code
    d.begin(prompt)
    assert d.draft(prompt + [7, 1, 2]) == [3, 4, 5]
    d.accept(1)
    # the same key again (found through the hash index now): one token, the number accepted last time
    assert d.draft(prompt + [7, 1, 2, 3, 8, 1, 2]) == [3]
    assert d.n_max == 3


def test_map_needs_2n_plus_m_tokens():
    d = NgramMap(NgramMapParams(size_n=2, size_m=3))
    d.begin([1, 2, 3])
    assert d.draft([1, 2, 3, 1, 2]) == []  # 4 tokens before the sampled one, fewer than 2*2 + 3


def test_map_k4v_waits_for_min_hits():
    prompt = [9, 1, 2, 3, 4, 0, 0, 0, 0, 0]
    d = NgramMap(NgramMapParams(size_n=2, size_m=2, min_hits=2, key_only=False))
    d.begin(prompt)
    assert d.draft(prompt + [7, 1, 2]) == []  # first hit of [1, 2]
    d.accept(0)  # no draft was made: nothing recorded
    assert d.draft(prompt + [7, 1, 2, 5, 1, 2]) == [3, 4]  # second hit


def test_map_k4v_needs_a_value_twice_as_frequent_as_the_others():
    d = NgramMap(NgramMapParams(size_n=1, size_m=1, min_hits=1, key_only=False))
    prompt = [5, 1, 2, 0, 1, 3, 0, 0, 0, 0]  # [1] followed once by 2, once by 3
    d.begin(prompt)
    assert d.draft(prompt + [1]) == []


def test_map_k4v_drafts_after_the_match_even_when_another_value_is_the_frequent_one():
    d = NgramMap(NgramMapParams(size_n=1, size_m=1, min_hits=1, key_only=False))
    prompt = [5, 1, 2, 0, 1, 2, 0, 1, 3, 0, 0, 0]  # [1] -> 2 twice, -> 3 once; the latest match (7) -> 3
    d.begin(prompt)
    assert d.draft(prompt + [1]) == [3]  # llama.cpp copies the tokens after match_pos, not the top value


def test_map_begin_with_a_shorter_history_forgets_keys_past_it():
    prompt = [9, 1, 2, 3, 4, 5, 0, 0, 0, 0, 0, 0]
    d = NgramMap(NgramMapParams(size_n=2, size_m=3))
    d.begin(prompt)
    assert d.draft(prompt + [7, 1, 2, 6, 6, 6, 6, 6, 6, 4, 7]) == []
    assert d.draft(prompt + [7, 1, 2, 6, 6, 6, 6, 6, 6, 4, 7, 1, 2]) == [3, 4, 5]
    assert len(d.keys) == 1
    d.begin([8, 8, 8])  # a new, shorter history: everything from position 0 may differ
    assert d.keys == [] and d.key_map == {}
    assert d.draft([8] * 9) == []
    d.begin([8] * 20)
    with pytest.raises(ValueError, match="begin"):  # llama.cpp aborts: a shorter history needs a begin()
        d.draft([8] * 10)


# --- ngram-mod ------------------------------------------------------------------------------------------------

def test_mod_hash_is_a_64_bit_lcg_modulo_the_pool():
    pool = NgramModPool(2, 97)
    assert pool.idx([3, 5]) == 70
    assert pool.idx([-1, 7]) == 26  # a negative token is sign-extended to 64 bits
    assert NgramModPool(3).idx([1, 2, 3]) == 3845190
    assert NgramModPool(3).size == 4 * 1024 * 1024


def test_mod_draft_length_varies_up_to_n_max():
    d = NgramMod(NgramModParams(n_match=2, n_min=1, n_max=4))
    d.begin([1, 2, 3, 4, 5, 1, 2])
    assert d.draft([1, 2, 3, 4, 5, 1, 2, 3]) == [4, 5, 1, 2]
    d2 = NgramMod(NgramModParams(n_match=2, n_min=1, n_max=6))
    d2.begin([1, 2, 3, 4, 5, 1, 2])
    assert d2.draft([1, 2, 3, 4, 5, 1, 2, 3]) == [4, 5, 1, 2, 3, 4]
    assert d2.draft([1, 2, 3, 4, 5, 1, 2, 3], n_max=2) == [4, 5]
    assert d2.n_draft_last == 6  # the whole draft's length, before the caller's limit


def test_mod_a_miss_before_n_min_drops_the_draft():
    prompt = [5, 6, 7, 8, 9, 0]  # pools (5,6)->7 (6,7)->8 (7,8)->9 (8,9)->0; (9,0) is not pooled yet
    d = NgramMod(NgramModParams(n_match=2, n_min=3, n_max=8))
    d.begin(prompt)
    assert d.draft(prompt + [5, 6]) == [7, 8, 9, 0]  # misses at the 5th token, n_min = 3
    d = NgramMod(NgramModParams(n_match=2, n_min=5, n_max=8))
    d.begin(prompt)
    assert d.draft(prompt + [5, 6]) == []  # misses at the 5th token, n_min = 5


def test_mod_adds_new_context_in_chunks_of_more_than_32_tokens_and_the_last_write_wins():
    d = NgramMod(NgramModParams(n_match=2, n_min=1, n_max=4))
    d.begin([5, 6, 7])
    assert d.draft([5, 6, 7, 1, 2, 3, 1, 2]) == []  # 4 new tokens: (1,2)->3 is not pooled yet
    # 34 new tokens: all pooled; (0,0)->0 is overwritten by the last (0,0)->1
    assert d.draft([5, 6, 7, 1, 2, 3] + [0] * 30 + [1, 2]) == [3, 0, 0, 1]


def test_mod_begin_empties_a_pool_more_than_a_quarter_full():
    d = NgramMod(NgramModParams(n_match=1, n_min=1, n_max=3), NgramModPool(1, 16))
    d.begin([1, 2, 3, 4, 5, 6, 1])  # 6 of 16 slots used: over a quarter
    assert d.pool.used == 0
    assert d.draft([1, 2, 3, 4, 5, 6, 1, 2]) == []
    d = NgramMod(NgramModParams(n_match=1, n_min=1, n_max=3), NgramModPool(1, 16))
    d.begin([1, 2, 3, 4, 1])  # 4 of 16: a quarter, kept
    assert d.pool.used == 4
    assert d.draft([1, 2, 3, 4, 1, 2]) == [3, 4, 1]


def test_mod_five_poor_accepts_in_a_row_empty_the_pool():
    ctx = [1, 2, 3, 4, 5, 1, 2, 3]
    d = NgramMod(NgramModParams(n_match=2, n_min=1, n_max=4))
    d.begin(ctx[:-1])
    for n_accepted in (0, 0, 0, 0, 1, 0):  # 1 of 4 is a quarter: not poor, the streak restarts
        assert d.draft(ctx) == [4, 5, 1, 2]
        d.accept(n_accepted)
    assert d.n_low == 1
    for _ in range(4):
        assert d.draft(ctx) == [4, 5, 1, 2]
        d.accept(0)
    assert d.pool.used == 0 and d.n_low == 0 and d.i_last == 0
    assert d.draft(ctx) == []  # a short context is not pooled again until 32 tokens are new


def test_mod_pool_is_shared_across_runs_and_sequences():
    pool = NgramModPool(2)
    a = NgramMod(NgramModParams(n_match=2, n_min=1, n_max=3), pool)
    a.begin([1, 2, 3, 4, 5])
    a.begin([8, 9])  # a second run of the same session: the pool keeps the first run's n-grams
    assert a.draft([8, 9, 1, 2]) == [3, 4, 5]
    b = NgramMod(NgramModParams(n_match=2, n_min=1, n_max=3), pool)  # another sequence
    b.begin([7])
    assert b.draft([7, 2, 3]) == [4, 5]
    with pytest.raises(ValueError):
        NgramMod(NgramModParams(n_match=3), pool)


# --- ngram-cache ----------------------------------------------------------------------------------------------

def test_int_counts_walk_in_libstdcxx_order():
    """Orders printed by g++ 12's std::unordered_map<int32_t, int32_t> after the same inserts."""
    def walk(keys):
        m = IntCounts()
        for k in keys:
            m.add(k, 1)
        return list(m), m.n_bkt

    assert walk([5, 18, 3]) == ([3, 18, 5], 13)  # 18 shares 5's bucket of 13: it goes before 5
    assert walk([7, 20, 33, 1]) == ([1, 33, 20, 7], 13)
    assert walk(range(14)) == ([13, *range(13)], 29)  # the 14th insert rehashes to 29 buckets
    m = IntCounts()
    for k in (5, 18, 5):
        m.add(k, 1)
    m.emplace(5, 9)  # emplace of a present key changes nothing
    assert list(m.items()) == [(18, 1), (5, 2)] and list(m.copy().items()) == [(18, 1), (5, 2)]
    assert len(m) == 2 and m.get(5) == 2 and m.get(4) == 0


def test_cache_context_layer_drafts_eight_tokens():
    d = NgramCache()
    d.begin([1, 2, 3, 1, 2, 3, 1])
    assert d.draft([1, 2, 3, 1, 2, 3, 1, 2]) == [3, 1, 2, 3, 1, 2, 3, 1]
    assert d.draft([1, 2, 3, 1, 2, 3, 1, 2], n_max=3) == [3, 1, 2]
    d.accept(3)
    assert d.n_max == 8


def test_cache_context_layer_learns_only_inside_each_batch_of_new_tokens():
    fresh = NgramCache()
    assert fresh.draft([1, 2, 3, 4, 1, 2, 3]) == [4, 1, 2, 3, 4, 1, 2, 3]
    d = NgramCache()
    assert d.draft([1, 2, 3]) == []
    # the second batch is [4, 1, 2, 3]: (1, 2, 3) -> 4 lies across the two batches and is never learned
    assert d.draft([1, 2, 3, 4, 1, 2, 3]) == []


def test_cache_breaks_a_tie_in_libstdcxx_order_and_the_static_layer_weighs_in(tmp_path):
    ctx = [1, 7, 8, 5, 2, 7, 8, 18, 3, 7, 8]  # (7, 8) -> 5 once, -> 18 once: 50 %, enough for a 2-gram
    assert NgramCache().draft(ctx) == [18, 3, 7, 8, 18, 3, 7, 8]  # 18 walks first (see above)
    static = tmp_path / "static.bin"
    write_cache(static, [((7, 8), [(5, 1)])])  # the corpus saw 5 after (7, 8)
    d = NgramCache(NgramCacheParams(lookup_cache_static=str(static)))
    assert d.draft(ctx) == [5, 2, 7, 8, 18, 3, 7, 8]


def test_cache_static_layer_drafts_alone_with_lax_thresholds():
    static = static_from_tokens([7, 8, 9, 7, 8, 9])  # (7,8)->9 twice, (8,9)->7 once, (9,7)->8 once
    assert list(static[(7, 8, -1, -1)].items()) == [(9, 2)]
    assert NgramCache(static=static).draft([7, 8]) == [9]  # (8, 9) seen once: fewer than 2 samples


def test_cache_dynamic_layer_needs_strict_thresholds(tmp_path):
    dyn = tmp_path / "dynamic.bin"
    write_cache(dyn, [((8,), [(9, 3), (4, 1)])])  # 4 samples, 75 %: enough for a 1-gram
    assert NgramCache(NgramCacheParams(lookup_cache_dynamic=str(dyn))).draft([7, 8]) == [9]
    write_cache(dyn, [((8,), [(9, 2), (4, 1)])])  # 3 samples: too few
    assert NgramCache(NgramCacheParams(lookup_cache_dynamic=str(dyn))).draft([7, 8]) == []


def test_load_cache_reads_llama_files_first_occurrence_wins_and_never_writes(tmp_path):
    path = tmp_path / "c.bin"
    data = write_cache(path, [((1, 2), [(3, 4), (5, 6), (3, 9)]), ((7,), [(8, 1)]), ((1, 2), [(0, 1)])])
    before = os.stat(path).st_mtime_ns
    cache = load_cache(str(path))
    assert set(cache) == {(1, 2, -1, -1), (7, -1, -1, -1)}
    assert sorted(cache[(1, 2, -1, -1)].items()) == [(3, 4), (5, 6)]
    assert path.read_bytes() == data and os.stat(path).st_mtime_ns == before
    write_cache(tmp_path / "empty.bin", [])
    assert load_cache(str(tmp_path / "empty.bin")) == {}


@pytest.mark.parametrize(("data", "message"), [
    (struct.pack("<4ii", 1, 2, -1, -1, 0), "claims 0 entries"),
    (struct.pack("<4ii", 1, 2, -1, -1, 2) + struct.pack("<ii", 3, 1), "claims 2 entries"),
    (struct.pack("<4ii", 1, 2, -1, -1, 1) + struct.pack("<ii", 3, 0), "a count of 0"),
    (struct.pack("<4ii", 1, 2, -1, -1, 1) + struct.pack("<ii", 3, 1) + b"\0\0\0\0", "ends inside the record"),
    (b"\0\0\0", "not a whole number"),
])
def test_load_cache_refuses_a_malformed_file_in_one_line(tmp_path, data, message):
    path = tmp_path / "bad.bin"
    path.write_bytes(data)
    with pytest.raises(SpectuiError, match=message) as e:
        load_cache(str(path))
    assert "\n" not in str(e.value) and str(path) in str(e.value)


def test_load_cache_refuses_a_missing_or_oversized_file(tmp_path):
    with pytest.raises(SpectuiError, match="cannot read"):
        load_cache(str(tmp_path / "missing.bin"))
    path = tmp_path / "big.bin"
    write_cache(path, [((1,), [(2, 1)] * 10)])
    with pytest.raises(SpectuiError, match="over the limit"):
        load_cache(str(path), max_bytes=64)


# --- the chain, the options -----------------------------------------------------------------------------------

def test_chain_order_is_llama_priority_not_the_users():
    assert chain_order(["ngram-mod", "ngram-cache", "ngram-simple", "ngram-mod"]) == \
        ("ngram-simple", "ngram-mod", "ngram-cache")
    assert chain_order(["ngram-mod", "none"]) == ()
    assert PRIORITY[:5] == ("ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache")
    with pytest.raises(SpectuiError, match="unknown speculative type: ngram-foo"):
        chain_order(["ngram-foo"])
    assert isinstance(by_name("ngram-map-k4v").make(DrafterResources(target=None)).algo, NgramMap)


def test_chain_takes_the_first_draft_and_accept_reaches_the_last_drafter():
    """The engine's chain (drafters/chain.py) over the types' drafters, as common_speculative_draft / _accept."""
    params = {"ngram-simple": NgramSimpleParams(size_n=3, size_m=3),
              "ngram-mod": NgramModParams(n_match=2, n_min=1, n_max=4)}
    names = canonical("ngram-mod,ngram-simple").split(",")
    assert names == ["ngram-simple", "ngram-mod"]  # llama.cpp's priority, not the order written
    members = [(n, by_name(n).make(DrafterResources(target=None, params=params))) for n in names]
    chain = ChainDrafter(members)
    rng = np.random.default_rng(0)
    chain.accept(1)  # nothing drafted yet: no member is told (llama.cpp's impl_last is null)
    for _, d in members:
        d.algo.begin([1, 2, 3, 4, 5, 1, 2])
    p = chain.propose([1, 2, 3, 4, 5, 1, 2, 3], 8, 0.0, rng)
    assert p.ids == [4, 5, 1, 2] and p.drafter == "ngram-mod"  # simple: too short a history; mod drafts
    assert chain.propose([9, 9], 8, 0.0, rng).ids == []  # an empty round leaves the last drafter
    chain.accept(0)
    p = chain.propose([6, 1, 2, 3, 4, 5, 9, 1, 2, 3], 2, 0.0, rng)
    assert p.ids == [4, 5] and p.drafter == "ngram-simple"  # simple first, cut to k = 2


def test_options_match_the_params_defaults_and_arg_cpp_bounds():
    defaults = {"ngram-simple": NgramSimpleParams(), "ngram-map-k": NgramMapParams(),
                "ngram-map-k4v": NgramMapParams(key_only=False), "ngram-mod": NgramModParams(),
                "ngram-cache": NgramCacheParams()}
    for spec_type, params in defaults.items():
        for opt in OPTIONS[spec_type]:
            assert getattr(params, opt.field) == opt.default, opt.flag
    with pytest.raises(SpectuiError, match="--spec-ngram-mod-n-match 0: ngram size N must be between 1 and 1024"):
        NgramModParams(n_match=0)
    with pytest.raises(SpectuiError, match="--spec-ngram-map-k4v-min-hits 0: ngram min hits must be at least 1"):
        NgramMapParams(min_hits=0, key_only=False)
    with pytest.raises(SpectuiError, match="--spec-ngram-simple-size-m 1025"):
        NgramSimpleParams(size_m=1025)
    assert NgramModParams(n_min=0, n_max=0).n_max == 0
    assert cap([1, 2, 3], 2) == [1, 2] and cap([1, 2, 3], 0) == [1, 2, 3] and cap([1, 2, 3], -1) == [1, 2, 3]
