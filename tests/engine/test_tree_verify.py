"""The tree's acceptance rules (spectui/engine/tree_verify.py) as pure functions: the greedy walk, and recursive
rejection sampling without replacement, whose output must follow the target's law exactly whatever the tree and
the draft (chi-square as tests/engine/test_engine_sampling.py, fixed seeds), with and without a branch split."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from test_engine_sampling import chi2_check

from spectui.engine.drafters.draft_tree import TreeParams, tree_params
from spectui.engine.run.tree_pass import leaf_sequences
from spectui.engine.tree_verify import (
    child_proposal,
    children,
    depths,
    greedy_tree_verify,
    point_mass,
    rrs_tree_verify,
)
from spectui.engine.verify import sample


def test_shape_helpers():
    parents = [-1, -1, 0, 0, 2, 1]
    assert children(parents) == [[0, 1], [2, 3], [5], [4], [], [], []]
    assert depths(parents) == [1, 1, 2, 2, 3, 2]
    seqs, n_leaves = leaf_sequences(parents)
    # leaves in node order: 3 -> 0, 4 -> 1, 5 -> 2; a node holds the sequences of the leaves below it
    assert n_leaves == 3
    assert seqs == [[0, 1], [2], [1], [0], [1], [2]]


def test_greedy_walk_follows_the_argmax():
    v = 5
    rows = np.zeros((7, v), dtype=np.float32)
    ids = [1, 2, 3, 4, 0, 1]
    parents = [-1, -1, 0, 0, 2, 1]
    rows[0, 1] = 5  # root: argmax 1 = node 0
    rows[1, 4] = 5  # node 0: argmax 4 = node 3 (node 2, token 3, refused)
    rows[4, 2] = 5  # node 3 is a leaf: the bonus is 2
    tv = greedy_tree_verify(rows, ids, parents)
    assert tv.path == (0, 3) and tv.token == 2
    assert set(tv.rejected) == {1, 2}
    rows[0] = 0
    rows[0, 0] = 5  # no root child is the argmax: correction 0 at once
    tv = greedy_tree_verify(rows, ids, parents)
    assert tv.path == () and tv.token == 0 and set(tv.rejected) == {0, 1}


def _law(p, q_root, q_nodes, split, rank_cap, seed, runs):
    """Draw a two-level tree (root children without replacement, one child under the first) and verify it."""
    rng = np.random.default_rng(seed)
    first, second = Counter(), Counter()
    for _ in range(runs):
        ids, parents, drawn = [], [], []
        for rank in range(1, rank_cap + 1):
            r = child_proposal(q_root, drawn, rank, split)
            if r is None:
                break
            x = sample(r, rng)
            drawn.append(x)
            ids.append(x)
            parents.append(-1)
        y = sample(child_proposal(q_nodes[ids[0]], [], 1, split), rng)
        ids.append(y)
        parents.append(0)
        qs = {-1: q_root, 0: q_nodes[ids[0]]}
        tv = rrs_tree_verify(lambda i, ids=ids: p[0] if i == 0 else p[1][ids[i - 1]], qs.__getitem__, ids, parents,
                             split, rng)
        out = [ids[c] for c in tv.path] + [tv.token]
        first[out[0]] += 1
        if len(out) > 1 and out[0] == ids[0]:
            second[out[1]] += 1
    return first, second


@pytest.mark.parametrize("split,rank_cap", [(0.0, 3), (0.15, 4), (0.0, 1)])
def test_recursive_rejection_sampling_is_exact(split, rank_cap):
    rng = np.random.default_rng(7)
    v = 8
    p_root = rng.dirichlet(np.ones(v))
    p_next = {x: rng.dirichlet(np.ones(v)) for x in range(v)}
    q_root = rng.dirichlet(np.ones(v) * 0.5)
    q_nodes = {x: rng.dirichlet(np.ones(v) * 0.5) for x in range(v)}
    runs = 12000
    first, second = _law((p_root, p_next), q_root, q_nodes, split, rank_cap, 11, runs)
    chi2, bound = chi2_check(first, p_root, runs)
    assert chi2 < bound, (chi2, bound)
    assert sum(second.values()) > 500  # the walk went below the root often (the second level: the next test)


def test_joint_law_two_levels():
    """The first two emitted tokens together follow p(a) p(b | a) (the walk's second step is exact too)."""
    rng = np.random.default_rng(3)
    v = 5
    p_root = rng.dirichlet(np.ones(v))
    p_next = {x: rng.dirichlet(np.ones(v)) for x in range(v)}
    q_root = rng.dirichlet(np.ones(v) * 0.7)
    q_nodes = {x: rng.dirichlet(np.ones(v) * 0.7) for x in range(v)}
    runs = 20000
    joint = Counter()
    rng2 = np.random.default_rng(5)
    for _ in range(runs):
        ids, parents, drawn = [], [], []
        for rank in (1, 2):
            x = sample(child_proposal(q_root, drawn, rank, 0.0), rng2)
            drawn.append(x)
            ids.append(x)
            parents.append(-1)
        for root_child in (0, 1):  # each root child has one child drawn from its own q
            ids.append(sample(q_nodes[ids[root_child]], rng2))
            parents.append(root_child)
        qs = {-1: q_root, 0: q_nodes[ids[0]], 1: q_nodes[ids[1]]}
        p_of = lambda i, ids=ids: p_root if i == 0 else p_next[ids[i - 1]]  # noqa: E731
        tv = rrs_tree_verify(p_of, qs.__getitem__, ids, parents, 0.0, rng2)
        out = [ids[c] for c in tv.path] + [tv.token]
        if len(out) == 1:  # the second token comes from the next pass: draw it from the target itself
            out.append(sample(p_next[out[0]], rng2))
        joint[out[0] * v + out[1]] += 1
    law = np.array([p_root[a] * p_next[a][b] for a in range(v) for b in range(v)])
    chi2, bound = chi2_check(joint, law, runs)
    assert chi2 < bound, (chi2, bound)


def test_child_proposal_without_replacement_and_split():
    q = np.array([0.5, 0.3, 0.15, 0.05])
    assert np.allclose(child_proposal(q, [], 1, 0.2), q)  # the first child: all of q
    assert np.allclose(child_proposal(q, [0], 2, 0.0), [0, 0.6, 0.3, 0.1])
    assert np.allclose(child_proposal(q, [0], 2, 0.2), [0, 1, 0, 0])  # only q above the split
    assert child_proposal(q, [0, 1], 3, 0.2) is None


def test_tree_params_from_options():
    assert tree_params([("spec_ngram_simple_size_n", 3)]) is None
    p = tree_params([("spec_tree_np", 3), ("spec_eagle_topk", None)])
    assert p == TreeParams(parallel=3) and p.split() == 0.1  # llama.cpp's --draft-p-split default with -np
    p = tree_params([("spec_eagle_topk", 2), ("spec_num_steps", 3), ("spec_num_draft_tokens", 6),
                     ("spec_tree_p_split", 0.0)])
    assert (p.topk, p.depth(8), p.budget(8), p.split()) == (2, 3, 5, 0.0)
    assert TreeParams().budget(40) == 32 and TreeParams().depth(5) == 5


def test_rank_rates_learn_from_the_verdicts():
    """A slot's score is the learned chance that the walk takes the rank's child (RankRates)."""
    import math

    from spectui.engine.drafters.draft_tree import RankRates

    rates = RankRates()
    probs = [0.3, 0.2, 0.1]
    assert math.isclose(rates.log_score(probs, 1), math.log(0.3))  # no verdict yet: the rank's q
    assert math.isclose(rates.log_score(probs, 2), math.log(0.7) + math.log(0.2))
    for _ in range(40):  # a flat draft whose first sampled child the target takes 9 times in 10
        for i in range(10):
            rates.learn(0.3, 1, i < 9)
    assert rates.rate(0.3, 1, 0.3) > 0.85
    assert rates.rate(0.9, 1, 0.9) > 0.85  # another confidence fifth starts from what every fifth learned
    assert rates.log_score(probs, 2) < math.log(0.15)  # a sibling is worth little after a likely first child


def test_point_masses_are_judged_exactly():
    """At T > 0 a child proposed without a draw is judged as the point mass on itself: the emitted token follows the
    target's law whatever the tree (three root children, one with a child)."""
    rng = np.random.default_rng(4)
    v = 6
    p_root = rng.dirichlet(np.ones(v))
    p_next = rng.dirichlet(np.ones(v))
    ids, parents = [2, 0, 5, 1], [-1, -1, -1, 0]
    runs = 12000
    first = Counter()
    for _ in range(runs):
        tv = rrs_tree_verify(lambda i: p_root if i == 0 else p_next, lambda u: None, ids, parents, 0.0, rng)
        first[([ids[c] for c in tv.path] + [tv.token])[0]] += 1
    chi2, bound = chi2_check(first, p_root, runs)
    assert chi2 < bound, (chi2, bound)
    assert point_mass(2, 4).tolist() == [0.0, 0.0, 1.0, 0.0]
