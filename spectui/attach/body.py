"""A response's framing and encoding, checked before its body is believed (``scraper.http_get``).

- Two ``Content-Length`` headers that disagree (``5`` and ``133``, or ``5, 133`` in one) are a malformed
  response (RFC 9112, 6.3): http.client would read by the first one and the page would be cut at a place the
  server never meant. Refused, in one line.
- A chunk size that is no size (``-5``) is a malformed chunked body, not an unreachable server.
- ``Content-Encoding: gzip`` (also ``x-gzip``, ``deflate``, and several of them in turn: ``gzip, gzip``) is
  decoded, each layer within the same size limit as the body itself: a page that inflates past it (a gzip
  bomb) is refused, as is a body that is not the encoding its header names. Another encoding (``br``,
  ``zstd``) is named in the message: spectui asks for none (it sends no ``Accept-Encoding``).
"""

from __future__ import annotations

import zlib
from typing import Callable

MAX_LAYERS = 3  # content codings in turn (gzip, gzip, gzip): more is no /metrics page
_ZLIB_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


class BodyError(Exception):
    """One line saying what is wrong with a response's framing or encoding."""


def check_lengths(values: list[str] | None) -> None:
    """Content-Length header values (every one the response sent): refuse when they disagree.

    Raises:
        BodyError: two lengths that differ, or one that is no length.
    """
    seen: list[str] = []
    for value in values or []:
        seen += [v.strip() for v in str(value).split(",") if v.strip() and v.strip() not in seen]
    if len(seen) > 1:
        shown = " and ".join(seen[:3])[:80]
        raise BodyError(f"bad HTTP response: {len(seen)} different Content-Length headers ({shown}): "
                        "a malformed response, not read")


def read_body(read: Callable[[int], bytes], most: int, chunked: bool) -> bytes:
    """``read(most + 1)``, with http.client's ValueError on a chunk size that is no size (``-5``) said as
    what it is.

    Raises:
        BodyError: a malformed chunked body (or another body http.client cannot frame).
    """
    try:
        return read(most + 1)
    except ValueError as exc:  # the server did answer: a framing it cannot have meant
        what = "a chunk size that is no size" if chunked else str(exc)[:80]
        raise BodyError(f"bad HTTP response: a malformed {'chunked ' if chunked else ''}body ({what})") from None


def decode(body: bytes, encoding: str, most: int) -> bytes:
    """``body`` with its content codings undone, last applied first, each within ``most`` bytes.

    Args:
        body: the bytes as received.
        encoding: the Content-Encoding header ("" or ``identity``: none).
        most: the largest body, encoded or decoded.

    Raises:
        BodyError: an encoding spectui does not decode, a body that is not what its header says, or one that
            inflates past ``most`` bytes.
    """
    codings = [c.strip().lower() for c in encoding.split(",") if c.strip() and c.strip().lower() != "identity"]
    if len(codings) > MAX_LAYERS:
        raise BodyError(f"a compressed body in {len(codings)} layers (Content-Encoding: {encoding[:60]}): "
                        "not a /metrics page")
    for coding in reversed(codings):
        wbits = _ZLIB_WBITS.get(coding)
        if wbits is None:
            raise BodyError(f"a compressed body (Content-Encoding: {coding[:30]}) that spectui does not decode "
                            "(it asks for none): serve /metrics uncompressed")
        inflate = zlib.decompressobj(wbits)
        try:
            out = inflate.decompress(body, most + 1)
        except zlib.error as exc:
            raise BodyError(f"the body is not {coding} data as its Content-Encoding says ({exc})") from None
        if len(out) > most or inflate.unconsumed_tail:
            raise BodyError(f"a {coding} body that inflates past {most // 2**20} MiB (a compression bomb?): "
                            "not a /metrics page")
        if not inflate.eof:
            raise BodyError(f"the {coding} body ends before its compressed data does: cut short, not read")
        body = out
    return body


__all__ = ["BodyError", "check_lengths", "decode", "read_body"]
