"""Every file spectui writes goes through here: nothing an output does may destroy a file.

The rules (docs/exit-statuses.md, "Output files"):

1. An output path is checked **before any work** (:func:`check_output`): its directory exists and is
   writable, the path is not a directory, and it is **never one of the run's inputs** (model files, the
   prompt file, the trace being replayed or cast...): compared by resolved path *and* by inode
   (``os.path.samefile``), so a symlink or a hard link to an input is caught too.
2. An existing file is replaced only when it is one spectui wrote **of the same kind** (a trace is
   recognised by its header line, a cast by its asciicast header, a report by the kind's own marker, see
   :class:`Kind`), or when it is empty, or with ``force=True`` (the writing commands' ``--force``).
3. A file is opened only when there is something to write, and replaced **atomically** where the format
   allows: :func:`atomic_write` writes a temporary file in the same directory and ``os.replace``-s it onto
   the path when the block ends without an exception (a cast, a report, an export, a cache). A trace is
   written as it happens (kill -9 safety: every line is flushed as written) by :func:`open_trace`: its
   file is created only when the first event arrives (a run that fails before it leaves no file), as a
   temporary file that replaces the path right after its first flush (an older trace stays whole until
   the new one has a readable first event). An existing device or pipe (``/dev/null``, a FIFO) is
   written in place: nothing is renamed onto it and nothing is read from it.

How a command uses it (the bench and race commands call the same two functions)::

    out = check_output(path, CAST, inputs=[trace_file], force=force)   # early: errors before any work
    ...                                                                # the work
    with out.atomic_write() as fh:                                     # or atomic_write(path, CAST, ...)
        fh.write(...)
    # a trace: fh, commit = out.open_trace()  (TraceWriter does this at its first event)

Kinds: :data:`TRACE`, :data:`CAST`, :data:`PROBE_CACHE`, :func:`json_report` (a JSON object whose first
key is ``"schema": "spectui.<name>"``), :func:`csv_report` (the exact header row spectui writes),
:func:`text_report` (a first line spectui writes, e.g. an HTML comment at the top of a markdown report).
Errors are :class:`OutputError` (a :class:`~spectui.contract.errors.SpectuiError`: one line, exit status 2).
Only the standard library and spectui's errors are imported here.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import re
import select
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from typing import IO, Callable, Iterable, Iterator

from .errors import SpectuiError
from .exitcodes import signal_name, stop_asked
from .streams import closed_stream_named

HEAD_BYTES = 64 * 1024  # how much of an existing file is read to recognise it
_GZIP_MAGIC = b"\x1f\x8b"


class OutputError(SpectuiError):
    """An output path that may not be written (one line; exit status 2). ``reason``: the message without
    the path (for callers that say it their own way)."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message


STREAM_GIVE_UP_S = 0.3  # after a stop signal, how long a write waits for its reader to read before it gives up
_STEP_S = 0.1  # a wait on a stream output, in steps this long (a stop signal is seen at the next step)


def _blocked_too_long(path: str, grace_s: float = STREAM_GIVE_UP_S) -> None:
    """Raise OSError when a stop signal came more than ``grace_s`` ago: the command must end."""
    asked = stop_asked()
    if asked is not None and asked[1] >= grace_s:
        raise OSError(errno.EAGAIN, f"nobody reads it, and {signal_name(asked[0])} asked to stop", path)


class _Stream(io.RawIOBase):
    """A device or a FIFO opened and written in non-blocking steps: a FIFO waits for its reader, and a full
    pipe for its reader to read, as long as they take, but once a stop signal came
    (:func:`~spectui.contract.exitcodes.stop_asked`) a wait gives up (an OSError that says so): at once for a
    FIFO with no reader, within ``STREAM_GIVE_UP_S`` for a reader that stopped reading. So SIGINT, SIGTERM
    and SIGHUP end a command within a second whatever its outputs block on."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        flags = os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
        while True:
            try:
                self._fd = os.open(path, flags)
                break
            except OSError as exc:
                if exc.errno != errno.ENXIO:  # ENXIO: a FIFO with no reader yet
                    raise
            _blocked_too_long(path, 0.0)  # no reader at all: nothing to wait for once a stop is asked
            time.sleep(_STEP_S)

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        done = 0
        while done < len(view):
            try:
                done += os.write(self._fd, view[done:])
            except BlockingIOError:
                _blocked_too_long(self.path)
                select.select([], [self._fd], [], _STEP_S)
        return done

    def close(self) -> None:
        if not self.closed:
            try:
                super().close()
            finally:
                os.close(self._fd)


def _open_stream(path: str, binary: bool, encoding: str | None) -> IO:
    raw = io.BufferedWriter(_Stream(path))
    return raw if binary else io.TextIOWrapper(raw, encoding=encoding or "utf-8")


def _refuse(kind: "Kind", path: str, reason: str, verb: str = "cannot write") -> OutputError:
    return OutputError(f"{verb} {kind.name} {path}: {reason}", reason)


@dataclass(frozen=True)
class Kind:
    """What a file is: ``name`` for messages, ``recognise(head)`` says whether an existing file (its first
    bytes, decompressed when gzip) is one spectui wrote of this kind. ``owned_dir``: the file lives in a
    directory that is spectui's own (the probe cache), so any existing file there may be replaced."""

    name: str
    recognise: Callable[[bytes], bool] = field(compare=False)
    owned_dir: bool = False


