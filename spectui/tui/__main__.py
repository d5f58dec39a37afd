"""``python -m spectui.tui [TRACE.jsonl] [--theme NAME] [--speed S]``: replay events in the TUI.

Without a file it replays the built-in sample run (spectui.tui.sample). A small entry point for
trying the TUI and for the tmux test; ``spectui replay`` is the user-facing command.
"""

from __future__ import annotations

import json
import sys

import click

from ..errors import SpectuiError
from ..events import EventFormatError, from_dict


def read_events(path: str) -> list:
    try:
        from ..trace import read_trace  # the traces engineer's reader (header line, gzip, warnings)
    except ImportError:
        read_trace = None
    if read_trace is not None:
        return list(read_trace(path).events)
    events = []
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    try:
                        events.append(from_dict(json.loads(line)))
                    except (ValueError, EventFormatError) as exc:
                        raise SpectuiError(f"{path}:{n}: not a spectui event: {exc}") from None
    except OSError as exc:
        raise SpectuiError(f"cannot read {path}: {exc.strerror}") from None
    return events


@click.command()
@click.argument("trace", required=False)
@click.option("--theme", default=None)
@click.option("--speed", default="1")
def main(trace: str | None, theme: str | None, speed: str) -> None:
    from .app import run_replay
    from .sample import sample_events

    try:
        events = read_events(trace) if trace else sample_events()
        sys.exit(run_replay(events, theme=theme, speed=speed))
    except SpectuiError as exc:
        click.echo(f"spectui: error: {exc}", err=True)
        sys.exit(SpectuiError.exit_code)


if __name__ == "__main__":
    main()
