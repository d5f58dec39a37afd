"""--drafter tree on the real llama.cpp with the tiny models (spectui/engine/drafters/draft_tree.py,
spectui/engine/run/tree_pass.py): the draft model drafts a tree, the target verifies every node in one decode and
keeps the accepted path in its cache.

- At T = 0 a tree run records what the target alone records, position by position: every emitted id and text,
  the target's probability of each emitted token (within the kernels' noise: the tree's batch is another batch),
  the cells of accepted context after each pass; lossless by the greedy checks (test_engine_greedy.py); and the
  tree's own record is consistent (the accepted nodes form a path from the root, and they are the pass's
  accepted drafts).
- At T > 0 the tokens a tree pass emits follow the target's law (a chi-square, as test_engine_sampling.py), with
  several root children judged and refused in many passes (the recursive rejection sampling's residuals ran).
"""

from __future__ import annotations

from collections import Counter

import pytest
from greedy_checks import N, assert_lossless, emitted_ids, reference, run_with_hook
from test_engine_sampling import RUNS, chi2_check, target_law

from spectui.analysis import stats
from spectui.contract.control import RunControl
from spectui.contract.events import ACCEPTED, REJECTED, PassEvent, RunEnded, Settings

TREES = [
    ("default", ()),
    ("np3", (("spec_tree_np", 3),)),
    ("sglang", (("spec_eagle_topk", 2), ("spec_num_steps", 3), ("spec_num_draft_tokens", 6))),
    ("split", (("spec_tree_np", 4), ("spec_tree_p_split", 0.05))),
]
NOISE = 1e-3  # the tiny models' kernels move a probability by far less (docs/lossless.md: logits within 0.00076)


def _passes(events):
    return [ev for ev in events if isinstance(ev, PassEvent)]


def _emitted_with_p(events):
    """(id, text, the target's probability) of every emitted token, in order."""
    out = []
    for ev in _passes(events):
        for i, t in enumerate(ev.emitted):
            p = ev.drafts[i].target_prob if i < ev.n_accepted else ev.target.prob
            out.append((t.id, t.text, p))
    return out


@pytest.mark.parametrize("name,spec", TREES, ids=[t[0] for t in TREES])
def test_tree_greedy_records_the_target_alone(make_engine, tiny_target, tiny_draft_noisy, name, spec):
    e = make_engine(tiny_target, tiny_draft_noisy, spec_options=spec)
    ref_toks, margins = reference(e)
    ref_events, _ = run_with_hook(e, Settings(draft_max=0, drafter="none"))
    events, _ = run_with_hook(e, Settings(draft_max=6, drafter="tree"))
    assert isinstance(events[-1], RunEnded) and events[-1].reason == "n_predict"
    toks = emitted_ids(events)
    assert len(toks) == N
    assert_lossless(toks, ref_toks, margins)
    got, want = _emitted_with_p(events), _emitted_with_p(ref_events)
    assert [g[:2] for g in got] == [w[:2] for w in want]  # every id and text
    assert max(abs(g[2] - w[2]) for g, w in zip(got, want)) < NOISE
    # the cells of accepted context after each pass: the reference's at the same number of tokens emitted
    ctx_by_emitted, n = {}, 0
    for ev in _passes(ref_events):
        n += len(ev.emitted)
        ctx_by_emitted[n] = ev.n_ctx_used
    n = 0
    for ev in _passes(events):
        n += len(ev.emitted)
        assert ev.n_ctx_used == ctx_by_emitted[n], ev.index
    trees = [ev for ev in _passes(events) if ev.tree]
    # the node budget: k = 6, or --spec-num-draft-tokens 6 less the root
    assert trees and max(len(ev.tree) for ev in trees) == (5 if name == "sglang" else 6)
    if name == "sglang":  # --spec-eagle-topk 2, --spec-num-steps 3
        assert all(sum(1 for nd in ev.tree if nd.parent == j) <= 2 for ev in trees for j in range(-1, 6))
        assert max(len(ev.drafts) for ev in trees) <= 3
    assert any(sum(1 for nd in ev.tree if nd.parent == -1) > 1 for ev in trees)  # it branched
    for ev in trees:
        on_path = [i for i, nd in enumerate(ev.tree) if nd.verdict == ACCEPTED]
        assert [ev.tree[i].id for i in on_path] == [d.id for d in ev.drafts[: ev.n_accepted]]
        assert [ev.tree[i].parent for i in on_path] == ([-1] + on_path[:-1] if on_path else [])  # from the root
        if name == "np3":
            assert sum(1 for i in range(len(ev.tree)) if all(nd.parent != i for nd in ev.tree)) <= 3
    snap = stats.compute(events)
    assert snap.n_drafted == sum(len(ev.tree) for ev in trees)  # every node verified counts as drafted


