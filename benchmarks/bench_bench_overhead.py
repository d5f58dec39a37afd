"""spectui bench's own overhead: models loaded once per bench, and the time outside the runs (pre-flight
tokenizing, templating, statistics, traces, progress) as a share of the bench's wall time (target: under 2%).

    .venv/bin/python benchmarks/bench_bench_overhead.py [--target T.gguf --draft D.gguf] [-n 64] [--per-category 1]

Without --target it builds the tests' tiny pair (a worst case: runs of milliseconds make any fixed cost
large). Prints the load count, the bench's wall time, the time inside the runs (RunEnded.wall_s summed) and
the share outside them, with `uptime` before and after (the machine is shared: say the load with the figure).
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target")
    ap.add_argument("--draft")
    ap.add_argument("-n", type=int, default=64)
    ap.add_argument("--per-category", type=int, default=1)
    ap.add_argument("-t", "--threads", type=int, default=None)
    ap.add_argument("--drafter", default=None)
    args = ap.parse_args()

    import spectui.engine.llama.models as M
    from spectui.bench.plan import BenchOptions
    from spectui.commands.bench import bench_main
    from spectui.commands.common import ModelOptions

    tmp = tempfile.TemporaryDirectory()
    target, draft = args.target, args.draft
    if target is None:
        import tinymodels

        target = str(tinymodels.build_model(Path(tmp.name) / "t.gguf", seed=0))
        draft = str(tinymodels.build_model(Path(tmp.name) / "d.gguf", seed=0, noise=0.1))

    loads = []
    orig = M.LoadedModel.__init__

    def counting(self, path, role, *a, **kw):
        loads.append(role)
        orig(self, path, role, *a, **kw)

    M.LoadedModel.__init__ = counting
    print("uptime before:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    out = Path(tmp.name) / "b.json"
    drafter = args.drafter or ("model,ngram" if draft else "ngram")
    code = bench_main(BenchOptions(models=ModelOptions(target=target, draft=draft, threads=args.threads),
                                   n_predict=args.n, per_category=args.per_category, drafter=drafter,
                                   json_out=str(out)), out=io.StringIO())
    print("uptime after: ", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    data = json.loads(out.read_text())
    t = data["params"]["timing"]
    runs = len([r for r in data["runs"] if not r["skipped"]])
    share = t["outside_runs_s"] / t["bench_s"] if t["bench_s"] else 0.0
    print(f"exit {code}; {runs} runs on {data['params']['n_prompts']} prompts; models loaded: {len(loads)} "
          f"({', '.join(loads)}) in {t['load_s']:.2f} s")
    print(f"bench wall {t['bench_s']:.2f} s, inside the runs {t['inside_runs_s']:.2f} s, outside "
          f"{t['outside_runs_s']:.3f} s = {100 * share:.2f}% of the wall time (target < 2%: "
          f"{'met' if share < 0.02 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
