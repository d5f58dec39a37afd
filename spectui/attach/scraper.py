"""Scrape serving engines' /metrics over HTTP (stdlib urllib) and say what each URL is.

``Scraper(urls, clock=...)``: ``scrape_all()`` fetches every URL's /metrics in parallel (one thread
per URL, each bounded by ``timeout``) and returns one ``MetricsScraped`` per URL; a failure is that
event's one-line ``error``, never an exception, so the other URLs keep going. The first successful
scrape of a llama-server also reads its ``/slots`` once (each slot's ``speculative``: "none" when the
server runs without speculation, whose counters then stay at zero; /props is no help, its
``speculative.types`` is a default, "none" even when the server speculates).
"""

from __future__ import annotations

import functools
import http.client
import json
import math
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import weakref
from typing import Callable

from ..contract.events import KIND_LLAMA_SERVER, KIND_UNKNOWN, MetricsScraped
from .body import BodyError, check_lengths, decode, read_body
from .metrics import NotPrometheus, parse
from .urls import base_url, redact  # base_url: scraper's own name too (request, bench)

USER_AGENT = "spectui-attach"
MAX_BYTES = 16 * 1024 * 1024  # a /metrics page larger than this is not one


class FetchError(Exception):
    """One line saying why an HTTP request failed."""


_LIVE: "weakref.WeakSet[Deadline]" = weakref.WeakSet()  # every exchange under way (abort_all ends them)


def abort_all() -> None:
    """End every HTTP exchange under way now, as if its deadline had come (a signal: the threads still
    reading return at once, so nothing waits for a server on the way out)."""
    for d in list(_LIVE):
        d.fire()


class Deadline:
    """One limit for a whole HTTP exchange (connecting, the headers, every read of the body or the stream),
    not per read: urllib's own timeout is per ``recv``, so a server that drips a byte at a time would never
    time out. When the time is up every socket of the exchange is shut down, which wakes a read blocked in
    any thread; ``fired`` then says the error is the deadline's. ``with Deadline(s):`` starts and cancels it."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.fired = False
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(0.0, seconds), self._fire)
        self._timer.daemon = True

    def __enter__(self) -> "Deadline":
        _LIVE.add(self)
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cancel()

    def cancel(self) -> None:
        self._timer.cancel()
        _LIVE.discard(self)

    def fire(self) -> None:
        """The deadline now: every socket of the exchange shut."""
        self._timer.cancel()
        self._fire()

    def add(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._lock:
            self._socks.append(sock)
            fired = self.fired
        if fired:
            _shut(sock)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            socks = list(self._socks)
        for sock in socks:
            _shut(sock)

    def message(self) -> str:
        return f"timed out after {self.seconds:g} s"

    def why(self, message: str, where: str = "") -> str:
        """A failed read's one line: ``message``, or, when the deadline cut the read, the deadline's words
        (not "closed early" or "broken"); ``where`` comes first then (the URL a bench row names)."""
        return f"{where}{self.message()} (the whole request)" if self.fired else message


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class _DeadlineConnection:
    """A connection whose socket the deadline shuts when time is up (mixed into HTTP and HTTPS)."""

    def __init__(self, *args, deadline: Deadline, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._deadline = deadline

    def connect(self) -> None:
        super().connect()
        self._deadline.add(self.sock)


class _DeadlineHTTP(_DeadlineConnection, http.client.HTTPConnection):
    pass


class _DeadlineHTTPS(_DeadlineConnection, http.client.HTTPSConnection):
    pass


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def http_open(self, req):
        return self.do_open(functools.partial(_DeadlineHTTP, deadline=self._deadline), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def https_open(self, req):
        return self.do_open(functools.partial(_DeadlineHTTPS, deadline=self._deadline), req,
                            context=self._context)


class RedirectRefused(urllib.error.URLError):
    """A redirect to another origin (another scheme, host or port: ``302 Location: http://127.0.0.2/``,
    ``//host/``, ``http://user:pw@host/``): not followed, and the one line says where it pointed (its
    credentials as ``***``). A server that answers elsewhere is not the server that was named."""


def _origin(url: str) -> tuple[str, str, int]:
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:  # "host:99999": no origin any request could reach
        port = -1
    return scheme, (parts.hostname or "").lower(), port if port is not None else (443 if scheme == "https" else 80)


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """urllib's redirects (its loop check kept), followed only within the URL's own origin."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        target = urllib.parse.urljoin(req.full_url, newurl)
        if _origin(target) != _origin(req.full_url):
            why = f"another origin than {redact(req.full_url)[:120]}"
        elif "@" in urllib.parse.urlsplit(target).netloc:
            why = "with a user name or password in it"
        else:
            return super().redirect_request(req, fp, code, msg, headers, newurl)
        raise RedirectRefused(f"HTTP {code}: redirected to {redact(target)[:160]} ({why}): not followed")


