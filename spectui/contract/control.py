"""Thread-safe run control: the settings a UI (or script) changes while the engine runs.

The engine's loop reads a consistent ``Settings`` snapshot between passes, never during one, so a key
press takes effect at the next pass. Also carries stop and pause requests. No UI imports.
"""

from __future__ import annotations

import dataclasses
import threading

from .draft_length import DRAFT_MAX_LIMIT, clamp_draft_length
from .events import AUTO_MODES, Settings, is_drafter_name

__all__ = ["DRAFT_MAX_LIMIT", "P_MIN_LIMIT", "TEMPERATURE_LIMIT", "RunControl", "clamp_settings"]
TEMPERATURE_LIMIT = 2.0
P_MIN_LIMIT = 1.0


def clamp_settings(s: Settings) -> Settings:
    """Bring settings into their documented ranges (k 0..32, temperature 0..2, a drafter's name, p-min 0..1,
    draft-min 0..32, pipeline a bool)."""
    k = clamp_draft_length(s.draft_max)
    t = round(max(0.0, min(TEMPERATURE_LIMIT, float(s.temperature))), 3)
    drafter = s.drafter if is_drafter_name(s.drafter) else "model"
    auto = s.auto if s.auto in AUTO_MODES else None
    p_min = round(max(0.0, min(P_MIN_LIMIT, float(s.draft_p_min))), 3)
    n_min = clamp_draft_length(s.draft_min)
    return dataclasses.replace(s, draft_max=k, temperature=t, drafter=drafter, auto=auto, draft_p_min=p_min,
                               draft_min=n_min, pipeline=bool(s.pipeline))


class RunControl:
    """Shared between the thread that runs the engine and whoever steers it."""

    def __init__(self, settings: Settings | None = None) -> None:
        self._lock = threading.Lock()
        self._settings = clamp_settings(settings or Settings())
        self._stop = threading.Event()
        self._running = threading.Event()  # set = not paused
        self._running.set()
        self._on_stop: list = []  # called by stop() (the engine's abort of a decode in progress)

    # settings -----------------------------------------------------------
    @property
    def settings(self) -> Settings:
        with self._lock:
            return self._settings

    def update(self, **changes) -> Settings:
        """Change some settings (clamped to their ranges); returns the new settings."""
        with self._lock:
            self._settings = clamp_settings(dataclasses.replace(self._settings, **changes))
            return self._settings

    # stop / pause ---------------------------------------------------------
    def stop(self) -> None:
        self._stop.set()
        self._running.set()  # wake a paused loop so it can see the stop
        for fn in list(self._on_stop):  # no lock: stop() may run in a signal handler
            fn()

    def on_stop(self, fn) -> None:
        """Call ``fn()`` when the run is stopped (at once if it is already): the engine ends the llama_decode
        in progress then (spectui.engine.llama.abort), so a stop takes effect mid-pass."""
        if fn not in self._on_stop:
            self._on_stop.append(fn)
        if self._stop.is_set():
            fn()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    def wait_if_paused(self, timeout: float | None = None) -> None:
        """Block while paused (returns at once when running or stopped). Running, it takes no lock: a stop
        signal's handler (``stop()``, which sets this event under its lock) may run in the middle of this call,
        on this same thread, and would wait forever for a lock its own thread holds."""
        if not self._running.is_set():
            self._running.wait(timeout)
