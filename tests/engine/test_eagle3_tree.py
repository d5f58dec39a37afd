"""An EAGLE-3 head drafting trees (spectui/engine/drafters/eagle3_tree.py, docs/trees.md) on the real llama.cpp
with the tiny GGUFs benchmarks/make_spec_models.py writes: ``--drafter eagle3`` with the tree's options.

- At T = 0 the output is the target's own greedy output, the tree's record is consistent (its accepted nodes form
  a path from the root and are the pass's accepted drafts), the node budget and SGLang's limits hold, and the tree
  branches where it must (a depth limit below the budget) and where it should (a head whose first child is
  refused, so the learned rates move the budget to siblings).
- Every node's q is the head's row along that node's own path: re-drafted as a chain for each node, position by
  position, the head gives the same probability (each branch sees its own ancestors in the head's cache, no
  other branch's cells).
- The head keeps reading the target's decodes when other drafters draft in between (the ``d`` key).
- At T > 0 the token a tree pass emits follows the target's law (chi-square), with several children of the root
  judged and refused (the recursive rejection sampling without replacement ran).
- The command: ``--spec-eagle-topk`` with an EAGLE-3 head as ``--draft`` drafts trees.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from test_engine_heads import _run as run_events
from test_engine_sampling import chi2_check, target_law
from test_spec_models import _make

from spectui.contract.events import ACCEPTED, REJECTED, PassEvent, RunEnded, Settings
from spectui.engine.drafters.eagle3_tree import HeadTreeDrafter
from spectui.engine.loop import Engine
from spectui.engine.verify import logsumexp

PROMPT = "the hash map"
N_PREDICT = 32
TREES = [
    ("topk", (("spec_eagle_topk", 2),)),
    ("np3", (("spec_tree_np", 3),)),
    ("sglang", (("spec_eagle_topk", 3), ("spec_num_steps", 2), ("spec_num_draft_tokens", 7))),
]


@pytest.fixture(scope="module")
def spec_dir(tmp_path_factory) -> Path:
    return _make(tmp_path_factory.mktemp("eagle3tree"), "--eagle3-agree", "0.5", "--mtp-agree", "0.5")


def _pair(spec_dir: Path, agree: bool) -> tuple[str, str]:
    a = "-agree" if agree else ""
    return str(spec_dir / f"eagle3{a}-target.gguf"), str(spec_dir / f"eagle3{a}-draft.gguf")


def _engine(spec_dir: Path, spec, agree: bool = True, **kw) -> Engine:
    t, d = _pair(spec_dir, agree)
    return Engine(t, d, n_ctx=256, threads=1, head="eagle3", warn=lambda m: None, spec_options=spec, **kw)


def _run(e: Engine, settings: Settings, n_predict: int = N_PREDICT, on_event=None) -> list:
    return run_events(e, settings, n_predict, prompt=PROMPT, on_event=on_event)


def _passes(evs) -> list[PassEvent]:
    return [ev for ev in evs if isinstance(ev, PassEvent) and not ev.prefill]


def _emitted(evs) -> list[int]:
    return [t.id for ev in evs if isinstance(ev, PassEvent) for t in ev.emitted]


def _root_children(ev: PassEvent) -> int:
    return sum(1 for nd in ev.tree if nd.parent == -1)


@pytest.mark.parametrize("name,spec", TREES, ids=[t[0] for t in TREES])
def test_eagle3_tree_greedy_is_lossless(spec_dir, name, spec):
    with _engine(spec_dir, spec) as e:
        assert isinstance(e.parts().drafters.pick("eagle3"), HeadTreeDrafter)
        ref = _emitted(_run(e, Settings(draft_max=0, drafter="none")))
        evs = _run(e, Settings(draft_max=6, drafter="eagle3"))
    end = evs[-1]
    assert isinstance(end, RunEnded) and end.reason == "n_predict" and end.error == ""
    assert _emitted(evs) == ref and len(ref) == N_PREDICT
    trees = [ev for ev in _passes(evs) if ev.tree]
    assert trees and end.n_accepted > 0
    assert max(len(ev.tree) for ev in trees) == 6  # the budget: k = 6, or --spec-num-draft-tokens 7 less the root
    for ev in trees:
        on_path = [i for i, nd in enumerate(ev.tree) if nd.verdict == ACCEPTED]
        assert [ev.tree[i].id for i in on_path] == [d.id for d in ev.drafts[: ev.n_accepted]]
        assert [ev.tree[i].parent for i in on_path] == ([-1] + on_path[:-1] if on_path else [])
        if name == "sglang":  # 3 children per node, depth 2: more than 4 nodes need 2 children of the root
            assert all(sum(1 for nd in ev.tree if nd.parent == j) <= 3 for j in range(-1, 6))
            assert len(ev.drafts) <= 2 and (_root_children(ev) >= 2 or len(ev.tree) <= 4)
        if name == "np3":
            assert sum(1 for i in range(len(ev.tree)) if all(nd.parent != i for nd in ev.tree)) <= 3


def test_eagle3_tree_branches_where_the_first_child_is_refused(spec_dir):
    """The random head's first child is refused pass after pass: the learned rates give its siblings the budget."""
    with _engine(spec_dir, (("spec_eagle_topk", 4),), agree=False) as e:
        ref = _emitted(_run(e, Settings(draft_max=0, drafter="none")))
        evs = _run(e, Settings(draft_max=6, drafter="eagle3"))
    assert _emitted(evs) == ref
    trees = [ev for ev in _passes(evs) if ev.tree]
    assert sum(1 for ev in trees if _root_children(ev) > 1) > len(trees) // 2
    assert any(nd.verdict == REJECTED for ev in trees for nd in ev.tree)


