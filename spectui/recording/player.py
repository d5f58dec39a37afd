"""The one replay clock: recorded events back at their recorded pace divided by a speed. No Textual.

``event_time`` is when an event happened in its recording (a pass's ``Timing.t_end``, a settings change's
or a watched server's event's ``t``) and ``gap_s`` the wait between two such times at a speed; both
players below use them. ``paced(events, speed)`` is the plain stream (headless replay, the attach face's
replay); ``ReplayPlayer`` the one a user steers (seek / step / speed, pause). ``load_for_tui`` reads a
trace for either, marked as a replay.

ReplayPlayer: plays a recorded event list back in (scaled) real time.

The cursor counts events already delivered. ``iter(control)`` yields the remaining events, sleeping
between passes for the recorded inter-pass delay (difference of ``Timing.t_end``) divided by the
speed; it honours ``control.stopped`` and ``control.wait_if_paused()`` and follows ``seek()`` calls
made from another thread (the UI steps back by rebuilding its state from ``prefix(cursor)``).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
import time
from typing import Callable, Iterable, Iterator

from ..contract.errors import SpectuiError
from ..contract.events import ATTACH_EVENT_TYPES, AttachStarted, Event, PassEvent, RunStarted, SettingsChanged
from ..contract.params import speed_value
from ..contract.text import visible_line
from .trace import iter_trace

SPEEDS: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, float("inf"))  # inf = "max"
_SLICE_S = 0.05  # sleep in slices this long so pause / seek / speed changes act quickly


def speed_label(speed: float) -> str:
    return "max" if speed == float("inf") else f"{speed:g}x"


def parse_speed(value: str | float | None, default: float = 1.0) -> float:
    """'max', '2', '2x', 0.5 ... -> a speed in SPEEDS' range (0.25..8 or inf); None -> ``default``."""
    if value is None:
        return default
    try:
        return speed_value(value)  # the --speed option's own rule (contract.params)
    except ValueError as exc:
        raise SpectuiError(f"--speed: {exc}") from None


def event_time(ev: Event) -> float | None:
    """When ``ev`` happened in its recording (seconds), or None for events without a time (start, end)."""
    if isinstance(ev, PassEvent):
        return ev.timing.t_end
    if isinstance(ev, SettingsChanged) or (isinstance(ev, ATTACH_EVENT_TYPES) and hasattr(ev, "t")):
        return ev.t
    return None


def gap_s(last_t: float | None, t: float | None, speed: float) -> float:
    """Seconds to wait between two recorded times at ``speed`` (0 for the first, untimed or at max speed)."""
    if t is None or last_t is None or speed == float("inf"):
        return 0.0
    return max(0.0, t - last_t) / speed


def paced(events: Iterable[Event], speed: float, sleep: Callable[[float], None] = time.sleep) -> Iterator[Event]:
    """The events with the recorded delays between them divided by ``speed``.

    Args:
        events: recorded events (a trace's, in order).
        speed: the replay speed (``parse_speed``; inf: no delay).
        sleep: how to wait (tests: a fake clock).

    Returns:
        An iterator of the same events, each yielded when it is due.
    """
    last: float | None = None
    for ev in events:
        t = event_time(ev)
        wait = gap_s(last, t, speed)
        if wait > 0:
            sleep(wait)
        if t is not None:
            last = t
        yield ev


def warn_stderr(message: str) -> None:
    print(f"spectui: warning: {visible_line(message)}", file=sys.stderr)


def mark_replay(events: Iterable[Event]) -> Iterator[Event]:
    """The events with ``RunStarted.replay`` set, so a face can say it shows a recording."""
    for ev in events:
        yield dataclasses.replace(ev, replay=True) if isinstance(ev, RunStarted) else ev


def is_attach_trace(events: list[Event]) -> bool:
    return bool(events) and isinstance(events[0], AttachStarted)


def load_for_tui(path: str | os.PathLike,
                 on_warning: Callable[[str], None] | None = warn_stderr) -> tuple[dict, list[Event]]:
    """Header and the (replay-marked) events of a trace, for the TUI's player (which seeks back and forth).

    Args:
        path: the trace.
        on_warning: called with each warning (default: one ``spectui: warning:`` line on stderr).

    Returns:
        (the header, the events with ``RunStarted.replay`` set).

    Raises:
        SpectuiError: not a readable trace (``TraceError``), or a run's trace with no pass.
    """
    header, reader = iter_trace(path, on_warning=on_warning)
    events = list(mark_replay(reader))
    if is_attach_trace(events):
        return header, events
    if not any(isinstance(ev, PassEvent) for ev in events):
        raise SpectuiError(f"{os.fspath(path)}: the trace holds no passes to replay")
    return header, events


