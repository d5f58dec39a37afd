"""Suffix decoding proposing trees (spectui/engine/drafters/suffix_tree.py): the tree from literal token ids (best
first by frequency, its shares and path probabilities, the floor, the factor's cap, the tree drafter's limits), the
best-scored match, a chain when auto asks for one; on the real llama.cpp (tiny models) verified by the tree verify:
lossless at T = 0 (every emitted id a target-only run's), branching, and a run at T > 0 (the point masses' exact
rule itself: tests/engine/test_tree_verify.py)."""

from __future__ import annotations

import pytest
from greedy_checks import assert_lossless, emitted_ids, reference, run_with_hook

from spectui.commands.common import offered_drafters, plan_drafting
from spectui.contract.events import ACCEPTED, PassEvent, Settings
from spectui.contract.options import ModelOptions
from spectui.engine import drafters as D
from spectui.engine.drafters.base import DrafterResources, DraftLimits
from spectui.engine.drafters.draft_tree import TREE_SEQS, TreeParams
from spectui.engine.drafters.suffix import SuffixParams, SuffixTree
from spectui.engine.drafters.suffix_tree import SuffixTreeDrafter, TreeBounds, grow, speculate_tree

TEXT = [1, 2, 3, 9, 1, 2, 3, 9, 1, 2, 4, 9]  # "1 2" three times: twice followed by 3, once by 4


def tree(*seqs) -> SuffixTree:
    t = SuffixTree(24)
    for i, s in enumerate(seqs or (TEXT,)):
        t.extend(i, s)
    return t


def matched(t: SuffixTree, context, m):
    return dict(t.matches(context))[m]


def bounds(nodes=8, topk=4, leaves=0, depth=8, min_prob=0.1):
    return TreeBounds(nodes, topk, leaves, depth, min_prob)


def test_the_tree_keeps_the_less_frequent_continuations_best_first():
    t = tree()
    d = grow(t, matched(t, [7, 1, 2], 2), 2, bounds(nodes=4, depth=2))
    # "1 2" -> 3 (2 of 3) -> 9 (2 of 2); -> 4 (1 of 3) -> 9 (1 of 1): best first, 2/3, 2/3, 1/3, 1/3
    assert d.ids == [3, 9, 4, 9] and d.parents == [-1, 0, -1, 2]
    assert d.shares == pytest.approx([2 / 3, 1.0, 1 / 3, 1.0])
    assert d.probs == pytest.approx([2 / 3, 2 / 3, 1 / 3, 1 / 3])
    assert d.score == pytest.approx(2.0) and d.match_len == 2


def test_the_floor_the_budget_the_children_the_leaves_and_the_depth():
    t = tree()
    ends = matched(t, [7, 1, 2], 2)
    assert grow(t, ends, 2, bounds(min_prob=0.4)).ids == [3, 9, 1, 2]  # 1/3 < 0.4: no branch
    assert grow(t, ends, 2, bounds(nodes=2)).ids == [3, 9]
    assert grow(t, ends, 2, bounds(nodes=4, topk=1)).parents == [-1, 0, 1, 2]  # one child a node: a chain
    # below "1 2 3 9 1 2" the text goes on with 3 and with 4, as "1 2" does: six nodes branch, -np 1 keeps one
    assert grow(t, ends, 2, bounds(nodes=6)).parents == [-1, 0, 1, 2, -1, 3]
    assert grow(t, ends, 2, bounds(nodes=6, leaves=1)).parents == [-1, 0, 1, 2, 3, 4]
    assert grow(t, ends, 2, bounds(nodes=4, depth=1)).ids == [3, 4]  # --spec-num-steps 1: the root's children
    deep = SuffixTree(4)
    deep.extend(0, TEXT)
    assert grow(deep, matched(deep, [7, 1, 2], 2), 2, bounds()).ids == [3, 9, 4, 9]  # match + depth <= 4


def test_the_best_scored_match_and_the_factor_cap():
    t = tree()
    params = SuffixParams()
    d = speculate_tree(t, [7, 1, 2], 8, params, TreeParams(), 8)
    assert d.match_len == 2 and d.ids[:2] == [3, 9]
    # the factor caps the nodes of a match of m tokens (1.0 x 2 here)
    assert len(d.ids) == 2
    wide = speculate_tree(t, [7, 1, 2], 8, SuffixParams(max_spec_factor=3.0), TreeParams(), 8)
    assert wide.ids == [3, 9, 1, 2, 4, 3] and wide.parents == [-1, 0, 1, 2, -1, 3] and wide.match_len == 2
    assert speculate_tree(t, [7, 5], 8, params, TreeParams(), 8).ids == []


