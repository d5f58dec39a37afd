"""What the token inspector's data costs in a trace: bytes per pass with ``--inspect-top N`` against N = 0.

Runs the real engine once per N (same prompt, seed and settings; a fresh engine each, as ``--inspect-top``
is fixed at load), writes each run's events with ``spectui.recording.trace.TraceWriter`` three ways and prints bytes
per pass (the whole file, header and start/end events included, divided by the passes, the prefill pass
included):

- raw: ``--record run.jsonl``
- gzip (record): ``--record run.jsonl.gz`` as a live run writes it (flushed after every event, so a killed
  run leaves a readable file: gzip compresses each line nearly on its own)
- gzip (bulk): the same events written in one go (``flush_each=False``; ``spectui.recording.trace.write_trace``)

and the pass lines alone (raw). At temperature 0 every N gives the same passes, so the difference is the
inspector's data alone; at T > 0 the runs may differ slightly (the per-pass figures still compare).

    .venv/bin/python benchmarks/bench_trace_bytes.py [--target T --draft D] [-n 128] [-k 3]
        [--inspect-top 0,5] [--temp 0] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

MODELS = os.path.expanduser("~/.cache/spectui/models")
TARGET = os.path.join(MODELS, "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
DRAFT = os.path.join(MODELS, "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
PROMPT = ("Write a Python function that reads a CSV file and returns the average of each numeric column, "
          "with type hints and a docstring.")


def measure(args, n_top: int, out_dir: str) -> dict:
    """One run with --inspect-top n_top: its trace sizes, per pass."""
    from spectui.contract.control import RunControl
    from spectui.contract.event_json import to_dict
    from spectui.contract.events import PassEvent, Settings
    from spectui.engine import Engine
    from spectui.recording.trace import TraceWriter

    engine = Engine(args.target, args.draft, n_ctx=args.ctx_size, threads=args.threads, inspect_top=n_top,
                    warn=lambda m: None)
    base = os.path.join(out_dir, f"top{n_top}")
    paths = {"raw": base + ".jsonl", "gzip_record": base + ".jsonl.gz", "gzip_bulk": base + ".bulk.jsonl.gz"}
    writers = [TraceWriter(paths["raw"]), TraceWriter(paths["gzip_record"]),
               TraceWriter(paths["gzip_bulk"], flush_each=False)]
    passes = 0
    pass_bytes = 0
    inspected = 0
    settings = Settings(draft_max=args.k, temperature=args.temp, seed=args.seed,
                        drafter="model" if args.draft else "ngram")
    try:
        for ev in engine.run(args.prompt, RunControl(settings), args.n):
            for w in writers:
                w.write(ev)
            if isinstance(ev, PassEvent):
                passes += 1
                pass_bytes += len(json.dumps(to_dict(ev), ensure_ascii=False, separators=(",", ":")).encode()) + 1
                inspected += bool(ev.inspect)
    finally:
        for w in writers:
            w.close()
        engine.close()
    sizes = {name: os.path.getsize(p) for name, p in paths.items()}
    per = {name: size / passes if passes else 0.0 for name, size in sizes.items()}
    return {"inspect_top": n_top, "passes": passes, "inspected_passes": inspected, "bytes": sizes,
            "per_pass": per, "pass_lines_per_pass": pass_bytes / passes if passes else 0.0,
            "paths": paths if args.keep else None}


def _row(r: dict) -> str:
    p = r["per_pass"]
    return (f"{r['inspect_top']:>11}  {r['passes']:>6}  {p['raw']:>10.0f}  {r['pass_lines_per_pass']:>10.0f}  "
            f"{p['gzip_record']:>12.0f}  {p['gzip_bulk']:>10.0f}")


def _diff(a: dict, b: dict, key: str) -> str:
    x = a["per_pass"][key] if key != "pass_lines" else a["pass_lines_per_pass"]
    y = b["per_pass"][key] if key != "pass_lines" else b["pass_lines_per_pass"]
    pct = f" ({100 * (y - x) / x:+.0f}%)" if x else ""
    return f"{y - x:+.0f} B{pct}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=TARGET)
    ap.add_argument("--draft", default=DRAFT, help="draft model ('' = the n-gram drafter)")
    ap.add_argument("-n", type=int, default=128, help="tokens to generate per run")
    ap.add_argument("-k", type=int, default=3, help="draft length")
    ap.add_argument("--inspect-top", default="0,5", help="comma-separated N values; the first is the reference")
    ap.add_argument("--temp", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-p", "--prompt", default=PROMPT)
    ap.add_argument("-t", "--threads", type=int, default=None)
    ap.add_argument("-c", "--ctx-size", type=int, default=4096)
    ap.add_argument("--keep", default=None, help="keep the traces in this directory")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = ap.parse_args(argv)
    try:
        tops = [int(x) for x in args.inspect_top.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--inspect-top takes comma-separated integers, not {args.inspect_top!r}")
    if not tops:
        ap.error("--inspect-top needs at least one value")
    for path in (args.target, args.draft):
        if path and not os.path.exists(path):
            print(f"bench_trace_bytes: model not found: {path}", file=sys.stderr)
            return 2
    args.draft = args.draft or None
    with tempfile.TemporaryDirectory(prefix="spectui-trace-bytes-") as tmp:
        out_dir = args.keep or tmp
        os.makedirs(out_dir, exist_ok=True)
        results = [measure(args, n, out_dir) for n in tops]
    if args.json:
        print(json.dumps({"target": args.target, "draft": args.draft, "n": args.n, "k": args.k, "temp": args.temp,
                          "results": results}))
        return 0
    print(f"trace bytes per pass: target {os.path.basename(args.target)}, draft "
          f"{os.path.basename(args.draft) if args.draft else '(n-gram)'}, -n {args.n}, k = {args.k}, "
          f"T = {args.temp:g}")
    print(f"{'inspect-top':>11}  {'passes':>6}  {'raw B/pass':>10}  {'pass lines':>10}  {'gzip record':>12}  "
          f"{'gzip bulk':>10}")
    for r in results:
        print(_row(r))
    ref = results[0]
    for r in results[1:]:
        print(f"--inspect-top {r['inspect_top']} vs {ref['inspect_top']}: raw {_diff(ref, r, 'raw')} per pass, "
              f"pass lines {_diff(ref, r, 'pass_lines')}, gzip (record) {_diff(ref, r, 'gzip_record')}, "
              f"gzip (bulk) {_diff(ref, r, 'gzip_bulk')}")
    if args.keep:
        print(f"traces kept in {args.keep}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