def _chain_q(head, last: int, path: list[int], x: int) -> float:
    """The head's q of ``x`` after ``path`` (the root's child first), drafted as a chain forced along the path."""
    import llama_cpp

    forced, rows = list(path) + [x], []

    def pick(ctx, i):
        row = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, int(i)), shape=(head.n_vocab,))
        rows.append(row.copy())
        return forced[len(rows) - 1], 1.0

    head.draft(last, len(forced), 0.0, pick=pick)
    row = rows[len(path)]
    return float(np.exp(float(row[x]) - logsumexp(row)))


@pytest.mark.parametrize("agree", [False, True])
def test_each_branch_sees_its_own_path_in_the_heads_cache(spec_dir, agree):
    """Every node's q (the head's row at its parent, decoded in the branch's own sequence, several nodes per
    batch) equals the q the head gives when the node's path is drafted as a plain chain. Two children per node,
    depth 3 and 14 nodes: the full binary tree, so the root's second child (a new sequence sharing the root's
    cells) is extended by its first child and branched again by its second (a sequence sharing its cells), and the
    nodes below read rows decoded in each of them."""
    spec = (("spec_eagle_topk", 2), ("spec_num_steps", 3), ("spec_num_draft_tokens", 15))
    with _engine(spec_dir, spec, agree=agree) as e:
        evs = _run(e, Settings(draft_max=8, drafter="eagle3"), n_predict=12)
        tokens = e.tokenize(PROMPT) + _emitted(evs)
        drafter = e.parts().drafters.pick("eagle3")
        prop = drafter.propose(tokens, 14, 0.0, np.random.default_rng(0))
        parents = prop.parents
        depth: list[int] = []
        for par in parents:
            depth.append(1 if par < 0 else depth[par] + 1)
        assert len(prop.ids) == 14 and parents.count(-1) == 2
        assert all(parents.count(v) == 2 for v in range(14) if depth[v] < 3)
        for i, (x, par) in enumerate(zip(prop.ids, parents)):
            path, v = [], par
            while v >= 0:
                path.insert(0, prop.ids[v])
                v = parents[v]
            q = _chain_q(drafter.head, tokens[-1], path, x)
            assert q == pytest.approx(prop.q_probs[i], rel=1e-3, abs=1e-6), (i, path, x)
        drafter.accept_tree([])
        ref = _emitted(_run(e, Settings(draft_max=0, drafter="none"), n_predict=12))
        assert _emitted(_run(e, Settings(draft_max=8, drafter="eagle3"), n_predict=12)) == ref