def _first_json_line(head: bytes) -> object:
    line = head.split(b"\n", 1)[0]
    try:
        return json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


def _is_trace(head: bytes) -> bool:
    obj = _first_json_line(head)
    return type(obj) is dict and obj.get("schema") == "spectui.trace"


def _is_cast(head: bytes) -> bool:
    obj = _first_json_line(head)
    return (type(obj) is dict and obj.get("version") in (1, 2, 3) and isinstance(obj.get("width"), int)
            and isinstance(obj.get("height"), int))


TRACE = Kind("trace", _is_trace)
CAST = Kind("cast", _is_cast)
PROBE_CACHE = Kind("probe cache", lambda head: True, owned_dir=True)


def json_report(name: str) -> Kind:
    """A JSON report: an object whose first key is ``"schema": "spectui.<name>"`` (write that key first)."""
    pattern = re.compile(rb'^\s*\{\s*"schema"\s*:\s*"' + re.escape(f"spectui.{name}".encode()) + rb'"')
    return Kind(f"{name} JSON report", lambda head: bool(pattern.match(head)))


def csv_report(name: str, fields: Iterable[str]) -> Kind:
    """A CSV export recognised by its header row (exactly the columns spectui writes)."""
    header = ",".join(fields).encode()
    return Kind(f"{name} CSV", lambda head: head.split(b"\n", 1)[0].rstrip(b"\r") == header)


def text_report(name: str, first_line: str) -> Kind:
    """A text report whose first line is ``first_line`` (e.g. ``<!-- spectui bench report -->``)."""
    marker = first_line.encode()
    return Kind(f"{name} report", lambda head: head.split(b"\n", 1)[0].rstrip(b"\r") == marker)


def _head(path: str) -> bytes:
    with open(path, "rb") as fh:
        data = fh.read(HEAD_BYTES)
    if data.startswith(_GZIP_MAGIC):
        try:
            return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data, HEAD_BYTES)
        except zlib.error:
            return b""
    return data


def missing(path: str | os.PathLike) -> str:
    """Why ``path`` names no file, in words ("" when it does): a loop of symbolic links (``a -> b -> a``), a
    link to nothing (and what it names), or not found. For the one-line errors of inputs and outputs."""
    p = os.fspath(path)
    try:
        os.stat(p)
        return ""
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a loop of symbolic links (it never names a file)"
        if os.path.islink(p):
            return f"a symbolic link to {os.readlink(p)}, which does not exist"
        return "file not found" if exc.errno == errno.ENOENT else str(exc.strerror or exc)
    except ValueError:  # a NUL byte: no file can have that name
        return "file not found"


def _same_file(a: str, b: str) -> bool:
    try:
        if os.path.realpath(a) == os.path.realpath(b):
            return True
        return os.path.exists(a) and os.path.exists(b) and os.path.samefile(a, b)
    except (OSError, ValueError):  # ValueError: a name no file can have (a NUL byte), so never the same file
        return False


