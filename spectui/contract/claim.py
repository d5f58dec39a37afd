"""One writer per output file at a time: a trace that two runs record at once (``--record same.jsonl`` twice)
would be renamed into place by both, and the first run's trace lost with both exiting 0.

:func:`claim` takes an exclusive lock (``flock``) for a destination before any work (before the models
load) and holds it until the file is closed; a second command that asks for the same destination, by the
same path, another spelling of it or a link to it, is refused in one line (exit status 2) and the first
command's file is never touched. The lock files live in a folder of the user's own (``$XDG_RUNTIME_DIR``,
else the temporary folder), one per destination, named by a hash of its real path, never beside the trace,
so a ``--record-dir`` holds traces only. The kernel drops a lock when its process dies (kill -9 too): a
claim never outlives the command that took it. Only the standard library and spectui's errors here.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import tempfile
import weakref

from .errors import SpectuiError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock; a destination is then not claimed
    fcntl = None  # type: ignore[assignment]

_TRIES = 20  # a lock file another command removed as this one opened it: open the new one again


class ClaimRefused(SpectuiError):
    """Another command is writing this destination now (one line, exit status 2)."""


def _claims_folder() -> str | None:
    """The user's own folder for lock files (made 0700): in ``$XDG_RUNTIME_DIR``, else the temporary folder;
    None when neither is safe to use (a folder of that name that is another user's, or a link)."""
    for base in (os.environ.get("XDG_RUNTIME_DIR"), tempfile.gettempdir()):
        if not base:
            continue
        folder = os.path.join(base, f"spectui-claims-{os.getuid()}")
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            st = os.lstat(folder)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077:
            return folder
    return None


def _let_go(fd: int, lock_path: str) -> None:
    try:
        os.unlink(lock_path)  # while it is held: nobody can have taken it since
    except OSError:
        pass
    try:
        os.close(fd)
    except OSError:
        pass


class Claim:
    """A held claim on a destination: :meth:`release` (idempotent) drops it and removes its lock file; a
    claim nobody released is let go when it is garbage (a writer dropped without ``close``)."""

    def __init__(self, fd: int, lock_path: str) -> None:
        self._release = weakref.finalize(self, _let_go, fd, lock_path)

    def release(self) -> None:
        self._release()


def _holder(fd: int) -> str:
    """"(pid N)" from a held lock file's first line, or ""."""
    try:
        first = os.pread(fd, 64, 0).split(b"\n", 1)[0].decode("ascii")
    except (OSError, UnicodeDecodeError):
        return ""
    return f" (pid {first})" if first.isdigit() else ""


def claim(real_path: str, shown: str, what: str = "trace") -> Claim | None:
    """Claim ``real_path`` (the file the bytes go to, links resolved) for this process until
    :meth:`Claim.release`.

    Args:
        real_path: the destination (its directory is resolved again here, so two spellings are one claim).
        shown: the path as the user gave it, for the message.
        what: what is written ("trace"), for the message.

    Returns:
        The claim, or None where no lock can be taken (no flock, no folder of the user's own for the lock
        files): the destination is then written unclaimed, as before.

    Raises:
        ClaimRefused: another command holds the claim now.
    """
    folder = _claims_folder() if fcntl is not None else None
    if folder is None:
        return None
    real = os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(real_path))), os.path.basename(real_path))
    name = hashlib.sha256(os.fsencode(real)).hexdigest()[:40]
    lock_path = os.path.join(folder, name + ".lock")
    for _ in range(_TRIES):
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0),
                         0o600)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            who = _holder(fd)
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return None
            reason = f"another spectui{who} is writing this {what} now: two commands never write one file"
            raise ClaimRefused(f"refusing to write the {what} {shown}: {reason}") from None
        try:
            same = os.stat(lock_path).st_ino == os.fstat(fd).st_ino
        except OSError:
            same = False
        if not same:  # its holder removed it as it let go: the claim is on the file at the path now
            os.close(fd)
            continue
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode() + os.fsencode(real) + b"\n", 0)
        return Claim(fd, lock_path)
    return None


__all__ = ["Claim", "ClaimRefused", "claim"]
