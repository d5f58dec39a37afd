"""Bytes per second that `spectui demo` sends over SSH, at 120x36 and 80x24, during act 1 (the Qwen pair's
recording at 1x): a private sshd on 127.0.0.1 (tests/sshd.py), the real client `ssh -tt` in a real pty
(tests/pty_term.py), counting what the client's terminal receives (the screen updates after decryption;
SSH's own framing and encryption add a few percent on the wire, compression is off).

    python benchmarks/ssh_bandwidth.py [--seconds 60] [--skip 5]

Both sizes run one after the other in this one run; the first ``--skip`` seconds (the first full screen)
are reported apart from the steady rate. Prints one line per size and their ratio.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import sshd as sshd_mod  # noqa: E402
from pty_term import PtyProcess  # noqa: E402


def measure(server, cols: int, rows: int, seconds: float, skip: float, term: str) -> tuple[float, float, int]:
    p = PtyProcess(None, cols=cols, rows=rows, env={"TERM": term},
                   argv=server.ssh_argv(server.remote("demo --act 1")))
    try:
        p.wait_for("spectui demo: a recording", 60)
        t0 = time.monotonic()
        time.sleep(skip)
        b0, t1 = p.n_bytes(), time.monotonic()
        time.sleep(seconds)
        b1, t2 = p.n_bytes(), time.monotonic()
        p.send("q")
        p.wait(30)
        return b0 / (t1 - t0), (b1 - b0) / (t2 - t1), b1
    finally:
        p.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="steady seconds measured at each size")
    ap.add_argument("--skip", type=float, default=5.0, help="first seconds (the first full screen), apart")
    ap.add_argument("--term", default="xterm-256color")
    args = ap.parse_args()
    if not sshd_mod.available():
        sys.exit("ssh_bandwidth: OpenSSH is not installed (apt-get install openssh-server openssh-client)")
    server = sshd_mod.Sshd().start()
    try:
        rates = {}
        for cols, rows in ((120, 36), (80, 24)):
            start_rate, steady, total = measure(server, cols, rows, args.seconds, args.skip, args.term)
            rates[(cols, rows)] = steady
            print(f"{cols}x{rows} TERM={args.term}: {steady / 1000:.1f} KB/s steady over {args.seconds:.0f} s "
                  f"(first {args.skip:.0f} s, the first screen included: {start_rate / 1000:.1f} KB/s; "
                  f"{total / 1000:.0f} KB in all)", flush=True)
        print(f"ratio 120x36 / 80x24: {rates[(120, 36)] / rates[(80, 24)]:.2f}x")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