def open_url(req: urllib.request.Request, deadline: Deadline):
    """urlopen, every connection it makes (redirects too) held to ``deadline`` as a whole; a redirect to
    another origin is refused (:class:`RedirectRefused`)."""
    opener = urllib.request.build_opener(_HTTPHandler(deadline), _HTTPSHandler(deadline), _SameOriginRedirects())
    return opener.open(req, timeout=max(0.01, deadline.seconds))


def check_scheme(url: str) -> None:
    """Only http and https (urllib would also open file: and ftp: URLs)."""
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    if scheme not in ("http", "https"):
        raise FetchError(f"not an http(s) URL: {url[:120]}")


def describe_error(exc: BaseException, timeout: float) -> str:
    """urllib's exceptions as one line a person can act on."""
    if isinstance(exc, RedirectRefused):
        return str(exc.reason)
    if isinstance(exc, urllib.error.HTTPError):
        detail = ""
        try:
            body = exc.read(4096).decode("utf-8", "replace")
            try:
                err = json.loads(body).get("error", {})
                detail = err.get("message", "") if isinstance(err, dict) else str(err)
            except (ValueError, AttributeError):
                detail = body.strip().splitlines()[0] if body.strip() else ""
        except OSError:
            pass
        reason = (str(exc.reason).strip().splitlines() or [""])[0]  # urllib's redirect loop says it in 3 lines
        if 300 <= exc.code < 400:
            reason = "redirect loop" if "infinite loop" in reason else f"redirect ({reason})"
            detail = ""
        return f"HTTP {exc.code} {reason}" + (f": {detail[:160]}" if detail else "")
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused (nothing listens there)"
    if isinstance(reason, (socket.timeout, TimeoutError)):
        return f"timed out after {timeout:g} s"
    if isinstance(reason, socket.gaierror):
        return f"cannot resolve host ({reason.strerror or reason})"
    if isinstance(reason, ConnectionResetError):
        return "connection reset by the server"
    if isinstance(reason, OSError) and reason.strerror:
        return f"unreachable: {reason.strerror}"
    text = str(reason).strip() or type(reason).__name__
    return f"unreachable: {text.splitlines()[0][:160]}"


def http_get(url: str, timeout: float) -> tuple[str, str, dict[str, str]]:
    """GET -> (body text, content type, headers), all of it within ``timeout`` seconds (not per read) and
    at most MAX_BYTES. Raises FetchError with one line."""
    check_scheme(url)
    if not (math.isfinite(timeout) and timeout > 0):
        raise FetchError(f"a timeout of {timeout!r} s is not a positive number of seconds")
    req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT, "Accept": "text/plain, */*"})  # noqa: S310 - http(s) checked
    with Deadline(timeout) as deadline:  # describe_error reads an error's body: inside the deadline too
        try:
            with open_url(req, deadline) as resp:
                check_lengths(resp.headers.get_all("content-length"))  # two that differ: malformed, not read
                headers = {k.lower(): v for k, v in resp.headers.items()}
                body = read_body(resp.read, MAX_BYTES, bool(getattr(resp, "chunked", False)))
                short = getattr(resp, "length", None)  # bytes of the Content-Length still unread
                if short and len(body) <= MAX_BYTES and not deadline.fired:  # the server closed it early
                    raise FetchError(f"the body ended after {len(body)} of its {len(body) + short} bytes "
                                     "(Content-Length): cut short, not read")
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise FetchError(deadline.message() if deadline.fired else describe_error(exc, timeout)) from None
        except http.client.HTTPException as exc:  # BadStatusLine, IncompleteRead...
            if deadline.fired:
                raise FetchError(deadline.message()) from None
            raise FetchError(f"bad HTTP response: {type(exc).__name__}: {str(exc)[:120]}") from None
        except BodyError as exc:
            raise FetchError(deadline.message() if deadline.fired else str(exc)) from None
        if deadline.fired:  # the body was cut by the deadline
            raise FetchError(deadline.message())
    if len(body) > MAX_BYTES:
        raise FetchError(f"response larger than {MAX_BYTES // 2**20} MiB: not a /metrics page")
    try:  # Content-Encoding: gzip (a proxy's), each layer within the same limit: a bomb is refused
        body = decode(body, headers.get("content-encoding", ""), MAX_BYTES)
    except BodyError as exc:
        raise FetchError(str(exc)) from None
    return body.decode("utf-8", "replace"), headers.get("content-type", ""), headers


