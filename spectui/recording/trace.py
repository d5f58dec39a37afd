"""Traces: the event stream written down as JSON Lines, and read back as a stream.

A trace file is one header line, then one line per event, each exactly ``event_json.to_dict(event)``::

    {"schema": "spectui.trace", "version": 3, "spectui": "0.1.0", "created": "...", "machine": {...},
     "models": {"target": {...}, "draft": {...}}, "params": {...}, "prompt": "..."}
    {"type": "start", ...}
    {"type": "pass", "index": 0, ...}
    ...
    {"type": "end", ...}

An attach trace (``spectui attach --record``) has ``"attach": {"targets": [...], "interval": ...}`` in its
header instead of models and parameters, then ``attach_start``, ``scrape`` / ``request_*`` events and
``attach_end``. Version 2 added the attach events, version 3 the inspector's data per pass (``inspect``, the
draft's stop reason, --draft-p-min in the settings); version-1 and -2 traces read unchanged (no inspector data).

The writer flushes after every event, so a run killed with SIGKILL leaves every complete pass
readable; the reader turns a truncated or damaged *tail* (one line or several, no intact event after
them) into one warning, not an error. The writer creates its file at the first event, through
spectui.contract.outputs (never over an input, nor over a file that is not a trace unless forced). Files
ending in ``.gz`` are gzip-compressed (the bundled demo trace); the reader detects gzip by its magic
bytes. No Textual import here: this module is part of the core.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import gzip
import json
import os
import platform
import queue
import random
import re
import sys
import tempfile
import threading
import time
import warnings
import zlib
from dataclasses import asdict
from typing import IO, Any, Callable, Iterable, Iterator, NamedTuple

from .. import __version__
from ..contract.errors import SpectuiError
from ..contract.outputs import TRACE, OutputError, check_output
from ..contract.event_json import EventFormatError, NonFinite, NumberTooLong, from_dict, loads_line, to_dict
from ..contract.events import (
    ACCEPTED, BONUS, CORRECTION, DISCARDED, PLAIN, REJECTED, AttachStarted, DraftToken, Event, ModelInfo, PassEvent,
    RunEnded, RunStarted, Settings, SettingsChanged, TargetToken, Timing, Token,
)

SCHEMA = "spectui.trace"
# 3: the inspector's data (PassEvent.inspect, draft_stop; Settings.draft_p_min / draft_min; RunStarted.inspect_top)
# 2: attach traces (AttachStarted ... AttachEnded). Older versions read as is: their passes have no inspector data.
VERSION = 3
SUPPORTED_VERSIONS = (1, 2, 3)
_GZIP_MAGIC = b"\x1f\x8b"


class TraceError(SpectuiError):
    """A file that cannot be read as a trace (one line: the file, the problem, the versions supported)."""


class TraceWarning(UserWarning):
    """A recoverable problem: a truncated or damaged last line (the run was killed mid-write)."""


def _supported() -> str:
    return "this spectui reads trace version " + ", ".join(str(v) for v in SUPPORTED_VERSIONS)


# ------------------------------------------------------------------------------------------ header


def machine_info(threads: int = 0) -> dict[str, Any]:
    """CPU model, core count, memory, OS and library versions of the machine that records."""
    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info: dict[str, Any] = {
        "cpu": cpu or platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count() or 0,
        "threads": threads,
        "arch": platform.machine(),
        "os": platform.platform(),
        "python": platform.python_version(),
    }
    try:
        info["memory_bytes"] = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        pass
    llama = sys.modules.get("llama_cpp")  # recorded when the engine loaded it; never imported here
    if llama is not None:
        info["llama_cpp_python"] = getattr(llama, "__version__", "")
    return info


def make_header(start: RunStarted | AttachStarted | None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The header line, built from the run's start event (models, parameters, prompt), or for an attach
    trace from its AttachStarted (the watched URLs, the scrape interval, the request-mode prompt)."""
    attach = start if isinstance(start, AttachStarted) else None
    if attach is not None:
        start = None
    when = _dt.datetime.now(_dt.timezone.utc)
    if attach is not None and attach.started_at > 0:
        when = _dt.datetime.fromtimestamp(attach.started_at, _dt.timezone.utc)
    if start is not None and start.started_at > 0:
        when = _dt.datetime.fromtimestamp(start.started_at, _dt.timezone.utc)
    header: dict[str, Any] = {
        "schema": SCHEMA,
        "version": VERSION,
        "spectui": __version__,
        "created": when.isoformat(timespec="seconds"),
        "machine": machine_info(start.threads if start is not None else 0),
    }
    if start is not None:
        header["run_id"] = start.run_id
        header["models"] = {
            "target": asdict(start.target),
            "draft": asdict(start.draft) if start.draft is not None else None,
        }
        if start.head is not None:  # an EAGLE-3 head / the target's MTP layers (absent for the other drafters)
            header["models"]["head"] = asdict(start.head)
        header["params"] = {
            "n_predict": start.n_predict,
            "n_ctx": start.n_ctx,
            "threads": start.threads,
            "prompt_tokens": start.prompt_tokens,
            "settings": asdict(start.settings),
            "target_decode_ms": start.target_decode_ms,
            "draft_decode_ms": start.draft_decode_ms,
        }
        header["prompt"] = start.prompt
    if attach is not None:
        header["attach"] = {"targets": [t.url for t in attach.targets], "interval": attach.interval,
                            "prompt": attach.prompt, "n_predict": attach.n_predict, "draft_max": attach.draft_max}
    for key, value in (extra or {}).items():
        if key not in ("schema", "version"):
            header[key] = value
    return header


