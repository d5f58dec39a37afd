"""HelpScreen: a face's help page (its keys, what its colours and panels mean) as one modal scrolling
text; escape / q / ? / h / f1 close it. A face hands it the text."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

CLOSE_HINT = "escape / q / ? closes this screen."


def key_lines(t: Text, rows, width: int = 12) -> Text:
    """Append ``rows`` of (key, what) to ``t`` as the help pages lay them out."""
    for key, what in rows:
        t.append(f"  {key:<{width}}", "bold").append(f"{what}\n")
    return t


class HelpPage(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpPage { align: center middle; }
    HelpPage > VerticalScroll { width: 90%; max-width: 96; height: 90%; border: round $primary;
        background: $surface; padding: 0 1; }
    """
    BINDINGS = [Binding("escape,q,question_mark,h,f1", "close", "close")]

    def __init__(self, text: Text) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(self.text, id="help-text")

    def action_close(self) -> None:
        self.dismiss(None)
