"""PassRibbon: the newest pass as draft positions 1..k with their verdicts, then recent passes.

In inspect mode (``ScreenView.inspect``) the title says so, the cursor's pass is drawn in detail with
its token under the cursor marked (▸ and reverse), and the list scrolls to keep that pass in view. A
pass whose drafting stopped at --draft-p-min carries ``‖p-min``; a pipelined pass whose drafts were drafted during
the previous verify starts with ``⇉``, one that threw speculative tokens away ends with ``✂`` and their number
(detailed: their texts and why; ``views.pipeline``). A block drafter's pass (DFlash, DSpark) has its drafts in
brackets, ``[✓✓✗·]``: the block arrived at once, from one draft pass (detailed: that pass's draft time; the title's
legend says ``[ ] one pass``). A tree pass (--drafter tree) draws its accepted path as the drafts and ``⑂`` with its
pruned branches (``views.tree``). A click on a token posts ``TokenClicked`` (its pass and slot,
``spectui.views.inspector_model.slots`` order); the screen opens the inspector.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.events import Click
from textual.message import Message
from textual.strip import Strip

from ...contract.events import CHAIN_SEPARATOR, DRAFT_STOP_P_MIN
from ...contract.text import token_cell
from ...engine.drafters import block_names
from ...views.animation import PENDING
from ...views.pipeline import OVERLAPPED, PIPELINE_LEGEND, THROWN, WHY_SHORT
from ...views.state import PassView
from ...views.tree import tree_text
from .ascii import key_names
from .panel import GLYPH, Panel, fmt_ms

TITLE_LEGEND = "  (✓ acc ✗ rej · discarded ● correction ★ bonus)"
INSPECT_TITLE = "inspect  ←→ token ↑↓ pass  enter open  esc leave"
CURSOR = Style(reverse=True, bold=True)  # the token under the inspect cursor (with ▸: not colour alone)
P_MIN_MARK = "‖p-min"  # drafting stopped: the draft's confidence fell below --draft-p-min
BLOCK_MARKS = ("[", "]")  # around a block drafter's drafts: one draft pass proposed them all (ASCII as it is)
BLOCK_LEGEND = " [ ] one pass"

Hits = tuple[tuple[int, int, int], ...]  # (x from, x to, token slot) of one line


def _pass_head(p: PassView, st, detailed: bool) -> Text:
    """A pass line's start: its index, prefill or k, the chain member that drafted it, the pipeline's column."""
    t = Text()
    t.append(f"#{p.index:<4}", style="bold" if detailed else "dim")
    t.append("prefill " if p.prefill else f"k={p.k:<2} ", st["dim"])
    if CHAIN_SEPARATOR in p.settings.drafter and not p.prefill:  # a chain: the member that drafted this pass
        t.append(drafter_tag(p.drafter, p.settings.drafter, detailed), st["title"] if p.drafter else st["dim"])
    if p.pipelined:  # a column of its own: drafted during the previous verify, or not
        t.append(OVERLAPPED if p.overlapped else " ", st["title"])
    return t


class PassRibbon(Panel):
    class TokenClicked(Message):
        """A token of pass ``pass_index`` (slot ``slot``) of ``ribbon`` was clicked."""

        def __init__(self, ribbon: "PassRibbon", pass_index: int, slot: int) -> None:
            super().__init__()
            self.ribbon = ribbon
            self.pass_index = pass_index
            self.slot = slot

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._line_cache: dict[tuple, tuple[object, Strip, Hits]] = {}
        self._hits: list[tuple[int, Hits]] = []  # per drawn line: (pass index, token spans); -1: no pass

    def pass_line(self, p: PassView, st, width: int, phase: str, detailed: bool, cursor: int | None = None) -> Text:
        return self.pass_line_hits(p, st, width, phase, detailed, cursor)[0]

    def pass_line_hits(self, p: PassView, st, width: int, phase: str, detailed: bool,
                       cursor: int | None = None) -> tuple[Text, Hits]:
        """One pass's line and where each of its tokens is on it; ``cursor``: the slot to mark."""
        t = _pass_head(p, st, detailed)
        hits: list[tuple[int, int, int]] = []
        cell = max(3, min(10, (width - 30) // max(1, len(p.drafts) + 1))) if detailed else 0
        block = bool(p.drafts) and (p.drafter or p.settings.drafter) in block_names()
        t.append(BLOCK_MARKS[0] if block else "", st["title"])
        for i, (txt, verdict) in enumerate(p.drafts):
            shown = "pending" if phase == PENDING else verdict
            x0 = t.cell_len
            on = cursor == i
            if on:
                t.append("▸", "bold reverse")
            t.append(GLYPH[shown], st[shown] + CURSOR if on else st[shown])
            if detailed:
                t.append(f"{i + 1}:", st["dim"] + CURSOR if on else st["dim"])
                t.append(token_cell(txt, cell), st[shown] + CURSOR if on else st[shown])
            hits.append((x0, t.cell_len, i))
            t.append(BLOCK_MARKS[1] if block and i == len(p.drafts) - 1 else "", st["title"])
            if detailed:
                t.append(" ")
        if p.draft_stop == DRAFT_STOP_P_MIN:
            t.append(P_MIN_MARK, st["title"])
            if detailed and p.draft_stop_p >= 0:
                t.append(f" q {p.draft_stop_p:.2f}<{p.settings.draft_p_min:g} ", st["dim"])
        if p.target is not None and phase != PENDING:
            txt, kind = p.target
            t.append(" → " if detailed else " ")
            x0 = t.cell_len
            on = cursor == len(p.drafts)
            if on:
                t.append("▸", "bold reverse")
            style = st.get(kind) or st["plain"]
            t.append(GLYPH.get(kind, "○"), style + CURSOR if on else style)
            if detailed:
                t.append(token_cell(txt, 10), style + CURSOR if on else style)
            hits.append((x0, t.cell_len, len(p.drafts)))
            if detailed:
                t.append(f" {kind}", st["dim"])
        if p.tree:  # a tree pass: the path is drawn above; its pruned branches (views.tree)
            t.append(f"  {tree_text(p.tree, detailed)}", st["discarded"])
        t.append(f"  +{p.n_emitted} tok {fmt_ms(p.wall_ms)}", st["dim"])
        if block and detailed and p.event is not None:  # the block's draft cost: one pass, whatever k
            t.append(f"  draft 1 pass {fmt_ms(p.event.timing.draft_ms)}", st["dim"])
        if p.thrown:
            t.append(f"  {THROWN}{len(p.thrown)}", st["discarded"])
            if detailed:
                shown = " ".join(token_cell(x, 8) for x in p.thrown[:6])
                t.append(f" {shown} ({WHY_SHORT.get(p.thrown_why, p.thrown_why)})", st["dim"])
        t.truncate(width, overflow="ellipsis")
        return t, tuple(hits)

    def _title(self, st, width: int) -> Text:
        t = Text()
        cur = self.view.inspect
        if cur is not None:
            t.append(f"inspect #{cur.pass_index} token {cur.slot + 1}", st["title"])
            t.append(key_names(INSPECT_TITLE[len("inspect"):]), st["dim"])
        else:
            t.append("current pass", st["title"])
            piped = self.snap is not None and self.snap.stats.pipeline is not None
            block = self.snap is not None and self.snap.settings is not None and (
                self.snap.settings.drafter in block_names())
            t.append(TITLE_LEGEND + (PIPELINE_LEGEND if piped else "") + (BLOCK_LEGEND if block else ""), st["dim"])
        t.truncate(width, overflow="ellipsis")
        return t

    def _rows(self, height: int) -> list[tuple[PassView, bool, int | None]]:
        """(pass, detailed, cursor slot) per line under the title, newest first."""
        snap = self.snap
        recent = list(snap.recent) or [snap.last_pass]
        room = max(0, height - 1)
        cur = self.view.inspect
        if cur is None:
            older = recent[:-1][-(room - 1):] if room > 1 else []
            return [(snap.last_pass, True, None)] + [(p, False, None) for p in reversed(older)]
        newest_first = list(reversed(recent))
        at = next((i for i, p in enumerate(newest_first) if p.index == cur.pass_index), 0)
        start = 0 if at < room else at - room + 1
        return [(p, p.index == cur.pass_index, cur.slot if p.index == cur.pass_index else None)
                for p in newest_first[start:start + room]]

    def draw(self, width: int, height: int) -> Text:
        st = self.styles_map()
        out = Text()
        snap = self.snap
        if snap is None or snap.last_pass is None:
            out.append("current pass", st["title"])
            out.append("\nwaiting for the first pass…", st["dim"])
            return out
        out.append_text(self._title(st, width))
        for p, detailed, cursor in self._rows(height):
            phase = self.phase if p is snap.last_pass else ""
            out.append("\n")
            out.append_text(self.pass_line(p, st, width, phase, detailed, cursor))
        return out

    def _build_strips(self, width: int, height: int) -> list[Strip]:
        """What ``draw`` shows; each older pass's line is rendered once (a pass does not change)."""
        snap = self.snap
        if snap is None or snap.last_pass is None or width <= 0 or height < 2:
            self._hits = []
            return super()._build_strips(width, height)
        st = self.styles_map()
        cache = self._line_cache
        if len(cache) > 512:
            cache.clear()
        base = self.base_style
        theme = self._styles_theme

        if self.view.inspect is None:
            key = ("title", width, base, theme)
            hit = cache.get(key)
            if hit is None or hit[0] is not st:
                hit = cache[key] = (st, self.line_strip(self._title(st, width), width, base), ())
            strips = [hit[1]]
        else:
            strips = [self.line_strip(self._title(st, width), width, base)]
        hits: list[tuple[int, Hits]] = [(-1, ())]
        for p, detailed, cursor in self._rows(height):
            if detailed:  # the newest pass (animating) or the cursor's: drawn every time
                phase = self.phase if p is snap.last_pass else ""
                line, spans = self.pass_line_hits(p, st, width, phase, True, cursor)
                strips.append(self.line_strip(line, width, base))
            else:
                key = (id(p), width, base, theme)
                hit = cache.get(key)
                if hit is None or hit[0] is not p:  # the very object the line was drawn for
                    line, spans = self.pass_line_hits(p, st, width, "", False)
                    hit = cache[key] = (p, self.line_strip(line, width, base), spans)
                strips.append(hit[1])
                spans = hit[2]
            hits.append((p.index, spans))
        self._hits = hits
        return strips

    def token_at(self, x: int, y: int) -> tuple[int, int] | None:
        """(pass index, slot) of the token drawn at content cell (x, y), or None."""
        if not 0 <= y < len(self._hits):
            return None
        index, spans = self._hits[y]
        for x0, x1, slot in spans:
            if x0 <= x < x1:
                return index, slot
        return None

    def on_click(self, event: Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        hit = self.token_at(offset.x, offset.y)
        if hit is not None:
            event.stop()
            self.post_message(self.TokenClicked(self, *hit))


def drafter_tag(drafter: str, chain: str, detailed: bool) -> str:
    """A chain's pass: the member that proposed its drafts, padded to the chain's longest name (detailed), or its
    initials ("ngram-mod" -> "nm", "model" -> "m"), so passes of one chain line up; "-" when no member drafted."""
    members = chain.split(CHAIN_SEPARATOR)
    if detailed:
        return f"{drafter or '-':<{max(map(len, members))}} "
    initials = {m: "".join(w[0] for w in m.split("-") if w) for m in members}
    return f"{initials.get(drafter, '-') if drafter else '-':<{max(map(len, initials.values()))}} "
