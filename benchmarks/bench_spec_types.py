"""Every spec type, per Spec-Bench category and on the agentic set, against the target alone and against
``llama-speculative-simple --spec-type`` the same: the table in docs/measurements.md (#spec-types).

On the Qwen2.5-Coder pair (1.5B target, 0.5B draft, Q4_K_M), greedy, ``-t 2``. For each category's first prompt
(by question id) of Spec-Bench's question.jsonl and each turn of the first ``--agentic``
session(s) (spectui/data/agentic.jsonl: every turn after the target's own earlier answers), rendered with the
target's chat template once, every setting runs on that same text:

- spectui, one engine for the whole script, each setting with drafters of its own (so the n-gram pools,
  ngram-mod's pool and the suffix drafter's global tree live across prompts as in a bench of that setting, and
  never hold another setting's output of the same prompt): the target alone (first and last, so the
  speculative runs sit between two baselines), each drafter alone, and the chains under ``--draft-max auto``;
  the order of the settings between the baselines reverses from one prompt to the next (ABBA);
- ``llama-speculative-simple`` (built from the same vendored llama.cpp) with the same ``--spec-type``, the same
  rendered text (``-p``), ``-n``, ``-t`` and n-gram defaults, right after spectui's run of it. The draft
  model's draft max is spectui's ``--k-model`` (p-min 0, n-min 0); llama.cpp's n-gram types draft up to their
  own size (``size_m`` 48, ngram-mod's ``n_max`` 64: the caller's limit in llama-speculative-simple is what is
  left of ``-n``), where spectui's are cut at ``--k-ngram``.
- ``--auto``: every spec type (and chain) under spectui's ``--draft-max auto``, beside llama-speculative-simple
  at its own defaults (no draft options given): each program as a user runs it with that spec type.

Tokens/s is the decode rate both report: tokens after the first over the time after the prompt's evaluation
(llama.cpp's ``decoded N tokens in S seconds``; spectui's StatsSnapshot.tokens_per_second). Printed: a row per
prompt and setting, then per category the median ratio to the target alone and to llama.cpp's, and the goals.

    .venv/bin/python benchmarks/bench_spec_types.py [-n 64] [--k-ngram 8] [--k-model 3] [--categories a,b]
        [--agentic-sessions 1] [--no-llama]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

MODELS = Path(os.environ.get("SPECTUI_MODELS", Path.home() / ".cache" / "spectui" / "models"))
TARGET = MODELS / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
DRAFT = MODELS / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
SPEC_BENCH = ROOT.parent / "shared" / "data" / "spec-bench" / "question.jsonl"
AGENTIC = ROOT / "spectui" / "data" / "agentic.jsonl"
NGRAM = ["ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache"]
# setting name -> (spectui drafter, auto?, llama.cpp --spec-type or None)
SETTINGS = {
    **{n: (n, False, n) for n in NGRAM},
    "suffix": ("suffix", False, None),
    "draft-simple": ("model", False, "draft-simple"),
    "ngram-mod,draft-simple": ("ngram-mod,model", False, "ngram-mod,draft-simple"),
    "auto: ngram-mod,suffix,draft-simple": ("ngram-mod,suffix,model", True, None),
    "auto: ngram-mod,suffix": ("ngram-mod,suffix", True, None),
}
# --auto: every spec type under spectui's --draft-max auto, beside llama-speculative-simple at its own defaults
AUTO_SETTINGS = {
    **{n: (n, True, n) for n in NGRAM},
    "suffix": ("suffix", True, None),
    "draft-simple": ("model", True, "draft-simple"),
    "ngram-mod,draft-simple": ("ngram-mod,model", True, "ngram-mod,draft-simple"),
    "ngram-mod,suffix,draft-simple": ("ngram-mod,suffix,model", True, None),
}
DECODED = re.compile(r"decoded\s+(\d+) tokens in\s+([\d.]+) seconds, speed:\s+([\d.]+) t/s")


def prompts(args, engine) -> list[tuple[str, str]]:
    """(category, rendered text) for each category's first prompt and each agentic turn."""
    from spectui.bench.runner import Templater  # noqa: PLC0415

    render = Templater(engine, chat=True)
    first: dict[str, dict] = {}
    for line in SPEC_BENCH.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if r["category"] not in first or r["question_id"] < first[r["category"]]["question_id"]:
            first[r["category"]] = r
    wanted = args.categories.split(",") if args.categories else list(first)
    out = [(c, render([first[c]["turns"][0]], [])) for c in wanted if c in first]
    sessions = [json.loads(x) for x in AGENTIC.read_text(encoding="utf-8").splitlines()][:args.agentic_sessions]
    for s in sessions:  # each turn after the target's own (greedy) answers to the turns before it
        answers: list[str] = []
        for i in range(len(s["turns"])):
            text = render(s["turns"][:i + 1], answers)
            out.append(("agentic", text))
            answers.append(spectui_run(engine, text, "none", False, 0, args.n)["text"])
    return out


