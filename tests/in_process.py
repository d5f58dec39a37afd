"""A spectui command run by click's CliRunner in the test's own process, answered as the
``subprocess.CompletedProcess`` a test gets from running it as its own process: the same click command, its
exit status, stdout and stderr, without the interpreter's start-up and imports (the fast lane's variant of a
CLI test; the process one stays in the full suite). A crash is re-raised, never read as an exit status."""

from __future__ import annotations

import subprocess


def spectui_in_process(*args, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    from click.testing import CliRunner

    from spectui.cli import main

    argv = [str(a) for a in args]
    r = CliRunner().invoke(main, argv, env=env, prog_name="spectui")
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return subprocess.CompletedProcess(["spectui", *argv], r.exit_code, r.stdout, r.stderr)
