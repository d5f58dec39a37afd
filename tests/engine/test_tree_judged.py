"""Every judged node of a tree records the test that judged it (``TreeNode.judged``: p_i(x), r_i(x), min(1, p_i / r_i)
and u), so the inspector can show any node, not only the accepted path's: the pure rule on random trees (the record
is the decision: a child is accepted exactly when its u falls under its min(1, p/r), the first child's p is the
target's, a later one's the residual's), then real tree runs on the tiny models (T > 0: every judged node carries
its test, every pruned one none, and a trace keeps them; T = 0: no test is recorded)."""

from __future__ import annotations

import numpy as np
import pytest

from spectui.contract.control import RunControl
from spectui.contract.events import ACCEPTED, DISCARDED, REJECTED, PassEvent, Settings
from spectui.engine.tree_verify import child_proposal, children, rrs_tree_verify
from spectui.recording.trace import read_trace, write_trace

PARENTS = [-1, -1, -1, 0, 0, 1, 3]


def _random_tree(rng, v=8):
    """A tree of distinct children per node, a target row per node and the root, and a draft row per node."""
    kids = children(PARENTS)
    ids = [0] * len(PARENTS)
    for ks in kids:
        for x, c in zip(rng.choice(v, size=len(ks), replace=False), ks):
            ids[c] = int(x)
    p_rows = rng.dirichlet(np.ones(v) * 0.5, size=len(PARENTS) + 1)
    q_rows = {i: rng.dirichlet(np.ones(v)) for i in range(-1, len(PARENTS))}
    return ids, p_rows, q_rows


def test_the_record_is_the_decision_on_random_trees():
    rng = np.random.default_rng(7)
    kids = children(PARENTS)
    seen_residual = 0
    for _ in range(300):
        ids, p_rows, q_rows = _random_tree(rng)
        tv = rrs_tree_verify(p_rows.__getitem__, q_rows.__getitem__, ids, PARENTS, 0.0, rng)
        judged = {c: (p, r, a, u) for c, p, r, a, u in tv.judged}
        path = list(tv.path)
        # judged: the children of the root and of each accepted node, in order, up to the accepted one
        expect = []
        for v in [-1] + path:
            for c in kids[v + 1]:
                expect.append(c)
                if c in path:
                    break
        assert [c for c, *_ in tv.judged] == expect
        assert set(tv.rejected) == set(expect) - set(path)
        for c, (p, r, a, u) in judged.items():
            assert a == min(1.0, p / r) if r > 0 else a == 1.0
            assert (u == -1.0) == (a >= 1.0)
            assert (c in path) == (a >= 1.0 or u < a)
            par = PARENTS[c]
            rank = kids[par + 1].index(c) + 1
            drawn = [ids[s] for s in kids[par + 1][:rank - 1]]
            assert r == child_proposal(q_rows[par], drawn, rank, 0.0)[ids[c]]
            if rank == 1:  # the first child is judged by the target's own p
                assert p == p_rows[par + 1][ids[c]]
            else:  # a later one by the residual its refused siblings left: norm(max(0, p_k - r_k)), k < rank
                seen_residual += 1
                pk = np.array(p_rows[par + 1], dtype=np.float64)
                for k in range(1, rank):
                    rk = child_proposal(q_rows[par], drawn[:k - 1], k, 0.0)
                    pk = np.maximum(pk - rk, 0.0)
                    pk = pk / pk.sum() if pk.sum() > 0 else np.array(p_rows[par + 1], dtype=np.float64)
                assert p == pytest.approx(pk[ids[c]], abs=1e-12)
    assert seen_residual > 50


def _tree_events(engine, temperature, seed=5, prompt="the hash map handles collisions"):
    control = RunControl(Settings(draft_max=6, drafter="tree", temperature=temperature, seed=seed))
    return list(engine.run(prompt, control, 40))


def _check_tests(ev: PassEvent) -> tuple[int, int]:
    """Every node of a T > 0 tree pass against its record; returns (nodes rejected, later siblings judged)."""
    n_rejected = n_later = 0
    for i, nd in enumerate(ev.tree):
        j = nd.judged
        if nd.verdict == DISCARDED:
            assert j is None, (ev.index, i)
            continue
        assert j is not None, (ev.index, i)
        assert j.accept_p == min(1.0, j.p / j.r) if j.r > 0 else j.accept_p == 1.0
        assert (nd.verdict == ACCEPTED) == (j.u < 0 or j.u < j.accept_p)
        rank = [k for k, m in enumerate(ev.tree) if m.parent == nd.parent].index(i) + 1
        if rank == 1:  # the target's p in the parent's row, as the node's own record says; r is q
            assert abs(j.p - nd.target_prob) < 1e-4, (ev.index, i, j, nd.target_prob)
            assert abs(j.r - nd.prob) < 1e-3, (ev.index, i, j, nd.prob)
        else:  # judged on the residual its refused siblings left (the rule itself: the test above)
            n_later += 1
        n_rejected += nd.verdict == REJECTED
    return n_rejected, n_later


def test_a_sampled_tree_run_records_every_judged_nodes_test(make_engine, tiny_target, tiny_draft_noisy, tmp_path):
    engine = make_engine(tiny_target, tiny_draft_noisy)
    n_rejected = n_later = 0
    for seed in range(1, 9):  # seeded runs until refusals and siblings judged on a residual both happened
        events = _tree_events(engine, 0.8 if seed % 2 else 1.0, seed)
        trees = [ev for ev in events if isinstance(ev, PassEvent) and ev.tree]
        assert trees
        for ev in trees:
            r, later = _check_tests(ev)
            n_rejected, n_later = n_rejected + r, n_later + later
        if n_rejected and n_later:
            break
    assert n_rejected > 0 and n_later > 0
    path = tmp_path / "tree.jsonl"
    write_trace(path, events)
    back = read_trace(path)
    assert back.warnings == [] and back.events == events  # the tests through a trace and back


def test_a_greedy_tree_run_records_no_test(make_engine, tiny_target, tiny_draft_noisy):
    events = _tree_events(make_engine(tiny_target, tiny_draft_noisy, spec_options=(("spec_tree_np", 3),)), 0.0)
    nodes = [nd for ev in events if isinstance(ev, PassEvent) for nd in ev.tree]
    assert nodes and all(nd.judged is None for nd in nodes)
