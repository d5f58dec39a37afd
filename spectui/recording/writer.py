"""Writing a trace: ``TraceWriter`` (one flushed JSON line per event, created at the first event through
spectui.contract.outputs; in a background thread where a core is spare) and ``write_trace`` (a whole event
sequence at once). The format is schema.py's. No Textual import.
"""

from __future__ import annotations

import gzip
import os
import queue
import tempfile
import threading
from typing import IO, Any, Callable, Iterable, Iterator

from ..contract.claim import ClaimRefused, claim
from ..contract.event_json import to_dict
from ..contract.events import AttachStarted, Event, RunStarted
from ..contract.outputs import TRACE, OutputError, check_output
from .reader import Damage, gzip_lines
from .schema import TraceError, json_line, make_header


class TraceWriter:
    """Writes events as JSON Lines, flushed after every event. The header is written when the RunStarted (or
    AttachStarted) event arrives (it is made from it); if the first event is something else, a header without
    run information is written first. Thread-safe: a UI thread may call :meth:`save_to` while the engine
    thread writes. With ``gate`` set (``Engine.decoding``), a background line waits (at most 50 ms) for a
    decode to be running.

    Args:
        path: the trace file (``.gz``: gzip), created at the first event; None: an anonymous temporary file
            (flat memory), for a TUI started without ``--record`` that may still save the trace (:meth:`save_to`).
        header_extra: more header fields (the command's own).
        flush_each: flush after every event (False for bulk writes).
        inputs: the command's input files: the trace never goes over one (nor over the models it records).
        force: replace an existing file that is not a spectui trace.
        background: one writer thread encodes, writes and flushes each line (a SIGKILL still leaves every
            written line complete; events still queued then are lost); :meth:`write` only queues, and
            :meth:`flush`, :meth:`save_to` and :meth:`close` first wait for the queue to drain; a write error is
            raised by the next call. Worth it where a spare core exists.

    Raises:
        TraceError: ``path`` is an input, or an existing file that is not a trace (without ``force``), or
            another command is writing it now (``spectui.contract.claim``: held from here until :meth:`close`).
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
        try:  # one writer per trace file: a second run recording it now is refused before its models load
            self._claim = claim(self._output.real, self.path) if self._output and not self._output.stream else None
        except ClaimRefused as exc:
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
        """Write one event (background: queue it).

        Raises:
            TraceError: the trace cannot be written (a full disk: one line), or it is closed.
        """
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
                    self._emit(json_line(self.header))
                self._emit(json_line(to_dict(event)))
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
        input or a file that is not a trace; gzip if it ends in .gz). The recording itself goes on.

        Args:
            path: where to save.
            inputs: files the copy must not go over (the recording's own path is one).
            force: replace an existing file that is not a spectui trace.

        Returns:
            The number of events saved.
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
                self._emit(json_line(self.header))
                self._flush()
            n = self.n_events
            try:
                with out.atomic_write("wb") as fh:  # OutputError (a failed write) says the path itself
                    target: IO[bytes] = gzip.GzipFile(fileobj=fh, mode="wb", mtime=0) if dest.endswith(".gz") else fh
                    for block in _recorded_blocks(self.path, self._raw, self._gz):
                        target.write(block)
                    if target is not fh:
                        target.close()
            except OSError as exc:
                raise TraceError(f"cannot save trace to {dest}: {exc.strerror or exc}") from None
            return n

    def close(self, keep_empty: bool = False) -> None:
        """Close the file. A recording that saw no event leaves no file, unless ``keep_empty`` (a header
        alone, a valid empty trace: what write_trace of an empty list writes, since it was asked to).

        Raises:
            TraceError: the trace could not be written, or the file written is no longer at its path (deleted
                with its folder, moved away, or another file put there while the run wrote it).
        """
        try:
            self._close(keep_empty)
        finally:
            if self._claim is not None:
                self._claim.release()

    def _close(self, keep_empty: bool) -> None:
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
                self._emit(json_line(self.header))
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
                gone = self._output.gone(self._raw) if self._output is not None else ""
                self._raw.close()
            except OSError as exc:
                try:
                    self._raw.close()
                except OSError:
                    pass
                if not self._failed:  # already reported by write()
                    where = self.path or "(temporary)"
                    raise TraceError(f"cannot write trace {where}: {exc.strerror or exc}") from None
                return
            if gone:  # deleted with its folder, moved away, replaced: the trace is not at its path
                raise TraceError(f"cannot write trace {self.path}: {gone} ({self.n_events} events recorded)")


def _recorded_blocks(path: str | None, raw: IO[bytes], gz: bool) -> Iterator[bytes]:
    """The (decompressed) bytes a writer wrote so far, in blocks, without moving its file offset: from its
    anonymous temporary file ``raw`` (``path`` None) by positional reads, else from ``path``."""
    if path is None:
        fd, pos = raw.fileno(), 0
        while True:
            block = os.pread(fd, 1 << 20, pos)
            if not block:
                return
            pos += len(block)
            yield block
    elif gz:
        for line in gzip_lines(open(path, "rb")):
            if isinstance(line, Damage):  # the open stream has no end marker yet: expected
                return
            yield line
    else:
        with open(path, "rb") as fh:
            yield from iter(lambda: fh.read(1 << 20), b"")


_STOP = object()  # the background writer's end-of-queue marker


def write_trace(path: str | os.PathLike, events: Iterable[Event], header_extra: dict[str, Any] | None = None) -> int:
    """Write a whole event sequence to ``path`` (a header alone for no event).

    Args:
        path: the trace file (``.gz``: gzip).
        events: the events, in order.
        header_extra: more header fields.

    Returns:
        The number of events written.
    """
    w = TraceWriter(path, header_extra, flush_each=False)
    try:
        for ev in events:
            w.write(ev)
    finally:
        w.close(keep_empty=True)
    return w.n_events