class Scraper:
    def __init__(self, urls: list[str], *, timeout: float = 2.0, clock: Callable[[], float] | None = None) -> None:
        self.urls = list(urls)
        self.timeout = timeout
        self._clock = clock or time.monotonic
        self.t0 = self._clock()
        self.kinds: dict[str, str] = {u: KIND_UNKNOWN for u in self.urls}
        self.speculation: dict[str, str] = {}

    def close(self) -> None:
        """Nothing to release: each scrape runs on its own daemon thread."""

    def scrape(self, url: str) -> MetricsScraped:
        root = base_url(url)
        try:
            text, ctype, headers = http_get(root + "/metrics", self.timeout)
            if "html" in ctype.lower():
                raise NotPrometheus("not Prometheus metrics: got an HTML page")
            parsed = parse(text)
        except (FetchError, NotPrometheus) as exc:
            return MetricsScraped(url=url, t=self._clock() - self.t0, kind=self.kinds[url], error=str(exc))
        t = self._clock() - self.t0
        self.kinds[url] = parsed.kind
        start = parsed.process_start
        if not start:  # llama-server says it in a header
            try:
                start = float(headers.get("process-start-time-unix", "0") or 0)
            except ValueError:
                start = 0.0
        if parsed.kind == KIND_LLAMA_SERVER and url not in self.speculation:
            self.speculation[url] = self._llama_speculation(root)
        return MetricsScraped(
            url=url,
            t=t,
            kind=parsed.kind,
            process_start=start,
            speculation=self.speculation.get(url, ""),
            engines=parsed.engines,
        )

    def _llama_speculation(self, root: str) -> str:
        """Whether llama-server's slots speculate, from /slots: "on", "none", or "" (unknown: the
        server was started with --no-slots)."""
        try:
            text, _, _ = http_get(root + "/slots", self.timeout)
            slots = json.loads(text)
            flags = [bool(s["speculative"]) for s in slots]
        except (FetchError, ValueError, KeyError, TypeError):
            return ""
        if not flags:
            return ""
        return "on" if any(flags) else "none"

    def scrape_all(self, stop: threading.Event | None = None) -> list[MetricsScraped]:
        """Every URL's scrape, in parallel; each ends within ``timeout`` (http_get's Deadline). The wait
        polls, so the calling thread (the main thread for the baseline) hears a signal at once; once
        ``stop`` is set, a scrape not finished yet is given up ("stopped")."""
        # One daemon thread per URL, not a pool: an interpreter exit joins a pool's threads, so a signal
        # would wait for a scrape still running (up to --timeout); a daemon thread ends with the process.
        results: dict[int, MetricsScraped] = {}
        lock = threading.Lock()
        done = threading.Event()

        def one(i: int, url: str) -> None:
            try:
                ev = self.scrape(url)
            except Exception as exc:  # noqa: BLE001 - a scrape never raises: its error is the event's
                ev = MetricsScraped(url=url, t=self._clock() - self.t0, kind=self.kinds[url],
                                    error=f"{type(exc).__name__}: {exc}"[:200])
            with lock:
                results[i] = ev
                if len(results) == len(self.urls):
                    done.set()

        if not self.urls:
            return []
        for i, url in enumerate(self.urls):
            threading.Thread(target=one, args=(i, url), name="spectui-scrape", daemon=True).start()
        give_up = time.monotonic() + self.timeout + 2.0  # http_get ends by then; a last resort
        while not done.wait(0.1) and not (stop is not None and stop.is_set()) and time.monotonic() < give_up:
            pass
        out = []
        for i, url in enumerate(self.urls):
            if i in results:
                out.append(results[i])
            else:
                why = "stopped" if stop is not None and stop.is_set() else f"timed out after {self.timeout:g} s"
                out.append(MetricsScraped(url=url, t=self._clock() - self.t0, kind=self.kinds[url], error=why))
        return out
