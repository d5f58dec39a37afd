"""A chain or a tree under --draft-max auto (spectui/analysis/cost/tree_cost.py): the best-first tree's expected
accepted length, its draft decodes and verify cost, the walk's verdicts by rank, and the cost policy's choice on
synthetic worlds: a GPU-like flat verify curve with a first child often refused must choose a tree, a CPU-like steep
one (each verified token about half a decode, as on 2 cores) a short chain."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from synthetic_events import make_pass, make_prefill, make_start

from spectui.analysis.cost.costmodel import predict_from
from spectui.analysis.cost.draft_policy import CostPolicy, PolicyByMode
from spectui.analysis.cost.tree_cost import (
    TREE_MARGIN,
    TreeChoice,
    best_tree,
    draft_units,
    grow,
    is_tree,
    walk_verdicts,
)
from spectui.analysis.stats import RunStats
from spectui.contract.events import (
    ACCEPTED,
    DISCARDED,
    REJECTED,
    DraftToken,
    PassEvent,
    Settings,
    TargetToken,
    Timing,
    Token,
    TreeNode,
)
from spectui.text.run import summary_dict, summary_text


def node(parent, verdict, tid=7):
    return TreeNode(id=tid, text="n", prob=0.5, parent=parent, verdict=verdict, target_prob=0.5)


def test_the_tree_drafters_are_known_by_their_shape():
    assert is_tree("tree") and is_tree("suffix-tree")
    assert not is_tree("model") and not is_tree("suffix") and not is_tree("ngram,model") and not is_tree("nope")


def test_grow_is_best_first_and_its_chances_are_the_walks():
    # first children accepted half the time at every depth, later ones half the time once the ones before refused
    nodes = grow([0.5] * 4, [0.5], 4, topk=2)
    chances = [c for c, _, _ in nodes]
    assert chances[0] == 0.5  # the root's first child
    assert sorted(chances[1:]) == [0.125, 0.25, 0.25]  # its first child, the root's second (0.5 x 0.5), then 1/8
    assert [par for _, _, par in nodes][:1] == [-1]
    # a draft the target nearly always agrees with: the best-first tree is a chain
    chain = grow([0.9] * 8, [0.3], 8)
    assert [(d, par) for _, d, par in chain] == [(i + 1, i - 1) for i in range(8)]
    # a first child usually refused: the root's children first (0.2, 0.8 x 0.4, 0.8 x 0.6 x 0.4, ...)
    wide = grow([0.2] * 8, [0.4], 4)
    assert [par for _, _, par in wide] == [-1, -1, -1, -1]
    assert sum(c for c, _, _ in wide) == pytest.approx(0.2 + 0.8 * 0.4 + 0.8 * 0.6 * 0.4 + 0.8 * 0.36 * 0.4)


def test_draft_units_count_the_levels_batches():
    flat = [10.0] * 17
    steep = [100.0 * (1 + 0.5 * k) for k in range(17)]
    chain = [(0.0, i + 1, i - 1) for i in range(5)]
    assert draft_units(chain, steep) == [1.0, 2.0, 3.0, 4.0, 5.0]  # a chain of k: k draft decodes
    star = [(0.0, 1, -1)] * 3 + [(0.0, 2, 0), (0.0, 2, 1)]  # three root children, two of them with a child
    assert draft_units(star, flat) == [1.0, 1.0, 1.0, 2.0, 2.0]  # one batch of two rows: flat, one decode
    assert draft_units(star, steep)[-1] == pytest.approx(1.0 + 150.0 / 100.0)  # steep: 1.5 decodes
    assert draft_units(chain, [0.0] * 17) == [1.0, 2.0, 3.0, 4.0, 5.0]  # nothing measured: a decode a row


def test_walk_verdicts_judge_each_rank_up_to_the_one_accepted():
    # root: child 0 refused, child 1 accepted, child 2 never judged; node 1: child 3 accepted; node 3: 4 refused
    tree = (node(-1, REJECTED), node(-1, ACCEPTED), node(-1, DISCARDED), node(1, ACCEPTED), node(3, REJECTED),
            node(0, DISCARDED))
    first, later = walk_verdicts(tree)
    assert first == [False, True, False] and later == [(2, True)]
    assert walk_verdicts(()) == ([], [])


def _pred(curve, a, d_ms, other=1.0):
    return predict_from([a] * 16, [50.0] * 16, {0: curve[0]}, d_ms, other, curve=curve)


GPU = {k: 10.0 + 0.02 * k for k in range(17)}  # a batch of 17 costs about one decode
CPU = {k: 85.0 * (1 + 0.5 * k) for k in range(17)}  # each verified token half a decode (2 cores)


def test_a_flat_curve_and_a_first_child_often_refused_choose_a_tree():
    pred = _pred(GPU, 0.3, 0.5)
    tree = best_tree(pred, [0.35] * 3)
    assert tree is not None and tree.n > 1
    assert tree.tps > tree.chain_tps * (1 + TREE_MARGIN) and tree.chain_tps == max(pred.tps_by_k)
    assert "tree of" in tree.why() and f"k = {tree.chain_k}" in tree.why()


def test_a_steep_curve_chooses_a_chain():
    pred = _pred(CPU, 0.8, 20.0)
    tree = best_tree(pred, [0.3] * 3)
    assert tree is not None and tree.tps <= tree.chain_tps * (1 + TREE_MARGIN)
    assert 1 <= pred.best_k <= 3  # a short chain
    choice = TreeChoice()
    choice.begin("tree")
    assert choice.choose(pred) is None and choice.children == 1
    choice.begin("model")
    assert choice.children == 0  # not a tree drafter: no chain-or-tree question


class TreeWorld:
    """A tree drafter's loop: the first child at any node is accepted with ``a``, a later one with ``b`` once the
    ones before were refused; draft ``d`` ms a decode, verify ``curve[n]`` ms for n + 1 tokens."""

    def __init__(self, a, b, d, curve, seed=0):
        self.a, self.b, self.d, self.curve = a, b, d, curve
        self.rng = random.Random(seed)
        self.index = 0
        self.settings = Settings(draft_max=4, auto="cost", drafter="tree")

    def chain(self, k):
        n_acc = 0
        while n_acc < k and self.rng.random() < self.a:
            n_acc += 1
        ev = make_pass(self.index, k, n_acc, draft_ms_per_token=self.d, verify_ms=self.curve[k], other_ms=1.0,
                       settings=self.settings)
        return replace(ev, drafter="tree" if k else "")

    def tree(self, n):
        shape = grow([self.a] * 16, [self.b] * 3, n)
        verdict = [DISCARDED] * len(shape)
        u, path = -1, []
        while True:
            kids = [i for i, (_, _, par) in enumerate(shape) if par == u]
            nxt = -1
            for rank, c in enumerate(kids, start=1):
                if self.rng.random() < (self.a if rank == 1 else self.b):
                    nxt = c
                    break
                verdict[c] = REJECTED
            if nxt < 0:
                break
            verdict[nxt] = ACCEPTED
            path.append(nxt)
            u = nxt
        nodes = tuple(node(par, v, 10 + i) for i, ((_, _, par), v) in enumerate(zip(shape, verdict)))
        draft_ms = draft_units(shape, [self.curve[k] for k in range(17)])[-1] * self.d
        timing = Timing(draft_ms=draft_ms, verify_ms=self.curve[n], other_ms=1.0,
                        wall_ms=draft_ms + self.curve[n] + 1.0)
        drafts = tuple(DraftToken(id=10 + i, text="n", prob=0.5, verdict=ACCEPTED) for i in path)
        emitted = tuple(Token(id=10 + i, text="n") for i in path) + (Token(id=99, text="t"),)
        return PassEvent(index=self.index, settings=self.settings, k=n, drafts=drafts, n_accepted=len(path),
                         target=TargetToken(id=99, text="t", prob=0.9), emitted=emitted, timing=timing,
                         drafter="tree", tree=nodes)

    def run(self, policy, n_passes):
        """The policy's (k, children) each pass, and every event."""
        events = [make_start(target_decode_ms=self.curve[0], draft_decode_ms=self.d, settings=self.settings),
                  make_prefill()]
        for ev in events:
            policy.observe(ev)
        chosen = []
        for _ in range(n_passes):
            k = policy.choose(self.settings)
            self.index += 1
            ev = self.tree(k) if k > 0 and policy.children() == 0 else self.chain(k)
            policy.observe(ev)
            events.append(ev)
            chosen.append((k, policy.children()))
        return chosen, events


