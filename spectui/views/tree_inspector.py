"""The token inspector over a tree pass's every node (--drafter tree: ``PassEvent.tree``), without Textual: the
inspector screen walks it (its keys: the next / previous node, the parent, the first child, the next sibling),
``spectui replay --explain PASS`` lists it, ``--json`` holds it (``node_dict``).

A node's verdict, in the inspector's words: **accepted** (the walk passed through it), **rejected** (judged and
refused), **pruned** (never judged: below a node the walk did not pass through, or a later sibling of an accepted
one). Each node shows its token (escaped), depth, parent, rank among its siblings (the order they were drawn and
judged in), the draft's q, the target's p in its parent's row, and at T > 0 the test that judged it
(``TreeNode.judged``: p_i(x), from the residual after refused siblings, r_i(x), min(1, p_i / r_i) and u).

A trace's parents are untrusted: a parent that does not come before its node reads as the root (as the
statistics read it), so a forged tree still walks, never loops.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..contract.events import ACCEPTED, DISCARDED, REJECTED, PassEvent
from ..contract.text import cut, pad
from .inspector_model import show

PRUNED = "pruned"  # DISCARDED, as a tree's node is named
WORDS = {ACCEPTED: "accepted", REJECTED: "rejected", DISCARDED: PRUNED}
MOVES = ("next", "prev", "parent", "child", "sibling")  # step_node's ways
TREE_HINT = "n/b node · p parent · c child · s sibling"
MAX_WIDTH = 80  # the tree's lines fit 80 columns whatever the width asked
SCREEN_ROWS = 64  # the inspector screen lists at most this many nodes around the chosen one (trees have <= 32)


@dataclass(frozen=True)
class TreeShape:
    """A tree's parents as read (``-1``: the root), each node's depth (the root's children: 1), children (index 0
    the root's, i + 1 node i's, in drafting order), rank among its siblings (1-based), each parent's first accepted
    child (index as ``children``; -1: none) and each node's next sibling that was judged (-1: none). Made in one
    pass, so a forged tree of many nodes costs what its size does."""

    parents: tuple[int, ...]
    depths: tuple[int, ...]
    children: tuple[tuple[int, ...], ...]
    ranks: tuple[int, ...]
    accepted: tuple[int, ...]
    next_judged: tuple[int, ...]
    path_end: int = -1  # the last accepted node (-1: none, the walk stopped at the root)

    def rank(self, i: int) -> tuple[int, int]:
        """(node i's rank among its siblings, 1-based; how many they are)."""
        return self.ranks[i], len(self.children[self.parents[i] + 1])


def shape(ev: PassEvent) -> TreeShape:
    """The tree of a pass (empty for a chain's)."""
    n = len(ev.tree)
    parents: list[int] = []
    depths: list[int] = []
    ranks: list[int] = []
    kids: list[list[int]] = [[] for _ in range(n + 1)]
    accepted = [-1] * (n + 1)
    for i, nd in enumerate(ev.tree):
        par = nd.parent if 0 <= nd.parent < i else -1
        parents.append(par)
        depths.append(1 if par < 0 else depths[par] + 1)
        kids[par + 1].append(i)
        ranks.append(len(kids[par + 1]))
        if nd.verdict == ACCEPTED and accepted[par + 1] < 0:
            accepted[par + 1] = i
    nxt = [-1] * n
    for sibs in kids:
        after = -1
        for c in reversed(sibs):
            nxt[c] = after
            if ev.tree[c].verdict != DISCARDED:
                after = c
    ends = [i for i, nd in enumerate(ev.tree) if nd.verdict == ACCEPTED]
    return TreeShape(tuple(parents), tuple(depths), tuple(tuple(k) for k in kids), tuple(ranks), tuple(accepted),
                     tuple(nxt), ends[-1] if ends else -1)


def path_of(ev: PassEvent) -> list[int]:
    """The accepted nodes, root's child first."""
    return [i for i, nd in enumerate(ev.tree) if nd.verdict == ACCEPTED]


def chain_node(ev: PassEvent, slot: int) -> int | None:
    """The node the inspector's token ``slot`` is (the pass's drafts are the accepted path then the first child
    refused after it); None for the target's own token, or a pass without a tree."""
    if not ev.tree or slot >= len(ev.drafts):
        return None
    path = path_of(ev)
    if slot < len(path):
        return path[slot]
    after = shape(ev).children[(path[-1] if path else -1) + 1]
    return after[0] if slot == len(path) and after else None


def step_node(ev: PassEvent, node: int | None, how: str) -> int | None:
    """The node after a move from ``node`` (None: none chosen yet): ``how`` one of ``MOVES``. A move that has
    nowhere to go (the parent of a root's child, the child of a leaf) stays."""
    n = len(ev.tree)
    if not n:
        return None
    if node is None or not 0 <= node < n:
        return n - 1 if how == "prev" else 0
    sh = shape(ev)
    if how == "next":
        return (node + 1) % n
    if how == "prev":
        return (node - 1) % n
    if how == "parent":
        return sh.parents[node] if sh.parents[node] >= 0 else node
    if how == "child":
        return sh.children[node + 1][0] if sh.children[node + 1] else node
    sibs = sh.children[sh.parents[node] + 1]
    return sibs[sh.ranks[node] % len(sibs)]


def _top_text(ev: PassEvent, sh: TreeShape, parent: int) -> str:
    """T = 0: the target's argmax in ``parent``'s row where the pass shows it (an accepted child, or the target's
    own token at the path's end), else ""."""
    if sh.accepted[parent + 1] >= 0:
        return show(ev.tree[sh.accepted[parent + 1]].text)
    if ev.target is not None and parent == sh.path_end:
        return show(ev.target.text)
    return ""


def node_rule(ev: PassEvent, sh: TreeShape, i: int) -> str:
    """The rule that decided node i, with its numbers, one line."""
    nd, t = ev.tree[i], ev.settings.temperature
    rank, _ = sh.rank(i)
    if nd.verdict == DISCARDED:
        par = sh.parents[i]
        first = sh.accepted[par + 1]
        if (par < 0 or ev.tree[par].verdict == ACCEPTED) and 0 <= first < i:
            return f"not judged: node {first}, a sibling drawn before it, was accepted first"
        if par >= 0:
            return f"not judged: the walk never passed through its parent, node {par} ({WORDS[ev.tree[par].verdict]})"
        return "not judged"
    if t <= 0:
        if nd.verdict == ACCEPTED:
            return "T = 0: the target's argmax in its parent's row"
        top = _top_text(ev, sh, sh.parents[i])
        return "T = 0: not the argmax of its parent's row" + (f"; that is {top}" if top else "")
    j = nd.judged
    if j is None:
        return f"T = {t:g}: judged (this trace does not record the test's numbers)"
    pn = "p" if rank == 1 else "p'"
    if j.u < 0:
        return f"T = {t:g}: {pn}/r = {j.p:.3f}/{j.r:.3f} >= 1: accepted without a draw"
    sign = "<" if nd.verdict == ACCEPTED else ">="
    return f"T = {t:g}: u = {j.u:.3f} {sign} min(1, {pn}/r) = min(1, {j.p:.3f}/{j.r:.3f}) = {j.accept_p:.3f}"


def node_outcome(ev: PassEvent, sh: TreeShape, i: int) -> str:
    """What became of node i, one line."""
    nd = ev.tree[i]
    if nd.verdict == ACCEPTED:
        return "accepted: on the path, emitted"
    if nd.verdict == DISCARDED:
        return "pruned: never judged, its subtree with it"
    later = sh.next_judged[i]
    sampled = ev.settings.temperature > 0
    if later >= 0 and sampled:
        return f"rejected: the next sibling, node {later}, is judged against norm(max(0, p - r))"
    if sh.accepted[sh.parents[i] + 1] >= 0:
        return "rejected"
    how = "drawn from norm(max(0, p - r))" if sampled else "the target's argmax"
    return f"rejected, as every sibling: the correction is {how}"


def node_lines(ev: PassEvent, i: int, width: int = MAX_WIDTH, sh: TreeShape | None = None) -> list[str]:
    """Node i explained, a few lines of at most ``min(width, MAX_WIDTH)`` columns (``sh``: the pass's ``shape``,
    when the caller has it)."""
    w = min(width, MAX_WIDTH)
    sh = sh or shape(ev)
    nd = ev.tree[i]
    rank, n = sh.rank(i)
    par = sh.parents[i]
    parent = "the root (the last accepted token)" if par < 0 else f"node {par} {show(ev.tree[par].text, 12)}"
    kids = sh.children[i + 1]
    kid_text = ", ".join(str(c) for c in kids[:8]) + (", ..." if len(kids) > 8 else "") if kids else "none"
    t = ev.settings.temperature
    lines = [f"node {i} · {show(nd.text, 24)} (id {nd.id}) · {WORDS[nd.verdict]}",
             f"depth {sh.depths[i]} · rank {rank} of {n} · parent {parent}",
             f"children {kid_text}",
             f"draft q(x) {nd.prob:.3f} · target p(x) {nd.target_prob:.3f} · T = {t:g}"
             + (" (p, q shown at T = 1)" if t <= 0 else "")]
    j = nd.judged
    if j is not None and rank > 1:
        lines.append(f"judged on the residual after {rank - 1} refused sibling{'s' if rank > 2 else ''}: "
                     f"p'(x) {j.p:.3f} · r(x) {j.r:.3f}")
    elif j is not None:
        lines.append(f"judged: p(x) {j.p:.3f} · r(x) {j.r:.3f} (q, the law it was drawn from)")
    lines.append("rule: " + node_rule(ev, sh, i))
    lines.append("→ " + node_outcome(ev, sh, i))
    return [cut(ln, w) for ln in lines]


def table_lines(ev: PassEvent, width: int = MAX_WIDTH, selected: int | None = None,
                rows: int | None = None) -> list[str]:
    """Every node, one line each (``>`` on ``selected``): node, token (indented by depth), depth, rank, q, p, u
    and verdict; the first line the headings. At most ``min(width, MAX_WIDTH)`` columns; with ``rows``, at most
    that many nodes around ``selected`` (a forged trace's huge tree stays a screenful), a line for those left out."""
    w = min(width, MAX_WIDTH)
    tw = max(8, min(20, w - 55))
    sh = shape(ev)
    n_nodes = len(ev.tree)
    lo, hi = 0, n_nodes
    if rows is not None and n_nodes > rows:
        at = selected if selected is not None and 0 <= selected < n_nodes else 0
        lo = max(0, min(at - rows // 2, n_nodes - rows))
        hi = lo + rows
    lines = [f"  {'node':>4}  {pad('token', tw)}  depth  rank      q      p      u  verdict"]
    if lo:
        lines.append(f"  ... {lo} nodes before")
    for i in range(lo, hi):
        nd = ev.tree[i]
        ind = min(sh.depths[i] - 1, 6)
        tok = pad(" " * ind + show(nd.text, tw - ind), tw)
        rank, n = sh.rank(i)
        j = nd.judged
        u = f"{j.u:.3f}" if j is not None and j.u >= 0 else "-"
        lines.append(f"{'>' if i == selected else ' '} {i:>4}  {tok}  {sh.depths[i]:>5}  {f'{rank}/{n}':>4}  "
                     f"{nd.prob:.3f}  {nd.target_prob:.3f}  {u:>5}  {WORDS[nd.verdict]}")
    if hi < n_nodes:
        lines.append(f"  ... {n_nodes - hi} nodes after")
    return [cut(ln, w) for ln in lines]


def tree_heading(ev: PassEvent) -> str:
    """One line: the nodes, the accepted path, how many were pruned."""
    path = path_of(ev)
    walk = " > ".join(str(i) for i in path[:12]) + (" > ..." if len(path) > 12 else "") if path else "none accepted"
    pruned = sum(1 for nd in ev.tree if nd.verdict == DISCARDED)
    return cut(f"tree: {len(ev.tree)} nodes verified · path {walk} · {pruned} pruned", MAX_WIDTH)


def render_tree(ev: PassEvent, width: int = MAX_WIDTH) -> list[str]:
    """Every node of a tree pass, listed then each explained (``spectui replay --explain PASS``); [] for a chain."""
    if not ev.tree:
        return []
    lines = [tree_heading(ev), *table_lines(ev, width)]
    sh = shape(ev)
    for i in range(len(ev.tree)):
        lines.append("")
        lines.extend(node_lines(ev, i, width, sh))
    return lines


def node_dict(ev: PassEvent, i: int, sh: TreeShape | None = None) -> dict:
    """Node i as the inspector explains it, JSON-ready (``spectui replay --explain PASS --json``; ``sh``: the
    pass's ``shape``, when the caller has it)."""
    sh = sh or shape(ev)
    nd = ev.tree[i]
    rank, n = sh.rank(i)
    j = nd.judged
    return {"node": i, "id": nd.id, "text": nd.text, "depth": sh.depths[i], "parent": sh.parents[i], "rank": rank,
            "siblings": n, "children": list(sh.children[i + 1]), "q": nd.prob, "p": nd.target_prob,
            "verdict": WORDS[nd.verdict],
            "judged": None if j is None else {"p": j.p, "r": j.r, "accept_p": j.accept_p, "u": j.u},
            "rule": node_rule(ev, sh, i), "outcome": node_outcome(ev, sh, i)}
