"""The token inspector on a tree pass (--drafter tree), in the real app driven key by key (Textual's pilot): under the
token the screen lists every node of the pass's tree, the token's own node chosen; n / b / p / c / s choose the next,
previous, parent, first child and next sibling, and the chosen node is explained (``views.tree_inspector``) with
its q, p, the u drawn and its verdict. At 80x24 and under NO_COLOR the chosen node is marked by a glyph, and the
list's lines stay ASCII for the ASCII face. The race's panes draw a tree lane's ⑂ and its nodes per pass."""

from __future__ import annotations

import asyncio
import time

import pytest
from rich.cells import cell_len
from synthetic_events import held_source

from spectui.contract.control import RunControl
from spectui.contract.events import ACCEPTED, PassEvent, Settings
from spectui.recording.trace import TraceWriter
from spectui.tui.race.app import RaceApp
from spectui.tui.run.app import SpectuiApp
from spectui.tui.shared.ascii import to_ascii
from spectui.tui.shared.inspector_screen import InspectorScreen
from spectui.views.inspector_model import explain, render_view
from spectui.views.race_timeline import load_race
from spectui.views.tree import TREE
from spectui.views.tree_inspector import chain_node, node_lines, shape, step_node, table_lines
from spectui.views.view import InspectCursor

pytestmark = pytest.mark.slow  # the inspector driven through the real app, on the engine's events

PROMPT = "the cat sat on the mat and"


@pytest.fixture(scope="module")
def tree_run(make_engine, tiny_target, tiny_draft_noisy, tmp_path_factory):
    """A real tree run at T = 0.8 (-np 3, k = 6) recorded with a TraceWriter: (events, trace path)."""
    engine = make_engine(tiny_target, tiny_draft_noisy, spec_options=(("spec_tree_np", 3),))
    path = tmp_path_factory.mktemp("tree-inspector") / "tree.jsonl"
    events = []
    control = RunControl(Settings(draft_max=6, drafter="tree", temperature=0.8, seed=5))
    with TraceWriter(path) as writer:
        for ev in engine.run(PROMPT, control, 40):
            writer.write(ev)
            events.append(ev)
    return events, path


def screen_lines(app) -> list[str]:
    strips = app.screen._compositor.render_strips()
    return ["".join(seg.text for seg in strip) for strip in strips]


async def settled(app, pilot, n: int) -> None:
    for _ in range(400):
        app.refresh_from_state()
        if app.snap is not None and app.snap.recent and app.snap.recent[-1].index >= n - 1:
            await pilot.pause()
            return
        await pilot.pause(0.01)
    raise AssertionError("the app never showed the events")


def branched(events, recent) -> PassEvent:
    """A pass still on screen whose tree branched and has a draft (the widest tree of them)."""
    shown = {p.index for p in recent}
    cands = [e for e in events if isinstance(e, PassEvent) and e.tree and e.drafts and e.index in shown
             and len(shape(e).children[0]) > 1]
    assert cands, "the noisy draft makes the tree branch at the root"
    return max(cands, key=lambda e: (len(e.tree), e.index))


def n_passes(events) -> int:
    return sum(isinstance(e, PassEvent) for e in events)


async def open_on(app, pilot, ev: PassEvent, slot: int) -> InspectorScreen:
    app.run_screen.enter_inspect(InspectCursor(ev.index, slot))
    app.run_screen.action_open_inspector()
    await pilot.pause()
    await pilot.pause()
    assert isinstance(app.screen, InspectorScreen), app.screen
    return app.screen


async def test_the_keys_walk_every_node_of_a_tree_pass(tree_run):
    events, _ = tree_run
    app = SpectuiApp(held_source(events), RunControl(Settings(draft_max=6, drafter="tree", temperature=0.8)))
    async with app.run_test(size=(100, 40)) as pilot:
        await settled(app, pilot, n_passes(events))
        ev = branched(events, app.snap.recent)
        modal = await open_on(app, pilot, ev, 0)
        width = modal.text_width()
        # the token's view, unchanged, then the tree: its first draft is the path's first node, chosen
        text = modal.text().plain
        assert text.startswith("\n".join(render_view(explain(ev, 0), width)))
        assert modal.node == chain_node(ev, 0)
        for line in table_lines(ev, width, modal.node):
            assert line in text, line
        assert "\n".join(node_lines(ev, modal.node, width)) in text
        hint = app.screen.query_one("#inspector-hint").render().plain
        assert "n/b node" in hint and "s sibling" in hint
        # n walks every node in drafting order, wrapping; each one explained with its own numbers
        seen = []
        for _ in range(len(ev.tree)):
            await pilot.press("n")
            seen.append(modal.node)
            nd = ev.tree[modal.node]
            shown = modal.text().plain
            assert f"node {modal.node} · " in shown and f"draft q(x) {nd.prob:.3f}" in shown
            if nd.judged is not None and nd.judged.u >= 0:
                assert f"u = {nd.judged.u:.3f}" in shown
        assert sorted(seen) == list(range(len(ev.tree)))
        # b back, then the parent / child / sibling keys move as the tree does
        at = modal.node
        await pilot.press("b")
        assert modal.node == step_node(ev, at, "prev")
        first_root_child = shape(ev).children[0][0]
        while modal.node != first_root_child:
            await pilot.press("n")
        await pilot.press("s")
        assert modal.node == shape(ev).children[0][1]  # the root's second child: a sibling drawn later
        await pilot.press("p")
        assert modal.node == shape(ev).children[0][1]  # a root's child has no parent node: it stays
        path = [i for i, nd in enumerate(ev.tree) if nd.verdict == ACCEPTED]
        if path and shape(ev).children[path[0] + 1]:
            while modal.node != path[0]:
                await pilot.press("n")
            await pilot.press("c")
            assert modal.node == shape(ev).children[path[0] + 1][0]
            await pilot.press("p")
            assert modal.node == path[0]
        # ←/→ still step tokens; the new token's node is chosen
        await pilot.press("right")
        assert modal.view.slot.slot == 1 and modal.node == chain_node(ev, 1)
        await pilot.press("escape", "escape", "q")


