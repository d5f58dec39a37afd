"""Suffix decoding (spectui/engine/drafters/suffix.py): literal token ids in, drafts out (frequency scoring, the cap
by match length, min_token_prob, the tree's depth, the global tree across requests, its cap on cached outputs), the
counts against a brute-force count of every substring, and on the real llama.cpp (tiny models): lossless at T = 0,
every pass drafted by ``suffix``, and a second run on the same engine drafting from the first run's output."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from greedy_checks import assert_argmax_of_verify_pass, assert_lossless, emitted_ids, reference, run_with_hook

from spectui.contract.events import PassEvent, Settings
from spectui.engine import drafters as D
from spectui.engine.drafters.base import DrafterResources
from spectui.engine.drafters.suffix import SuffixCache, SuffixDrafter, SuffixParams, SuffixTree

F32 = np.float32
TEXT = [1, 2, 3, 9, 1, 2, 3, 9, 1, 2, 4, 9]  # "1 2" three times: twice followed by 3, once by 4


def tree(depth: int = 24, *seqs) -> SuffixTree:
    t = SuffixTree(depth)
    for i, s in enumerate(seqs or (TEXT,)):
        t.extend(i, s)
    return t


def spec(t: SuffixTree, context, k=8, factor=1.0, offset=0.0, p_min=0.1):
    d = t.speculate(context, k, factor, offset, p_min)
    return d.ids, d.match_len


def test_the_most_frequent_continuation_with_its_probability():
    d = tree().speculate([7, 1, 2], 8, 1.0, 0.0, 0.1)
    # "1 2" (3 occurrences) -> 3 (2 of them): p = 2/3; "1 2 3" -> 9 in both: p stays 2/3; the longer match wins
    assert d.ids == [3, 9] and d.match_len == 2
    assert d.probs == [float(F32(2) / F32(3))] * 2 and d.score == pytest.approx(4 / 3)


def test_the_draft_is_capped_by_factor_times_match_length_plus_offset():
    assert spec(tree(), [7, 1, 2], factor=1.0) == ([3, 9], 2)
    assert spec(tree(), [7, 1, 2], factor=2.0) == ([3, 9, 1, 2], 2)
    assert spec(tree(), [7, 1, 2], factor=0.5) == ([3], 2)  # int(0.5 * 2 + 1e-6)
    assert spec(tree(), [7, 1, 2], factor=0.0, offset=3.0) == ([3, 9, 1], 2)
    assert spec(tree(), [7, 1, 2], factor=9.0, k=3) == ([3, 9, 1], 2)  # and by the pass's k
    assert spec(tree(), [7, 1, 2], factor=0.0) == ([], 2)


def test_a_token_below_min_token_prob_ends_the_draft():
    assert spec(tree(), [7, 1, 2], p_min=0.6) == ([3, 9], 2)
    assert spec(tree(), [7, 1, 2], p_min=0.7) == ([], 2)  # 2/3 < 0.7: nothing
    # probabilities multiply along the path: "1" -> 2 (3 of 3), "1 2" -> 3 (2 of 3), "1 2 3" -> 4 (1 of 2): 1/3
    t = tree(24, [1, 2, 3, 4, 1, 2, 3, 5, 1, 2, 6])
    assert spec(t, [0, 1], k=5, factor=9.0, p_min=0.33) == ([2, 3, 4, 1, 2], 1)
    assert spec(t, [0, 1], k=5, factor=9.0, p_min=0.34) == ([2, 3], 1)
    assert spec(t, [0, 1], k=5, factor=9.0, p_min=0.7) == ([2], 1)


def test_the_context_end_counts_where_it_occurs():
    """In the request's own tree the context's last tokens occur at its end too, with no continuation: "5 6"
    twice, once followed by 7, so 7 has p = 1/2."""
    d = tree(24, [5, 6, 7, 8, 5, 6]).speculate([5, 6, 7, 8, 5, 6], 8, 1.0, 0.0, 0.1)
    assert d.ids == [7, 8] and d.probs == [0.5, 0.5] and d.match_len == 2


def test_match_plus_draft_stay_within_the_tree_depth():
    t = tree(3)
    assert spec(t, [7, 1, 2], factor=9.0) == ([3, 9], 1)  # "2" at depth 1: two more tokens; "1 2" only one
    assert spec(tree(2), [7, 1, 2], factor=9.0) == ([3], 1)
    long = list(range(10, 40))
    assert spec(tree(4, long + [99] + long), long, factor=9.0, p_min=0.0) == ([99, 10, 11], 1)


def test_equal_counts_take_the_continuation_stored_first():
    assert spec(tree(24, [1, 5, 0, 1, 4]), [1], factor=1.0) == ([], 0)  # a context of one token matches nothing
    assert spec(tree(24, [1, 5, 0, 1, 4]), [0, 1])[0] == [5]
    assert spec(tree(24, [1, 4, 0, 1, 5]), [0, 1])[0] == [4]


def test_no_match_no_draft():
    assert spec(tree(), [7, 8]) == ([], 0)
    assert spec(SuffixTree(8), [1, 2, 3]) == ([], 0)


def brute_force(seqs, context, depth, k, factor, offset, p_min):
    """Arctic's definition spelled out: count every substring of length <= depth; walk the most frequent child
    (ties: the one whose first occurrence ends first in storage order), float32 products."""
    counts, first, pos = Counter(), {}, 1
    for s in seqs:
        for i in range(len(s)):
            for n in range(1, min(depth, len(s) - i) + 1):
                key = tuple(s[i:i + n])
                counts[key] += 1
                first.setdefault(key, pos + i + n)
        pos += len(s) + 1
    ctx, best = list(context)[-depth:], ([], F32(0), 0)
    for m in range(1, len(ctx)):
        cur = tuple(ctx[-m:])
        if not counts[cur]:
            break
        ids, prob, score, n_max = [], F32(1), F32(0), max(min(k, int(m * factor + offset + 1e-6)), 0)
        while len(ids) < n_max and len(cur) < depth:
            kids = [(counts[cur + (t,)], -first[cur + (t,)], t) for t in range(10) if counts[cur + (t,)]]
            if not kids:
                break
            c, _, t = max(kids)
            prob = F32(prob * F32(F32(c) / F32(counts[cur])))
            if prob < F32(p_min):
                break
            ids.append(t)
            score = F32(score + prob)
            cur += (t,)
        if score >= best[1]:
            best = (ids, score, m)
    return best[0], best[2]


@pytest.mark.parametrize("seed", range(3))
def test_counts_equal_a_brute_force_count(seed):
    rnd = random.Random(seed)
    for _ in range(60):
        depth, alphabet = rnd.choice([2, 3, 5, 24]), rnd.choice([2, 3, 10])
        seqs = [[rnd.randrange(alphabet) for _ in range(rnd.randrange(1, 40))] for _ in range(rnd.randrange(1, 4))]
        context = [rnd.randrange(alphabet) for _ in range(rnd.randrange(1, 20))]
        args = (rnd.choice([2, 8, 32]), rnd.choice([0.5, 1.0, 3.0]), rnd.choice([0.0, 1.0]), rnd.choice([0.0, 0.2]))
        assert spec(tree(depth, *seqs), context, *args) == brute_force(seqs, context, depth, *args)


def test_a_removed_sequence_no_longer_counts_and_the_buffer_is_compacted():
    t = tree(24, [1, 2, 3], [1, 2, 4], [1, 2, 4])
    assert spec(t, [0, 1, 2])[0] == [4]
    t.remove(1)
    t.remove(2)
    assert spec(t, [0, 1, 2])[0] == [3] and t.n_tokens == 3
    assert t.end == 5  # compacted: SEP 1 2 3 SEP
    t.extend(7, [1, 2, 5, 1, 2, 5])
    assert spec(t, [0, 1, 2])[0] == [5, 1]  # "1 2" -> 5 (2 of 3), "1 2 5" -> 1 (1 of 2)
    with pytest.raises(ValueError, match="newest"):
        t.extend(0, [6])
    with pytest.raises(ValueError, match="non-negative"):
        t.extend(7, [-1])


def test_the_global_tree_outlives_the_request_and_holds_only_outputs():
    drafter = SuffixDrafter()
    drafter.start()
    drafter.prefill([50, 51])
    assert drafter.propose([50, 51, 1, 2, 3, 4, 5], 8, 0.0, None).ids == []  # nothing repeats yet
    drafter.start()  # a new request: its tree is new, the global tree keeps the first output
    drafter.prefill([60, 61])
    prop = drafter.propose([60, 61, 1, 2, 3], 8, 0.0, None)
    # the global tree: "1 2 3" in the first output (-> 4 5) and ending the second: p = 1/2 each
    assert prop.ids == [4, 5] and prop.q_probs == [1.0, 1.0] and prop.stop == "no_match"
    assert drafter.cache.cached_requests == [0, 1]
    assert drafter.cache.global_tree.n_tokens == 5 + 3  # the outputs, not the prompts
    assert not np.isin([50, 51, 60, 61], drafter.cache.global_tree.buf).any()


def test_a_run_that_did_not_prefill_it_starts_its_request_at_the_first_proposal():
    drafter = SuffixDrafter()
    drafter.start()
    assert drafter.propose([1, 2, 3, 1, 2], 4, 0.0, None).ids == [3, 1]
    assert drafter.cache.global_tree.n_tokens == 0  # the context so far is the request's prompt
    assert drafter.propose([1, 2, 3, 1, 2, 3, 7], 4, 0.0, None).ids == []
    assert drafter.cache.global_tree.n_tokens == 2  # 3 7: its output


def test_the_cached_outputs_are_capped_oldest_first():
    cache = SuffixCache(24, max_cached_requests=2)
    for req in range(4):
        cache.start_request([90 + req])
        cache.add_active_response([10 * req + t for t in (1, 2, 3, 4)])
    assert cache.cached_requests == [2, 3] and cache.global_tree.n_tokens == 2 * 4
    assert cache.global_tree.end == 1 + 2 * 5  # the evicted outputs' cells are reclaimed (else 1 + 4 * 5)
    assert spec(cache.global_tree, [0, 21, 22], factor=9.0) == ([23, 24], 2)  # request 2's output is kept
    assert spec(cache.global_tree, [0, 1, 2], factor=9.0) == ([], 0)  # request 0's is not
    off = SuffixCache(24, max_cached_requests=0)  # vLLM's 0: no global tree, the request's own tree still drafts
    off.start_request([1, 2, 3, 4])
    off.add_active_response([1, 2])
    assert off.cached_requests == [] and off.speculate([1, 2, 3, 4, 1, 2], 8, SuffixParams()).ids == [3, 4]


@pytest.mark.parametrize("bad, field", [(dict(max_tree_depth=0), "max_tree_depth"),
                                        (dict(max_cached_requests=-1), "max_cached_requests"),
                                        (dict(max_spec_factor=-0.5), "max_spec_factor"),
                                        (dict(min_token_prob=1.5), "min_token_prob")])
def test_vllm_bounds(bad, field):
    with pytest.raises(ValueError, match=f"suffix_decoding_{field}"):
        SuffixParams(**bad)


def test_the_spec_and_vllm_defaults():
    s = D.by_name("suffix")
    assert (s.spec_type, s.needs, s.shape, s.order, s.priority) == ("suffix", "nothing", "chain", 26, 7)
    d = s.make(DrafterResources(target=None))
    assert isinstance(d, SuffixDrafter) and d.params == SuffixParams(24, 10000, 1.0, 0.1, 0.0)
    assert D.canonical("draft-simple,suffix,ngram-mod") == "ngram-mod,suffix,model"


PROMPT = "at if false same it true at if false same"


def replay(drafter, prompt_ids, events):
    """Feed one run's passes to ``drafter`` as the engine does; returns (its drafts == the run's at every pass,
    how many it drafted)."""
    drafter.start()
    drafter.prefill(list(prompt_ids))
    context, same, n = list(prompt_ids), True, 0
    for p in (ev for ev in events if isinstance(ev, PassEvent)):
        if not p.prefill and p.k > 0:  # the engine asks for no proposal at k = 0
            want = drafter.propose(list(context), p.k, 0.0, None).ids
            same = same and [d.id for d in p.drafts] == want
            n += len(want)
        context += [t.id for t in p.emitted]
    return same, n


def test_lossless_on_the_engine_and_a_second_run_drafts_from_the_first(make_engine, tiny_target, tiny_draft_noisy):
    with make_engine(tiny_target, tiny_draft_noisy) as e:
        ref = reference(e, 64, prompt=PROMPT)
        first, records = run_with_hook(e, Settings(draft_max=4, drafter="suffix"), 64, prompt=PROMPT)
        second, records2 = run_with_hook(e, Settings(draft_max=4, drafter="suffix"), 64, prompt=PROMPT)
        prompt_ids = e.tokenize(PROMPT)
    for events, recs in ((first, records), (second, records2)):
        assert_argmax_of_verify_pass(recs)
        assert_lossless(emitted_ids(events), *ref)
        drafted = [p for p in events if isinstance(p, PassEvent) and p.drafts]
        assert drafted and all(p.drafter == "suffix" and all(d.prob == 1.0 for d in p.drafts) for p in drafted)
    # every pass drafted what the algorithm drafts from the same text, the global tree carried from run to run
    same = SuffixDrafter()
    assert replay(same, prompt_ids, first)[0] and replay(same, prompt_ids, second)[0]
    # the second run drafts from the first's output: more than it drafts without it, and more than the first
    fresh = replay(SuffixDrafter(), prompt_ids, second)
    accepted = [sum(p.n_accepted for p in ev if isinstance(p, PassEvent)) for ev in (first, second)]
    n_first = sum(len(p.drafts) for p in first if isinstance(p, PassEvent))
    n_second = sum(len(p.drafts) for p in second if isinstance(p, PassEvent))
    assert not fresh[0] and n_second > fresh[1] and n_second > n_first and accepted[1] > accepted[0], (
        fresh, n_first, n_second, accepted)