def test_tree_and_chain_switch_mid_run(make_engine, tiny_target, tiny_draft_noisy):
    """The d key: model and tree share the draft's cache; switching between them keeps the output lossless."""
    e = make_engine(tiny_target, tiny_draft_noisy)
    ref_toks, margins = reference(e)
    schedule = {3: "tree", 7: "model", 11: "tree", 15: "none", 18: "tree"}

    def on_pass(control, ev):
        if ev.index in schedule:
            control.update(drafter=schedule[ev.index])

    events, _ = run_with_hook(e, Settings(draft_max=4, drafter="model"), on_pass=on_pass)
    assert_lossless(emitted_ids(events), ref_toks, margins)
    assert {ev.drafter for ev in _passes(events) if ev.drafts} >= {"model", "tree"}


@pytest.mark.slow  # a law checked over many samples
def test_tree_sampling_matches_target_law(make_engine, tiny_target, tiny_draft_noisy):
    prompt = "the hash map handles collisions"
    e = make_engine(tiny_target, tiny_draft_noisy, n_ctx=256)
    prompt_ids = e.tokenize(prompt)
    second, third = Counter(), {}
    verdicts, refused_at_root = Counter(), 0
    t0 = None
    for seed in range(RUNS):
        control = RunControl(Settings(draft_max=4, temperature=0.0, drafter="tree", seed=seed))
        out = []
        for ev in e.run(prompt, control, 4):
            if isinstance(ev, PassEvent):
                out.extend(t.id for t in ev.emitted)
                if ev.prefill:
                    control.update(temperature=1.0)
                elif ev.index == 1:
                    verdicts.update(nd.verdict for nd in ev.tree)
                    refused_at_root += sum(1 for nd in ev.tree if nd.parent == -1 and nd.verdict == REJECTED) >= 2
        assert len(out) == 4 or (len(out) >= 2 and out[-1] == 2)
        t0 = out[0] if t0 is None else t0
        assert out[0] == t0
        second[out[1]] += 1
        if len(out) >= 3:
            third.setdefault(out[1], Counter())[out[2]] += 1
    assert verdicts["accepted"] > 50 and verdicts["rejected"] > 50, verdicts
    assert refused_at_root > 50  # several children of the root judged and refused: the residual recursed
    chi2, bound = chi2_check(second, target_law(tiny_target, prompt_ids + [t0]), RUNS)
    assert chi2 < bound, (chi2, bound)
    t1, n1 = second.most_common(1)[0]
    chi2, bound = chi2_check(third[t1], target_law(tiny_target, prompt_ids + [t0, t1]), n1)
    assert chi2 < bound, (chi2, bound, t1, n1)


@pytest.mark.parametrize("temp", [0.0, 0.8])
def test_tree_overlapped_and_seeded_runs_repeat(make_engine, tiny_target, tiny_draft_noisy, temp):
    """Passes finished on the finishing thread record what inline passes record; a seeded T > 0 run repeats."""
    e = make_engine(tiny_target, tiny_draft_noisy, spare_core=True, inspect_top=5)

    def fields(events):
        return [(ev.index, [t.id for t in ev.emitted], [(nd.id, nd.parent, nd.verdict, nd.prob) for nd in ev.tree],
                 [d.target_prob for d in ev.drafts], [(i.margin, i.accept_p, i.u) for i in ev.inspect])
                for ev in _passes(events)]

    s = Settings(draft_max=6, drafter="tree", temperature=temp, seed=5)
    inline, _ = run_with_hook(e, s, n_predict=48)
    overlapped, _ = run_with_hook(e, s, n_predict=48, overlap=True)
    assert fields(inline) == fields(overlapped)
    assert any(ev.tree for ev in _passes(inline))


def test_tree_in_a_chain_is_lossless(make_engine, tiny_target, tiny_draft_noisy):
    """A chain whose model-based member drafts trees (``ngram,tree``): the tree's verdict reaches it whole."""
    e = make_engine(tiny_target, tiny_draft_noisy)
    prompt = "at if false same it true at if false same"
    ref_toks, margins = reference(e, prompt=prompt)
    events, _ = run_with_hook(e, Settings(draft_max=5, drafter="ngram,tree"), prompt=prompt)
    assert_lossless(emitted_ids(events), ref_toks, margins)
    assert {ev.drafter for ev in _passes(events) if ev.drafts} == {"ngram", "tree"}
