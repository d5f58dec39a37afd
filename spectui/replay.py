"""``spectui replay FILE``: a recorded trace fed back to the same faces as a live run.

Headless (``--headless [--json]``), the trace is streamed into :func:`spectui.headless.consume`, the
very function the live ``--headless`` run uses, so the text, the summary and the JSON are those the
live run printed. Without ``--headless`` the events go to the TUI (``spectui.tui.app.run_replay``),
marked as a replay of which models and when, at the recorded speed by default.

An attach trace (``spectui attach --record``: its first event is ``AttachStarted``) goes to the attach
faces instead: headless to :class:`spectui.attach.text.HeadlessFace` (what the live attach printed), the
TUI to ``spectui.tui.attach_app.run_attach_replay``.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import sys
import time
from typing import Callable, Iterable, Iterator

import click

from .errors import SpectuiError
from .events import ATTACH_EVENT_TYPES, AttachStarted, Event, PassEvent, RunStarted, SettingsChanged


def _warn(message: str) -> None:
    print(f"spectui: warning: {message}", file=sys.stderr)


def parse_speed(value: str | float | None, default: float = 1.0) -> float:
    """'max' (as fast as possible), '2', '2x', 0.5 ... -> speed factor (inf = max). 0.25..8 or max."""
    if value is None:
        return default
    from .player import parse_speed as _parse  # no Textual in player.py

    return _parse(value)


def paced(events: Iterable[Event], speed: float, sleep: Callable[[float], None] = time.sleep) -> Iterator[Event]:
    """Yield events with the recorded delays between passes divided by ``speed`` (inf: no delay)."""
    last: float | None = None
    for ev in events:
        if isinstance(ev, PassEvent):
            t = ev.timing.t_end
        elif isinstance(ev, SettingsChanged) or (isinstance(ev, ATTACH_EVENT_TYPES) and hasattr(ev, "t")):
            t = ev.t
        else:
            t = None
        if t is not None and speed != float("inf"):
            if last is not None and t > last:
                sleep((t - last) / speed)
            last = t
        yield ev


def mark_replay(events: Iterable[Event]) -> Iterator[Event]:
    """The events with ``RunStarted.replay`` set, so a face can say it shows a recording."""
    for ev in events:
        yield dataclasses.replace(ev, replay=True) if isinstance(ev, RunStarted) else ev


def replay_headless(path: str | os.PathLike, out=None, *, as_json: bool = False, speed: float = float("inf"),
                    on_warning: Callable[[str], None] | None = _warn):
    """Stream a trace into the headless face (text + summary, or JSON). Returns its RunStats."""
    from .headless import consume
    from .trace import iter_trace

    _header, reader = iter_trace(path, on_warning=on_warning)
    try:
        first = next(reader, None)
        events = itertools.chain([first] if first is not None else [], reader)
        if isinstance(first, AttachStarted):
            return replay_attach_headless(paced(events, speed), out or sys.stdout, as_json=as_json)
        stats, _ = consume(paced(events, speed), out or sys.stdout, as_json=as_json)
    finally:
        reader.close()
    return stats


def replay_attach_headless(events: Iterable[Event], out, *, as_json: bool = False):
    """An attach trace through the live attach's own headless face; returns its AttachStats."""
    from .attach.text import HeadlessFace

    face = HeadlessFace(out, as_json)
    for ev in events:
        face(ev)
    return face.stats


def is_attach_trace(events: list[Event]) -> bool:
    return bool(events) and isinstance(events[0], AttachStarted)


def load_for_tui(path: str | os.PathLike, on_warning: Callable[[str], None] | None = _warn) -> tuple[dict, list[Event]]:
    """Header and the (replay-marked) events of a trace, for the TUI's player (which seeks back and forth)."""
    from .trace import iter_trace

    header, reader = iter_trace(path, on_warning=on_warning)
    events = list(mark_replay(reader))
    if is_attach_trace(events):
        return header, events
    if not any(isinstance(ev, PassEvent) for ev in events):
        raise SpectuiError(f"{os.fspath(path)}: the trace holds no passes to replay")
    return header, events


@click.command("replay", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("file", type=str)
@click.option("--headless", is_flag=True, help="no TUI: print the text and the summary the live run printed")
@click.option("--json", "as_json", is_flag=True, help="with --headless: the live run's JSON object")
@click.option("--speed", type=str, default=None,
              help="0.25..8 or 'max' (TUI default 1 = recorded speed; headless default max)")
@click.option("--theme", type=str, default=None, help="TUI theme (see themes/)")
def replay_cmd(file: str, headless: bool, as_json: bool, speed: str | None, theme: str | None) -> None:
    """Replay a recorded trace FILE in the TUI, or --headless."""
    from .cli import fail

    try:
        if as_json and not headless:
            raise SpectuiError("--json needs --headless")
        if headless:
            sp = parse_speed(speed, default=float("inf"))
            try:
                replay_headless(file, sys.stdout, as_json=as_json, speed=sp)
            except BrokenPipeError:  # | head: stop quietly
                try:
                    sys.stdout = open(os.devnull, "w")
                except OSError:
                    pass
            return
        sp = parse_speed(speed, default=1.0)
        from .tui.themes import check_theme

        check_theme(theme)  # an unknown theme fails before reading a long trace
        _header, events = load_for_tui(file)
        if is_attach_trace(events):
            from .tui.attach_app import run_attach_replay

            sys.exit(run_attach_replay(events, theme=theme, speed=sp) or 0)
        from .tui.app import run_replay

        sys.exit(run_replay(events, theme=theme, speed=sp) or 0)
    except SpectuiError as exc:
        fail(str(exc))
