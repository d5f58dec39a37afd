"""StatusLine: run state, a contention badge, k, temperature, drafter, auto k, progress. Shows the
settings the UI just asked for at once (from the view), marked "next pass" until a pass has used them."""

from __future__ import annotations

from rich.text import Text

from ...recording.player import speed_label
from ...views.heads import head_short
from ...views.view import ScreenView
from ..shared.panel import KeepLines
from ..shared.text_line import TextLine


class StatusLine(KeepLines, TextLine):
    DEFAULT_CSS = "StatusLine { height: 1; background: $panel; }"

    def text_of(self, view: ScreenView) -> Text:
        return status_text(view)


def p_min_text(t: Text, s) -> None:
    """``  p-min 0.75`` (and ``draft-min N``) when set: llama.cpp's --draft-p-min / --draft-min."""
    if s.draft_p_min > 0:
        t.append("  p-min ", "bold").append(f"{s.draft_p_min:g}")
    if s.draft_min > 0:
        t.append("  draft-min ", "bold").append(f"{s.draft_min}")


def head_text(t: Text, view: ScreenView, drafter: str) -> None:
    """`` (3 chained heads)`` / `` (layers 1,2,3)`` after the drafter when it is the run's head."""
    start = view.snap.start if view.snap is not None else None
    head = start.head if start is not None else None
    if head is not None and head.kind == drafter:
        t.append(f" ({head_short(head)})", "dim")


def status_text(view: ScreenView) -> Text:
    """The status line of one view."""
    snap = view.snap
    t = Text()
    state, style = view.run_state
    t.append(f" {state} ", style=f"bold reverse {style}")
    contention = snap.stats.contention if snap is not None else ""
    if contention:  # other processes take this run's cores (the ContentionBar below says how much)
        t.append(" ⚠ contention ", "bold reverse yellow")
    asked = view.asked
    replay = view.replay
    if replay is not None:
        t.append(f" {speed_label(replay.speed)} ", "bold")
        t.append(f"event {replay.cursor}/{replay.length} ")
        shown = snap.settings if snap and snap.settings else asked
        if shown is not None:
            t.append(f"k {shown.draft_max}  temp {shown.temperature:.1f}  drafter {shown.drafter}")
            head_text(t, view, shown.drafter)
            p_min_text(t, shown)
    elif asked is not None:
        used = snap.settings if snap else None
        pending = used is not None and (used.draft_max, used.temperature, used.drafter, used.auto,
                                         used.draft_p_min, used.pipeline) != (
            asked.draft_max, asked.temperature, asked.drafter, asked.auto, asked.draft_p_min, asked.pipeline)
        t.append(" k ", "bold").append(f"{asked.draft_max}" + (" (off)" if asked.draft_max == 0 else ""))
        t.append("  temp ", "bold").append(f"{asked.temperature:.1f}")
        t.append("  drafter ", "bold").append(asked.drafter)
        head_text(t, view, asked.drafter)
        t.append("  auto ", "bold").append(asked.auto or "off")
        p_min_text(t, asked)
        if asked.pipeline:  # --pipeline (o): the draft drafts ahead on its own thread while the target verifies
            t.append("  pipeline ", "bold").append("on")
        if pending:
            t.append("  (next pass)", "italic")
    if snap is not None:
        st = snap.stats
        n_predict = snap.start.n_predict if snap.start else 0
        t.append(f"  | pass {st.n_passes}  {st.n_emitted}/{n_predict} tok  {st.elapsed_s:.1f}s", "dim")
    t.append(f"  | theme {view.theme}", "dim")
    return t