_SURROGATE = re.compile("[\ud800-\udfff]")


def _dumps(obj: Any) -> str:
    s = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    if _SURROGATE.search(s):  # a lone surrogate (a server's or a trace's "\ud800") cannot be UTF-8: \\uXXXX
        s = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", s)
    return s + "\n"


# ------------------------------------------------------------------------------------------ writer


class TraceWriter:
    """Writes events as JSON Lines, flushed after every event (``flush_each=False`` for bulk writes).

    ``path=None`` keeps the trace in an anonymous temporary file (flat memory), for a TUI that was
    started without ``--record`` but may still save the trace with its key (:meth:`save_to`).
    The header is written when the RunStarted (or AttachStarted) event arrives (it is made from it); if
    the first event is something else, a header without run information is written first. Thread-safe: a UI thread
    may call :meth:`save_to` while the engine thread writes.

    ``background=True`` moves the JSON encoding and the writes off the caller's thread: :meth:`write` only
    queues the event, one writer thread encodes, writes and flushes each line as before (so a SIGKILL still
    leaves every written line complete; events still queued at that instant are lost); :meth:`flush`,
    :meth:`save_to` and :meth:`close` first wait for the queue to drain. A write error is raised by the
    next call. Worth it where a spare core exists (the engine thread then never encodes JSON). With
    ``gate`` set (``Engine.decoding``), each line waits (at most 50 ms) for a decode to be running.
    """

    def __init__(
        self,
        path: str | os.PathLike | None,
        header_extra: dict[str, Any] | None = None,
        *,
        flush_each: bool = True,
        inputs: Iterable[str | os.PathLike | None] = (),
        force: bool = False,
        background: bool = False,
    ) -> None:
        self.path = os.fspath(path) if path is not None else None
        self.header_extra = dict(header_extra or {})
        self.flush_each = flush_each
        self.header: dict[str, Any] | None = None
        self.n_events = 0
        self._lock = threading.Lock()
        self._closed = False
        self._failed = False
        # checked now (never an input; an existing file only if it is a trace, or --force), opened at the
        # first event (spectui.contract.outputs): a run that fails before it leaves no file behind
        try:
            self._output = check_output(self.path, TRACE, inputs, force) if self.path is not None else None
        except OutputError as exc:
            raise TraceError(str(exc)) from None
        self._raw: IO[bytes] | None = None
        self._out: IO[bytes] | None = None
        self._commit: Callable[[], None] | None = None
        self._gz = self.path is not None and self.path.endswith(".gz")
        self._thread: threading.Thread | None = None
        self._error: TraceError | None = None  # background mode: the writer thread's failure
        self._told = False  # ... already raised to a caller
        # background mode: an Event set while the engine decodes (Engine.decoding): the writer thread then
        # encodes in those windows, when the loop holds no GIL it would wait for (at most 50 ms later)
        self.gate: threading.Event | None = None
        self.gate_timeout = 0.05  # seconds a line waits for the gate at most
        self._hurry = threading.Event()  # flush/close/save_to wait: write at once
        if background:
            self._queue: queue.SimpleQueue = queue.SimpleQueue()
            self._idle = threading.Condition()
            self._pending = 0
            self._thread = threading.Thread(target=self._drain_loop, name="spectui-trace", daemon=True)
            self._thread.start()

    def _open(self) -> None:
        try:
            if self._output is None:
                self._raw = tempfile.TemporaryFile(prefix="spectui-trace-")
            else:
                self._raw, self._commit = self._output.open_trace()
        except OSError as exc:
            raise TraceError(f"cannot write trace {self.path}: {exc.strerror or exc}") from None
        except OutputError as exc:
            raise TraceError(str(exc)) from None
        self._out = gzip.GzipFile(fileobj=self._raw, mode="wb", mtime=0) if self._gz else self._raw

    @property
    def background(self) -> bool:
        """Whether a writer thread encodes and writes (``background=True``)."""
        return self._thread is not None

    @property
    def opened(self) -> bool:
        """Whether the file exists yet (it is created at the first event)."""
        return self._raw is not None

    def __enter__(self) -> "TraceWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _emit(self, line: str) -> None:
        if self._out is None:
            self._open()
        self._out.write(line.encode("utf-8"))

    def write(self, event: Event) -> None:
        if self._thread is not None:
            if self._error is not None:
                self._told = True
                raise self._error
            if self._closed:
                raise TraceError(f"trace {self.path or '(temporary)'} is closed")
            with self._idle:
                self._pending += 1
            self._queue.put(event)
            return
        self._write_now(event)

    def _write_now(self, event: Event) -> None:
        with self._lock:
            if self._closed:
                raise TraceError(f"trace {self.path or '(temporary)'} is closed")
            try:
                if self.header is None:
                    first = event if isinstance(event, (RunStarted, AttachStarted)) else None
                    if isinstance(first, RunStarted) and self._output is not None:  # the model files as loaded
                        models = (first.target.path, first.draft.path if first.draft is not None else None,
                                  first.head.path if first.head is not None else None)
                        try:
                            self._output = self._output.with_inputs(models)
                        except OutputError as exc:
                            raise TraceError(str(exc)) from None
                    self.header = make_header(first, self.header_extra)
                    self._emit(_dumps(self.header))
                self._emit(_dumps(to_dict(event)))
                self.n_events += 1
                if self.flush_each:
                    self._flush()
            except OSError as exc:  # disk full, file system gone: one line, not a traceback mid-run
                self._failed = True
                raise TraceError(f"cannot write trace {self.path or '(temporary)'}: {exc.strerror or exc}") from None

    __call__ = write  # usable as spectui.text.run.consume(..., sink=writer)

    def _drain_loop(self) -> None:
        """The writer thread (background=True): encode, write and flush each queued event in order."""
        while True:
            event = self._queue.get()
            if event is _STOP:
                return
            gate = self.gate
            if gate is not None and not self._hurry.is_set():
                gate.wait(self.gate_timeout)
            try:
                if self._error is None:
                    self._write_now(event)
            except TraceError as exc:
                self._error = exc
            finally:
                with self._idle:
                    self._pending -= 1
                    if not self._pending:
                        self._idle.notify_all()

    def _wait_written(self) -> None:
        """Background mode: block until every queued event is written (then raise a write error, if any)."""
        if self._thread is None:
            return
        self._hurry.set()
        try:
            with self._idle:
                while self._pending:
                    self._idle.wait()
        finally:
            self._hurry.clear()
        if self._error is not None:
            self._told = True
            raise self._error

    def _flush(self) -> None:
        if self._out is None:
            return
        self._out.flush()  # GzipFile.flush() emits a sync flush: everything so far is decodable
        if self._out is not self._raw:
            self._raw.flush()
        if self._commit is not None:  # the first flush: the new trace takes the path (spectui.contract.outputs)
            commit, self._commit = self._commit, None
            commit()

    def flush(self) -> None:
        self._wait_written()
        with self._lock:
            if not self._closed:
                self._flush()

    def save_to(self, path: str | os.PathLike, inputs: Iterable[str | os.PathLike | None] = (),
                force: bool = False) -> int:
        """Write everything recorded so far to ``path`` (atomically, through spectui.contract.outputs: never over an
        input or a file that is not a trace; gzip if it ends in .gz).

        Returns the number of events saved. The recording itself goes on.
        """
        dest = os.fspath(path)
        self._wait_written()
        try:
            out = check_output(dest, TRACE, (*inputs, self.path), force)
        except OutputError as exc:
            raise TraceError(f"cannot save trace to {dest}: {exc.reason}") from None
        with self._lock:
            if self._closed:
                raise TraceError(f"trace {self.path or '(temporary)'} is closed")
            self._flush()
            if self.header is None:  # nothing written yet: a header alone is still a valid trace
                self.header = make_header(None, self.header_extra)
                self._emit(_dumps(self.header))
                self._flush()
            n = self.n_events
            try:
                with out.atomic_write("wb") as fh:  # OutputError (a failed write) says the path itself
                    target: IO[bytes] = gzip.GzipFile(fileobj=fh, mode="wb", mtime=0) if dest.endswith(".gz") else fh
                    for block in self._recorded_blocks():
                        target.write(block)
                    if target is not fh:
                        target.close()
            except OSError as exc:
                raise TraceError(f"cannot save trace to {dest}: {exc.strerror or exc}") from None
            return n

    def _recorded_blocks(self) -> Iterator[bytes]:
        """The (decompressed) bytes written so far, in blocks, without moving the writer's file offset."""
        if self.path is None:  # our anonymous temporary file: positional reads leave its offset alone
            fd, pos = self._raw.fileno(), 0
            while True:
                block = os.pread(fd, 1 << 20, pos)
                if not block:
                    return
                pos += len(block)
                yield block
        elif self._gz:
            for line in _gzip_lines(open(self.path, "rb")):
                if isinstance(line, _Damage):  # the open stream has no end marker yet: expected
                    return
                yield line
        else:
            with open(self.path, "rb") as fh:
                yield from iter(lambda: fh.read(1 << 20), b"")

    def close(self, keep_empty: bool = False) -> None:
        """Close the file. A recording that saw no event leaves no file, unless ``keep_empty`` (a header
        alone, a valid empty trace: what write_trace of an empty list writes, since it was asked to)."""
        if self._thread is not None and self._thread.is_alive():
            self._hurry.set()
            with self._idle:
                while self._pending:
                    self._idle.wait()
            self._queue.put(_STOP)
            self._thread.join()
        with self._lock:
            if self._closed:
                return
            if self._error is not None and not self._told:  # a background write failed, nobody was told
                self._closed = True
                self._told = True
                if self._raw is not None:
                    try:
                        self._raw.close()
                    except OSError:
                        pass
                raise self._error
            if self._raw is None and keep_empty:
                self.header = make_header(None, self.header_extra)
                self._emit(_dumps(self.header))
            self._closed = True
            if self._raw is None:  # no event ever came: no file (nothing recorded is lost)
                return
            try:
                if self._out is not self._raw:
                    self._out.close()
                self._raw.flush()
                if self._commit is not None:
                    commit, self._commit = self._commit, None
                    commit()
                self._raw.close()
            except OSError as exc:
                try:
                    self._raw.close()
                except OSError:
                    pass
                if not self._failed:  # already reported by write()
                    where = self.path or "(temporary)"
                    raise TraceError(f"cannot write trace {where}: {exc.strerror or exc}") from None


