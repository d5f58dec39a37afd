"""attach's URLs checked before the first scrape: scheme http or https, a host, a port 1..65535.

``check_url(text)`` returns the URL as attach will use it (``host:port`` gets ``http://``) or raises
SpectuiError with one line (exit status 2) saying what is wrong with it; ``check_urls`` checks them all
(and refuses the same server given twice).
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Iterable

from ..contract.errors import SpectuiError

_HOST_NAME = re.compile(r"^[A-Za-z0-9._-]+$")  # a DNS name or an IPv4 address (IPv6 goes in brackets)


def redact(url: str) -> str:
    """``url`` with any user name and password written as ``***`` (a URL's credentials are never printed)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    netloc, slash, path = rest.partition("/")
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    return (scheme + sep if sep else "") + netloc + slash + path


def check_url(text: str) -> str:
    raw = redact(text if isinstance(text, str) else str(text))
    url = (text if isinstance(text, str) else str(text)).strip()
    if not url:
        raise SpectuiError("attach: an empty URL; give http://HOST:PORT (e.g. http://127.0.0.1:8080)")
    if any(ch.isspace() for ch in url):
        raise SpectuiError(f"attach: {raw!r} is not a URL: it contains a space")
    if "://" not in url:
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:/", url):  # "htp:/x": a scheme with a missing slash
            raise SpectuiError(f"attach: {raw!r} is not a URL: expected SCHEME://HOST (http:// or https://)")
        url = "http://" + url
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - "[::1" and a bad port raise here
    except ValueError as exc:
        if "port" not in str(exc).lower():
            raise SpectuiError(f"attach: {raw!r} is not a URL ({exc})") from None
        parts = urllib.parse.urlsplit(url)
    if parts.username is not None or parts.password is not None:
        raise SpectuiError(f"attach: {raw!r}: a URL with a user name or password; attach sends no credentials "
                           "(give http://HOST:PORT)")
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise SpectuiError(f"attach: {raw!r}: scheme {parts.scheme!r} is not http or https")
    host = parts.hostname
    if not host:
        raise SpectuiError(f"attach: {raw!r} has no host (expected {scheme}://HOST[:PORT])")
    netloc_host = parts.netloc.rsplit("@", 1)[-1]
    bracketed = netloc_host.startswith("[")
    if not bracketed and not _HOST_NAME.match(host):
        raise SpectuiError(f"attach: {raw!r}: {host!r} is not a host name")
    try:
        port = parts.port
    except ValueError:
        tail = netloc_host.rsplit(":", 1)[-1] if ":" in netloc_host else ""
        if tail.isdigit():
            raise SpectuiError(f"attach: {raw!r}: port {int(tail)} is not between 1 and 65535") from None
        raise SpectuiError(f"attach: {raw!r}: port {tail!r} is not a number between 1 and 65535") from None
    if port is not None and not 1 <= port <= 65535:
        raise SpectuiError(f"attach: {raw!r}: port {port} is not between 1 and 65535")
    if port is None and re.search(r":\d*$", netloc_host) and not netloc_host.endswith("]"):
        raise SpectuiError(f"attach: {raw!r}: empty port (expected HOST:PORT, 1..65535)")
    return url


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


def check_urls(urls: Iterable[str]) -> list[str]:
    out = [check_url(u) for u in urls]
    seen: dict[str, str] = {}
    for u in out:
        key = base_url(u).lower()
        if key in seen:
            raise SpectuiError(f"attach: {u} and {seen[key]} are the same server; give each URL once")
        seen[key] = u
    return out
