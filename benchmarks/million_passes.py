"""A million passes through every face that reads a trace: time and peak memory of each.

Generates the traces itself (spectui.recording.synthetic.synthetic_run: start, prefill, N decode passes at k = 3,
one settings change half-way, end; about 890 bytes a pass as JSON Lines) into a temporary directory, then runs
each face as its own ``python -m spectui`` process, its output to /dev/null, and reports its wall seconds, its
CPU seconds (user + system: what the face costs, whatever else the machine runs) and its peak RSS (its own,
from wait4):

- ``replay --headless FILE`` and ``replay --json FILE`` of the N-pass trace (goal: 1,000,000 passes in 60 s);
- ``race --headless --any-prompt FILE SHORT`` of the N-pass trace against a 100-pass one (goal: 300 MB);
- ``cast FILE -o OUT --cols C --rows R --speed 8`` of a ``--cast-passes`` trace (default 100,000: the report's
  1000 x 1000 case; goal: 300 MB), stopped after ``--cast-limit`` seconds (its peak until then is reported).

Print the machine's load (``uptime``) beside the figures: on a shared machine the wall seconds grow with it,
the CPU seconds much less.

    .venv/bin/python benchmarks/million_passes.py [--passes 1000000] [--cast-passes 100000] [--keep DIR]
        [--faces headless,json,race,cast]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

WRAPPER = """
import os, subprocess, sys, time
limit = float(sys.argv[1])
t0 = time.monotonic()
with open(os.devnull, "wb") as null, open(sys.argv[2], "wb") as err:
    p = subprocess.Popen(sys.argv[3:], stdin=subprocess.DEVNULL, stdout=null, stderr=err)
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > t0 + limit:
            p.kill()
            pid, status, ru = os.wait4(p.pid, 0)
            break
        time.sleep(0.05)
print(os.waitstatus_to_exitcode(status), ru.ru_maxrss, time.monotonic() - t0, ru.ru_utime + ru.ru_stime)
"""


def run_face(args: list[str], limit: float, err_path: str) -> tuple[int, float, float, float]:
    """(exit status, wall s, CPU s, peak RSS MB) of ``python -m spectui ARGS``, killed after ``limit`` s."""
    env = dict(os.environ, PYTHONPATH=REPO, NO_COLOR="1")
    r = subprocess.run([sys.executable, "-c", WRAPPER, str(limit), err_path, sys.executable, "-m", "spectui", *args],
                       capture_output=True, text=True, env=env, check=True)
    rc, kb, wall, cpu = r.stdout.split()
    return int(rc), float(wall), float(cpu), int(kb) / 1024


def make_trace(path: str, n: int) -> float:
    """Write an ``n``-pass synthetic trace (unless it is there already); returns the seconds it took."""
    from spectui.recording.synthetic import synthetic_run
    from spectui.recording.trace import write_trace

    t0 = time.perf_counter()
    if not os.path.exists(path):
        write_trace(path, synthetic_run(n, seed=1))
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--passes", type=int, default=1_000_000, help="decode passes of the big trace")
    ap.add_argument("--cast-passes", type=int, default=100_000, help="decode passes of the trace cast renders")
    ap.add_argument("--cols", type=int, default=1000)
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--limit", type=float, default=600, help="seconds each face may run before it is stopped")
    ap.add_argument("--cast-limit", type=float, default=120, help="seconds the cast may run before it is stopped")
    ap.add_argument("--faces", default="headless,json,race,cast",
                    help="which faces, comma-separated: headless, json, race, cast")
    ap.add_argument("--keep", default=None, help="write the traces here (reused when there) instead of a temporary "
                                                 "directory")
    args = ap.parse_args()
    d = args.keep or tempfile.mkdtemp(prefix="spectui-million-")
    os.makedirs(d, exist_ok=True)
    big = os.path.join(d, f"big{args.passes}.jsonl")
    short = os.path.join(d, "short100.jsonl")
    castin = os.path.join(d, f"big{args.cast_passes}.jsonl")
    wanted = [(big, args.passes), (short, 100)] + ([(castin, args.cast_passes)] if "cast" in args.faces else [])
    for path, n in wanted:
        s = make_trace(path, n)
        print(f"trace {os.path.basename(path)}: {n:,} passes, {os.path.getsize(path) / 1e6:,.0f} MB ({s:.0f} s to "
              "write)", flush=True)
    err = os.path.join(d, "stderr.txt")
    faces = [
        ("headless", "replay --headless", args.passes, ["replay", "--headless", big], args.limit),
        ("json", "replay --json", args.passes, ["replay", "--json", big], args.limit),
        ("race", "race --headless", args.passes, ["race", "--headless", "--any-prompt", big, short], args.limit),
        ("cast", f"cast {args.cols}x{args.rows}", args.cast_passes,
         ["cast", castin, "-o", os.path.join(d, "out.cast"), "--cols", str(args.cols), "--rows", str(args.rows),
          "--speed", "8", "--force"], args.cast_limit),
    ]
    chosen = set(args.faces.split(","))
    faces = [f[1:] for f in faces if f[0] in chosen]
    print(f"load: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} CPUs", flush=True)
    print(f"{'face':<22} {'passes':>10} {'status':>6} {'wall s':>8} {'CPU s':>8} {'peak MB':>8}", flush=True)
    for name, n, face_args, limit in faces:
        rc, wall, cpu, mb = run_face(face_args, limit, err)
        status = "killed" if wall >= limit else str(rc)
        print(f"{name:<22} {n:>10,} {status:>6} {wall:>8.1f} {cpu:>8.1f} {mb:>8.0f}", flush=True)
    print(f"load: {os.getloadavg()[0]:.2f} (1 min); traces in {d}")


if __name__ == "__main__":
    main()
