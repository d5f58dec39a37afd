"""Reading a trace, as a stream: ``iter_trace`` (its header checked now, then one event at a time in flat
memory), ``read_trace`` (a small trace whole), ``TraceReader`` (the iterator: a damaged tail is one warning, a
broken middle an error), plain or gzip (detected by its magic bytes), within the limits a stranger's file is
held to (docs/untrusted-input.md), each event checked for what a run can record (sanity.py: clamped or skipped,
one warning per kind of lie). The format is schema.py's. No Textual import.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
import warnings
import zlib
from typing import IO, Any, Callable, Iterable, Iterator, NamedTuple

from ..contract.event_json import EventFormatError, NonFinite, NumberTooLong, from_dict, loads_line
from ..contract.events import Event, PassEvent
from .sanity import Lies
from .schema import GZIP_MAGIC, SCHEMA, SUPPORTED_VERSIONS, TraceError, TraceWarning, versions_read


class Damage(str):
    """Yielded (out of band) by the gzip line reader where the compressed stream breaks off."""


def _open_lines(path: str) -> Iterator[bytes]:
    """The file's lines as bytes (each with its newline, the last maybe without), plain or gzip."""
    try:
        if os.path.isdir(path):
            raise TraceError(f"{path}: is a directory, not a trace")
        fh = open(path, "rb", buffering=1 << 20)
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except OSError as exc:
        raise TraceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        magic = fh.read(2)
        fh.seek(0)
    except OSError as exc:
        fh.close()
        raise TraceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return gzip_lines(fh, path) if magic == GZIP_MAGIC else _plain_lines(fh, path)


# Limits on what a trace may hold (docs/untrusted-input.md): a trace is a stranger's file. Passing one is
# one line and exit 2 (TraceLimitError), in bounded memory: the reader never holds more than one line.
MAX_LINE_BYTES = 16 << 20  # one event's JSON line (a long prompt, an inspector's top-k) stays far below
MAX_TRACE_BYTES = 8 << 30  # decompressed bytes in all (a million passes at k = 3 is about 900 MB)
MAX_LINES = 50_000_000  # lines in all
MAX_BLANK_LINES = 10_000  # spectui never writes a blank line; a file of newlines is not a trace
_CHUNK = 1 << 20  # bytes read (or decompressed) at a time


class TraceLimitError(TraceError):
    """A trace passed one of the reader's limits (an endless line, a gzip bomb, /dev/zero)."""


def _limit(path: str, what: str) -> TraceLimitError:
    return TraceLimitError(f"{path}: {what}: not a spectui trace this spectui will read "
                           "(limits: docs/untrusted-input.md)")


