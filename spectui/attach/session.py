"""The attach session: what ``spectui attach`` watches, UI-free (the command, the TUI's worker and the tests run it).

Two producer threads put events on one queue: the scraper (every ``interval``) and, with a prompt, one
streaming request. :meth:`AttachSession.run` consumes them in arrival order and hands each event to its
``sink`` (statistics, the optional trace, the face); ``AttachEnded`` is always the last event.
:meth:`AttachSession.failure` says why a session that ended failed (the command's exit status). No Textual.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Any, Callable

from ..analysis.attach_stats import AttachStats
from ..contract.events import (
    KIND_LLAMA_SERVER,
    REQ_ERROR,
    REQ_STOPPED,
    AttachEnded,
    AttachStarted,
    MetricsScraped,
    RequestEnded,
    RequestStarted,
    Target,
)
from .request import stream_completion
from .scraper import Scraper

_TICK = object()  # one round of scrapes is complete
_REQUEST_DONE = object()


class AttachSession:
    """The attach loop, UI-free: events -> ``sink`` (statistics, trace, face). Used by the CLI and tests.

    Args:
        urls: the servers to scrape, already checked (``attach.urls.check_urls``); the first one gets the request.
        interval: seconds between rounds of scrapes.
        timeout: seconds one scrape may take (default 0.8 x interval, within 0.2-5 s).
        prompt: with a prompt, one streamed completion is sent to ``urls[0]`` and timed (None: watch only); a
            list: each prompt in turn, one request at a time (each request's acceptance, outliers flagged).
        each: send the prompts to every URL in turn, not only the first (engines compared on the same prompts).
        n_predict: the request's token limit.
        draft_max: ``speculative.n_max`` sent with the request (-1: not sent).
        count: stop after this many rounds of scrapes (0: no limit).
        request_timeout: seconds the whole request and its stream may take.
        duration: stop after this many seconds (0: no deadline).

    ``stop`` (a ``threading.Event``) ends the session from any thread; ``stats`` is its ``AttachStats``.
    """

    def __init__(
        self,
        urls: list[str],
        *,
        interval: float = 1.0,
        timeout: float | None = None,
        prompt: str | list[str] | tuple[str, ...] | None = None,
        n_predict: int = 128,
        each: bool = False,
        draft_max: int = -1,
        count: int = 0,
        request_timeout: float = 600.0,  # -p: the whole request and its stream (q, --count, --duration end it sooner)
        duration: float = 0.0,
    ) -> None:
        self.urls = urls
        self.interval = interval
        self.timeout = timeout if timeout is not None else max(0.2, min(5.0, 0.8 * interval))
        self.prompts = [prompt] if isinstance(prompt, str) else list(prompt or [])
        self.prompt = self.prompts[0] if self.prompts else None  # request mode when not None
        self.request_urls = list(urls) if each else list(urls[:1])
        self.n_predict = n_predict
        self.draft_max = draft_max
        self.count = count
        self.request_timeout = request_timeout
        self.duration = duration  # seconds; 0: no deadline
        self.stop = threading.Event()
        # what the exit status is made of (failure()): which URLs ever answered, each one's last error,
        # and how the request ended
        self.answered: set[str] = set()
        self.last_error: dict[str, str] = {}
        self.request_end: RequestEnded | None = None
        self.request_failed = ""  # the first request that failed, in one line
        self._request_url = ""
        self.end_reason = ""
        self.ended_by = ""  # "duration" when --duration ended the session (failure() says which limit)
        self.stats = AttachStats()
        self.t0 = time.monotonic()
        self.scraper = Scraper(urls, timeout=self.timeout, clock=self._clock)

    def _clock(self) -> float:
        return time.monotonic()

    def run(self, sink: Callable[[Any], None]) -> None:
        """Watch until stopped, the deadline, ``count`` rounds or the request's end.

        Args:
            sink: called on this thread with every event in arrival order, ``AttachStarted`` first and
                ``AttachEnded`` last (also on Ctrl+C or ``stop``).
        """
        q: queue.Queue = queue.Queue()
        self.scraper.t0 = self.t0
        emit = self._emitter(sink)
        emit(AttachStarted(
            started_at=time.time(), targets=tuple(Target(u) for u in self.urls), interval=self.interval,
            prompt=self.prompt or "", n_predict=self.n_predict if self.prompt else 0, draft_max=self.draft_max,
        ))
        threads = [threading.Thread(target=self._scrape_worker, args=(q,), name="spectui-attach-scrape", daemon=True)]
        if self.prompt is not None:
            threads.append(threading.Thread(target=self._request_worker, args=(q,), name="spectui-attach-request",
                                            daemon=True))
        reason = "stopped"
        try:
            # The baseline first (request mode: before the request, so the session window is the request).
            # polled (scrape_all): a signal stops it at once, and every scrape ends within --timeout
            for ev in self.scraper.scrape_all(self.stop):
                emit(ev)
            for th in threads:
                if not self.stop.is_set():
                    th.start()
            reason = self._consume(q, emit)
        except KeyboardInterrupt:
            reason = "stopped"
        finally:
            self._wind_down(q, threads, emit, reason)

    def _consume(self, q: queue.Queue, emit: Callable[[Any], None]) -> str:
        """The producers' events, in arrival order, until the session ends; returns why ("done" or "stopped")."""
        ticks = 0
        while not self.stop.is_set():
            if self.duration and self._clock() - self.t0 >= self.duration:
                self.ended_by = "duration"
                return "done"  # the deadline (--duration); failure() says whether it went well
            try:
                item = q.get(timeout=0.2)
            except queue.Empty:
                continue
            if item is _TICK:
                ticks += 1
                if self.count and ticks >= self.count:  # also in request mode: a request still
                    return "done"                        # running then is cut short (a failure)
            elif item is _REQUEST_DONE:
                self._final_scrapes(emit)
                return "done"
            else:
                emit(item)
        return "stopped"

    def _wind_down(self, q: queue.Queue, threads: list[threading.Thread], emit: Callable[[Any], None],
                   reason: str) -> None:
        """The session's end: the producers stopped (never waited on for long), a request cut short ended,
        ``AttachEnded`` last."""
        self.stop.set()
        for th in threads:  # a thread blocked in a read is a daemon: its scrape or request ends with
            if th.is_alive():  # the process (its Deadline); the session's end never waits on a server
                th.join(timeout=0.3)
        while not q.empty():  # a request cut short still ends with its RequestEnded
            item = q.get_nowait()
            if isinstance(item, RequestEnded):
                emit(item)
        if self.stats.request_running:  # blocked in a read: it ends with the process
            emit(RequestEnded(t=self._clock() - self.t0, reason=REQ_STOPPED))
        self.scraper.close()
        self.end_reason = reason
        emit(AttachEnded(t=self._clock() - self.t0, reason=reason))

    def _emitter(self, sink: Callable[[Any], None]) -> Callable[[Any], None]:
        def emit(ev: Any) -> None:
            if isinstance(ev, MetricsScraped):
                self.last_error[ev.url] = ev.error
                if not ev.error:
                    self.answered.add(ev.url)
            elif isinstance(ev, RequestStarted):
                self._request_url = ev.url
            elif isinstance(ev, RequestEnded):
                self.request_end = ev
                if ev.reason == REQ_ERROR and not self.request_failed:  # one request of several: say which
                    several = len(self.prompts) * len(self.request_urls) > 1
                    self.request_failed = f"{self._request_url}: {ev.error}" if several else ev.error
            self.stats.update(ev)
            sink(ev)

        return emit

    def failure(self) -> str:
        """Why the session failed ("" when it did what was asked): the -p request failed, or did not finish
        by --count / --duration; a session that ended on its own (--count, --duration, the request done)
        with a URL that never answered with Prometheus metrics, or was failing at the end. An open-ended
        watch the user ended (q) fails only by its request."""
        if self.prompt is not None:
            end = self.request_end
            if self.request_failed:
                return f"the request failed: {self.request_failed}"
            if (end is None or end.reason == REQ_STOPPED) and self.end_reason == "done":
                by = f"--duration {self.duration:g} s" if self.ended_by == "duration" else f"--count {self.count}"
                return f"the request did not finish within {by}"
        if self.end_reason != "done":
            return ""
        for url in self.urls:
            if url not in self.last_error:
                continue
            if url not in self.answered:
                return f"{url} never answered: {self.last_error[url]}"
            if self.last_error[url]:
                return f"{url} was failing at the end: {self.last_error[url]}"
        return ""

    def _scrape_worker(self, q: queue.Queue) -> None:
        next_at = time.monotonic() + self.interval
        while not self.stop.wait(max(0.0, next_at - time.monotonic())):
            for ev in self.scraper.scrape_all(self.stop):
                q.put(ev)
            q.put(_TICK)
            next_at = max(next_at + self.interval, time.monotonic())

    def _request_worker(self, q: queue.Queue) -> None:
        """Every prompt to every request URL, one request at a time (URL by URL), each as its events."""
        for url in self.request_urls:
            kind = self.scraper.kinds.get(url, "")
            for prompt in self.prompts:
                if self.stop.is_set():
                    break
                for ev in stream_completion(url, kind, prompt, self.n_predict, draft_max=self.draft_max,
                                            timeout=self.request_timeout, t0=self.t0, stop=self.stop):
                    q.put(ev)
        q.put(_REQUEST_DONE)

    def _final_scrapes(self, emit: Callable[[Any], None]) -> None:
        """After the requests: scrape until each llama-server's counters include its requests (llama-server adds a
        request's counts when its slot is released, just after the last chunk), at most ~2 s."""
        for _ in range(20):
            evs = self.scraper.scrape_all(self.stop)
            for ev in evs:
                emit(ev)
            snap = self.stats.snapshot()
            waiting = False
            for ev in evs:
                drafted = sum(r.draft_n for r in snap.requests if r.url == ev.url and r.draft_n > 0)
                if ev.error or ev.kind != KIND_LLAMA_SERVER or drafted <= 0:
                    continue
                win = next((w for w in snap.session if w.url == ev.url), None)
                waiting = waiting or win is None or win.draft_tokens < drafted
            if not waiting:
                return
            time.sleep(0.1)


__all__ = ["AttachSession"]
