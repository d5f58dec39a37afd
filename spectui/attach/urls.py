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

_HOST_CHARS = re.compile(r"^[A-Za-z0-9._~%!$&'()*+,;=:\[\]-]+$")


def check_url(text: str) -> str:
    raw = text if isinstance(text, str) else str(text)
    url = raw.strip()
    if not url:
        raise SpectuiError("attach: an empty URL; give http://HOST:PORT (e.g. http://127.0.0.1:8080)")
    if any(ch.isspace() for ch in url):
        raise SpectuiError(f"attach: {raw!r} is not a URL: it contains a space")
    if "://" not in url:
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:/", url):  # "htp:/x": a scheme with a missing slash
            raise SpectuiError(f"attach: {raw!r} is not a URL: expected SCHEME://HOST (http:// or https://)")
        url = "http://" + url
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise SpectuiError(f"attach: {raw!r}: scheme {parts.scheme!r} is not http or https")
    host = parts.hostname
    if not host:
        raise SpectuiError(f"attach: {raw!r} has no host (expected {scheme}://HOST[:PORT])")
    netloc_host = parts.netloc.rsplit("@", 1)[-1]
    if not _HOST_CHARS.match(netloc_host):
        raise SpectuiError(f"attach: {raw!r}: {host!r} is not a host name")
    try:
        port = parts.port
    except ValueError:
        tail = netloc_host.rsplit(":", 1)[-1] if ":" in netloc_host else ""
        raise SpectuiError(f"attach: {raw!r}: port {tail!r} is not a number between 1 and 65535") from None
    if port is not None and not 1 <= port <= 65535:
        raise SpectuiError(f"attach: {raw!r}: port {port} is not between 1 and 65535")
    if port is None and re.search(r":\d*$", netloc_host) and not netloc_host.endswith("]"):
        raise SpectuiError(f"attach: {raw!r}: empty port (expected HOST:PORT, 1..65535)")
    return url


def check_urls(urls: Iterable[str]) -> list[str]:
    out = [check_url(u) for u in urls]
    seen: dict[str, str] = {}
    from .scraper import base_url  # noqa: PLC0415

    for u in out:
        key = base_url(u).lower()
        if key in seen:
            raise SpectuiError(f"attach: {u} and {seen[key]} are the same server; give each URL once")
        seen[key] = u
    return out