@dataclass(frozen=True)
class OutputPath:
    """A checked output path (from :func:`check_output`); open it with :meth:`atomic_write` or
    :meth:`open_trace` once there is something to write."""

    path: str
    kind: Kind
    inputs: tuple[str, ...] = ()
    force: bool = False
    stream: bool = False  # an existing device or pipe (/dev/null, a FIFO): written in place, never renamed onto
    target: str = ""  # a symlink's real path (a regular file, or none yet): written through it, the link kept
    replaces_link: bool = False  # a link in a cache's own directory: replaced by the file, never written through

    @property
    def real(self) -> str:
        """The path the bytes go to: the symlink's real path, else the path itself."""
        return self.target or self.path

    def with_inputs(self, more: Iterable[str | os.PathLike | None]) -> "OutputPath":
        """The same output, checked against more inputs (e.g. model files resolved after the first check)."""
        return check_output(self.path, self.kind, (*self.inputs, *more), self.force)

    def recheck(self) -> None:
        """The same checks again, at the moment of opening (the file system may have changed)."""
        if not self.replaces_link:
            check_output(self.path, self.kind, self.inputs, self.force)

    @contextlib.contextmanager
    def atomic_write(self, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
        """A temporary file in the path's directory; ``os.replace``-d onto the path when the block ends
        without an exception, removed otherwise (the old file, if any, is untouched then)."""
        self.recheck()
        real = self.real
        directory = os.path.dirname(os.path.abspath(real))
        binary = "b" in mode
        if self.stream:
            try:  # /dev/full, a closed pipe, a FIFO nobody reads after a signal: one line, not a traceback
                with _open_stream(self.path, binary, encoding) as fh:
                    yield fh
            except OSError as exc:
                raise _refuse(self.kind, self.path, str(exc.strerror or exc)) from None
            return
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(real)}.", suffix=".part", dir=directory)
        except OSError as exc:
            raise _refuse(self.kind, self.path, str(exc.strerror or exc)) from None
        try:
            with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": encoding})) as fh:
                yield fh
                fh.flush()
                os.fsync(fh.fileno())
            _keep_mode(real, tmp)
            os.replace(tmp, real)  # a symlink's real file, never the link itself
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if isinstance(exc, OSError):
                raise _refuse(self.kind, self.path, str(exc.strerror or exc)) from None
            raise

    def gone(self, fh: IO[bytes]) -> str:
        """Why ``fh`` (from :meth:`open_trace`, committed) is no longer the file at the path, in words ("" when
        it is, and for a device or a pipe): deleted (with its folder), moved away, or another file put there."""
        if self.stream:
            return ""
        try:
            mine = os.fstat(fh.fileno())
        except (OSError, ValueError):
            return ""
        try:
            now = os.stat(self.real)
        except OSError:
            now = None
        if now is not None and (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino):
            return ""
        if mine.st_nlink == 0 and now is not None:
            return "another file took its path while it was written: what it held is lost"
        if mine.st_nlink == 0:
            folder = os.path.dirname(os.path.abspath(self.real))
            how = f"it was deleted, with its folder {folder}," if not os.path.isdir(folder) else "it was deleted"
            return f"{how} while it was written: what it held is lost"
        where = "another file took its path" if now is not None else "it was moved away from this path"
        return f"{where} while it was written (what it held is where it was moved to)"

    def open_trace(self) -> tuple[IO[bytes], Callable[[], None]]:
        """(binary file, commit) for a trace written as it happens: the file is a temporary file in the
        path's directory; ``commit()`` (call it after the first flush) renames it onto the path. Writes
        after the rename go on into the same file."""
        self.recheck()
        if self.stream:
            try:
                return _open_stream(self.path, True, None), (lambda: None)
            except OSError as exc:
                raise _refuse(self.kind, self.path, str(exc.strerror or exc)) from None
        real = self.real
        directory = os.path.dirname(os.path.abspath(real))
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(real)}.", suffix=".part", dir=directory)
        except OSError as exc:
            raise _refuse(self.kind, self.path, str(exc.strerror or exc)) from None
        fh = os.fdopen(fd, "wb")
        done = []

        def commit() -> None:
            if done:
                return
            done.append(True)
            try:
                _keep_mode(real, tmp)
                os.replace(tmp, real)  # a symlink's real file, never the link itself
            except OSError as exc:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise _refuse(self.kind, self.path, str(exc.strerror or exc)) from None

        return fh, commit


def _keep_mode(path: str, tmp: str) -> None:
    """mkstemp makes 0600 files; give the new file what a plain open() would (0666 & ~umask)."""
    umask = os.umask(0)
    os.umask(umask)
    with contextlib.suppress(OSError):
        os.chmod(tmp, 0o666 & ~umask)


