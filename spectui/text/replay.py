"""A recorded trace through the text faces (``spectui replay --headless``, ``spectui demo --headless``): a run
trace into the live run's own :func:`spectui.text.run.consume`, an attach trace into the live attach's
:class:`spectui.text.attach.HeadlessFace`, so a replay prints what the live command printed. No Textual."""

from __future__ import annotations

import itertools
import os
import sys
import threading
import time
from typing import Callable, Iterable, Iterator

from ..contract.events import AttachStarted, Event
from ..recording.player import paced, warn_stderr
from ..recording.trace import iter_trace
from .attach import HeadlessFace
from .run import consume


def until(events: Iterable[Event], stop) -> Iterator[Event]:
    """The events until ``stop`` (a threading.Event) is set: a signal's clean stop of a replay."""
    for ev in events:
        if stop.is_set():
            return
        yield ev


def replay_headless(path: str | os.PathLike, out=None, *, as_json: bool = False, speed: float = float("inf"),
                    on_warning: Callable[[str], None] | None = warn_stderr, stop=None):
    """Stream a trace into the headless face (text + summary, or JSON). Returns its RunStats. ``stop`` (a
    threading.Event): when set, the replay ends there and the summary of what was shown is printed."""
    stop = stop if stop is not None else threading.Event()
    _header, reader = iter_trace(path, on_warning=on_warning)
    try:
        first = next(reader, None)
        events = until(itertools.chain([first] if first is not None else [], reader), stop)
        sleep = stop.wait if speed != float("inf") else time.sleep
        if isinstance(first, AttachStarted):
            return replay_attach_headless(paced(events, speed, sleep), out or sys.stdout, as_json=as_json)
        stats = consume(paced(events, speed, sleep), out or sys.stdout, as_json=as_json)
    finally:
        reader.close()
    return stats


def replay_attach_headless(events: Iterable[Event], out, *, as_json: bool = False):
    """An attach trace through the live attach's own headless face; returns its AttachStats."""
    face = HeadlessFace(out, as_json)
    for ev in events:
        face(ev)
    return face.stats
