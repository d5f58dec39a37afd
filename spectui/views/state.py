"""ScreenState: what the TUI shows, fed event by event from the worker thread. No Textual here.

The worker calls ``feed(event)`` (cheap: RunStats.update plus a few appends under a lock); the UI
pulls ``snapshot()`` when it paints, and only when ``version`` changed (new passes are painted at most
``FRAME_HZ`` times a second: spectui.tui.shared.paced_app). Every number is a field of
``spectui.analysis.stats.StatsSnapshot``; the per-pass series below only shape the sparklines.
``spectui.commands.cast`` can reuse this to render frames without a terminal.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field

from ..analysis.stats import RunStats, StatsSnapshot
from ..contract.events import (
    PLAIN,
    Event,
    PassEvent,
    RunEnded,
    RunStarted,
    Settings,
    SettingsChanged,
)
from ..contract.text import visible_cells
from .tree import tree_counts

# Kinds of committed tokens in the stream.
K_ACCEPTED = "accepted"  # an accepted draft token
K_CORRECTION = "correction"  # the target's token replacing a rejected draft
K_BONUS = "bonus"  # the target's extra token after all drafts were accepted
K_PLAIN = "plain"  # target token of a pass without drafts (k = 0) or the prefill token

MAX_TOKENS = 4000  # committed tokens kept for display (the tail of the text)
MAX_SERIES = 600  # passes kept for the sparklines
MAX_RECENT = 40  # passes kept for the recent-passes list


def clean_text(text: str) -> str:
    """Token text for the cell faces: a tab as four spaces, a carriage return dropped, and every code point
    that must not reach a terminal, or that terminals measure differently (a zero-width joiner, a tag
    character), as its visible escape (``contract.text.visible_cells``; it was a space, which hid them)."""
    if "\t" in text or "\r" in text:
        text = text.replace("\t", "    ").replace("\r", "")
    return visible_cells(text)


@dataclass(frozen=True)
class PassView:
    """One pass, reduced to what the ribbon and the token animation need."""

    index: int
    prefill: bool
    k: int
    drafts: tuple[tuple[str, str], ...]  # (text, verdict) per draft position
    target: tuple[str, str] | None  # (text, kind) of the target's token
    n_accepted: int
    n_emitted: int
    wall_ms: float
    settings: Settings
    draft_stop: str = ""  # PassEvent.draft_stop: why drafting stopped ("p_min": below --draft-p-min)
    draft_stop_p: float = -1.0  # the draft confidence that stopped it (p_min), else -1
    event: PassEvent | None = field(default=None, compare=False, repr=False)  # the inspector's source
    # --pipeline (PassEvent.pipeline): the drafts were drafted during the previous verify; the speculative
    # tokens this pass threw away (texts) and why
    pipelined: bool = False
    overlapped: bool = False
    thrown: tuple[str, ...] = ()
    thrown_why: str = ""
    drafter: str = ""  # PassEvent.drafter: who proposed the drafts ("" without drafts)
    tree: tuple[int, ...] = ()  # a tree pass: (nodes verified, branches pruned) (views.tree); () for a chain's


@dataclass(frozen=True)
class ScreenSnapshot:
    version: int
    stats: StatsSnapshot
    start: RunStarted | None
    end: RunEnded | None
    settings: Settings | None  # settings of the latest pass (or the start)
    tokens: tuple[tuple[str, str], ...]  # committed (text, kind), tail of the run
    last_pass_tokens: int  # how many of the last entries of ``tokens`` belong to ``last_pass``
    last_pass: PassView | None
    recent: tuple[PassView, ...]  # newest last
    series: tuple[tuple[int, int, float], ...]  # (pass index, tokens emitted, wall ms) per decode pass
    markers: tuple[tuple[int, str], ...]  # (first pass index with new settings, label)
    n_events: int
    error: str = ""


def settings_label(old: Settings, new: Settings) -> str:
    parts = []
    if old.draft_max != new.draft_max:
        parts.append(f"k{new.draft_max}")
    if old.temperature != new.temperature:
        parts.append(f"T{new.temperature:g}")
    if old.drafter != new.drafter:
        parts.append(new.drafter)
    if old.auto != new.auto:
        parts.append(f"auto:{new.auto or 'off'}")
    if old.draft_p_min != new.draft_p_min:
        parts.append(f"p{new.draft_p_min:g}")
    return ",".join(parts) or "settings"


@dataclass
class ScreenState:
    """Thread-safe accumulator of one run's events for the screen."""

    keep_events: bool = True
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self._reset_unlocked()

    def _reset_unlocked(self) -> None:
        self.version = getattr(self, "version", 0) + 1
        self.stats = RunStats()
        self.start: RunStarted | None = None
        self.end: RunEnded | None = None
        self.settings: Settings | None = None
        self.tokens: deque = deque(maxlen=MAX_TOKENS)
        self.last_pass_tokens = 0
        self.last_pass: PassView | None = None
        self.recent: deque = deque(maxlen=MAX_RECENT)
        self.series: deque = deque(maxlen=MAX_SERIES)
        self.markers: deque = deque(maxlen=64)
        self.events: list[Event] = []
        self.n_events = 0
        self.error = ""

    # ------------------------------------------------------------------ feeding (worker thread)
    def feed(self, ev: Event, index: int | None = None) -> bool:
        """Add one event. With ``index`` (replay), an event out of sequence is dropped (returns False)."""
        with self._lock:
            if index is not None and index != self.n_events:
                return False
            self._feed_unlocked(ev)
            self.version += 1
            return True

    def rebuild(self, events) -> None:
        """Reset and feed a prefix of events in one go (replay seeking)."""
        with self._lock:
            self._reset_unlocked()
            for ev in events:
                self._feed_unlocked(ev)
            self.version += 1

    def set_error(self, message: str) -> None:
        with self._lock:
            self.error = message
            self.version += 1

    def _feed_unlocked(self, ev: Event) -> None:
        self.stats.update(ev)
        self.n_events += 1
        if self.keep_events:
            self.events.append(ev)
        if isinstance(ev, PassEvent):
            self._pass(ev)
        elif isinstance(ev, RunStarted):
            self.start = ev
            self.settings = ev.settings
        elif isinstance(ev, SettingsChanged):
            self.markers.append((ev.before_pass, settings_label(ev.old, ev.new)))
            self.settings = ev.new
        elif isinstance(ev, RunEnded):
            self.end = ev

    def _pass(self, ev: PassEvent) -> None:
        drafts = tuple((clean_text(d.text), d.verdict) for d in ev.drafts)
        tgt = None if ev.target is None else (clean_text(ev.target.text), ev.target.kind)
        pipe = ev.pipeline
        view = PassView(ev.index, ev.prefill, ev.k, drafts, tgt, ev.n_accepted, len(ev.emitted),
                        ev.timing.wall_ms, ev.settings, ev.draft_stop, ev.draft_stop_p, ev,
                        pipelined=pipe is not None and ev.settings.pipeline,
                        overlapped=pipe is not None and pipe.overlapped,
                        thrown=tuple(clean_text(t.text) for t in pipe.thrown) if pipe is not None else (),
                        thrown_why=pipe.thrown_why if pipe is not None else "", drafter=ev.drafter,
                        tree=tree_counts(ev))
        for i, tok in enumerate(ev.emitted):
            if i < ev.n_accepted:
                kind = K_ACCEPTED
            elif ev.target is None or ev.prefill or ev.target.kind == PLAIN:
                kind = K_PLAIN
            else:
                kind = ev.target.kind
            self.tokens.append((clean_text(tok.text), kind))
        self.last_pass_tokens = len(ev.emitted)
        self.last_pass = view
        self.recent.append(view)
        self.settings = ev.settings
        if not ev.prefill:
            self.series.append((ev.index, len(ev.emitted), ev.timing.wall_ms))

    # ------------------------------------------------------------------ reading (UI thread)
    def snapshot(self) -> ScreenSnapshot:
        with self._lock:
            return ScreenSnapshot(
                version=self.version,
                stats=self.stats.snapshot(),
                start=self.start,
                end=self.end,
                settings=self.settings,
                tokens=tuple(self.tokens),
                last_pass_tokens=self.last_pass_tokens,
                last_pass=self.last_pass,
                recent=tuple(self.recent),
                series=tuple(self.series),
                markers=tuple(self.markers),
                n_events=self.n_events,
                error=self.error,
            )

    def events_so_far(self) -> list[Event]:
        with self._lock:
            return list(self.events)