@pytest.mark.parametrize("no_color", [False, True])
async def test_80x24_no_color_and_ascii_keep_the_chosen_node_marked(tree_run, monkeypatch, no_color):
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    events, _ = tree_run
    app = SpectuiApp(held_source(events), RunControl(Settings(draft_max=6, drafter="tree", temperature=0.8)))
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(app, pilot, n_passes(events))
        assert app.no_color == no_color
        ev = branched(events, app.snap.recent)
        modal = await open_on(app, pilot, ev, 0)
        width = modal.text_width()
        assert width >= 74
        table = table_lines(ev, width, modal.node)
        assert all(len(ln) <= 80 for ln in table)
        # scroll to the list: the chosen node's row is on screen, marked by ">" (not by colour only)
        modal.query_one("VerticalScroll").scroll_end(animate=False)
        await pilot.pause()
        await pilot.pause()
        shown = screen_lines(app)
        chosen = table[modal.node + 1]
        assert chosen.startswith(">") and any(chosen.rstrip() in ln for ln in shown), (chosen, shown)
        assert "bold reverse" in {str(s.style) for s in modal.text().spans}
        # the ASCII face draws every line in ASCII at the same width, the chosen node's mark kept
        for line in table + node_lines(ev, modal.node, width):
            assert to_ascii(line).isascii() and cell_len(to_ascii(line)) == cell_len(line), line
        assert to_ascii(chosen).startswith(">")
        await pilot.press("escape", "escape", "q")


async def wait_until(cond, timeout=20.0):
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > timeout:
            raise AssertionError("timed out")
        await asyncio.sleep(0.02)


async def test_a_race_lane_of_trees_draws_its_mark_and_nodes_per_pass(tree_run, make_engine, tiny_target,
                                                                      tiny_draft_noisy, tmp_path):
    _, tree_path = tree_run
    chain_path = tmp_path / "chain.jsonl"
    engine = make_engine(tiny_target, tiny_draft_noisy)
    with TraceWriter(chain_path) as writer:
        for ev in engine.run(PROMPT, RunControl(Settings(draft_max=6, temperature=0.8, seed=5)), 40):
            writer.write(ev)
    race = load_race([tree_path, chain_path])
    app = RaceApp(race, speed="max")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(lambda: len(app.finished_at) == 2)
        await pilot.pause()
        app.refresh_from_state()
        await pilot.pause()
        headers = [h.render().plain for h in app.race_screen.headers]
        tree = app.snaps[0].stats.tree
        assert tree is not None and f"{TREE} {tree.nodes_per_pass:.1f} nodes/pass" in headers[0]
        assert TREE not in headers[1] and app.snaps[1].stats.tree is None
        ribbon = app.race_screen.ribbons[0].render().plain
        last_tree = next(p for p in reversed(app.snaps[0].recent) if p.tree)
        nodes, pruned = last_tree.tree  # the newest pass drawn in detail, the older ones compact
        assert f"{TREE} {nodes} nodes, {pruned}" in ribbon or f"{TREE}{pruned}" in ribbon, ribbon
        assert sum(line.count(TREE) for line in ribbon.splitlines()) >= 2
        assert TREE not in app.race_screen.ribbons[1].render().plain
        # the inspector in the tree lane's pane lists its nodes too
        await pilot.press("i")
        cursor = app.race_screen.cursor
        ev = next(e for e in race.lanes[0].events if isinstance(e, PassEvent) and e.index == cursor.pass_index)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, InspectorScreen)
        if ev.tree:
            assert f"tree: {len(ev.tree)} nodes verified" in app.screen.text().plain
        await pilot.press("escape", "escape")
