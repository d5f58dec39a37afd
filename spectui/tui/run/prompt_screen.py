"""PromptScreen: an Input modal for a new prompt (enter submits, escape cancels)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class PromptScreen(ModalScreen[str | None]):
    DEFAULT_CSS = """
    PromptScreen { align: center middle; }
    PromptScreen > Vertical { width: 90%; max-width: 100; height: auto; border: round $primary;
        background: $surface; padding: 0 1; }
    """
    BINDINGS = [Binding("escape", "cancel", "cancel")]

    def __init__(self, current: str = "") -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("New prompt (enter to run, escape to cancel):")
            yield Input(value=self.current, placeholder="prompt", id="prompt-input")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        self.dismiss(value or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
