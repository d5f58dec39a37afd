"""One browser tab's process: textual-serve's ``AppService`` with its process held on a short leash.

What it changes (each a method textual-serve lets a subclass replace):

- the process is ``python -m spectui ARGS`` itself, started without a shell (textual-serve runs ``sh -c``:
  two processes a tab, and a signal to the shell does not reach spectui), in its own process group, and on
  Linux with the kernel's parent-death signal: if serve dies, even by SIGKILL, the process gets SIGTERM;
- ``stop`` (the websocket closed, or serve is stopping) asks the app to quit, then sends SIGTERM to its
  group after ``QUIT_S``, SIGKILL after ``TERM_S`` more: nothing outlives its socket, and serve's own stop
  is bounded;
- a process that draws no screen (``spectui replay missing.jsonl``: its error and exit 2 come before any
  screen) or that ends with an error has what it printed shown in the page, escaped, and written to serve's
  log in one line; textual-serve left a blank card and wrote the text raw on serve's stdout;
- what the process sends is bounded: at most ``MAX_PACKET`` bytes a packet (a frame of a 500 x 200 screen
  is a few MB), ``OUTPUT_CAP`` bytes of output kept.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import signal
import sys
from typing import Callable, Sequence

from textual_serve.app_service import AppService

from ..contract.exitcodes import signal_name
from ..contract.text import visible, visible_line

QUIT_S = 1.0  # the app's own quit (the web driver's "quit" message) before SIGTERM
TERM_S = 0.5  # SIGTERM before SIGKILL
MAX_PACKET = 32 * 1024 * 1024
OUTPUT_CAP = 64 * 1024
PRELUDE_LINES = 10  # textual-serve's: the web driver's "__GANGLION__" comes first, or the app drew no screen
READY = b"__GANGLION__\n"
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that asks the kernel to SIGTERM the child when serve dies (Linux), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def arm() -> None:  # in the child, between fork and exec
        prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM))
        if os.getppid() != parent:  # serve died before the request took effect
            os._exit(1)

    return arm


class _Capped:
    def __init__(self, cap: int = OUTPUT_CAP) -> None:
        self.data = bytearray()
        self.cap = cap
        self.cut = False

    def add(self, chunk: bytes) -> None:
        room = self.cap - len(self.data)
        if len(chunk) > room:
            self.cut = True
        self.data += chunk[:max(room, 0)]


def ended_how(status: int | None) -> str:
    """"exit status 2", "killed by SIGKILL" (asyncio's returncode -N), "still running"."""
    if status is None:
        return "still running"
    if status < 0:
        return f"killed by {signal_name(-status)}"
    return f"exit status {status}"


def failure_text(shown: str, status: int | None, output: str, started: bool) -> str:
    """What the page shows when a session's process drew no screen or ended with an error (escaped: it is
    a process's output, shown in a terminal)."""
    what = "ended" if started else "drew no screen"
    head = f"spectui serve: `{shown}` {what} ({ended_how(status)})"
    body = visible(output.strip()) or "(it printed nothing)"
    return f"{visible_line(head)}\n\n{body}\n\nReload the page to start it again."


class Session(AppService):
    """A tab's ``spectui ARGS`` process (``argv``), its screen sent to ``write_bytes``. ``shown``: the
    command as the page and the log name it (``spectui demo --act 2``)."""

    def __init__(self, argv: Sequence[str], shown: str, *, write_bytes, write_str, close, download_manager,
                 log: Callable[[str], None] | None = None) -> None:
        super().__init__(shown, write_bytes=write_bytes, write_str=write_str, close=close,
                         download_manager=download_manager)
        self.argv = list(argv)
        self.shown = shown
        self.log = log or (lambda line: None)
        self.started = False  # the app drew a screen (the web driver's prelude came)
        self.status: int | None = None
        self.output = ""  # what it printed when it drew no screen or failed (stdout then stderr, capped)
        self._stopping: asyncio.Future | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def alive(self) -> bool:
        return self._process is not None and self._process.returncode is None

    def over(self) -> bool:
        """Its process has ended and been reaped (the page may still show why): no longer a session that
        counts against the cap."""
        return self._task is not None and self._task.done()

    async def _open_app_process(self, width: int = 80, height: int = 24):
        self._process = process = await asyncio.create_subprocess_exec(
            *self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=self._build_environment(width=width, height=height),
            start_new_session=True, preexec_fn=_die_with_parent())
        self._stdin = process.stdin
        return process

    async def send_bytes(self, data: bytes) -> bool:
        return self.alive() and await super().send_bytes(data)

    async def send_meta(self, data: dict) -> bool:
        return self.alive() and await super().send_meta(data)

    def _signal(self, signum: int) -> None:
        if self.alive():
            try:
                os.killpg(self._process.pid, signum)  # its own group (start_new_session)
            except (ProcessLookupError, PermissionError):
                pass

    async def _reap(self, first_s: float) -> int:
        """The process's exit status: waited for ``first_s``, then SIGTERM and ``TERM_S``, then SIGKILL."""
        process = self._process
        for signum, wait_s in ((None, first_s), (signal.SIGTERM, TERM_S), (signal.SIGKILL, None)):
            if signum is not None:
                self._signal(signum)
            try:
                return await asyncio.wait_for(process.wait(), wait_s)
            except asyncio.TimeoutError:
                continue
        return process.returncode  # pragma: no cover (the SIGKILL wait has no deadline)

    async def run(self) -> None:
        process = self._process
        stdout, stderr = process.stdout, process.stderr
        out, err = _Capped(), _Capped()

        async def read_stderr() -> None:
            while chunk := await stderr.read(65536):
                err.add(chunk)

        reader = asyncio.ensure_future(read_stderr())
        try:
            for _ in range(PRELUDE_LINES):
                line = await stdout.readline()
                if not line:
                    break
                if line == READY:
                    self.started = True
                    break
                out.add(line)
            if self.started:
                await self._packets(stdout)
            else:  # no screen: keep what it prints (an error, a headless summary) to show it
                while chunk := await stdout.read(65536):
                    out.add(chunk)
        except (asyncio.IncompleteReadError, ConnectionError, ValueError, RuntimeError):
            pass  # its stdout ended or broke, or the socket did
        finally:
            await self.send_meta({"type": "quit"})  # a no-op once it has ended
            self.status = await self._reap(QUIT_S)
            try:
                await asyncio.wait_for(reader, 1.0)
            except (asyncio.TimeoutError, ValueError, ConnectionError):
                reader.cancel()
        if self._stopping is not None:  # ended by stop(): the socket is going anyway
            return
        if self.started and self.status == 0:  # q, or the app's own end
            await self.remote_close()
            return
        text = (out.data + err.data).decode("utf-8", "replace")
        self.output = text
        last = next((ln for ln in reversed(text.splitlines()) if ln.strip()), "")
        self.log(f"`{self.shown}` {'ended' if self.started else 'drew no screen'} ({ended_how(self.status)})"
                 + (f": {last}" if last else ""))
        screen = failure_text(self.shown, self.status, text, self.started).replace("\n", "\r\n")
        try:  # the page keeps showing it (the socket stays open) until the tab is closed or reloaded
            await self.remote_write_bytes(("\x1b[?1049l\x1b[0m\x1b[H\x1b[2J" + screen + "\r\n").encode())
        except (ConnectionError, RuntimeError):
            pass

    async def _packets(self, stdout: asyncio.StreamReader) -> None:
        """textual-serve's packets: a type byte, a 4-byte big-endian size, the payload."""
        while True:
            head = await stdout.readexactly(5)
            size = int.from_bytes(head[1:], "big")
            if size > MAX_PACKET:
                raise ValueError(f"a packet of {size} bytes")
            payload = await stdout.readexactly(size)
            kind = head[:1]
            if kind == b"D":
                await self.on_data(payload)
            elif kind == b"M":
                await self.on_meta(payload)
            # b"P": file deliveries (spectui delivers none; serve has no download route)

    async def on_meta(self, data: bytes) -> None:
        try:
            meta = json.loads(data)
        except ValueError:
            return
        kind = meta.get("type") if isinstance(meta, dict) else None
        if kind == "open_url":
            await super().on_meta(data)
        # "exit": the app is ending; run() closes the socket once the process has (or shows its error)

    async def stop(self) -> None:
        """End the process (quit, then SIGTERM, then SIGKILL) and the task reading it; safe to call twice
        and from two tasks at once."""
        if self._task is None:
            return
        if self._stopping is None:
            self._stopping = asyncio.ensure_future(self._stop())
        await asyncio.shield(self._stopping)

    async def _stop(self) -> None:
        task = self._task
        await self.send_meta({"type": "quit"})
        await self._reap(QUIT_S)
        try:
            await asyncio.wait_for(asyncio.shield(task), 1.0)
        except asyncio.TimeoutError:  # stuck writing to a browser that does not read
            task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        self._task = None