class ReplayPlayer:
    """Plays a recorded event list back in (scaled) real time; the user steers it (see the module docstring).

    Args:
        events: the events (``load_for_tui``'s), kept in memory: the player seeks back and forth.
        speed: the starting speed (``parse_speed``: 0.25..8, "max").

    Raises:
        SpectuiError: no events, or a bad speed.
    """

    def __init__(self, events: Iterable[Event], speed: float | str = 1.0) -> None:
        self.events: list[Event] = list(events)
        if not self.events:
            raise SpectuiError("the trace holds no events")
        self._lock = threading.Lock()
        self._cursor = 0
        self._speed = parse_speed(speed)
        self._seek_epoch = 0

    # ------------------------------------------------------------------ state
    def __len__(self) -> int:
        return len(self.events)

    @property
    def cursor(self) -> int:
        with self._lock:
            return self._cursor

    @property
    def at_end(self) -> bool:
        return self.cursor >= len(self.events)

    @property
    def speed(self) -> float:
        return self._speed

    @speed.setter
    def speed(self, value: float | str) -> None:
        self._speed = parse_speed(value)

    def faster(self) -> float:
        i = SPEEDS.index(self._nearest())
        self._speed = SPEEDS[min(i + 1, len(SPEEDS) - 1)]
        return self._speed

    def slower(self) -> float:
        i = SPEEDS.index(self._nearest())
        self._speed = SPEEDS[max(i - 1, 0)]
        return self._speed

    def _nearest(self) -> float:
        return min(SPEEDS, key=lambda s: abs((s if s != float("inf") else 1e9) - self._speed))

    # ------------------------------------------------------------------ moving
    def seek(self, i: int) -> int:
        with self._lock:
            self._cursor = max(0, min(len(self.events), int(i)))
            self._seek_epoch += 1
            return self._cursor

    def _pass_positions(self) -> list[int]:
        return [i for i, ev in enumerate(self.events) if isinstance(ev, PassEvent)]

    def step_forward(self) -> int:
        """Move past the next pass (and any non-pass events before it)."""
        cur = self.cursor
        nxt = [i for i in self._pass_positions() if i >= cur]
        return self.seek(nxt[0] + 1 if nxt else len(self.events))

    def step_back(self) -> int:
        """Move back so the last delivered pass is undone."""
        cur = self.cursor
        prev = [i for i in self._pass_positions() if i < cur]
        return self.seek(prev[-1] if prev else 0)

    def jump_start(self) -> int:
        return self.seek(0)

    def jump_end(self) -> int:
        return self.seek(len(self.events))

    def prefix(self, i: int | None = None) -> list[Event]:
        """The events before position ``i`` (default: the cursor): rebuild state from these."""
        return self.events[: self.cursor if i is None else max(0, i)]

    # ------------------------------------------------------------------ playing
    def iter_indexed(self, control) -> Iterator[tuple[int, Event]]:
        """(position, event) from the cursor on, with the recorded delays scaled by speed.

        Args:
            control: what stops and pauses the replay (a ``RunControl``: ``stopped``, ``paused``,
                ``wait_if_paused``); a ``seek`` from another thread is followed at once.

        Returns:
            An iterator of (the event's position, the event), each yielded when it is due.
        """
        last_t: float | None = None
        epoch = -1
        # (wall clock, trace time, speed) the schedule counts from: each event is due at its own recorded
        # time after the anchor, so the time spent delivering and sleeping does not add up over a long
        # recording (a race's finish times stay its traces'); a seek, a pause or a new speed re-anchors
        anchor: tuple[float, float, float] | None = None
        while not control.stopped:
            control.wait_if_paused()
            if control.stopped:
                return
            with self._lock:
                i = self._cursor
                if self._seek_epoch != epoch:  # a seek: do not wait for a delay across the jump
                    epoch = self._seek_epoch
                    last_t = None
                    anchor = None
                if i >= len(self.events):
                    return
                ev = self.events[i]
            t = event_time(ev)
            if t is not None and last_t is not None and self._speed != float("inf"):
                if anchor is None or anchor[2] != self._speed:
                    anchor = (time.monotonic(), last_t, self._speed)
                deadline = anchor[0] + gap_s(anchor[1], t, self._speed)
                interrupted = False
                while not control.stopped:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    time.sleep(min(left, _SLICE_S))
                    if control.paused or self._seek_epoch != epoch:
                        interrupted = True
                        break
                if interrupted or control.stopped:
                    anchor = None  # after a pause the next event waits its whole gap again
                    continue  # re-check pause / seek before delivering anything
            with self._lock:
                if self._seek_epoch != epoch or self._cursor != i:
                    continue
                self._cursor = i + 1
            if t is not None:
                last_t = t
                if anchor is None:
                    anchor = (time.monotonic(), t, self._speed)
            yield i, ev

    def iter(self, control) -> Iterator[Event]:
        for _, ev in self.iter_indexed(control):
            yield ev

    __call__ = iter
