"""One long token through every face: wall time and peak memory beside the same trace with a short token.

The hostile-input report of 2026-12-02 (issue 37) found text cut one character at a time: one 100,000-character
token ran ``replay --explain 1`` and ``cast --inspect 1`` past 60 s. This script writes, for each kind of long
token (plain ASCII, a zero-width flood, a combining-mark flood, CJK / ZWJ emoji / flags) and each length, a
trace whose pass 1 drafts that one token (``tests/hostile/round2_traces.py``), and a trace with a 5-character
token instead, then runs every face on both as real subprocesses (``python -m spectui``): ``replay --headless``,
``--json``, ``--explain 1``, ``--explain 1 --json``, ``cast`` (the TUI's text panel and pass ribbon, rendered
by Textual) and ``cast --inspect 1`` (the TUI's token inspector). It prints, per face, the wall time and the
peak RSS (the child's own ``ru_maxrss``, from ``os.wait4``) of the long token and of the short one side by
side, and the difference: what the long token costs.

    .venv/bin/python benchmarks/long_tokens.py [--chars 1000000] [--kinds one_long_token,tok_wide] [--repeat 3]

Run it on a quiet machine; under load every figure grows, the short token's with the long one's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "hostile"))

from round2_traces import long_texts, text_trace  # noqa: E402

FACES = {
    "replay --headless": ["replay", "{t}", "--headless"],
    "replay --json": ["replay", "{t}", "--headless", "--json"],
    "replay --explain 1": ["replay", "{t}", "--explain", "1"],
    "replay --explain 1 --json": ["replay", "{t}", "--explain", "1", "--json"],
    "cast (TUI text, ribbon)": ["cast", "{t}", "-o", "{o}", "--speed", "8", "--force"],
    "cast --inspect 1 (TUI inspector)": ["cast", "{t}", "-o", "{o}", "--speed", "8", "--force", "--inspect", "1"],
}


def run(args: list[str]) -> tuple[int, float, float]:
    """(exit status, seconds, peak RSS MB) of ``python -m spectui ARGS``."""
    env = dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1")
    t0 = time.monotonic()
    p = subprocess.Popen([sys.executable, "-m", "spectui", *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, env=env)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, time.monotonic() - t0, ru.ru_maxrss / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chars", type=int, default=1_000_000, help="code points in the long token")
    ap.add_argument("--kinds", default=",".join(long_texts(10)), help="which long tokens (comma-separated)")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each face (the fastest is printed)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="spectui-long-") as d:
        short = text_trace(Path(d) / "short.jsonl", "short", everywhere=False)
        out = str(Path(d) / "out.cast")
        print(f"load {os.getloadavg()[0]:.2f} · commit {_commit()} · {a.chars:,} code points per long token")
        print(f"{'token':16} {'face':34} {'long s':>8} {'short s':>8} {'+s':>7} {'long MB':>8} {'short MB':>8}")
        base = {}
        for face, args in FACES.items():
            base[face] = min((run([x.format(t=short, o=out) for x in args]) for _ in range(a.repeat)),
                             key=lambda r: r[1])
        for kind in a.kinds.split(","):
            text = long_texts(a.chars)[kind]
            trace = text_trace(Path(d) / f"{kind}.jsonl", text, everywhere=False)
            for face, args in FACES.items():
                rc, s, mb = min((run([x.format(t=trace, o=out) for x in args]) for _ in range(a.repeat)),
                                key=lambda r: r[1])
                _, s0, mb0 = base[face]
                flag = "" if rc == 0 else f"  exit {rc}"
                print(f"{kind:16} {face:34} {s:8.2f} {s0:8.2f} {s - s0:+7.2f} {mb:8.1f} {mb0:8.1f}{flag}")
            os.unlink(trace)
    return 0


def _commit() -> str:
    r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    return r.stdout.strip() or "?"


if __name__ == "__main__":
    sys.exit(main())
