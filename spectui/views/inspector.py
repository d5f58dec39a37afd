"""The TUI's token inspector, without Textual: the cursor over the recent passes' tokens (the ribbon's
inspect mode) and one token's ``spectui.views.inspector_model.InspectorView`` as Rich text (the inspector screen, the
cast's ``--inspect``).

The text is ``spectui.views.inspector_model.render_view``'s, line for line (what ``spectui replay --headless --explain``
prints), with styles laid over it: the marks stay glyphs (``*`` emitted here, ``d`` drafted here), so
nothing rests on colour (NO_COLOR keeps bold, reverse and underline).
"""

from __future__ import annotations

from rich.text import Text

from .inspector_model import InspectorView, explain, render_view
from .state import PassView
from .tree_inspector import PRUNED, SCREEN_ROWS, TREE_HINT, node_lines, table_lines, tree_heading
from .view import InspectCursor

HINT = "←/→ token · ↑/↓ pass · esc close"


def n_slots(p: PassView) -> int:
    """Tokens of a pass the cursor can stand on: its drafts, then the target's own token."""
    return len(p.drafts) + (1 if p.target is not None else 0)


def find(recent: tuple[PassView, ...], pass_index: int) -> int | None:
    """Position of pass ``pass_index`` in ``recent`` (oldest first), or None."""
    for i in range(len(recent) - 1, -1, -1):
        if recent[i].index == pass_index:
            return i
    return None


def first_cursor(recent: tuple[PassView, ...]) -> InspectCursor | None:
    """The newest pass's last token (its target token), or None before the first pass."""
    for p in reversed(recent):
        if n_slots(p):
            return InspectCursor(p.index, n_slots(p) - 1)
    return None


def move(recent: tuple[PassView, ...], cur: InspectCursor | None, dx: int = 0, dy: int = 0) -> InspectCursor | None:
    """The cursor moved ``dx`` tokens (past a pass's end: into the next newer / older pass) and ``dy``
    passes (-1: newer, up the ribbon; +1: older). A cursor whose pass is gone starts over at the newest."""
    i = find(recent, cur.pass_index) if cur is not None else None
    if cur is None or i is None:
        return first_cursor(recent)
    slot = cur.slot
    if dy:
        j = i - dy
        while 0 <= j < len(recent) and not n_slots(recent[j]):
            j -= dy
        if 0 <= j < len(recent):
            i, slot = j, min(slot, n_slots(recent[j]) - 1)
    slot += dx
    while slot < 0 and i > 0:  # before the first token: the older pass's last one
        i -= 1
        slot += n_slots(recent[i])
    while slot >= n_slots(recent[i]) and i < len(recent) - 1:  # past the last: the newer pass's first one
        slot -= n_slots(recent[i])
        i += 1
    slot = max(0, min(slot, n_slots(recent[i]) - 1))
    return InspectCursor(recent[i].index, slot)


def view_at(recent: tuple[PassView, ...], cur: InspectCursor, head=None) -> InspectorView | None:
    """``spectui.views.inspector_model.explain`` of the cursor's token (None when its pass is no longer on screen);
    ``head``: the run's RunStarted.head (which head drafted a token, in full)."""
    i = find(recent, cur.pass_index)
    if i is None or recent[i].event is None or not 0 <= cur.slot < n_slots(recent[i]):
        return None
    return explain(recent[i].event, cur.slot, head)


COLUMN_TITLES = ("target top (p)", "draft top (q)", "residual (r)")  # render_view's column headings


def inspector_text(view: InspectorView, width: int) -> Text:
    """``render_view(view, width)`` as Rich text: the heading bold, the rule's name bold, the top-N columns'
    headings bold, their emitted rows (``*``) bold and drafted ones (``d``) underlined, a near tie in
    reverse. The columns are found by their headings, so the layout stays render_view's."""
    lines = render_view(view, width)
    out = Text()
    starts: list[int] = []  # the columns' x under the latest heading line (empty: not in a list)
    for n, line in enumerate(lines):
        if n:
            out.append("\n")
        t = Text(line)
        heads = [x for x in (line.find(title) for title in COLUMN_TITLES) if x >= 0]
        if n == 0:
            t.stylize("bold")
        elif line.startswith("rule: "):
            t.stylize("bold", 0, 5)
        elif line.startswith("→ "):
            t.stylize("italic")
        elif heads:
            starts = sorted(heads)
            t.stylize("bold")
        elif starts and "emitted" in line and "drafted" in line:  # the legend under the lists
            starts = []
            t.stylize("dim")
        elif starts:
            ends = [x - 2 for x in starts[1:]] + [len(line)]
            for x0, x1 in zip(starts, ends):
                mark = line[x0:x0 + 2]
                if mark[:1] == "*":
                    t.stylize("bold", x0, x1)
                if mark[1:2] == "d":
                    t.stylize("underline", x0 + 3, x1)
        at = line.find("NEAR TIE")
        if at >= 0:
            t.stylize("bold reverse", at, at + len("NEAR TIE"))
        elif view.near_tie and line.startswith("margin "):
            t.stylize("bold", 0, line.find(":") + 1)
        out.append_text(t)
    return out


def hint(view: InspectorView) -> str:
    """The inspector's keys: a tree pass's node keys besides the token's."""
    ev = view.event
    return f"←/→ token · ↑/↓ pass · {TREE_HINT} · esc close" if ev is not None and ev.tree else HINT


def tree_text(view: InspectorView, node: int | None, width: int) -> Text:
    """A tree pass's every node under the token's view (empty for a chain's pass): the heading, the node list
    (``tree_inspector.table_lines``: the chosen node marked ``>`` and in reverse, pruned nodes dim), then the
    chosen node explained (``node_lines``). Nothing rests on colour: the marks are glyphs and words."""
    ev = view.event
    out = Text()
    if ev is None or not ev.tree:
        return out
    out.append(tree_heading(ev), "bold")
    for n, line in enumerate(table_lines(ev, width, node, SCREEN_ROWS)):
        out.append("\n")
        out.append(line, "bold" if n == 0 else "bold reverse" if line.startswith(">") else
                   "dim" if line.rstrip().endswith(PRUNED) else "")
    if node is None or not 0 <= node < len(ev.tree):
        return out
    for n, line in enumerate(node_lines(ev, node, width)):
        out.append("\n\n" if n == 0 else "\n")
        out.append(line, "bold" if n == 0 else "")
    return out
