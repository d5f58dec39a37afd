"""A verify batch of 16 tokens against one of 1 token, side by side (the claim tests/analysis/test_probe.py made
as a timed assertion, "16 tokens cost more than 1", which a busy machine broke: it lives here now).

One loaded target; rounds alternate the two sizes in ABBA order (1, 16, 16, 1, ...) so a drift of the
shared machine's load hits both alike. Each measurement is ``Engine.measure_verify_ms`` (one target decode
of the batch with every row's logits, rolled back: what ``spectui probe`` times). Prints the medians, the
ratio 16 / 1 and the load average; the claim holds when the ratio is above 1.

    .venv/bin/python benchmarks/bench_verify_batch.py [--target T.gguf] [--rounds 12] [-t THREADS]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

MODELS = os.path.expanduser("~/.cache/spectui/models")
TARGET = os.path.join(MODELS, "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=TARGET)
    ap.add_argument("--rounds", type=int, default=12, help="ABBA rounds (each measures both sizes)")
    ap.add_argument("--batch", type=int, default=16, help="the large verify batch (tokens)")
    ap.add_argument("-t", "--threads", type=int, default=None)
    args = ap.parse_args()
    if not os.path.exists(args.target):
        print(f"bench_verify_batch: model not found: {args.target} (../shared/models/fetch-qwen-coder-pair.sh)",
              file=sys.stderr)
        return 2
    from spectui.contract.control import RunControl
    from spectui.contract.events import Settings
    from spectui.engine.loop import Engine

    engine = Engine(args.target, None, n_ctx=2048, threads=args.threads, warn=lambda m: None)
    small, large = [], []
    try:
        list(engine.run("warm up", RunControl(Settings(draft_max=0, drafter="none")), 4))
        for r in range(args.rounds):
            order = (0, args.batch - 1) if r % 2 == 0 else (args.batch - 1, 0)
            for k in order:
                (small if k == 0 else large).append(engine.measure_verify_ms(k, repeats=3))
    finally:
        engine.close()
    a, b = statistics.median(small), statistics.median(large)
    print(f"verify of 1 token: median {a:.2f} ms; of {args.batch} tokens: median {b:.2f} ms "
          f"({args.rounds} ABBA rounds, {os.path.basename(args.target)})")
    print(f"ratio {args.batch} / 1 = {b / a:.2f} ({'holds' if b > a else 'does NOT hold'}: "
          f"{args.batch} tokens cost more than 1)")
    if os.path.exists("/proc/loadavg"):
        print(f"load average: {open('/proc/loadavg').read().strip()}")
    return 0 if b > a else 1


if __name__ == "__main__":
    sys.exit(main())
