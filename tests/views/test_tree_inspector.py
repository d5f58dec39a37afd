"""spectui.views.tree_inspector on hand-built tree passes: every node's depth, parent, rank, q, p, the test that judged
it (u, min(1, p/r), the residual after refused siblings) and its verdict (accepted / rejected / pruned) with the
reason; the moves between nodes; the node list and each node's lines within 80 columns, a token's escapes shown as
escapes; a forged tree (parents that point nowhere) walks without looping; the Rich text marks the chosen node
by a glyph and attributes, not colour only."""

from __future__ import annotations

import json

from spectui.contract.event_json import from_dict, to_dict
from spectui.contract.events import (
    ACCEPTED,
    CORRECTION,
    DISCARDED,
    REJECTED,
    DraftToken,
    PassEvent,
    Settings,
    TargetToken,
    TreeNode,
)
from spectui.contract.judged import Judged
from spectui.views.inspector import hint, tree_text
from spectui.views.inspector_model import explain
from spectui.views.tree import tree_counts
from spectui.views.tree_inspector import (
    MOVES,
    PRUNED,
    chain_node,
    node_dict,
    node_lines,
    render_tree,
    shape,
    step_node,
    table_lines,
)


def node(i, text, parent, verdict, q, p, judged=None):
    return TreeNode(id=i, text=text, prob=q, parent=parent, verdict=verdict, target_prob=p, judged=judged)


def tree_pass(temperature: float = 0.8) -> PassEvent:
    """The root's first child refused, its second accepted (judged on the residual), then a child accepted without
    a draw and its sibling pruned, then a grandchild refused (an escape in its text): the correction after it.
    At T = 0 the same tree without tests."""
    j = (lambda *a: Judged(*a)) if temperature > 0 else (lambda *a: None)
    tree = (
        node(10, "the", -1, REJECTED, 0.5, 0.2, j(0.2, 0.5, 0.4, 0.7)),
        node(11, " a", -1, ACCEPTED, 0.3, 0.3, j(0.3, 0.6, 0.5, 0.1)),
        node(12, "cat", 0, DISCARDED, 0.9, 0.4),
        node(13, " dog", 1, ACCEPTED, 0.8, 0.9, j(0.9, 0.8, 1.0, -1.0)),
        node(14, " cow", 1, DISCARDED if temperature > 0 else REJECTED, 0.1, 0.05),
        node(15, "\x1b[2J", 3, REJECTED, 0.5, 0.1, j(0.1, 0.5, 0.2, 0.9)),
    )
    drafts = tuple(DraftToken(id=n.id, text=n.text, prob=n.prob, verdict=n.verdict, target_prob=n.target_prob)
                   for n in (tree[1], tree[3], tree[5]))
    target = TargetToken(id=16, text="x", prob=0.6, kind=CORRECTION)
    return PassEvent(index=4, settings=Settings(draft_max=6, temperature=temperature, drafter="tree"), k=6,
                     drafts=drafts, target=target, n_accepted=2, emitted=(drafts[0], drafts[1], target), tree=tree)


def test_shape_depth_rank_and_the_chain_tokens_nodes():
    ev = tree_pass()
    sh = shape(ev)
    assert sh.parents == (-1, -1, 0, 1, 1, 3)
    assert sh.depths == (1, 1, 2, 2, 2, 3)
    assert sh.children[0] == (0, 1) and sh.children[2] == (3, 4) and sh.children[6] == ()
    assert [sh.rank(i) for i in range(6)] == [(1, 2), (2, 2), (1, 1), (1, 2), (2, 2), (1, 1)]
    # the inspector's tokens: the accepted path, then the first child refused after it; the target's own token
    assert [chain_node(ev, s) for s in range(4)] == [1, 3, 5, None]
    assert tree_counts(ev) == (6, 3)  # the ribbon's pruned branches: nodes 0, 4 and 5 off the path


