"""``spectui attach URL [URL...]``: watch serving engines' speculative decoding (TUI or ``--headless``).

Two producer threads put events on one queue: the scraper (every ``--interval``) and, with ``-p``,
one streaming request. The session's thread consumes them in arrival order: statistics
(:class:`~spectui.analysis.attach_stats.AttachStats`), the optional trace (``--record``) and the face: the text or
JSON lines (main thread), or the TUI (``spectui.tui.attach.app``, imported only then, which runs the
session in its worker thread). Ctrl+C or SIGTERM stop both producers; ``AttachEnded`` is always the last
event written.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from typing import Any, Callable

import click

from ..contract.params import DURATION, SECONDS
from ..tui.shared.ascii import ascii_option

from ..contract.draft_length import parse_k
from ..contract.errors import SpectuiError
from ..contract.text import visible_line
from ..contract.exitcodes import FAILED, OK, SignalStop
from ..recording.trace import TraceWriter
from ..contract.events import (
    KIND_LLAMA_SERVER, REQ_ERROR, REQ_STOPPED, AttachEnded, AttachStarted, MetricsScraped, RequestEnded, Target,
)
from ..attach.request import stream_completion
from ..attach.scraper import Scraper
from ..text.attach import HeadlessFace, window_line
from ..attach.urls import check_urls
from ..analysis.attach_stats import AttachStats
from . import command
from .options import deprecated, draft_max_option

_TICK = object()  # one round of scrapes is complete
_REQUEST_DONE = object()


class AttachSession:
    """The attach loop, UI-free: events -> ``sink`` (statistics, trace, face). Used by the CLI and tests."""

    def __init__(
        self,
        urls: list[str],
        *,
        interval: float = 1.0,
        timeout: float | None = None,
        prompt: str | None = None,
        n_predict: int = 128,
        draft_max: int = -1,
        count: int = 0,
        request_timeout: float = 600.0,  # -p: the whole request and its stream (q, --count, --duration end it sooner)
        duration: float = 0.0,
    ) -> None:
        self.urls = urls
        self.interval = interval
        self.timeout = timeout if timeout is not None else max(0.2, min(5.0, 0.8 * interval))
        self.prompt = prompt
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
        self.end_reason = ""
        self.ended_by = ""  # "duration" when --duration ended the session (failure() says which limit)
        self.stats = AttachStats()
        self.t0 = time.monotonic()
        self.scraper = Scraper(urls, timeout=self.timeout, clock=self._clock)

    def _clock(self) -> float:
        return time.monotonic()

    def run(self, sink: Callable[[Any], None]) -> None:
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
        reason, ticks = "stopped", 0
        try:
            # The baseline first (request mode: before the request, so the session window is the request).
            # polled (scrape_all): a signal stops it at once, and every scrape ends within --timeout
            for ev in self.scraper.scrape_all(self.stop):
                emit(ev)
            for th in threads:
                if not self.stop.is_set():
                    th.start()
            while not self.stop.is_set():
                if self.duration and self._clock() - self.t0 >= self.duration:
                    reason = "done"  # the deadline (--duration); failure() says whether it went well
                    self.ended_by = "duration"
                    break
                try:
                    item = q.get(timeout=0.2)
                except queue.Empty:
                    continue
                if item is _TICK:
                    ticks += 1
                    if self.count and ticks >= self.count:  # also in request mode: a request still
                        reason = "done"                      # running then is cut short (a failure)
                        break
                elif item is _REQUEST_DONE:
                    self._final_scrapes(emit)
                    reason = "done"
                    break
                else:
                    emit(item)
        except KeyboardInterrupt:
            reason = "stopped"
        finally:
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
            elif isinstance(ev, RequestEnded):
                self.request_end = ev
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
            if end is not None and end.reason == REQ_ERROR:
                return f"the request failed: {end.error}"
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
        url = self.urls[0]
        kind = self.scraper.kinds.get(url, "")
        for ev in stream_completion(url, kind, self.prompt or "", self.n_predict, draft_max=self.draft_max,
                                    timeout=self.request_timeout, t0=self.t0, stop=self.stop):
            q.put(ev)
        q.put(_REQUEST_DONE)

    def _final_scrapes(self, emit: Callable[[Any], None]) -> None:
        """After the request: scrape until the server's counters include it (llama-server adds a
        request's counts when its slot is released, just after the last chunk), at most ~2 s."""
        req = self.stats.snapshot().request
        for _ in range(20):
            evs = self.scraper.scrape_all(self.stop)
            for ev in evs:
                emit(ev)
            first = next((e for e in evs if e.url == self.urls[0]), None)
            if first is None or first.error or first.kind != KIND_LLAMA_SERVER or req is None or req.draft_n <= 0:
                return
            win = next((w for w in self.stats.snapshot().session if w.url == self.urls[0]), None)
            if win is not None and win.draft_tokens >= req.draft_n:
                return
            time.sleep(0.1)


@command("attach")
@click.argument("urls", nargs=-1, required=True)
@click.option("--interval", type=SECONDS, default=1.0, show_default=True,
              help="seconds between scrapes of /metrics")
@click.option("--timeout", type=SECONDS, default=None,
              help="seconds to wait for one scrape (default 0.8 x interval, 0.2-5 s)")
