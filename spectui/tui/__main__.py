"""``python -m spectui.tui [TRACE.jsonl] [--theme NAME] [--speed S]``: replay events in the TUI.

Without a file it replays the built-in sample run (``spectui.recording.synthetic.sample_events``). A small
entry point for trying the TUI (``textual run --dev spectui.tui.__main__:main`` reloads spectui.tcss while
editing) and for the tmux test; ``spectui replay`` is the user-facing command.
"""

from __future__ import annotations

import sys

import click

from ..contract.errors import SpectuiError, fail
from ..recording.player import load_for_tui
from ..recording.synthetic import sample_events


@click.command()
@click.argument("trace", required=False)
@click.option("--theme", default=None)
@click.option("--speed", default="1")
def main(trace: str | None, theme: str | None, speed: str) -> None:
    from .run.app import run_replay
    from .shared.terminal import require_terminal

    try:
        require_terminal("python -m spectui.tui")
        events = load_for_tui(trace)[1] if trace else sample_events()
        sys.exit(run_replay(events, theme=theme, speed=speed))
    except SpectuiError as exc:
        fail(exc)


if __name__ == "__main__":
    main()