_STOP = object()  # the background writer's end-of-queue marker


def write_trace(path: str | os.PathLike, events: Iterable[Event], header_extra: dict[str, Any] | None = None) -> int:
    """Write a whole event sequence to ``path``; returns the number of events written."""
    w = TraceWriter(path, header_extra, flush_each=False)
    try:
        for ev in events:
            w.write(ev)
    finally:
        w.close(keep_empty=True)
    return w.n_events


# ------------------------------------------------------------------------------------------ reader


class _Damage(str):
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
    return _gzip_lines(fh, path) if magic == _GZIP_MAGIC else _plain_lines(fh, path)


# Limits on what a trace may hold (docs/untrusted-input.md): a trace is a stranger's file. Passing one is
# one line and exit 2 (TraceLimitError), in bounded memory: the reader never holds more than one line.
MAX_LINE_BYTES = 16 << 20  # one event's JSON line (a long prompt, an inspector's top-k) stays far below
MAX_TRACE_BYTES = 8 << 30  # decompressed bytes in all (a million passes is a few hundred MB)
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
    A ``_Damage`` among the blocks is passed on after the partial line before it."""
    pending: list[bytes] = []
    pending_len = total = n_lines = blanks = 0
    for data in chunks:
        if isinstance(data, _Damage):
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
    ``_Damage`` where the compressed stream breaks off or is cut short."""
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
                yield _Damage(f"damaged compressed data, with at least {rest} bytes of the file after it")
            else:
                yield _Damage("damaged compressed data")
            return
    if not d.eof:  # a recording killed mid-run: its gzip stream has no end
        yield _Damage("compressed data cut short")


