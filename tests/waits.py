"""Waits on what a test waits for, never on a clock: a fixed sleep is too long on a quiet machine and too
short on a loaded one (the fast lane runs in parallel under pytest-xdist, on shared cores).

- ``wait_until(cond, timeout=60, what="")``: poll ``cond()`` every 20 ms until it is true; on timeout an
  AssertionError naming ``what``.
- ``catches(pid, *signals)``: whether the process has a handler for each signal (Linux: ``SigCgt`` in
  /proc/PID/status; elsewhere ``None``, unknown). Python catches SIGINT from its start, but SIGTERM and
  SIGHUP only once spectui's ``SignalStop`` is installed: ``catches(pid, SIGTERM, SIGHUP)`` is the moment
  a signal would be met by the command's own stop rather than by the default disposition.
- ``await settled(pilot, cond, timeout=30, what="")``: the same for a Textual app under ``run_test``: the
  app's messages are processed (``pilot.pause``) until ``cond()`` is true (what a key press was to do).
- ``cpu_seconds(pid)``: the CPU time the process has used so far (its own progress: on a loaded machine a
  command does the same work, later).
- ``Started``: a ``subprocess.Popen`` whose stdout and stderr go to files, so that a test can read what it
  printed while it runs (``printed()``) and still gets everything at the end (``stop_with(sig)``). One that
  a failed wait left running is killed after the test (``kill_left_running``, from tests/conftest.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from typing import Callable

import psutil

POLL_S = 0.02


def wait_until(cond: Callable[[], object], timeout: float = 60.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while True:
        if cond():
            return
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what or cond}")
        time.sleep(POLL_S)


async def settled(pilot, cond: Callable[[], object], timeout: float = 30.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    await pilot.pause()
    while not cond():
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what or cond}")
        await pilot.pause(POLL_S)


def catches(pid: int, *signals: int) -> bool | None:
    try:
        with open(f"/proc/{pid}/status") as fh:
            line = next((ln for ln in fh if ln.startswith("SigCgt:")), None)
    except OSError:
        return None
    if line is None:
        return None
    mask = int(line.split()[1], 16)
    return all(mask & (1 << (int(s) - 1)) for s in signals)


def cpu_seconds(pid: int) -> float:
    try:
        t = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return 0.0
    return t.user + t.system


def _text(data: bytes) -> str:  # as subprocess's text=True reads it: UTF-8, universal newlines
    return data.decode().replace("\r\n", "\n").replace("\r", "\n")


class Started(subprocess.Popen):
    """``Popen(argv, **kw)`` with stdout and stderr each in an unnamed temporary file."""

    running: list[Started] = []

    def __init__(self, argv, **kw) -> None:
        self._out = tempfile.TemporaryFile()
        self._err = tempfile.TemporaryFile()
        super().__init__(argv, stdout=self._out, stderr=self._err, **kw)
        Started.running.append(self)

    @staticmethod
    def _read(fh) -> bytes:  # pread: the child's file offset (shared with ours) stays where it writes
        fd = fh.fileno()
        return os.pread(fd, os.fstat(fd).st_size, 0)

    def printed(self) -> str:
        """stdout so far (bytes not yet a whole UTF-8 character are left for later)."""
        return self._read(self._out).decode(errors="ignore")

    def stopped_by_its_handler(self, cpu_s: float = 0.0) -> bool:
        """The process catches SIGTERM and SIGHUP (its SignalStop is installed) and has used ``cpu_s`` of CPU."""
        return catches(self.pid, signal.SIGTERM, signal.SIGHUP) is not False and cpu_seconds(self.pid) >= cpu_s

    def finish(self, timeout: float = 60) -> tuple[str, str]:
        """Wait for the exit (killed if it does not come) and return (stdout, stderr) as text."""
        try:
            self.wait(timeout=timeout)
        finally:
            if self.poll() is None:
                self.kill()
                self.wait()
        out, err = _text(self._read(self._out)), _text(self._read(self._err))
        self._out.close()
        self._err.close()
        if self in Started.running:
            Started.running.remove(self)
        return out, err

    def stop_with(self, sig: int, timeout: float = 60) -> tuple[str, str]:
        self.send_signal(sig)
        return self.finish(timeout)


def kill_left_running() -> None:
    """Kill (by PID) every ``Started`` process a test left running, and reap it."""
    while Started.running:
        proc = Started.running.pop()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc._out.close()
        proc._err.close()
