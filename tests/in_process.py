"""A spectui command run by click's CliRunner in the test's own process, answered as the
``subprocess.CompletedProcess`` a test gets from running it as its own process: the same click command, its
exit status, stdout and stderr, without the interpreter's start-up and imports (the fast lane's variant of a
CLI test; the process one stays in the full suite). A crash is re-raised, never read as an exit status.

``both_ways(process)`` is the fixture a test file takes its runner from: ``[in_process]`` in the fast lane,
``[process]`` (the file's own runner, ``process``) marked ``slow``, so the full suite runs every test both ways.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from typing import Callable

import pytest


def spectui_in_process(*args, env: dict[str, str] | None = None, text: bool = True,
                       cwd: str | os.PathLike | None = None,
                       timeout: float | None = None) -> subprocess.CompletedProcess:
    """``spectui ARGS`` in this process; ``env`` is set for the call only, ``cwd`` its working folder for the call
    only, ``text=False`` answers stdout and stderr as bytes (as ``subprocess.run`` without ``text``). ``timeout``
    is the process runner's: here the test's own timeout (pytest-timeout) ends a command that hangs."""
    from click.testing import CliRunner

    from spectui.cli import main

    argv = [str(a) for a in args]
    with contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext():
        r = CliRunner().invoke(main, argv, env=env, prog_name="spectui")
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    out, err = (r.stdout, r.stderr) if text else (r.stdout_bytes, r.stderr_bytes)
    return subprocess.CompletedProcess(["spectui", *argv], r.exit_code, out, err)


def both_ways(process: Callable[..., subprocess.CompletedProcess],
              in_process: Callable[..., subprocess.CompletedProcess] = spectui_in_process):
    """A fixture (assign it to a module-level name) whose value runs a command in this process
    (``in_process``, the fast lane) or as its own process (``process``, marked ``slow``: the full suite)."""

    @pytest.fixture(params=["in_process", pytest.param("process", marks=pytest.mark.slow)])
    def runner(request) -> Callable[..., subprocess.CompletedProcess]:
        return in_process if request.param == "in_process" else process

    return runner
