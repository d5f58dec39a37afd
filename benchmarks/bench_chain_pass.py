"""What a pass without a draft costs in a chain, against the target alone, paired and alternating.

One engine, one prompt, greedy: rounds of (target alone, then a chain of model-free drafters), the order reversed
every other round so that a drift of the machine's load hits both alike. For each: decode tokens/s (emitted / the
passes' wall time, median over rounds) and, over the passes in which nothing drafted, the median pass wall, draft
(the chain's lookups) and verify (the target's decode of one token) milliseconds. With ``--auto`` the chain runs
under ``--draft-max auto`` too.

Without ``--target`` it builds the tests' tiny models (tests/tinymodels.py) in ``--models`` and runs on those.

    .venv/bin/python benchmarks/bench_chain_pass.py [--target T] [--chain ngram-mod,ngram-cache] [--rounds 8] [-n 256]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "tests"))

PROMPT = "code python function return def class if else while loop print data time none"


def measure(engine, settings, prompt: str, n: int) -> tuple[float, list, int]:
    """One run: (decode tokens/s, the passes that drafted nothing, the passes that drafted)."""
    from spectui.contract.control import RunControl  # noqa: PLC0415
    from spectui.contract.events import PassEvent  # noqa: PLC0415

    passes = [ev for ev in engine.run(prompt, RunControl(settings), n) if isinstance(ev, PassEvent) and not ev.prefill]
    tps = sum(len(p.emitted) for p in passes) / (sum(p.timing.wall_ms for p in passes) / 1000.0)
    return tps, [p for p in passes if not p.drafts], sum(1 for p in passes if p.drafts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", help="a GGUF model (default: the tests' tiny target, built in --models)")
    ap.add_argument("--models", default=os.path.expanduser("~/.cache/spectui/bench-tiny"))
    ap.add_argument("--chain", default="ngram-mod,ngram-cache")
    ap.add_argument("--auto", action="store_true", help="the chain under --draft-max auto")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("-n", type=int, default=256)
    ap.add_argument("-t", "--threads", type=int, default=1)
    ap.add_argument("-p", "--prompt", default=PROMPT)
    args = ap.parse_args()

    from spectui.analysis.cost.draft_policy import PolicyByMode  # noqa: PLC0415
    from spectui.contract.events import Settings  # noqa: PLC0415
    from spectui.engine import Engine  # noqa: PLC0415

    target = args.target
    if target is None:
        import tinymodels  # noqa: PLC0415

        target = str(tinymodels.shared_model(args.models, "target.gguf", seed=0, name="tiny-target"))
    configs = {"target alone": Settings(draft_max=0, drafter="none"),
               args.chain: Settings(draft_max=4, drafter=args.chain, auto="cost" if args.auto else None)}
    tps: dict[str, list[float]] = {name: [] for name in configs}
    plain: dict[str, list] = {name: [] for name in configs}
    drafted = dict.fromkeys(configs, 0)
    with Engine(target, None, n_ctx=max(512, 2 * args.n), threads=args.threads, draft_policy=PolicyByMode,
                warn=lambda m: None) as engine:
        names = list(configs)
        for r in range(args.rounds):
            for name in names if r % 2 == 0 else names[::-1]:
                speed, none, made = measure(engine, configs[name], args.prompt, args.n)
                tps[name].append(speed)
                plain[name] += none
                drafted[name] += made
    base = statistics.median(tps["target alone"])
    for name in configs:
        ps = plain[name]

        def med(f, ps=ps) -> float:
            return statistics.median(f(p) for p in ps) if ps else float("nan")

        print(f"{name:24s} {statistics.median(tps[name]):9.1f} tok/s {statistics.median(tps[name]) / base:5.3f}x | "
              f"passes without a draft: {len(ps)}, wall {med(lambda p: p.timing.wall_ms):.3f} ms, draft "
              f"{med(lambda p: p.timing.draft_ms):.4f} ms, verify {med(lambda p: p.timing.verify_ms):.3f} ms | "
              f"passes that drafted: {drafted[name]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