@click.option("--headless", is_flag=True, help="no TUI: one line per engine per interval")
@click.option("--json", "as_json", is_flag=True, help="one JSON object per line instead of text (implies --headless)")
@click.option("-p", "--prompt", type=str, default=None, help="send this prompt as one streaming completion")
@click.option("-n", "--n-predict", "n_predict", type=click.IntRange(min=1), default=128, show_default=True)
@click.option("--speculative-n-max", "--speculative.n_max", "n_max", type=click.IntRange(min=0), default=None,
              metavar="N", help="send the -p request's speculative.n_max (llama-server's per-request draft max; "
                                "default: not sent); the llama-server of llama.cpp as vendored in llama-cpp-python "
                                "0.3.36 ignores it (compiled out), vLLM has no such field")
@draft_max_option("deprecated: --speculative-n-max (attach does not draft; the server does)", default=None,
                  hidden=True)
@click.option("--count", type=click.IntRange(min=0), default=0,
              help="stop after this many intervals (0: until Ctrl+C); exit 1 if a URL never answered")
@click.option("--duration", type=DURATION, default=0.0,
              help="stop after this many seconds (0: no deadline); exit 1 if a URL never answered or the -p "
                   "request did not finish")
@click.option("--record", type=click.Path(dir_okay=False), default=None, help="write what attach saw as a trace")
@click.option("--force", is_flag=True, help="let --record replace an existing file that is not a spectui trace")
@click.option("--theme", type=str, default=None, help="TUI theme (see themes/)")
@ascii_option
def attach_cmd(urls: tuple[str, ...], interval: float, timeout: float | None, headless: bool, as_json: bool,
               prompt: str | None, n_predict: int, n_max: int | None, draft_max: str | None, count: int,
               duration: float, record: str | None, force: bool, theme: str | None) -> None:
    """\b
    spectui attach http://127.0.0.1:8080                         the TUI (q quits, ? help)
    spectui attach http://127.0.0.1:8080 --headless              every second, per engine
    spectui attach URL1 URL2 --json                               one JSON object per line
    spectui attach URL -p "Write a haiku" -n 64 --headless        one streamed request, timed
    """
    headless = headless or as_json  # JSON lines are for a program reading stdout, not a screen
    writer = None
    try:
        checked = check_urls(urls)  # one line, exit 2, before the first scrape
        n_max = _request_n_max(n_max, draft_max)
        from ..tui.shared.themes import check_theme  # noqa: PLC0415 - no Textual: the theme files only

        check_theme(theme)  # every face refuses an unknown theme (headless too)
        if not headless:
            from ..tui.shared.terminal import require_terminal  # noqa: PLC0415 - no Textual

            require_terminal("spectui attach")  # one line, exit 2: not a TUI drawn into a pipe
        if record:
            writer = TraceWriter(record, force=force)  # checked now, opened at AttachStarted
    except SpectuiError as exc:
        click.echo(f"spectui: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    session = AttachSession(checked, interval=interval, timeout=timeout, prompt=prompt, n_predict=n_predict,
                            draft_max=-1 if n_max is None else n_max, count=count, duration=duration)
    if not headless:
        sys.exit(_run_tui(session, writer, theme))
    face = HeadlessFace(sys.stdout, as_json)
    write_error: list[str] = []  # --record on a full disk or /dev/full: one line, the session ends

    def sink(ev: Any) -> None:
        nonlocal writer
        if writer is not None:
            try:
                writer.write(ev)
            except SpectuiError as exc:
                write_error.append(str(exc))
                writer = None
                session.stop.set()
        face(ev)

    with SignalStop(session.stop.set, second_sigint_raises=False) as signals:
        try:
            session.run(sink)
        finally:
            if writer is not None:
                try:
                    writer.close()
                except SpectuiError as exc:
                    write_error.append(str(exc))
    if write_error:
        click.echo(f"spectui: error: {visible_line(write_error[0])}", err=True)
        sys.exit(2)
    why = session.failure()
    if why and not signals.signum:
        click.echo(f"spectui: attach: {visible_line(why)}", err=True)
    sys.exit(signals.status(FAILED if why else OK))


def _request_n_max(n_max: int | None, draft_max: str | None) -> int | None:
    """--speculative-n-max, or the old ``-k/--draft-max N`` for it: one draft length through the one k parser
    (its one-line errors, as in every command), then a one-line note."""
    if draft_max is None:
        return n_max
    if n_max is not None:
        raise SpectuiError("give --speculative-n-max or its old spelling -k/--draft-max, not both")
    k = parse_k(draft_max, modes=False)
    deprecated("attach -k/--draft-max N", "--speculative-n-max N")
    return k


def _run_tui(session: AttachSession, writer: TraceWriter | None, theme: str | None) -> int:
    """The attach TUI (Textual, imported only here); the trace is closed readable on every way out."""
    from ..tui.attach.app import run_attach_live
    from ..tui.shared.themes import check_theme

    try:
        check_theme(theme)
        return run_attach_live(session, recorder=writer, theme=theme)
    except SpectuiError as exc:
        click.echo(f"spectui: error: {exc}", err=True)
        return exc.exit_code
    finally:
        if writer is not None:
            writer.close()


__all__ = ["attach_cmd", "AttachSession", "MetricsScraped", "window_line"]
