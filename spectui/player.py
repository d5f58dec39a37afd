"""ReplayPlayer: plays a recorded event list back in (scaled) real time. No Textual.

The cursor counts events already delivered. ``iter(control)`` yields the remaining events, sleeping
between passes for the recorded inter-pass delay (difference of ``Timing.t_end``) divided by the
speed; it honours ``control.stopped`` and ``control.wait_if_paused()`` and follows ``seek()`` calls
made from another thread (the UI steps back by rebuilding its state from ``prefix(cursor)``).
"""

from __future__ import annotations

import threading
import time
from typing import Iterable, Iterator

from .errors import SpectuiError
from .events import Event, PassEvent, SettingsChanged

SPEEDS: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, float("inf"))  # inf = "max"
_SLICE_S = 0.05  # sleep in slices this long so pause / seek / speed changes act quickly


def speed_label(speed: float) -> str:
    return "max" if speed == float("inf") else f"{speed:g}x"


def parse_speed(value: str | float) -> float:
    """'max', '2', '2x', 0.5 ... -> a speed in SPEEDS' range (0.25..8 or inf)."""
    if isinstance(value, str):
        v = value.strip().lower()
        if v in ("max", "inf"):
            return float("inf")
        v = v.removesuffix("x")
        try:
            value = float(v)
        except ValueError:
            raise SpectuiError(f"bad replay speed {value!r}: use 0.25..8 or 'max'") from None
    if not (0.25 <= value <= 8.0 or value == float("inf")):
        raise SpectuiError(f"bad replay speed {value:g}: use 0.25..8 or 'max'")
    return float(value)


def _event_time(ev: Event) -> float | None:
    if isinstance(ev, PassEvent):
        return ev.timing.t_end
    if isinstance(ev, SettingsChanged):
        return ev.t
    return None


class ReplayPlayer:
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
        """Yield (position, event) from the cursor on, with the recorded delays scaled by speed."""
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
            t = _event_time(ev)
            if t is not None and last_t is not None and self._speed != float("inf"):
                if anchor is None or anchor[2] != self._speed:
                    anchor = (time.monotonic(), last_t, self._speed)
                deadline = anchor[0] + max(0.0, t - anchor[1]) / self._speed
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
