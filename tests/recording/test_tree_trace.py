"""A tree run's events (--drafter tree: ``PassEvent.tree``) through a trace and back, the same events; a trace from
before trees (no ``tree`` field) still reads; replay's statistics and the ribbon know the tree (its ⑂ mark, ASCII
``Y``, within 80 columns)."""

from __future__ import annotations

import json
from collections import defaultdict

from greedy_checks import run_with_hook
from rich.style import Style

from spectui.analysis import stats
from spectui.contract.event_json import from_dict, to_dict
from spectui.contract.events import ACCEPTED, PassEvent, Settings
from spectui.recording.trace import read_trace, write_trace
from spectui.tui.shared.ascii import to_ascii
from spectui.tui.shared.pass_ribbon import PassRibbon
from spectui.views.state import ScreenState
from spectui.views.tree import TREE, tree_counts


def _tree_run(make_engine, tiny_target, tiny_draft_noisy):
    e = make_engine(tiny_target, tiny_draft_noisy, spec_options=(("spec_tree_np", 3),))
    events, _ = run_with_hook(e, Settings(draft_max=6, drafter="tree"), n_predict=40)
    return events


def test_tree_trace_round_trip_and_old_traces(make_engine, tiny_target, tiny_draft_noisy, tmp_path):
    events = _tree_run(make_engine, tiny_target, tiny_draft_noisy)
    path = tmp_path / "tree.jsonl"
    write_trace(path, events)
    back = read_trace(path)
    assert back.warnings == [] and back.events == events
    assert stats.compute(back.events) == stats.compute(events)
    snap = stats.compute(events)
    assert snap.tree is not None and snap.tree.passes > 0 and snap.tree.nodes == snap.n_drafted
    assert sum(d.accepted for d in snap.tree.by_depth) == snap.n_accepted
    # a pass of a trace from before trees: no "tree" field at all
    tree_pass = next(ev for ev in events if isinstance(ev, PassEvent) and ev.tree)
    old = to_dict(tree_pass)
    del old["tree"]
    assert from_dict(json.loads(json.dumps(old))).tree == ()


def test_ribbon_draws_the_pruned_branches(make_engine, tiny_target, tiny_draft_noisy):
    events = _tree_run(make_engine, tiny_target, tiny_draft_noisy)
    state = ScreenState()
    for ev in events:
        state.feed(ev)
    views = [p for p in state.snapshot().recent if p.tree]
    assert views
    ribbon = PassRibbon()
    st = defaultdict(Style)
    for view in views:
        ev = view.event
        on_path = {-1} | {i for i, nd in enumerate(ev.tree) if nd.verdict == ACCEPTED}
        pruned = sum(1 for nd in ev.tree if nd.parent in on_path and nd.verdict != ACCEPTED)
        assert view.tree == tree_counts(ev) == (len(ev.tree), pruned)
        line = ribbon.pass_line(view, st, 80, "", False).plain
        assert f"{TREE}{pruned}" in line and len(line) <= 80
        assert f"Y{pruned}" in to_ascii(line)
        detailed = ribbon.pass_line(view, st, 80, "", True).plain
        assert len(detailed) <= 80
