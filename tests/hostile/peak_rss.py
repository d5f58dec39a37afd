"""Peak memory of a whole command, its own: the command runs under a small Python wrapper process, which
reports its child's ``ru_maxrss``. Measured straight from the test process it would not be the command's
own: Linux carries the forking process's peak RSS into the child across exec (a serial pytest of the whole
suite holds gigabytes, and every child it starts then "peaks" there)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WRAPPER = """
import os, subprocess, sys, time
out, err, limit = sys.argv[1], sys.argv[2], float(sys.argv[3])
t0 = time.monotonic()
with open(out, "wb") as o, open(err, "wb") as e:
    p = subprocess.Popen(sys.argv[4:], stdin=subprocess.DEVNULL, stdout=o, stderr=e)
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > t0 + limit:
            p.kill()
            pid, status, ru = os.wait4(p.pid, 0)
            break
        time.sleep(0.02)
p.returncode = os.waitstatus_to_exitcode(status)
print(p.returncode, ru.ru_maxrss, time.monotonic() - t0)
"""


def run_peak(*args: str, timeout: float = 120, cwd: Path | None = None,
             env: dict | None = None) -> tuple[int, float, float, bytes, bytes]:
    """(exit status, seconds, peak RSS in MB, stdout, stderr) of ``python -m spectui ARGS``, its output
    through files (no pipe to fill); killed after ``timeout`` seconds."""
    e = dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1")
    e.update(env or {})
    with tempfile.TemporaryDirectory() as d:
        out, err = Path(d) / "out", Path(d) / "err"
        r = subprocess.run([sys.executable, "-c", WRAPPER, str(out), str(err), str(timeout),
                            sys.executable, "-m", "spectui", *map(str, args)],
                           capture_output=True, env=e, cwd=cwd, timeout=timeout + 60, stdin=subprocess.DEVNULL)
        assert r.returncode == 0, r.stderr.decode("utf-8", "replace")[-2000:]
        rc, kb, s = r.stdout.decode().split()
        return int(rc), float(s), int(kb) / 1024, out.read_bytes(), err.read_bytes()