def _split_lines(path: str, chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Lines (each with its newline, the last maybe without) from blocks of bytes, within the limits above.
    A ``Damage`` among the blocks is passed on after the partial line before it."""
    pending: list[bytes] = []
    pending_len = total = n_lines = blanks = 0
    for data in chunks:
        if isinstance(data, Damage):
            if pending:
                yield b"".join(pending)
                pending, pending_len = [], 0
            yield data
            return
        total += len(data)
        if total > MAX_TRACE_BYTES:
            raise _limit(path, f"more than {MAX_TRACE_BYTES >> 20} MiB of data")
        start = 0
        while True:
            i = data.find(b"\n", start)
            if i < 0:
                break
            if pending:
                line = b"".join(pending) + data[start:i + 1]
                pending, pending_len = [], 0
            else:
                line = data[start:i + 1]
            start = i + 1
            n_lines += 1
            if len(line) > MAX_LINE_BYTES:
                raise _limit(path, f"line {n_lines} is longer than {MAX_LINE_BYTES >> 20} MiB")
            if n_lines > MAX_LINES:
                raise _limit(path, f"more than {MAX_LINES} lines")
            if len(line) < 64 and not line.strip():
                blanks += 1
                if blanks > MAX_BLANK_LINES:
                    raise _limit(path, f"more than {MAX_BLANK_LINES} blank lines")
            yield line
        if start < len(data):
            rest = data[start:] if start else data
            pending.append(rest)
            pending_len += len(rest)
            if pending_len > MAX_LINE_BYTES:
                raise _limit(path, f"line {n_lines + 1} is longer than {MAX_LINE_BYTES >> 20} MiB")
    if pending:
        yield b"".join(pending)


def _plain_lines(fh: IO[bytes], path: str = "trace") -> Iterator[bytes]:
    with fh:
        yield from _split_lines(path, iter(lambda: fh.read(_CHUNK), b""))


def _gzip_blocks(fh: IO[bytes]) -> Iterator[bytes]:
    """Decompressed blocks of at most ``_CHUNK`` bytes (a bomb never inflates in one call), then a
    ``Damage`` where the compressed stream breaks off or is cut short."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    while True:
        chunk = fh.read(1 << 16)
        if not chunk:
            break
        try:
            while chunk:
                data = d.decompress(chunk, _CHUNK)
                if data:
                    yield data
                if d.unconsumed_tail:
                    chunk = d.unconsumed_tail
                elif d.eof and d.unused_data:  # another gzip member follows
                    chunk = d.unused_data
                    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                else:
                    chunk = b""
        except zlib.error:
            rest = len(chunk) + len(fh.read(1 << 16))  # how much of the file lies after the damage
            if rest > 64:  # a file altered in its middle, not a writer killed at its end
                yield Damage(f"damaged compressed data, with at least {rest} bytes of the file after it")
            else:
                yield Damage("damaged compressed data")
            return
    if not d.eof:  # a recording killed mid-run: its gzip stream has no end
        yield Damage("compressed data cut short")


def gzip_lines(fh: IO[bytes], path: str = "trace") -> Iterator[bytes]:
    """Decompress in bounded blocks and split lines ourselves: a stream cut short (the writer was killed
    after a sync flush) or damaged still yields every line decoded before the cut."""
    with fh:
        yield from _split_lines(path, _gzip_blocks(fh))


def _parse_header(first: bytes | None, path: str) -> dict[str, Any]:
    if isinstance(first, Damage):
        raise TraceError(f"{path}: gzip file with {first}, not a readable trace ({versions_read()})")
    if first is None or not first.strip():
        raise TraceError(f"{path}: empty file, not a spectui trace ({versions_read()})")
    if first.startswith(b"\xef\xbb\xbf"):  # a UTF-8 BOM (what Windows editors add) before the header
        first = first[3:]
    try:
        header = json.loads(first.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        if not first.endswith(b"\n"):
            hint = "truncated header line" if first.lstrip().startswith(b'{"schema"') else "not JSON"
        else:
            hint = "not JSON"
        raise TraceError(f"{path}: {hint}, not a spectui trace ({versions_read()})") from None
    if type(header) is not dict or header.get("schema") != SCHEMA:
        what = header.get("schema") if type(header) is dict else None
        if type(what) is str:
            raise TraceError(f"{path}: schema {what[:60]!r} is not a spectui trace ({SCHEMA!r}; {versions_read()})")
        raise TraceError(f"{path}: JSON but not a spectui trace (no {SCHEMA!r} header; {versions_read()})")
    version = header.get("version")
    if type(version) is not int:
        raise TraceError(f"{path}: trace header has no valid version ({versions_read()})")
    if version not in SUPPORTED_VERSIONS:
        newer = version > max(SUPPORTED_VERSIONS)
        why = "written by a newer spectui" if newer else "an unsupported old format"
        raise TraceError(f"{path}: trace version {version} ({why}); {versions_read()}")
    return header


def _is_event(line: bytes) -> bool:
    try:
        from_dict(json.loads(line.decode("utf-8")))
    except (UnicodeDecodeError, ValueError, RecursionError, EventFormatError):
        return False
    return True


STILL_WRITTEN_S = 10.0  # a trace that changed this recently may be one a run is still writing


def _why_it_ends(path: str) -> str:
    """Why a trace ends in a damaged line: a run still writing it (the file changed seconds ago: a line is
    half written) or one that was killed mid-write."""
    try:
        age = time.time() - os.stat(path).st_mtime
    except OSError:
        age = float("inf")
    if 0 <= age < STILL_WRITTEN_S:
        return (f"the file changed {age:.0f} s ago: a run may still be writing it; read it again once that run "
                "ends, or the run was killed")
    return "the run was probably killed"


class TraceReader:
    """Iterator over a trace's events, streamed line by line (flat memory whatever the length).

    A damaged tail (one damaged line or several, with no intact event after them: a run killed mid-write)
    ends the iteration with one warning that says where the damage starts and how many lines it spans;
    damage followed by an intact event (a broken middle) raises :class:`TraceError` after every event
    before it has been yielded. ``warnings`` collects the warning texts.
    """

    def __init__(self, path: str, lines: Iterator[bytes], on_warning: Callable[[str], None] | None) -> None:
        self.path = path
        self._lines = lines
        self._on_warning = on_warning
        self.warnings: list[str] = []
        self.n_events = 0
        self.line_no = 1
        self._warned_fields: set[str] = set()
        self._lies = Lies(path)  # what the events say, checked (recording/sanity.py)

    def __iter__(self) -> "TraceReader":
        return self

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        if self._on_warning is not None:
            self._on_warning(message)
        else:
            warnings.warn(message, TraceWarning, stacklevel=3)

    def __next__(self) -> Event:
        while True:
            ev = self._next_event()
            if ev is None:
                self._report_lies()
                raise StopIteration
            ev = self._lies.check(ev, self.line_no)  # None: skipped (the warning says why)
            if ev is not None:
                return ev

    def _report_lies(self) -> None:
        """The semantic lies found so far, one warning per kind (each said once)."""
        for message in self._lies.take_warnings():
            self._warn(message)

    def _next_event(self) -> Event | None:
        while True:
            line = next(self._lines, None)
            if line is None:
                return None
            self.line_no += 1
            if isinstance(line, Damage):
                problem = str(line)
                if "bytes of the file after it" in problem:  # a broken middle: the rest cannot be decompressed
                    self.close()
                    self._lines = iter(())
                    raise TraceError(f"{self.path}: line {self.line_no}: {problem} (damaged trace, {self.n_events} "
                                     "events read before it; gzip cannot resume after damage)")
            elif not line.strip():
                continue
            else:
                problem = ""
                try:
                    obj, checked = loads_line(line)  # NaN, Infinity, 1e400: named and read as 0
                    ev = from_dict(self._finite(obj) if checked else obj)
                    if type(ev) is PassEvent:
                        t = ev.timing
                        if t.wall_ms < 0 or t.verify_ms < 0 or t.draft_ms < 0 or t.other_ms < 0 or t.t_end < 0:
                            ev = self._no_negative_times(ev)
                except UnicodeDecodeError:
                    problem = "not UTF-8"
                except EventFormatError as exc:
                    problem = f"not an event ({str(exc)[:160]})"
                except NumberTooLong as exc:
                    problem = str(exc)
                except (ValueError, RecursionError):
                    problem = "truncated line" if not line.endswith(b"\n") else "not JSON"
            if not problem:
                self.n_events += 1
                return ev
            # Damaged. A damaged *tail* (this line and any number after it, none an intact event: a run
            # killed mid-write, or a file cut and padded) is a warning: every event before it was read. An
            # intact event after the damage means the middle of the file is broken: an error.
            damaged_after, where_more = 0, ""
            rest = next(self._lines, None)
            while rest is not None:
                if isinstance(rest, Damage):
                    problem += f" ({rest})"
                elif rest.strip():
                    if _is_event(rest):
                        self.close()
                        self._lines = iter(())
                        raise TraceError(
                            f"{self.path}: line {self.line_no}: {problem} (damaged trace, {self.n_events} events "
                            "read before it; intact events follow it)"
                        )
                    damaged_after += 1
                rest = next(self._lines, None)
            if damaged_after:
                where_more = f", and {damaged_after} more damaged line{'s' if damaged_after > 1 else ''} after it"
            self._warn(
                f"{self.path}: line {self.line_no}: {problem}{where_more}; the trace ends there "
                f"({_why_it_ends(self.path)}); {self.n_events} events read"
            )
            return None

    def _value_warning(self, field: str, what: str) -> None:
        """One warning per field name (a trace of NaN times says it once, not once a pass)."""
        if field in self._warned_fields:
            return
        self._warned_fields.add(field)
        self._warn(f"{self.path}: line {self.line_no}: {field} is {what}; read as 0 (and so wherever "
                   "it occurs again)")

    def _finite(self, obj: Any, where: str = "") -> Any:
        """A parsed line with each NaN / Infinity / 1e400 (a NonFinite) replaced by 0.0 and named in a warning."""
        if isinstance(obj, NonFinite):
            self._value_warning(where or "a value", f"{obj.text} (not a number a run records)")
            return 0.0
        if isinstance(obj, dict):
            kind = obj.get("type") if isinstance(obj.get("type"), str) else ""
            base = where or {"pass": "PassEvent", "start": "RunStarted", "end": "RunEnded"}.get(kind, kind or "event")
            return {k: self._finite(v, f"{base}.{k}") for k, v in obj.items()}
        if isinstance(obj, list):
            return [self._finite(v, where) for v in obj]
        return obj

    def _no_negative_times(self, ev: PassEvent) -> PassEvent:
        t = ev.timing
        fixed = {}
        for name in ("draft_ms", "verify_ms", "other_ms", "wall_ms", "t_end"):
            v = getattr(t, name)
            if v < 0:
                self._value_warning(f"PassEvent.timing.{name}", f"negative ({v:g}; a time is not)")
                fixed[name] = 0.0
        return dataclasses.replace(ev, timing=dataclasses.replace(t, **fixed))

    def close(self) -> None:
        self._report_lies()
        close = getattr(self._lines, "close", None)
        if close is not None:
            close()


def iter_trace(
    path: str | os.PathLike, on_warning: Callable[[str], None] | None = None
) -> tuple[dict[str, Any], TraceReader]:
    """Open a trace: its header (checked now) and a streaming iterator over its events.

    Args:
        path: the trace (plain or gzip).
        on_warning: called with each warning (a damaged last line; a kind of lie in the events, once the
            iteration ends or the reader is closed); None: :mod:`warnings`, as :class:`TraceWarning`. The
            iterator's ``warnings`` list keeps them either way.

    Returns:
        (the header, a ``TraceReader`` over the events: one at a time, in flat memory).

    Raises:
        TraceError: a file that is not a readable trace (``TraceLimitError``: past a limit); the iterator raises
            it for a broken middle, after every event before it.
    """
    p = os.fspath(path)
    lines = _open_lines(p)
    first = next(lines, None)
    try:
        header = _parse_header(first, p)
    except TraceError:
        lines.close()
        raise
    return header, TraceReader(p, lines, on_warning)


class Trace(NamedTuple):
    header: dict[str, Any]
    events: list[Event]
    warnings: list[str]


def read_trace(path: str | os.PathLike, on_warning: Callable[[str], None] | None = None) -> Trace:
    """Read a whole (small) trace into memory.

    Args:
        path: the trace (plain or gzip).
        on_warning: called with each warning (default: none; they are in the result either way).

    Returns:
        ``Trace(header, events, warnings)``.

    Raises:
        TraceError: not a readable trace, or a broken middle.
    """
    header, reader = iter_trace(path, on_warning=on_warning if on_warning is not None else (lambda m: None))
    events = list(reader)
    return Trace(header, events, reader.warnings)