def test_switching_to_other_drafters_mid_run_stays_lossless(spec_dir):
    order = ["ngram", "eagle3", "none", "eagle3"]

    def switch(control, ev):
        if isinstance(ev, PassEvent) and ev.index % 3 == 2:
            control.update(drafter=order[(ev.index // 3) % len(order)])

    with _engine(spec_dir, (("spec_eagle_topk", 2),)) as e:
        ref = _emitted(_run(e, Settings(draft_max=0, drafter="none"), n_predict=40))
        evs = _run(e, Settings(draft_max=4, drafter="eagle3"), n_predict=40, on_event=switch)
    assert _emitted(evs) == ref
    passes = _passes(evs)
    assert {ev.settings.drafter for ev in passes} >= {"eagle3", "ngram", "none"}
    first_other = next(i for i, ev in enumerate(passes) if ev.settings.drafter != "eagle3")
    assert any(ev.tree and ev.n_accepted > 0 for ev in passes[first_other:])  # back in step after the others


@pytest.mark.parametrize("kind", ["eagle3", "mtp"])
def test_a_draft_models_tree_beside_a_head_that_reads_every_decode(spec_dir, tiny_draft_noisy, kind):
    """A draft model's tree (``tree``) while a head reads every target decode (the TUI's engine): the head reads
    each tree verify's root and accepted path, so switching between the draft model's tree and the head (an
    EAGLE-3 head's own tree, or MTP's chain) stays lossless, and the head is accepted after the tree passes."""
    t = str(spec_dir / f"{kind}-agree-target.gguf")
    head_file = str(spec_dir / "eagle3-agree-draft.gguf") if kind == "eagle3" else t
    order = ["tree", kind]

    def switch(control, ev):
        if isinstance(ev, PassEvent) and ev.index % 3 == 2:
            control.update(drafter=order[(ev.index // 3) % 2])

    with Engine(t, str(tiny_draft_noisy), n_ctx=256, threads=1, head=kind, head_file=head_file, warn=lambda m: None,
                spec_options=(("spec_eagle_topk", 2),)) as e:
        ref = _emitted(_run(e, Settings(draft_max=0, drafter="none"), n_predict=40))
        evs = _run(e, Settings(draft_max=4, drafter=kind), n_predict=40, on_event=switch)
    assert _emitted(evs) == ref
    passes = _passes(evs)
    assert any(ev.settings.drafter == "tree" and ev.tree for ev in passes)
    first_tree = next(i for i, ev in enumerate(passes) if ev.settings.drafter == "tree")
    assert any(ev.settings.drafter == kind and ev.n_accepted > 0 for ev in passes[first_tree:])


@pytest.mark.slow  # a law checked over many samples
def test_eagle3_tree_sampling_matches_target_law(spec_dir):
    """At T = 1 the token a tree pass emits after the greedy first token follows the target's law; the depth
    limit makes every tree branch at the root, so refused children there leave residuals that recurse."""
    runs = 600
    spec = (("spec_eagle_topk", 2), ("spec_num_steps", 2), ("spec_num_draft_tokens", 5))
    t, _ = _pair(spec_dir, True)
    second, verdicts, refused_at_root, t0 = Counter(), Counter(), 0, None
    seen: list[PassEvent] = []

    def at(control, ev):
        if isinstance(ev, PassEvent):
            if ev.prefill:
                control.update(temperature=1.0)
            elif ev.index == 1:
                seen.append(ev)

    with _engine(spec_dir, spec) as e:
        prompt_ids = e.tokenize(PROMPT)
        for seed in range(runs):
            seen.clear()
            # 6 tokens: the first pass after the prefill may draft k = 4 (a pass never emits past n_predict)
            out = _emitted(_run(e, Settings(draft_max=4, drafter="eagle3", seed=seed), n_predict=6, on_event=at))
            t0 = out[0] if t0 is None else t0
            assert out[0] == t0 and len(out) >= 2
            second[out[1]] += 1
            tree = seen[0].tree
            assert len(tree) == 4 and sum(1 for nd in tree if nd.parent == -1) >= 2
            verdicts.update(nd.verdict for nd in tree)
            refused_at_root += sum(1 for nd in tree if nd.parent == -1 and nd.verdict == REJECTED) >= 2
    assert verdicts["accepted"] > 20 and verdicts["rejected"] > 20, verdicts
    assert refused_at_root > 20, refused_at_root
    chi2, bound = chi2_check(second, target_law(t, prompt_ids + [t0]), runs)
    assert chi2 < bound, (chi2, bound)


@pytest.mark.slow  # a CLI run
def test_command_drafts_trees_with_the_head(spec_dir):
    """``--spec-eagle-topk`` beside an EAGLE-3 head given as --draft (detected from its header) drafts trees."""
    t, d = _pair(spec_dir, True)
    r = subprocess.run([sys.executable, "-m", "spectui", "--target", t, "--draft", d, "--spec-eagle-topk", "2",
                        "-k", "4", "--headless", "-n", "16", "-p", PROMPT, "--no-probe", "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert '"drafter": "eagle3"' in r.stdout
    assert out["tree"] and out["tree"]["passes"] > 0, out.get("tree")
