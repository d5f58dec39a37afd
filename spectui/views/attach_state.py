"""AttachState: what the attach screen shows, fed event by event from the attach worker thread (no Textual).

The worker calls ``feed(ev)`` for every attach event (a live :class:`~spectui.attach.session.AttachSession`
or a replayed trace); the UI thread calls ``view(...)`` at most once per paint and gets one frozen
:class:`AttachView` that it hands to the widgets. Every number comes from
:class:`~spectui.analysis.attach_stats.AttachStats` (the same statistics as the headless face and the JSON); this
module only adds what a screen needs over time: the tokens/s series per round of scrapes and the newest
streamed chunk (drawn apart, so the text visibly grows as it arrives).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from ..analysis.attach_stats import AttachSnapshot, AttachStats, Window
from ..contract.events import (
    KIND_LLAMA_SERVER,
    KIND_VLLM,
    AttachEnded,
    AttachStarted,
    MetricsScraped,
    RequestChunk,
    RequestEnded,
    RequestStarted,
)

SERIES_MAX = 600  # rounds of scrapes kept for the sparklines (10 minutes at the default 1 s)

# What the k keys would do. llama-server's request field speculative.n_max is compiled out (inside #if 0 in
# tools/server/server-schema.cpp of the llama.cpp in llama-cpp-python 0.3.36); vLLM has no per-request
# draft length. So attach offers no k keys and says why, instead of pretending.
DRAFT_LENGTH_NOTE = {
    KIND_LLAMA_SERVER: "k: server's --spec-draft-n-max (per-request n_max ignored)",
    KIND_VLLM: "k: server's num_speculative_tokens (no per-request k)",
}
DRAFT_LENGTH_DEFAULT = "k: the server's own (not settable per request)"


@dataclass(frozen=True)
class RatePoint:
    """One round of scrapes: the watched deployment's drafted / accepted / generated tokens per second."""

    t: float
    drafted: float
    accepted: float
    generated: float


@dataclass(frozen=True)
class AttachView:
    """Everything one paint of the attach screen shows (frozen: widgets only read it)."""

    snap: AttachSnapshot | None = None
    start: AttachStarted | None = None
    end: AttachEnded | None = None
    series: tuple[RatePoint, ...] = ()
    text: str = ""  # request mode: the streamed text before the newest chunk
    newest: str = ""  # the newest chunk while the request streams (drawn highlighted)
    kinds: tuple[str, ...] = ()  # what each URL turned out to be, in the order given
    run_state: tuple[str, str] = ("CONNECTING", "blue")  # badge text, colour
    replay: bool = False
    theme: str = ""
    version: int = -1

    @property
    def request_mode(self) -> bool:
        return bool(self.start and self.start.prompt)

    @property
    def focus(self) -> Window | None:
        """The window the summary panels show: the sum over engines when there are several, else the one."""
        if self.snap is None:
            return None
        return self.snap.interval_sum or (self.snap.interval[0] if self.snap.interval else None)

    @property
    def focus_session(self) -> Window | None:
        if self.snap is None:
            return None
        return self.snap.session_sum or (self.snap.session[0] if self.snap.session else None)

    @property
    def draft_length_note(self) -> str:
        kinds = {k for k in self.kinds if k}
        if len(kinds) == 1:
            return DRAFT_LENGTH_NOTE.get(kinds.pop(), DRAFT_LENGTH_DEFAULT)
        return DRAFT_LENGTH_DEFAULT


@dataclass
class AttachState:
    """Thread-safe: ``feed`` from the worker, ``view`` from the UI thread."""

    stats: AttachStats = field(default_factory=AttachStats)
    start: AttachStarted | None = None
    end: AttachEnded | None = None
    series: list[RatePoint] = field(default_factory=list)
    chunks: list[str] = field(default_factory=list)
    streaming: bool = False
    kinds: dict[str, str] = field(default_factory=dict)
    error: str = ""
    version: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _last_url: str = ""

    def feed(self, ev: object) -> None:
        with self._lock:
            self.stats.update(ev)
            self.version += 1
            if isinstance(ev, AttachStarted):
                self.start = ev
                self._last_url = ev.targets[-1].url if ev.targets else ""
                self.kinds = {t.url: t.kind for t in ev.targets}
            elif isinstance(ev, MetricsScraped):
                if ev.kind or ev.url not in self.kinds:
                    self.kinds[ev.url] = ev.kind
                if ev.url == self._last_url:  # a round of scrapes is complete (as the headless face counts)
                    self._round(ev.t)
            elif isinstance(ev, RequestStarted):  # several requests: the panel streams the current one
                self.chunks = []
            elif isinstance(ev, RequestChunk):
                self.chunks.append(ev.text)
                self.streaming = True
            elif isinstance(ev, RequestEnded):
                self.streaming = False
            elif isinstance(ev, AttachEnded):
                self.end = ev

    def set_error(self, message: str) -> None:
        with self._lock:
            self.error = message
            self.version += 1

    def _round(self, t: float) -> None:
        snap = self.stats.snapshot()
        w = snap.interval_sum or (snap.interval[0] if snap.interval else None)
        if w is None or w.dt <= 0:
            return
        self.series.append(RatePoint(t, w.drafted_tps or 0.0, w.accepted_tps or 0.0, w.generated_tps or 0.0))
        del self.series[:-SERIES_MAX]

    def view(self, run_state: tuple[str, str], replay: bool, theme: str) -> AttachView:
        with self._lock:
            snap = self.stats.snapshot()
            chunks = self.chunks
            newest = chunks[-1] if chunks and self.streaming else ""
            text = "".join(chunks[:-1] if newest else chunks)
            order = [t.url for t in self.start.targets] if self.start else list(self.kinds)
            return AttachView(
                snap=snap, start=self.start, end=self.end, series=tuple(self.series), text=text, newest=newest,
                kinds=tuple(self.kinds.get(u, "") for u in order), run_state=run_state, replay=replay,
                theme=theme, version=self.version,
            )