def test_the_policy_chooses_trees_on_a_flat_curve_when_the_first_child_is_often_refused():
    world = TreeWorld(a=0.3, b=0.35, d=0.5, curve=GPU)
    chosen, events = world.run(CostPolicy(given_curve=GPU), 300)
    late = chosen[100:]
    trees = [k for k, c in late if c == 0 and k > 0]
    assert len(trees) > 0.9 * len(late), late[:20]
    assert max(trees) > 1
    # the tree passes taught it the later ranks: measured, near the world's 0.35
    policy = CostPolicy(given_curve=GPU)
    TreeWorld(a=0.3, b=0.35, d=0.5, curve=GPU, seed=1).run(policy, 300)
    assert policy.tree.later and policy.tree.later[0].trials > 5
    assert policy.tree.later_rates()[0] == pytest.approx(0.35, abs=0.15)
    assert "tree of" in policy.last_reason
    # the choice as a run's statistics and summary report it (tree passes, and the passes auto drafted a chain)
    stats = RunStats().extend(events)
    snap = stats.snapshot()
    assert snap.tree is not None and snap.tree.passes == sum(1 for k, c in chosen if k > 0 and c == 0)
    assert snap.tree.chain_passes == sum(1 for k, c in chosen if k > 0 and c == 1)
    assert summary_dict(stats, events)["tree"]["chain_passes"] == snap.tree.chain_passes


def test_the_policy_chooses_short_chains_on_a_steep_curve():
    world = TreeWorld(a=0.85, b=0.35, d=10.0, curve=CPU)
    chosen, events = world.run(CostPolicy(given_curve=CPU), 200)
    assert all(c == 1 for k, c in chosen)  # never a tree
    late = [k for k, _ in chosen[50:]]
    assert max(late) <= 4 and sum(1 for k in late if k > 0) > 0.9 * len(late)  # short chains
    # a first child often refused, the world where the flat curve chooses trees: still no tree here
    weak, _ = TreeWorld(a=0.4, b=0.35, d=10.0, curve=CPU).run(CostPolicy(given_curve=CPU), 200)
    assert all(c == 1 for k, c in weak)
    stats = RunStats().extend(events)
    assert stats.snapshot().tree.passes == 0
    assert "chain passes chosen by auto" in summary_text(stats)


def test_by_mode_reports_the_children_of_the_mode_that_chose():
    by_mode = PolicyByMode(curve=GPU)
    world = TreeWorld(a=0.3, b=0.35, d=0.5, curve=GPU)
    assert by_mode.children() == 0  # nothing chosen yet
    world.run(by_mode, 40)
    assert by_mode.children() == by_mode.current("cost").children()
    schedule = Settings(draft_max=4, auto="schedule", drafter="tree")
    by_mode.choose(schedule)
    assert by_mode.children() == 0  # the schedule lets the drafter draft its trees
