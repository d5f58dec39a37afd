"""``-k auto --drafter tree`` on the real llama.cpp with the tiny models: each pass the cost policy chooses a chain or
a tree (spectui/analysis/cost/tree_cost.py), the tree drafter drafts what it was asked for (a chain is proposed and
verified as one: drafters/draft_tree.py), and the run stays lossless at T = 0 and reports its choice (the tree
passes, and the passes auto drafted a chain, in the statistics, the summary and --json)."""

from __future__ import annotations

import numpy as np
from greedy_checks import emitted_ids, run_with_hook

from spectui.analysis.stats import RunStats
from spectui.contract.events import PassEvent, Settings
from spectui.engine.drafters.base import DraftLimits
from spectui.engine.drafters.draft_tree import TreeDrafter
from spectui.text.run import summary_dict, summary_text


def test_auto_k_with_the_tree_drafter_is_lossless_and_reports_its_choice(make_engine, tiny_target, tiny_draft_noisy):
    e = make_engine(tiny_target, tiny_draft_noisy)
    alone, _ = run_with_hook(e, Settings(draft_max=0, drafter="none"))
    events, _ = run_with_hook(e, Settings(draft_max=4, drafter="tree", auto="cost"))
    assert emitted_ids(events) == emitted_ids(alone)
    drafted = [ev for ev in events if isinstance(ev, PassEvent) and not ev.prefill and ev.drafts]
    assert drafted and all(ev.drafter == "tree" for ev in drafted)
    stats = RunStats().extend(events)
    tree = stats.snapshot().tree
    assert tree is not None and tree.passes + tree.chain_passes == len(drafted)
    assert tree.chain_passes >= 2  # the warm-up drafts a chain of one
    assert summary_dict(stats, events)["tree"]["chain_passes"] == tree.chain_passes
    assert f"{tree.chain_passes} chain passes chosen by auto" in summary_text(stats)


class Alternate:
    """A draft-length policy asking the tree drafter for a chain and a tree in turn, k = 4 (the loop's side of the
    choice, whatever the cost model would say on this machine)."""

    def __init__(self) -> None:
        self.n = 0

    def observe(self, event) -> None:
        """Learns nothing."""

    def choose(self, settings) -> int:
        self.n += 1
        return 4

    def members(self):
        return ()

    def children(self) -> int:
        return self.n % 2


def test_chains_and_trees_in_turn_are_lossless(make_engine, tiny_target, tiny_draft_noisy):
    e = make_engine(tiny_target, tiny_draft_noisy, draft_policy=Alternate)
    alone, _ = run_with_hook(e, Settings(draft_max=0, drafter="none"))
    events, _ = run_with_hook(e, Settings(draft_max=4, drafter="tree", auto="cost"))
    assert emitted_ids(events) == emitted_ids(alone)
    passes = [ev for ev in events if isinstance(ev, PassEvent) and not ev.prefill]
    chains = [ev for i, ev in enumerate(passes) if i % 2 == 0]  # the policy's first choice: n = 1, a chain
    assert all(not ev.tree for ev in chains) and any(ev.tree for ev in passes[1::2])
    assert any(len(ev.drafts) == 4 for ev in chains)  # a chain of k drafts


def test_a_chain_asked_of_the_tree_drafter_carries_the_rows_its_drafts_were_drawn_from(make_engine, tiny_target,
                                                                                      tiny_draft_noisy):
    e = make_engine(tiny_target, tiny_draft_noisy)
    d = TreeDrafter(e.draft)
    prompt = e.tokenize("at if false same it true")
    d.start()
    d.prefill(prompt)
    rng = np.random.default_rng(2)
    prop = d.propose(prompt, DraftLimits(4, children=1), 0.8, rng)
    assert prop.parents is None and len(prop.ids) == 4 and len(prop.q_rows) == 4
    for x, q, row in zip(prop.ids, prop.q_probs, prop.q_rows):
        assert row[x] == q and abs(float(row.sum()) - 1.0) < 1e-3
    d.accept(2)  # the chain's first two kept: the draft's cache holds the prompt and them
    assert d.n_past == len(prompt) + 2
    prop.release()
    greedy = d.propose(prompt + prop.ids[:2] + [prop.ids[2]], DraftLimits(3, children=1), 0.0, rng)
    assert greedy.parents is None and greedy.q_rows is None and len(greedy.ids) == 3