def test_moves_reach_every_node_and_stay_where_there_is_nowhere_to_go():
    ev = tree_pass()
    assert step_node(ev, None, "next") == 0 and step_node(ev, None, "prev") == 5
    seen, at = [], None
    for _ in range(6):
        at = step_node(ev, at, "next")
        seen.append(at)
    assert seen == [0, 1, 2, 3, 4, 5] and step_node(ev, 5, "next") == 0 and step_node(ev, 0, "prev") == 5
    assert step_node(ev, 5, "parent") == 3 and step_node(ev, 3, "parent") == 1 and step_node(ev, 1, "parent") == 1
    assert step_node(ev, 1, "child") == 3 and step_node(ev, 5, "child") == 5
    assert step_node(ev, 3, "sibling") == 4 and step_node(ev, 4, "sibling") == 3 and step_node(ev, 2, "sibling") == 2
    assert step_node(PassEvent(), None, "next") is None  # a chain's pass has no node
    assert set(MOVES) == {"next", "prev", "parent", "child", "sibling"}


def test_each_nodes_numbers_and_verdict_at_t_above_zero():
    ev = tree_pass()
    text = {i: "\n".join(node_lines(ev, i)) for i in range(6)}
    # the root's first child: judged on p, refused by its draw; the next sibling is judged on the residual
    assert "node 0 · 'the' (id 10) · rejected" in text[0] and "depth 1 · rank 1 of 2 · parent the root" in text[0]
    assert "draft q(x) 0.500 · target p(x) 0.200" in text[0]
    assert "u = 0.700 >= min(1, p/r) = min(1, 0.200/0.500) = 0.400" in text[0]
    assert "the next sibling, node 1, is judged against norm(max(0, p - r))" in text[0]
    # the second: judged against the residual its refused sibling left
    assert "residual after 1 refused sibling: p'(x) 0.300 · r(x) 0.600" in text[1]
    assert "u = 0.100 < min(1, p'/r) = min(1, 0.300/0.600) = 0.500" in text[1]
    assert "accepted: on the path, emitted" in text[1] and "children 3, 4" in text[1]
    assert "p/r = 0.900/0.800 >= 1: accepted without a draw" in text[3]
    # pruned: below a refused node; a later sibling of an accepted one
    assert "· pruned" in text[2] and "never passed through its parent, node 0 (rejected)" in text[2]
    assert "· pruned" in text[4] and "node 3, a sibling drawn before it, was accepted first" in text[4]
    # the last judged child: every sibling refused, the correction from the residual; its escape shown as one
    assert "'\\x1b[2J'" in text[5] and "\x1b" not in text[5] and "parent node 3 ' dog'" in text[5]
    assert "the correction is drawn from norm(max(0, p - r))" in text[5]
    d = node_dict(ev, 1)
    assert d["rank"] == 2 and d["siblings"] == 2 and d["children"] == [3, 4] and d["verdict"] == "accepted"
    assert d["judged"] == {"p": 0.3, "r": 0.6, "accept_p": 0.5, "u": 0.1} and node_dict(ev, 2)["judged"] is None
    assert node_dict(ev, 4)["verdict"] == PRUNED
    json.dumps([node_dict(ev, i) for i in range(6)])


def test_greedy_nodes_name_the_argmax_and_an_older_trace_says_what_it_lacks():
    ev = tree_pass(0.0)
    assert "T = 0: the target's argmax in its parent's row" in "\n".join(node_lines(ev, 1))
    assert "not the argmax of its parent's row; that is ' a'" in "\n".join(node_lines(ev, 0))
    assert "that is ' dog'" in "\n".join(node_lines(ev, 4))
    assert "not the argmax of its parent's row; that is 'x'" in "\n".join(node_lines(ev, 5))  # the correction
    # a T > 0 trace from before the tests were recorded: no numbers, and it says so
    old = tree_pass()
    old = PassEvent(**{**old.__dict__, "tree": tuple(TreeNode(**{**n.__dict__, "judged": None}) for n in old.tree)})
    assert "does not record the test's numbers" in "\n".join(node_lines(old, 0))
    d = to_dict(tree_pass())
    for n in d["tree"]:
        n.pop("judged")
    assert from_dict(json.loads(json.dumps(d))).tree == old.tree  # new fields optional: an old trace reads


