"""StatusLine: run state, k, temperature, drafter, auto k, progress. Shows the settings the UI just
asked for at once (from RunControl), marked "next pass" until a pass has used them."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget


class StatusLine(Widget):
    DEFAULT_CSS = "StatusLine { height: 1; background: $panel; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.text = Text("starting…")

    def set(self, text: Text) -> None:
        self.text = text
        self.refresh()

    def render(self) -> Text:
        t = self.text.copy()
        t.truncate(max(1, self.content_size.width), overflow="ellipsis")
        return t


def status_text(app) -> Text:
    """Build the status line from the app's control, player and snapshot."""
    snap = app.snap
    s = app.control.settings
    t = Text()
    state, style = app.run_state()
    t.append(f" {state} ", style=f"bold reverse {style}")
    if app.player is not None:
        from ..player import speed_label

        t.append(f" {speed_label(app.player.speed)} ", "bold")
        t.append(f"event {app.player.cursor}/{len(app.player)} ")
        shown = snap.settings if snap and snap.settings else s
        t.append(f"k {shown.draft_max}  temp {shown.temperature:.1f}  drafter {shown.drafter}")
    else:
        used = snap.settings if snap else None
        pending = used is not None and (used.draft_max, used.temperature, used.drafter, used.auto) != (
            s.draft_max, s.temperature, s.drafter, s.auto)
        t.append(" k ", "bold").append(f"{s.draft_max}" + (" (off)" if s.draft_max == 0 else ""))
        t.append("  temp ", "bold").append(f"{s.temperature:.1f}")
        t.append("  drafter ", "bold").append(s.drafter)
        t.append("  auto ", "bold").append(s.auto or "off")
        if pending:
            t.append("  (next pass)", "italic")
    if snap is not None:
        st = snap.stats
        n_predict = snap.start.n_predict if snap.start else 0
        t.append(f"  | pass {st.n_passes}  {st.n_emitted}/{n_predict} tok  {st.elapsed_s:.1f}s", "dim")
    t.append(f"  | theme {app.theme}", "dim")
    return t