def check_output(path: str | os.PathLike, kind: Kind, inputs: Iterable[str | os.PathLike | None] = (),
                 force: bool = False, own_name: bool = False) -> OutputPath:
    """Check that ``path`` may be written as a ``kind`` file, before any work; raises :class:`OutputError`
    with one line otherwise. ``inputs``: every file the run reads (None entries are skipped).

    Symbolic links: a path the user named (``-o``, ``--record``) that is a link is written through, to what
    it names (``/dev/stdout``). A file spectui names itself is never written through a link: in a cache's own
    directory (``kind.owned_dir``) the link itself is replaced by the new file (what it named is left
    alone); a ``--record-dir`` trace (``own_name``) that is a link is refused, ``--force`` or not."""
    p = os.fspath(path)
    if not p or not p.strip():
        raise OutputError(f"the {kind.name} path is empty", "empty path")
    closed = closed_stream_named(p)  # -o /dev/stdout with stdout closed (>&-): refused before any work
    if closed:
        raise _refuse(kind, p, closed)
    if os.path.islink(p) and (kind.owned_dir or own_name):
        if own_name:
            reason = (f"it is a symbolic link (to {os.readlink(p)}); spectui names this file itself and never "
                      "writes through a link")
            raise OutputError(f"refusing to write the {kind.name} {p}: {reason}", reason)
        return OutputPath(p, kind, (), force, replaces_link=True)
    ins = tuple(os.fspath(i) for i in inputs if i)
    for i in ins:
        if _same_file(p, i):
            reason = f"it is one of this run's inputs ({i})" if os.path.realpath(p) == os.path.realpath(i) else (
                f"it is the same file as this run's input {i}")
            raise OutputError(f"refusing to write the {kind.name} to {p}: {reason}", reason)
    if os.path.isdir(p):
        raise _refuse(kind, p, "it is a directory")
    if os.path.exists(p) and not os.path.isfile(p):  # a device or a pipe: written in place, nothing replaced
        return OutputPath(p, kind, ins, force, stream=True)
    if os.path.islink(p):
        # A symlink (/dev/stdout -> /proc/self/fd/1 -> a redirect's file, a link to a report): what it names
        # is checked and written, through its real path; the link itself is never replaced.
        real = os.path.realpath(p)
        if os.path.islink(real):  # realpath stops inside a loop (a -> b -> a): no file to write
            raise _refuse(kind, p, "it is a loop of symbolic links (it never names a file)")
        if os.path.isdir(real):
            raise _refuse(kind, p, f"it links to a directory ({real})")
        checked = check_output(real, kind, ins, force)
        if checked.stream:
            return OutputPath(p, kind, ins, force, stream=True)
        return OutputPath(p, kind, ins, force, target=real)
    directory = os.path.dirname(os.path.abspath(p))
    if not os.path.isdir(directory):
        raise _refuse(kind, p, f"directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise _refuse(kind, p, f"directory {directory} is not writable")
    if os.path.lexists(p) and not force and not kind.owned_dir:
        try:
            own = os.path.getsize(p) == 0 or kind.recognise(_head(p))
        except OSError as exc:
            raise _refuse(kind, p, f"cannot read the existing file ({exc.strerror or exc})") from None
        if not own:
            reason = f"it exists and is not a spectui {kind.name} (use --force to replace it)"
            raise OutputError(f"refusing to replace {p}: {reason}", reason)
    return OutputPath(p, kind, ins, force)


def check_distinct(outputs: Iterable[tuple[str, str | os.PathLike | None]]) -> None:
    """The export paths of one command, checked against each other before any work: two options that name
    one file (the same path, a link to it, a hard link) are one line (``--json and --csv both name X``).
    ``outputs``: (option, path) pairs; None, "" and "-" (stdout) are skipped."""
    seen: list[tuple[str, str]] = []
    for option, path in outputs:
        if not path or os.fspath(path) == "-":
            continue
        p = os.fspath(path)
        for other_option, other in seen:
            if _same_file(p, other) or os.path.abspath(p) == os.path.abspath(other):
                reason = f"{other_option} and {option} both name {p}: give each export its own file"
                raise OutputError(reason, reason)
        seen.append((option, p))


def atomic_write(path: str | os.PathLike, kind: Kind, inputs: Iterable[str | os.PathLike | None] = (),
                 force: bool = False, mode: str = "w", encoding: str | None = "utf-8"):
    """``check_output(...).atomic_write(mode)``: for a command that has nothing to do between the check
    and the write."""
    return check_output(path, kind, inputs, force).atomic_write(mode, encoding)


def open_trace(path: str | os.PathLike, inputs: Iterable[str | os.PathLike | None] = (),
               force: bool = False) -> tuple[IO[bytes], Callable[[], None]]:
    """``check_output(path, TRACE, ...).open_trace()``."""
    return check_output(path, TRACE, inputs, force).open_trace()


__all__ = ["CAST", "PROBE_CACHE", "TRACE", "Kind", "OutputError", "OutputPath", "atomic_write", "check_distinct",
           "check_output",
           "csv_report", "json_report", "open_trace", "text_report"]


def record_folder(record_dir: str | os.PathLike) -> str:
    """The ``--record-dir`` folder (sweep, bench, race), made if it is missing; a path that is a file, or one
    that cannot be made, is a one-line error before any run. Each trace in it is then checked on its own
    (:func:`check_output`)."""
    if os.path.exists(record_dir) and not os.path.isdir(record_dir):
        raise SpectuiError(f"--record-dir {record_dir} exists and is not a directory")
    try:
        os.makedirs(record_dir, exist_ok=True)
    except OSError as exc:
        raise SpectuiError(f"cannot create --record-dir {record_dir}: {exc.strerror or exc}") from None
    return os.fspath(record_dir)
