"""Before and after: the same headless run with this tree's spectui and with an earlier commit's, alternating.

Checks a claim like "no slower than today" where it is decided: ``spectui --headless --json`` as a user
runs it, each run its own process (models loaded, probe skipped, the same -t, -n, -k, --temp, prompt and
seed), the earlier commit checked out into a temporary git worktree and put first on PYTHONPATH. Both
sides use this venv's llama-cpp-python, so only spectui's own code differs. Rounds alternate the order
(A B, B A, ...), so a drift in machine load hits both sides alike; the load average is printed with every
run. Prints each run, then per side the median decode tokens/s and the loop's own time per pass
(PassEvent.timing.other_ms: the pass's wall time outside its draft and verify phases), and the ratios
after / before.

    .venv/bin/python benchmarks/bench_before_after.py --before ea8a70d --rounds 3 -n 128 -k 2
    .venv/bin/python benchmarks/bench_before_after.py --before ea8a70d -m T.gguf -md D.gguf -t 1 --record

``--record`` adds ``--record`` to both sides (a trace in a temporary folder), as a recorded run pays for it.
Default models: the Qwen2.5-Coder pair in ~/.cache/spectui/models (../shared/models/fetch-qwen-coder-pair.sh).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = Path.home() / ".cache" / "spectui" / "models"
PROMPT = ("Rewrite this function so that it returns early on an empty list, then explain the change:\n"
          "def mean(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total / len(xs)\n")


def run_once(tree: Path, args: argparse.Namespace, tmp: Path, tag: str, i: int) -> dict:
    cmd = [sys.executable, "-m", "spectui", "--target", args.target, "--headless", "--json", "--no-probe",
           "-n", str(args.n), "-k", str(args.k), "--temp", str(args.temp), "-s", "1", "-p", PROMPT]
    if args.draft:
        cmd += ["--draft", args.draft]
    if args.threads:
        cmd += ["-t", str(args.threads)]
    if args.record:
        cmd += ["--record", str(tmp / f"{tag}-{i}.jsonl")]
    env = dict(os.environ, PYTHONPATH=str(tree))
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(tmp))
    if p.returncode != 0:
        raise SystemExit(f"{tag} run failed (exit {p.returncode}): {p.stderr.strip().splitlines()[-1:]}")
    j = json.loads(p.stdout.strip().splitlines()[-1])
    passes = max(1, int(j.get("n_passes") or 1))
    other = j.get("other_ms_total")
    return {"tps": float(j["tokens_per_second"]), "other_ms_per_pass": (other / passes) if other is not None else None,
            "accept": j.get("acceptance_rate"), "n_emitted": j.get("n_emitted"), "text": j.get("text", "")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="the earlier commit (any git revision)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("-m", "--target", default=str(MODELS / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"))
    ap.add_argument("-md", "--draft", default=str(MODELS / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"))
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("-k", type=int, default=2)
    ap.add_argument("--temp", type=float, default=0.0)
    ap.add_argument("-t", "--threads", type=int, default=0, help="0: spectui's default")
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="spectui-before-after-"))
    before = tmp / "before"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(before), args.before], check=True)
    rev = subprocess.run(["git", "-C", str(before), "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    sides = {"before": before, "after": ROOT}
    res: dict[str, list[dict]] = {"before": [], "after": []}
    print(f"before = {rev} (worktree {before}), after = this tree; -n {args.n} -k {args.k} --temp {args.temp} "
          f"-t {args.threads or 'default'}{' --record' if args.record else ''}; {os.cpu_count()} CPUs")
    try:
        for r in range(args.rounds):
            order = ["before", "after"] if r % 2 == 0 else ["after", "before"]
            for tag in order:
                x = run_once(sides[tag], args, tmp, tag, r)
                res[tag].append(x)
                other = x["other_ms_per_pass"]
                print(f"round {r + 1} {tag:6s} {x['tps']:7.2f} t/s  loop {other if other is None else round(other, 3)}"
                      f" ms/pass  accept {x['accept']}  load {os.getloadavg()[0]:.2f}", flush=True)
        if len({x["text"] for xs in res.values() for x in xs}) != 1:
            print("note: the generated texts differ between runs (sampling, or a near tie under other kernels)")
        med = {t: statistics.median(x["tps"] for x in xs) for t, xs in res.items()}
        oth = {t: statistics.median(x["other_ms_per_pass"] or 0.0 for x in xs) for t, xs in res.items()}
        print(f"\nmedian tokens/s: before {med['before']:.2f}, after {med['after']:.2f}, after/before "
              f"{med['after'] / med['before']:.3f}")
        print(f"median loop time per pass: before {oth['before']:.3f} ms, after {oth['after']:.3f} ms")
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before)], check=False)


if __name__ == "__main__":
    main()
