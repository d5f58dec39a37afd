"""What ``spectui serve`` lets in, as plain functions: the per-run token, the Origin the websocket accepts,
the terminal size a browser may ask for. No aiohttp here (the server calls these).

Why each: the server listens on 127.0.0.1, but any page the user's browser shows may open a websocket to
127.0.0.1 (browsers do not apply the same-origin rule to websockets), start a session and read its screen.
The Origin check refuses such a page; the token also refuses a page on a rebound DNS name (its Origin is
its own) and a local program that does not know the URL serve printed. The size cap bounds what one
request can make a session allocate: the screen is width x height cells, and 20000 x 20000 grew a demo
past 3.6 GB.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from urllib.parse import urlsplit

MAX_COLUMNS = 500  # a 4K screen at the page's 16 px font is about 400 x 110 cells
MAX_ROWS = 200
DEFAULT_SIZE = (80, 24)  # textual-serve's, when the query string has none
MAX_SESSIONS = 4  # --max-sessions' default: a projector, a laptop and two spare tabs
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def new_token() -> str:
    """A per-run token: 32 URL-safe characters (192 bits)."""
    return secrets.token_urlsafe(24)


def token_matches(given: object, token: str) -> bool:
    """``given`` (from a URL) is ``token``, compared in constant time."""
    return isinstance(given, str) and hmac.compare_digest(given.encode("utf-8", "replace"), token.encode())


def page_url(public_url: str, token: str) -> str:
    """The URL serve prints: the page, with the token in its query string."""
    return f"{public_url.rstrip('/')}/?token={token}"


def _cells(value: object, default: int, most: int) -> int:
    if isinstance(value, bool):
        return default
    try:
        n = int(value)  # an int, or a string of digits (the query string)
    except (TypeError, ValueError, OverflowError):
        return default
    return max(1, min(n, most))


def terminal_size(width: object, height: object) -> tuple[int, int]:
    """The size a session gets for what a browser asked (query string or resize message): integers within
    1..MAX_COLUMNS and 1..MAX_ROWS, anything else the default 80 x 24."""
    return _cells(width, DEFAULT_SIZE[0], MAX_COLUMNS), _cells(height, DEFAULT_SIZE[1], MAX_ROWS)


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` as a browser writes an Origin header (lower case, no default port)."""
    parts = urlsplit(url.strip())
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if not scheme or not host:
        return ""
    try:
        port = parts.port
    except ValueError:
        return ""
    if ":" in host:  # IPv6
        host = f"[{host}]"
    default = {"http": 80, "https": 443}.get(scheme)
    return f"{scheme}://{host}" + (f":{port}" if port is not None and port != default else "")


def _local(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def page_origins(public_url: str, host: str, port: int) -> frozenset[str]:
    """The Origins of the page itself: the public URL's and, when serve listens on a loopback or wildcard
    address, this machine's loopback names at serve's port (a tab opened at http://localhost:PORT)."""
    origins = {origin_of(public_url)}
    if _local(host):
        suffix = "" if port == 80 else f":{port}"
        origins |= {f"http://{name}{suffix}" for name in LOOPBACK_NAMES}
    origins.discard("")
    return frozenset(origins)


def origin_allowed(origin: str | None, allowed: frozenset[str]) -> bool:
    """A websocket's Origin header is the page's own. No Origin (not a browser) is refused too: every browser
    sends one, and only the page opens this websocket."""
    return isinstance(origin, str) and origin.strip().lower() in allowed
