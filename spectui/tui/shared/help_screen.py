"""HelpScreen: a face's help page (its keys, what its colours and panels mean) as one modal scrolling
text; escape / q / ? / h / f1 close it. A face hands it the text."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from .ascii import key_names

CLOSE_HINT = "escape / q / ? closes this screen."


def key_lines(t: Text, rows, width: int = 12) -> Text:
    """Append ``rows`` of (key, what) to ``t`` as the help pages lay them out (an arrow key by its word in the
    ASCII face: tui.shared.ascii.key_names)."""
    for key, what in rows:
        key = key_names(key)
        t.append(f"  {key:<{max(width, len(key) + 1)}}", "bold").append(f"{what}\n")
    return t


# The token inspector's keys and the token styles: the same on every face that shows a run's passes (the run
# face, each race pane).
INSPECT_KEYS = [
    ("i", "inspect mode on / off (pauses the run)"),
    ("←→ / h l", "in inspect mode: previous / next token"),
    ("↑↓ / k j", "in inspect mode: newer / older pass"),
    ("enter", "open the token inspector (or click a token)"),
    ("escape", "close the inspector / leave inspect mode"),
]
LEGEND = [
    ("underlined", "a draft token the target accepted (✓)"),
    ("struck through", "a rejected draft (✗) or one drafted after it (·); shown briefly, then removed"),
    ("bold", "the target's own token: correction (●) or bonus after all drafts accepted (★)"),
    ("dim italic", "drafts waiting for the verdict (?)"),
    ("plain colour", "target-only token (k = 0 or prefill) (○)"),
    ("‖p-min", "drafting stopped: draft confidence < --draft-p-min"),
    ("▸ reverse", "the inspect cursor (inspector: * emitted, d drafted)"),
]



def face_keys(quit_note: str = "") -> list[tuple[str, str]]:
    """The keys every face has (``shared.app.FACE_BINDINGS``); ``quit_note``: what quitting does on this face."""
    quit_what = f"quit ({quit_note})" if quit_note else "quit"
    return [("c", "cycle theme"), ("? / h / f1", "this help"), ("q / ctrl+c", quit_what)]


SCROLL_HINT = "↑↓ / PgUp PgDn / Home End scroll · escape, q or ? close"


class HelpPage(ModalScreen[None]):
    """The text in a scroll box that has the focus from the start (the arrow, page and home/end keys scroll
    it at once, also at 80x24 where it does not fit), a hint line that stays visible below it; closing it
    hands every key back to the face's screen."""

    DEFAULT_CSS = """
    HelpPage { align: center middle; }
    HelpPage > #help-box { width: 90%; max-width: 96; height: 90%; border: round $primary; background: $surface; }
    HelpPage #help-scroll { height: 1fr; padding: 0 1; }
    HelpPage #help-hint { height: 1; padding: 0 1; color: $text-muted; }
    """
    BINDINGS = [Binding("escape,q,question_mark,h,f1", "close", "close")]

    def __init__(self, text: Text) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box"):
            with VerticalScroll(id="help-scroll"):
                yield Static(self.text, id="help-text")
            yield Static(key_names(SCROLL_HINT), id="help-hint")

    def on_mount(self) -> None:
        self.query_one("#help-scroll", VerticalScroll).focus()

    def action_close(self) -> None:
        self.dismiss(None)