OWN: dict[str, object] = {}  # setting -> its own drafters (their pools and global trees)


def own_drafters(engine, setting: str):
    """The drafters ``setting`` runs with, made once for it: model-free drafters of its own; the draft model's
    drafters are the engine's (they track what the draft model's one context holds)."""
    from spectui.engine.drafters import by_name, spec_params  # noqa: PLC0415
    from spectui.engine.run.parts import Drafters  # noqa: PLC0415

    if not OWN:
        OWN["engine"] = engine._drafters
    if setting not in OWN:
        shared = OWN["engine"].by_name
        fresh = engine._make_drafters(None, None, spec_params(()))
        mine = {name: (d if by_name(name).needs == "nothing" else shared[name])
                for name, d in fresh.items()}
        OWN[setting] = Drafters(mine, None, engine.warn)
    return OWN[setting]


def spectui_run(engine, text: str, drafter: str, auto: bool, k: int, n: int, setting: str = "none") -> dict:
    from spectui.analysis import stats  # noqa: PLC0415
    from spectui.contract.control import RunControl  # noqa: PLC0415
    from spectui.contract.events import Settings  # noqa: PLC0415

    engine._drafters = own_drafters(engine, setting)
    settings = Settings(draft_max=k, temperature=0.0, drafter=drafter, auto="cost" if auto else None)
    events = list(engine.run(text, RunControl(settings), n))
    end = events[-1]
    if end.reason not in ("n_predict", "eog"):
        raise SystemExit(f"spectui run ended with {end.reason}: {end.error}")
    s = stats.compute(events)
    emitted = "".join(t.text for ev in events if getattr(ev, "type", "") == "pass" for t in ev.emitted)
    return {"tps": s.tokens_per_second, "drafted": s.n_drafted, "accepted": s.n_accepted, "text": emitted}


def llama_run(binary: Path, text: str, spec_type: str, k: int | None, n: int, threads: int, ctx: int) -> dict:
    """llama-speculative-simple's figures; ``k`` None: its own defaults for the draft model's settings."""
    own = [] if k is None else ["--spec-draft-n-max", str(k), "--spec-draft-n-min", "0", "--spec-draft-p-min", "0"]
    cmd = [str(binary), "-m", str(TARGET), "--spec-type", spec_type, *own, "-n", str(n), "--temp", "0",
           "-t", str(threads), "-c", str(ctx), "-p", text]
    if "draft-simple" in spec_type:
        cmd[3:3] = ["-md", str(DRAFT)]
    p = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                       env=dict(os.environ, LD_LIBRARY_PATH=str(binary.parent)), timeout=900)
    dec = DECODED.search(p.stderr)
    drafted = re.search(r"n_drafted\s*=\s*(\d+)", p.stderr)
    accepted = re.search(r"n_accept\s*=\s*(\d+)", p.stderr)
    if p.returncode != 0 or not (dec and drafted and accepted):
        tail = " | ".join(p.stderr.strip().splitlines()[-3:])
        raise SystemExit(f"llama-speculative-simple --spec-type {spec_type} failed (rc {p.returncode}): {tail}")
    return {"tps": float(dec.group(3)), "drafted": int(drafted.group(1)), "accepted": int(accepted.group(1))}


def speculative_simple() -> Path | None:
    from servers import llama_server_binary  # noqa: PLC0415

    server = llama_server_binary()
    binary = server.parent / "llama-speculative-simple" if server is not None else None
    return binary if binary is not None and binary.is_file() else None


def load() -> str:
    return "%.2f" % os.getloadavg()[0]


def run_prompt(engine, binary, i: int, cat: str, text: str, args, rows: list[dict]) -> None:
    settings = AUTO_SETTINGS if args.auto else SETTINGS
    names = list(settings) if (i + args.reverse) % 2 == 0 else list(settings)[::-1]
    base = [spectui_run(engine, text, "none", False, 0, args.n)["tps"]]
    for name in names:
        drafter, auto, spec_type = settings[name]
        k = args.k_model if "model" in drafter else args.k_ngram
        ours = spectui_run(engine, text, drafter, auto, k, args.n, name)
        theirs = llama_run(binary, text, spec_type, None if args.auto else k, args.n, args.threads, args.ctx) if (
            binary is not None and spec_type is not None) else None
        rows.append({"prompt": i, "category": cat, "setting": name, "spectui": ours, "llama": theirs})
    base.append(spectui_run(engine, text, "none", False, 0, args.n)["tps"])
    for r in rows:
        if r["prompt"] == i:
            r["base"] = statistics.mean(base)
            ll = r["llama"]
            print(f"{i:2d} {cat:15s} {r['setting']:36s} {r['spectui']['tps']:6.2f} t/s "
                  f"x{r['spectui']['tps'] / r['base']:5.2f} ({r['spectui']['accepted']}/{r['spectui']['drafted']})"
                  + (f" | llama.cpp {ll['tps']:6.2f} t/s ({ll['accepted']}/{ll['drafted']})" if ll else "")
                  + f" | target alone {base[0]:.2f}, {base[1]:.2f} | load {load()}", flush=True)


