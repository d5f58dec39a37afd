"""A real pseudo-terminal for one spectui process (tests/tui/test_terminal.py): the process gets the pty's
slave as stdin, stdout and stderr, the test holds the master. A thread drains the master (as a terminal
emulator would) until ``stop_reading()`` (a terminal that no longer reads: its buffer fills and the app's
writes block); ``hang_up()`` closes the master (a closed terminal window, a dropped SSH link).

The process starts in a session of its own, without a controlling terminal, unless ``ctty``: then the slave
becomes its controlling terminal and the kernel sends it SIGHUP when the master closes (what sshd's pty
does); without, only the descriptors tell it that the terminal is gone.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The terminal's size is the pty's: COLUMNS and LINES in the test's own environment (a pytest-xdist worker has
# COLUMNS=80 LINES=24) would win over it (shutil.get_terminal_size reads them first); only ``env`` may set them.
SIZE_VARS = ("COLUMNS", "LINES")
ANSI = re.compile(r"\x1b(\[[0-9;?<>=]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-Za-z]|[=>78DEHMNOZc])")


def _set_size(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def read_to_close(master: int) -> bytes:
    """All a pty's master reads until the other side is closed (EOF, or EIO once every slave is closed)."""
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the process closed the terminal
            break
        if not chunk:
            break
        out += chunk
    return out


class PtyProcess:
    def __init__(self, args, cols: int = 100, rows: int = 30, env: dict | None = None, ctty: bool = False,
                 module: str = "spectui", argv: list[str] | None = None, cwd: str | os.PathLike = REPO) -> None:
        self.master, slave = pty.openpty()
        _set_size(slave, cols, rows)
        inherited = {k: v for k, v in os.environ.items() if k not in SIZE_VARS}
        full_env = {**inherited, "PYTHONPATH": str(REPO), "TERM": "xterm-256color", **(env or {})}
        full_env.pop("TEXTUAL_DRIVER", None)

        def take_terminal() -> None:  # in the child, after setsid: the slave as its controlling terminal
            if ctty:
                fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        argv = argv if argv is not None else [sys.executable, "-m", module, *map(str, args)]
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave,
                                     stderr=slave, cwd=cwd, env=full_env, start_new_session=True,
                                     preexec_fn=take_terminal)
        os.close(slave)
        self.out = bytearray()
        self._lock = threading.Lock()
        self._reading = threading.Event()
        self._reading.set()
        self._closed = False
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        while not self._closed:
            if not self._reading.wait(0.1):
                continue
            try:  # never blocked in read: a close of the master while a read holds it would not take effect
                if not select.select([self.master], [], [], 0.05)[0]:
                    continue
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: the process closed its terminal, or we did
                return
            if not chunk:
                return
            with self._lock:
                self.out += chunk

    def n_bytes(self) -> int:
        """Bytes the terminal has received so far."""
        with self._lock:
            return len(self.out)

    def raw(self) -> str:
        with self._lock:
            return self.out.decode("utf-8", "replace")

    def text(self) -> str:
        """What was written, without the escape sequences (a styled line's pieces read as one string)."""
        return ANSI.sub("", self.raw())

    def wait_for(self, needle: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in self.text():
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError(f"{needle!r} never appeared (rc={self.proc.poll()}):\n{self.text()[-3000:]}")

    def send(self, data: str) -> None:
        os.write(self.master, data.encode())

    def resize(self, cols: int, rows: int) -> None:
        _set_size(self.master, cols, rows)
        os.kill(self.proc.pid, signal.SIGWINCH)  # what the kernel sends a controlling terminal's group

    def stop_reading(self) -> None:
        self._reading.clear()

    def hang_up(self) -> None:
        """Close the master now: the drain thread leaves first (a read in progress would keep the file open,
        and the hang-up would only come with the app's next write)."""
        if not self._closed:
            self._closed = True
            if self._thread is not threading.current_thread():
                self._thread.join(timeout=1.0)
            os.close(self.master)

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout=timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.hang_up()