def _gzip_lines(fh: IO[bytes], path: str = "trace") -> Iterator[bytes]:
    """Decompress in bounded blocks and split lines ourselves: a stream cut short (the writer was killed
    after a sync flush) or damaged still yields every line decoded before the cut."""
    with fh:
        yield from _split_lines(path, _gzip_blocks(fh))


def _parse_header(first: bytes | None, path: str) -> dict[str, Any]:
    if isinstance(first, _Damage):
        raise TraceError(f"{path}: gzip file with {first}, not a readable trace ({_supported()})")
    if first is None or not first.strip():
        raise TraceError(f"{path}: empty file, not a spectui trace ({_supported()})")
    if first.startswith(b"\xef\xbb\xbf"):  # a UTF-8 BOM (what Windows editors add) before the header
        first = first[3:]
    try:
        header = json.loads(first.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        if not first.endswith(b"\n"):
            hint = "truncated header line" if first.lstrip().startswith(b'{"schema"') else "not JSON"
        else:
            hint = "not JSON"
        raise TraceError(f"{path}: {hint}, not a spectui trace ({_supported()})") from None
    if type(header) is not dict or header.get("schema") != SCHEMA:
        what = header.get("schema") if type(header) is dict else None
        if type(what) is str:
            raise TraceError(f"{path}: schema {what[:60]!r} is not a spectui trace ({SCHEMA!r}; {_supported()})")
        raise TraceError(f"{path}: JSON but not a spectui trace (no {SCHEMA!r} header; {_supported()})")
    version = header.get("version")
    if type(version) is not int:
        raise TraceError(f"{path}: trace header has no valid version ({_supported()})")
    if version not in SUPPORTED_VERSIONS:
        newer = version > max(SUPPORTED_VERSIONS)
        why = "written by a newer spectui" if newer else "an unsupported old format"
        raise TraceError(f"{path}: trace version {version} ({why}); {_supported()}")
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
            line = next(self._lines, None)
            if line is None:
                raise StopIteration
            self.line_no += 1
            if isinstance(line, _Damage):
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
                if isinstance(rest, _Damage):
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
            raise StopIteration

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
        close = getattr(self._lines, "close", None)
        if close is not None:
            close()


def iter_trace(
    path: str | os.PathLike, on_warning: Callable[[str], None] | None = None
) -> tuple[dict[str, Any], TraceReader]:
    """Open a trace: returns its header (checked now) and a streaming iterator over its events.

    Raises :class:`TraceError` for a file that is not a readable trace. Warnings (a damaged last line)
    go to ``on_warning`` when given, else to :mod:`warnings` as :class:`TraceWarning`; the iterator's
    ``warnings`` list keeps them either way.
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
    """Read a whole (small) trace into memory: header, events and warnings."""
    header, reader = iter_trace(path, on_warning=on_warning if on_warning is not None else (lambda m: None))
    events = list(reader)
    return Trace(header, events, reader.warnings)


# ------------------------------------------------------------------------------------------ synthetic


def synthetic_run(n_passes: int, seed: int = 0, k: int = 3, p_accept: float = 0.7) -> Iterator[Event]:
    """A made-up but well-formed run (start, prefill, ``n_passes`` decode passes, one settings change
    half-way, end), generated lazily. For the replay benchmark and the reader's tests; never shown as
    a real recording."""
    rng = random.Random(seed)  # noqa: S311 - made-up data, nothing secret
    words = ["the", " cat", " sat", " on", " a", " mat", ".", "\n", " def", " f", "(x", "):", " ré", "sumé", " 🙂"]
    settings = Settings(draft_max=k)
    yield RunStarted(
        run_id=f"synthetic-{seed}", started_at=1_700_000_000.0,
        target=ModelInfo(path="synthetic-target.gguf", name="synthetic target", n_vocab=len(words)),
        draft=ModelInfo(path="synthetic-draft.gguf", name="synthetic draft", n_vocab=len(words)),
        prompt="synthetic", prompt_tokens=3, n_predict=n_passes * (k + 1), n_ctx=1 << 20, threads=2,
        settings=settings, target_decode_ms=80.0, draft_decode_ms=40.0,
    )
    t = 0.0
    ctx = 3
    n_emit = n_drafted = n_acc = 0
    for i in range(n_passes + 1):
        if i == n_passes // 2 and i > 0:
            new = Settings(draft_max=max(0, settings.draft_max - 1), temperature=0.5)
            yield SettingsChanged(before_pass=i, old=settings, new=new, t=t)
            settings = new
        if i == 0:
            wall = 120.0
            tok = rng.randrange(len(words))
            target = TargetToken(tok, words[tok], 0.9, kind=PLAIN)
            drafts: tuple[DraftToken, ...] = ()
            emitted: tuple[Token, ...] = (Token(tok, words[tok], 0.9),)
            timing = Timing(0.0, wall, 0.0, wall, 0.0)
            n_a = 0
        else:
            kk = settings.draft_max
            verdicts = []
            rejected = False
            for _ in range(kk):
                if rejected:
                    verdicts.append(DISCARDED)
                elif rng.random() < p_accept:
                    verdicts.append(ACCEPTED)
                else:
                    verdicts.append(REJECTED)
                    rejected = True
            ids = [rng.randrange(len(words)) for _ in range(kk + 1)]
            drafts = tuple(
                DraftToken(ids[j], words[ids[j]], rng.random(), verdict=verdicts[j], target_prob=rng.random())
                for j in range(kk)
            )
            n_a = verdicts.count(ACCEPTED)
            kind = PLAIN if kk == 0 else (BONUS if n_a == kk else CORRECTION)
            target = TargetToken(ids[kk], words[ids[kk]], rng.random(), kind=kind)
            emitted = tuple(Token(d.id, d.text, d.prob) for d in drafts[:n_a])
            emitted += (Token(target.id, target.text, target.prob),)
            dm, vm, om = 40.0 * kk, 80.0 + 15.0 * kk, 2.0
            timing = Timing(dm, vm, om, dm + vm + om, 0.0)
            n_drafted += kk
            n_acc += n_a
        t += timing.wall_ms / 1000.0
        ctx += len(emitted)
        n_emit += len(emitted)
        yield PassEvent(
            index=i, prefill=i == 0, settings=settings, k=settings.draft_max if i else 0, drafts=drafts,
            target=target, n_accepted=n_a, emitted=emitted,
            timing=Timing(timing.draft_ms, timing.verify_ms, timing.other_ms, timing.wall_ms, round(t, 6)),
            n_ctx_used=ctx,
        )
    yield RunEnded(reason="n_predict", n_passes=n_passes + 1, n_emitted=n_emit, n_drafted=n_drafted,
                   n_accepted=n_acc, wall_s=round(t, 6))