def test_the_list_shows_every_node_within_80_columns():
    ev = tree_pass()
    lines = render_tree(ev, 100)
    assert lines[0] == "tree: 6 nodes verified · path 1 > 3 · 2 pruned"
    table = table_lines(ev, 80, selected=3)
    assert len(table) == 7 and table[0].split()[:3] == ["node", "token", "depth"]
    assert table[4].startswith(">    3") and all(not ln.startswith(">") for k, ln in enumerate(table) if k != 4)
    assert "0.700" in table[1] and "rejected" in table[1] and "pruned" in table[3] and "pruned" in table[5]
    assert all(f"node {i} ·" in "\n".join(lines) for i in range(6))
    assert all(len(ln) <= 80 for ln in lines) and all("\x1b" not in ln for ln in lines)
    narrow = table_lines(ev, 40) + node_lines(ev, 1, 40)
    assert all(len(ln) <= 40 for ln in narrow)
    assert render_tree(PassEvent()) == []


def test_a_forged_tree_walks_without_looping():
    bad = tuple(node(5, "\x1b[2Jx", p, ACCEPTED, 0.5, 0.4) for p in (-7, 10**9, 2, 0))
    ev = PassEvent(index=1, settings=Settings(temperature=0.5), tree=bad)
    assert shape(ev).parents == (-1, -1, -1, 0)
    lines = render_tree(ev)
    assert len([ln for ln in lines if ln.startswith("node ")]) == 4 and "\x1b" not in "\n".join(lines)
    at = None
    for how in MOVES * 3:
        at = step_node(ev, at, how)
        assert 0 <= at < 4


def test_the_rich_text_marks_the_chosen_node_without_colour():
    ev = tree_pass()
    view = explain(ev, 1)
    assert view.event is ev and "n/b node · p parent · c child · s sibling" in hint(view)
    t = tree_text(view, 3, 80)
    plain = t.plain.splitlines()
    chosen = next(ln for ln in plain if ln.startswith(">"))
    assert chosen.startswith(">    3")
    styles = {str(s.style) for s in t.spans}
    assert "bold reverse" in styles and "dim" in styles  # the chosen row, the pruned ones
    assert "node 3 · ' dog' (id 13) · accepted" in t.plain  # the chosen node explained under the list
    assert tree_text(explain(PassEvent(index=2, target=TargetToken(id=1, text="a")), 0), None, 80).plain == ""
    assert "n/b node" not in hint(explain(PassEvent(index=2, target=TargetToken(id=1, text="a")), 0))


def test_a_forged_tree_of_many_nodes_costs_what_its_size_does():
    """Twenty thousand root children (a forged trace's line holds that many): the list, every node's lines and
    the screen's window are made in one pass each (a quadratic walk would not finish), the screen lists a window."""
    n = 20_000
    verdicts = [REJECTED] * (n // 2) + [DISCARDED] * (n - n // 2)
    big = tuple(node(i, f"t{i}", -1, v, 0.5, 0.1, Judged(0.1, 0.5, 0.2, 0.9) if v == REJECTED else None)
                for i, v in enumerate(verdicts))
    ev = PassEvent(index=1, settings=Settings(temperature=0.8), target=TargetToken(id=1, text="x"), tree=big)
    lines = render_tree(ev)
    assert sum(1 for ln in lines if ln.startswith("node ")) == n
    assert "rejected: the next sibling, node 1, is judged against norm(max(0, p - r))" in "\n".join(lines[:n + 12])
    sh = shape(ev)
    assert sh.ranks[-1] == n and sh.next_judged[n // 2 - 1] == -1 and sh.accepted[0] == -1
    shown = tree_text(explain(ev, 0), n - 3, 80).plain.splitlines()
    assert len(shown) < 64 + 20 and any(ln.startswith(">") and f"{n - 3}" in ln for ln in shown)
    assert any("nodes before" in ln for ln in shown)