def test_the_drafter_proposes_a_tree_or_the_chain_auto_asks_for():
    drafter = SuffixTreeDrafter(SuffixParams(max_spec_factor=3.0), TreeParams(steps=2))
    drafter.start()
    drafter.prefill(TEXT)
    prop = drafter.propose(TEXT + [1, 2], 4, 0.0, None)
    # "1 2" now also ends the context (a count with no continuation): 3 is 2 of 4, 4 is 1 of 4
    assert prop.ids == [3, 9, 4, 9] and prop.parents == [-1, 0, -1, 2] and prop.tree_q is None
    assert prop.q_probs == pytest.approx([0.5, 1.0, 0.25, 1.0]) and prop.stop == "k"
    chain = drafter.propose(TEXT + [1, 2], DraftLimits(4, children=1), 0.0, None)
    assert chain.parents is None and chain.ids == [3, 9, 1, 2] and chain.q_probs == [1.0] * 4
    assert drafter.propose(TEXT + [1, 2, 8], 4, 0.0, None).stop == "no_match"


def test_the_spec_needs_a_target_with_the_trees_sequences():
    s = D.by_name("suffix-tree")
    assert (s.needs, s.shape) == ("target's tree sequences", "tree")

    class Target:
        n_seq = TREE_SEQS

    assert s.make(DrafterResources(target=None)) is None  # a target of one sequence cannot verify a tree
    made = s.make(DrafterResources(target=Target(), params={"tree": TreeParams(topk=2)}))
    assert isinstance(made, SuffixTreeDrafter) and made.tree.topk == 2
    models = ModelOptions(target="t.gguf")
    assert plan_drafting("run", ["suffix-tree"], models).tree_seqs
    assert plan_drafting("run", offered_drafters("suffix-tree", models), models).tree_seqs
    assert not plan_drafting("run", ["suffix"], models).tree_seqs


PROMPT = "at if false same it true at if false same"


def _branched(ev: PassEvent) -> bool:
    """A node of the pass's tree has two children or more."""
    parents = [nd.parent for nd in ev.tree]
    return any(parents.count(u) > 1 for u in set(parents))


def test_lossless_on_the_engine_and_it_branches(make_engine, tiny_target):
    """Six sampled runs (T = 0.7) fill the global suffix tree with outputs that share their first tokens and then
    part: a greedy run's context then has several continuations, and its trees branch."""
    with make_engine(tiny_target, tree_seqs=True) as e:
        ref = reference(e, 64, prompt=PROMPT)
        alone, _ = run_with_hook(e, Settings(draft_max=0, drafter="none"), 64, prompt=PROMPT)
        sampled = [run_with_hook(e, Settings(draft_max=8, drafter="suffix-tree", temperature=0.7, seed=seed), 64,
                                 prompt=PROMPT)[0] for seed in range(1, 7)]
        events, _ = run_with_hook(e, Settings(draft_max=8, drafter="suffix-tree"), 64, prompt=PROMPT)
    assert_lossless(emitted_ids(events), *ref)
    assert emitted_ids(events) == emitted_ids(alone)  # every emitted id the target alone's
    trees = [p for p in events if isinstance(p, PassEvent) and p.tree]
    assert trees and all(p.drafter == "suffix-tree" for p in trees)
    assert any(_branched(p) for p in trees)
    for p in trees:
        on_path = [i for i, nd in enumerate(p.tree) if nd.verdict == ACCEPTED]
        assert [p.tree[i].id for i in on_path] == [d.id for d in p.drafts[: p.n_accepted]]
        # each draft's q is its node's (the frequency share), the path's nodes not the first ones drafted
        assert [p.tree[i].prob for i in on_path] == [d.prob for d in p.drafts[: p.n_accepted]]
        assert all(0 < nd.prob <= 1 for nd in p.tree)
    # at T > 0 the trees went through the recursive rejection sampling with point masses: every run emitted its 64
    for run in sampled:
        passes = [p for p in run if isinstance(p, PassEvent)]
        assert sum(len(p.emitted) for p in passes) == 64 and any(p.tree for p in passes)
