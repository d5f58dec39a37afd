"""Search the regimes this machine allows for one where speculation beats the target alone (issue 10, part 2).

Knobs: the drafter (prompt lookup ``ngram`` on an editing prompt whose text to rewrite is in the prompt,
or the draft model), the draft length k and the threads. For each thread count it loads ONE engine, then
measures every candidate against the target alone, alternating: for each candidate, target-only and the
candidate run twice in ABBA order (target, candidate, candidate, target), so a drift of the shared
machine's load hits both sides alike. Temperature 0, same prompt and seed on both sides. Prints decode
tokens/s of each side (mean of two runs, both printed), the ratio, acceptance and mean acceptance
length, then the best regime with the command that reproduces it, and (with ``--probe``) the probe's
figures for each thread count, whose verdict explains what a win would take.

    .venv/bin/python benchmarks/bench_regimes.py [--target T --draft D] [-n 256] [--ks 1,2,3,4,6,8]
        [--threads 1,2] [--drafters ngram,model] [--prompts edit,explain] [--probe] [--save DIR]

Only meaningful on a quiet machine (``cat /proc/loadavg``: 1-min load below 1.5 on 2 cores); the load
average at the start and the end is printed.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

MODELS = os.path.expanduser("~/.cache/spectui/models")
TARGET = os.path.join(MODELS, "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
DRAFT = os.path.join(MODELS, "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")

EDIT_SOURCE = '''def moving_average(values, window):
    """Return the moving averages of values over the given window."""
    if window <= 0:
        raise ValueError("window must be positive")
    result = []
    total = 0.0
    for i, value in enumerate(values):
        total += value
        if i >= window:
            total -= values[i - window]
        if i >= window - 1:
            result.append(total / window)
    return result


def normalise(values):
    """Scale values to the range 0..1."""
    lo = min(values)
    hi = max(values)
    if hi == lo:
        return [0.0 for _ in values]
    return [(v - lo) / (hi - lo) for v in values]
'''
PROMPTS = {
    # the text to rewrite is in the prompt: prompt lookup can copy most of the answer
    "edit": ("Rewrite the following Python code, adding type hints (list[float], int) to every function "
             "signature. Change nothing else and output the complete code.\n\n```python\n" + EDIT_SOURCE + "```\n"),
    "explain": "Write a step-by-step explanation of how a hash map handles collisions.",
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=TARGET)
    ap.add_argument("--draft", default=DRAFT)
    ap.add_argument("-n", type=int, default=256)
    ap.add_argument("--ks", default="1,2,3,4,6,8")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts (one engine each)")
    ap.add_argument("--drafters", default="ngram,model")
    ap.add_argument("--prompts", default="edit", help=f"comma-separated: {', '.join(PROMPTS)}")
    ap.add_argument("--probe", action="store_true", help="print the probe's figures and verdict per thread count")
    ap.add_argument("--save", default=None, help="keep every run's trace here")
    ap.add_argument("--print-prompt", default=None, metavar="NAME", help="print a prompt's text and exit")
    args = ap.parse_args()
    if args.print_prompt:
        if args.print_prompt not in PROMPTS:
            print(f"bench_regimes: unknown prompt {args.print_prompt!r}", file=sys.stderr)
            return 2
        sys.stdout.write(PROMPTS[args.print_prompt])
        return 0
    for path in (args.target, args.draft):
        if not os.path.exists(path):
            print(f"bench_regimes: model not found: {path} (../shared/models/fetch-qwen-coder-pair.sh)",
                  file=sys.stderr)
            return 2
    ks = [int(x) for x in args.ks.split(",") if x.strip()]
    threads = [int(x) for x in args.threads.split(",") if x.strip()]
    drafters = [x.strip() for x in args.drafters.split(",") if x.strip()]
    prompts = [x.strip() for x in args.prompts.split(",") if x.strip()]
    for p in prompts:
        if p not in PROMPTS:
            print(f"bench_regimes: unknown prompt {p!r}; choose from {', '.join(PROMPTS)}", file=sys.stderr)
            return 2

    from spectui.analysis.stats import compute
    from spectui.contract.control import RunControl
    from spectui.contract.events import RunEnded, Settings
    from spectui.engine.loop import Engine

    writer = None
    if args.save:
        os.makedirs(args.save, exist_ok=True)
        from spectui.recording.trace import write_trace as writer

    load0 = os.getloadavg()[0]
    t_start = time.time()
    rows = []  # (threads, prompt, drafter, k, base runs, cand runs, acceptance, mean acc len)
    probe_lines = []
    n_run = 0

    def one(engine, prompt, s):
        nonlocal n_run
        evs = list(engine.run(PROMPTS[prompt], RunControl(s), args.n))
        end = evs[-1]
        if isinstance(end, RunEnded) and end.error:
            raise SystemExit(f"bench_regimes: run failed: {end.error}")
        n_run += 1
        if writer is not None:
            writer(os.path.join(args.save, f"{n_run:03d}-t{s.drafter}-k{s.draft_max}.jsonl"), evs)
        return compute(evs)

    for t in threads:
        engine = Engine(args.target, args.draft, n_ctx=4096, threads=t, warn=lambda m: None)
        try:
            list(engine.run("warm up", RunControl(Settings(draft_max=0, drafter="none")), 4))
            if args.probe:
                from spectui.analysis.measured.probe import cached_or_measure

                pr = cached_or_measure(engine)
                probe_lines.append(f"threads {t}: {pr.summary_line()}; {pr.verdict().sentence}")
                print("  " + probe_lines[-1], file=sys.stderr)
            base_s = Settings(draft_max=0, drafter="none", temperature=0.0)
            for prompt in prompts:
                for drafter in drafters:
                    for k in ks:
                        cand_s = Settings(draft_max=k, drafter=drafter, temperature=0.0)
                        base, cand = [], []
                        stats = []
                        for s in (base_s, cand_s, cand_s, base_s):  # ABBA
                            snap = one(engine, prompt, s)
                            (base if s is base_s else cand).append(snap.tokens_per_second)
                            if s is cand_s:
                                stats.append(snap)
                        acc = statistics.mean(x.acceptance_rate for x in stats)
                        mal = statistics.mean(x.mean_acceptance_length for x in stats)
                        rows.append((t, prompt, drafter, k, base, cand, acc, mal))
                        ratio = statistics.mean(cand) / statistics.mean(base)
                        print(f"  t={t} {prompt} {drafter} k={k}: {statistics.mean(cand):.2f} vs "
                              f"{statistics.mean(base):.2f} t/s ({ratio:.3f}x)", file=sys.stderr)
        finally:
            engine.close()
    load1 = os.getloadavg()[0]

    print(f"regimes vs the target alone: {os.path.basename(args.target)} / {os.path.basename(args.draft)}, "
          f"-n {args.n}, temperature 0, ABBA per candidate")
    for line in probe_lines:
        print("probe " + line)
    print()
    print(f"{'threads':>7}  {'prompt':<7}  {'drafter':<7}  {'k':>2}  {'target t/s':>10}  {'spec t/s':>8}  "
          f"{'ratio':>6}  {'accept':>6}  {'mean acc len':>12}  runs (target | spec)")
    best = None
    for t, prompt, drafter, k, base, cand, acc, mal in rows:
        ratio = statistics.mean(cand) / statistics.mean(base)
        if best is None or ratio > best[0]:
            best = (ratio, t, prompt, drafter, k)
        print(f"{t:>7}  {prompt:<7}  {drafter:<7}  {k:>2}  {statistics.mean(base):>10.2f}  "
              f"{statistics.mean(cand):>8.2f}  {ratio:>6.3f}  {acc:>6.1%}  {mal:>12.2f}  "
              f"{' + '.join(f'{x:.2f}' for x in base)} | {' + '.join(f'{x:.2f}' for x in cand)}")
    print()
    if best is not None:
        ratio, t, prompt, drafter, k = best
        draft_arg = f" --draft {shlex.quote(args.draft)}" if drafter == "model" else ""
        cmd = (f"spectui --target {shlex.quote(args.target)}{draft_arg} --drafter {drafter} -k {k} -t {t} "
               f"-n {args.n} --temp 0 --headless --no-chat -p \"$(.venv/bin/python benchmarks/bench_regimes.py "
               f"--print-prompt {prompt})\"")
        verdict = "beats" if ratio > 1.0 else "does not beat"
        print(f"best regime: threads {t}, {prompt} prompt, {drafter} drafter, k = {k}: {ratio:.3f}x the target "
              f"alone ({verdict} it)")
        print(f"reproduce: {cmd}")
    print(f"load average (1 min): {load0:.2f} at the start, {load1:.2f} at the end, on {os.cpu_count()} CPUs; "
          f"wall time {time.time() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