def cell(rows: list[dict], category: str, name: str) -> tuple[float, float | None]:
    """(median x the target alone, median x llama-speculative-simple or None) of one setting in one category."""
    rs = [r for r in rows if r["category"] == category and r["setting"] == name]
    v = [r["spectui"]["tps"] / r["llama"]["tps"] for r in rs if r["llama"]]
    return statistics.median(r["spectui"]["tps"] / r["base"] for r in rs), statistics.median(v) if v else None


def table(rows: list[dict]) -> None:
    cats = list(dict.fromkeys(r["category"] for r in rows))
    print("\nmedian ratio to the target alone (spectui); in brackets spectui / llama-speculative-simple, same "
          "--spec-type")
    print(f"{'setting':36s} " + " ".join(f"{c[:9]:>13s}" for c in cats))
    for name in dict.fromkeys(r["setting"] for r in rows):
        cells = [cell(rows, c, name) for c in cats]
        print(f"{name:36s} " + " ".join(f"{x:5.2f}" + (f" [{v:4.2f}]" if v else "       ") for x, v in cells))
    print("\ntarget alone, tokens/s: " + ", ".join(
        f"{c} {statistics.median(r['base'] for r in rows if r['category'] == c):.2f}" for c in cats))


def markdown(rows: list[dict]) -> None:
    """The same medians as ``table``, a row per category (Markdown): x target alone, [x llama-speculative-simple]."""
    names = list(dict.fromkeys(r["setting"] for r in rows))
    print("| category | target alone t/s | " + " | ".join(f"`{n}`" for n in names) + " |")
    print("|---" * (len(names) + 2) + "|")
    for c in dict.fromkeys(r["category"] for r in rows):
        cells = [cell(rows, c, name) for name in names]
        base = statistics.median(r["base"] for r in rows if r["category"] == c)
        print(f"| {c} | {base:.1f} | " + " | ".join(f"{x:.2f}" + (f" [{v:.2f}]" if v else "") for x, v in cells)
              + " |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=64)
    ap.add_argument("--k-ngram", type=int, default=8, help="draft max of the n-gram types and suffix")
    ap.add_argument("--k-model", type=int, default=3, help="draft max of settings with the draft model")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-c", "--ctx", type=int, default=4096)
    ap.add_argument("--categories", default="", help="comma-separated Spec-Bench categories (default: all)")
    ap.add_argument("--agentic-sessions", type=int, default=1)
    ap.add_argument("--no-llama", action="store_true", help="leave llama-speculative-simple out")
    ap.add_argument("--json", help="write every row to this file")
    ap.add_argument("--auto", action="store_true",
                    help="every spec type under --draft-max auto, llama-speculative-simple at its own defaults")
    ap.add_argument("--reverse", type=int, default=0, choices=(0, 1),
                    help="1: each prompt's settings in the other order (a second run, for --table)")
    ap.add_argument("--table", help="print the table of earlier --json files (comma-separated) and stop")
    ap.add_argument("--markdown", action="store_true", help="with --table: a Markdown table, a row per category")
    args = ap.parse_args()
    if args.table:
        rows = [r for f in args.table.split(",") for r in json.loads(Path(f).read_text(encoding="utf-8"))]
        (markdown if args.markdown else table)(rows)
        return 0
    if not (TARGET.is_file() and DRAFT.is_file()):
        raise SystemExit(f"Qwen pair not found in {MODELS} (../shared/models/fetch-qwen-coder-pair.sh)")
    from spectui.analysis.cost.draft_policy import PolicyByMode  # noqa: PLC0415
    from spectui.engine import Engine  # noqa: PLC0415

    binary = None if args.no_llama else speculative_simple()
    cpu = next((x.split(":", 1)[1].strip() for x in Path("/proc/cpuinfo").read_text().splitlines()
                if x.startswith("model name")), "?")
    print(f"machine: {cpu}, {os.cpu_count()} CPUs; load {load()} at start; -t {args.threads}, -n {args.n}, T 0; "
          f"llama-speculative-simple: {binary or 'not built'}")
    t0 = time.monotonic()
    rows: list[dict] = []
    with Engine(str(TARGET), str(DRAFT), n_ctx=args.ctx, threads=args.threads, draft_policy=PolicyByMode,
                warn=lambda m: None) as engine:
        spectui_run(engine, "Warm up.", "none", False, 0, 16)  # the first decodes of a process run slower
        for i, (cat, text) in enumerate(prompts(args, engine)):
            run_prompt(engine, binary, i, cat, text, args, rows)
    table(rows)
    print(f"\n{time.monotonic() - t0:.0f} s in all; load {load()} at the end")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
