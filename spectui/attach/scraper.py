"""Scrape serving engines' /metrics over HTTP (stdlib urllib) and say what each URL is.

``Scraper(urls, clock=...)``: ``scrape_all()`` fetches every URL's /metrics in parallel (one thread
per URL, each bounded by ``timeout``) and returns one ``MetricsScraped`` per URL; a failure is that
event's one-line ``error``, never an exception, so the other URLs keep going. The first successful
scrape of a llama-server also reads its ``/slots`` once (each slot's ``speculative``: "none" when the
server runs without speculation, whose counters then stay at zero; /props is no help, its
``speculative.types`` is a default, "none" even when the server speculates).

``scrape_loop(scraper, interval, stop)`` yields those events every ``interval`` seconds until
``stop`` is set.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator

from ..contract.events import KIND_LLAMA_SERVER, KIND_UNKNOWN, MetricsScraped
from .metrics import NotPrometheus, parse

USER_AGENT = "spectui-attach"
MAX_BYTES = 16 * 1024 * 1024  # a /metrics page larger than this is not one


class FetchError(Exception):
    """One line saying why an HTTP request failed."""


def base_url(url: str) -> str:
    """The server's root from a URL as given ("host:port", "http://h:p/", "http://h:p/metrics")."""
    url = url.strip()
    if "://" not in url:
        url = "http://" + url
    parts = urllib.parse.urlsplit(url)
    path = parts.path.rstrip("/")
    if path.endswith("/metrics"):
        path = path[: -len("/metrics")]
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def check_scheme(url: str) -> None:
    """Only http and https (urllib would also open file: and ftp: URLs)."""
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    if scheme not in ("http", "https"):
        raise FetchError(f"not an http(s) URL: {url[:120]}")


def describe_error(exc: BaseException, timeout: float) -> str:
    """urllib's exceptions as one line a person can act on."""
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
        return f"HTTP {exc.code} {exc.reason}" + (f": {detail[:160]}" if detail else "")
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
    """GET -> (body text, content type, headers). Raises FetchError with one line."""
    check_scheme(url)
    req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT, "Accept": "text/plain, */*"})  # noqa: S310 - http(s) checked
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - http(s) checked
            body = resp.read(MAX_BYTES + 1)
            headers = {k.lower(): v for k, v in resp.headers.items()}
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise FetchError(describe_error(exc, timeout)) from None
    except http.client.HTTPException as exc:  # BadStatusLine, IncompleteRead...
        raise FetchError(f"bad HTTP response: {type(exc).__name__}: {str(exc)[:120]}") from None
    if len(body) > MAX_BYTES:
        raise FetchError(f"response larger than {MAX_BYTES // 2**20} MiB: not a /metrics page")
    return body.decode("utf-8", "replace"), headers.get("content-type", ""), headers


class Scraper:
    def __init__(self, urls: list[str], *, timeout: float = 2.0, clock: Callable[[], float] | None = None) -> None:
        self.urls = list(urls)
        self.timeout = timeout
        self._clock = clock or time.monotonic
        self.t0 = self._clock()
        self.kinds: dict[str, str] = {u: KIND_UNKNOWN for u in self.urls}
        self.speculation: dict[str, str] = {}
        self._pool = ThreadPoolExecutor(max_workers=max(1, len(self.urls)), thread_name_prefix="spectui-scrape")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

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

    def scrape_all(self) -> list[MetricsScraped]:
        return list(self._pool.map(self.scrape, self.urls))


def scrape_loop(scraper: Scraper, interval: float, stop: threading.Event) -> Iterator[MetricsScraped]:
    """Scrape every ``interval`` seconds (on a fixed grid: a slow scrape does not shift the next one)."""
    next_at = time.monotonic()
    while not stop.is_set():
        yield from scraper.scrape_all()
        next_at += interval
        delay = next_at - time.monotonic()
        if delay < 0:  # fell behind (slow servers): start again from now
            next_at, delay = time.monotonic(), 0.0
        if stop.wait(delay):
            return
