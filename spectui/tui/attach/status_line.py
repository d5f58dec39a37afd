"""AttachStatusLine: the session state (watching / replay / ended), the seconds since attach started,
the scrape interval, how many URLs answer, the draft-length note and the theme."""

from __future__ import annotations

from rich.text import Text

from ...views.attach_state import AttachView
from ..shared.text_line import TextLine


def status_text(v: AttachView) -> Text:
    t = Text()
    state, style = v.run_state
    t.append(f" {state} ", style=f"bold reverse {style}")
    snap, start = v.snap, v.start
    if start is not None:
        n = len(start.targets)
        down = sum(1 for w in (snap.interval if snap else []) if w.status == "error")
        t.append(f" t {snap.t if snap else 0.0:.1f}s", "bold").append(f"  every {start.interval:g}s")
        t.append(f"  {n} URL{'s' if n != 1 else ''}" + (f" ({down} down)" if down else ""))
    t.append(f"  | {v.draft_length_note}", "dim")
    t.append(f"  | theme {v.theme}", "dim")
    return t


class AttachStatusLine(TextLine):
    DEFAULT_CSS = "AttachStatusLine { height: 1; background: $panel; }"
    placeholder = "connecting…"

    def text_of(self, view: AttachView) -> Text:
        return status_text(view)
