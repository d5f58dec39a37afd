"""Where speculation stops paying as concurrency grows: the knee predicted from this machine's batched cost curve
(``spectui probe --batched``) beside the knee measured on llama-server with N slots, for each pair and drafter,
in one run.

For each case (pair x drafter):

1. the batched curve on the pair (``spectui.analysis.measured.batch_knee.cached_or_measure``: B = 1, 2, 4, ...
   16 sequences
   of k + 1 tokens, and of 1 token) and the step costs (``spectui.analysis.measured.step_costs``: prompt chunks on
   both models, one row's sampling) with the models loaded by spectui, then released;
2. llama-server with ``-np <max concurrency>`` twice: the target alone (the baseline) and with speculation
   (``-md DRAFT --spec-type draft-simple`` or ``--spec-type ngram-simple`` for prompt lookup), each ``-c``
   large enough for every slot;
3. ``spectui bench``'s concurrency sweep (``spectui.bench.concurrency.sweep``) at 1, 2, 4, 8, 16: aggregate
   tokens/s, ITL, TTFT, acceptance and the speedup at each concurrency;
4. the prediction at each concurrency on the server's own steps (``spectui.bench.server_shape.predict_on_steps``:
   llama-server's steps replayed for the level's requests on the measured costs, with the acceptance measured
   at that level), its tokens/s of both servers beside the measured, and the knees side by side: the predicted
   knee within one step (powers of two) of the measured one, and each speedup within 15%, are reported as
   yes/no with the numbers; the earlier decode-only prediction (the curve at B = c) is printed too.

Cases: ``qwen-draft`` and ``qwen-lookup`` (Qwen2.5-Coder 1.5B with the 0.5B draft, ../shared/models or
~/.cache/spectui/models: ``fetch-qwen-coder-pair.sh``), ``fast-draft`` and ``fast-lookup`` (benchmarks/fastpair.py).
``--quick`` runs the tiny test models (tests/tinymodels.py) at concurrency 1, 2 with -n 8: it checks that the
script runs, its figures mean nothing.

    .venv/bin/python benchmarks/bench_knee.py                       # every case, concurrency 1..16 (long)
    .venv/bin/python benchmarks/bench_knee.py --cases fast-draft --concurrency 1,2,4
    .venv/bin/python benchmarks/bench_knee.py --quick               # seconds: does it run
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

from spectui.analysis.knee import knee_text as kt  # noqa: E402
from spectui.analysis.measured import batch_knee as bk  # noqa: E402
from spectui.analysis.measured import step_costs  # noqa: E402
from spectui.bench.concurrency import predicted, report_lines, sweep  # noqa: E402
from spectui.bench.datasets import load_prompts  # noqa: E402
from spectui.bench.plan import BenchOptions  # noqa: E402
from spectui.bench.server_shape import predict_on_steps, prediction_lines  # noqa: E402

QWEN_T = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
QWEN_D = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
CASES = ("qwen-draft", "qwen-lookup", "fast-draft", "fast-lookup")
PROMPTS = [
    "Write a Python function that returns the n-th Fibonacci number, with a docstring and type hints.",
    "Explain how a hash map handles collisions, step by step, with a short example in Python.",
    "Rewrite this loop as a list comprehension: result = []\nfor x in data:\n    if x > 0:\n"
    "        result.append(x * 2)",
    "Write a bash script that counts the lines of every .py file in a folder and prints the total.",
]
# prompt lookup pays where the output copies the prompt: editing tasks, each with the code it edits
EDIT_PROMPTS = [
    "Add type hints to this function and return it unchanged otherwise:\n\ndef mean(values):\n    total = 0\n"
    "    for value in values:\n        total += value\n    return total / len(values)\n",
    "Rename the variable `items` to `entries` everywhere in this code:\n\ndef count(items):\n    seen = {}\n"
    "    for item in items:\n        seen[item] = seen.get(item, 0) + 1\n    return seen\n",
    "Add a docstring to this function and keep the body exactly as it is:\n\ndef clamp(x, lo, hi):\n"
    "    if x < lo:\n        return lo\n    if x > hi:\n        return hi\n    return x\n",
    "Rewrite this function with an early return on an empty list, keeping the rest:\n\ndef largest(xs):\n"
    "    best = xs[0]\n    for x in xs:\n        if x > best:\n            best = x\n    return best\n",
]
# llama-server's ngram-simple looks up a 12-token key by default (common.h ngram_simple.size_n); spectui's own
# lookup keys on the last 1..3 tokens: the server is given the same key size
NGRAM_ARGS = ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "3"]


def qwen_dir() -> Path | None:
    for d in (ROOT.parent / "shared" / "models", Path(os.environ.get("SPECTUI_MODELS", "")),
              Path.home() / ".cache" / "spectui" / "models"):
        if str(d) and (d / QWEN_T).exists() and (d / QWEN_D).exists():
            return d
    return None


def pair_for(case: str, tmp: Path) -> tuple[Path, Path]:
    if case.startswith("qwen"):
        d = qwen_dir()
        if d is None:
            raise SystemExit("the Qwen pair is missing: run ../shared/models/fetch-qwen-coder-pair.sh")
        return d / QWEN_T, d / QWEN_D
    if case.startswith("fast"):
        from fastpair import build_fast_pair

        return build_fast_pair()
    from tinymodels import build_model  # --quick

    t, d = tmp / "tiny-target.gguf", tmp / "tiny-draft.gguf"
    if not t.exists():
        build_model(t, seed=0, eos_logit="never")
        build_model(d, seed=0, noise=0.3, eos_logit="never")
    return t, d


def curve_for(target: Path, draft: Path, drafter: str, seqs: int, k: int, threads: int, repeats: int):
    from spectui.engine import Engine

    eng = Engine(str(target), str(draft) if drafter == bk.DRAFTER_MODEL else None, n_ctx=1024, threads=threads)
    try:
        curve = bk.cached_or_measure(eng, max_seqs=seqs, ks=(k,), repeats=repeats)
        return curve, step_costs.cached_or_measure(eng, repeats=repeats)
    finally:
        eng.close()


def servers_for(binary, target: Path, draft: Path, drafter: str, k: int, np_: int, threads: int, n_ctx: int,
                tmp: Path, tag: str):
    from servers import LlamaServer

    t = str(threads)
    common = ["-m", str(target), "--metrics", "-c", str(n_ctx * np_), "-np", str(np_), "--no-warmup",
              "-t", t, "-tb", t]
    spec_args = (["-md", str(draft), "--spec-type", "draft-simple", "-td", t] if drafter == bk.DRAFTER_MODEL
                 else list(NGRAM_ARGS))
    spec_args += ["--spec-draft-n-max", str(k), "--spec-draft-n-min", "0"]
    base = LlamaServer(binary, common, tmp / f"{tag}-base.log")
    try:
        spec = LlamaServer(binary, common + spec_args, tmp / f"{tag}-spec.log")
    except BaseException:
        base.stop()
        raise
    return base, spec


def prompt_set(tmp: Path, n: int, lookup: bool = False):
    texts = EDIT_PROMPTS if lookup else PROMPTS
    p = tmp / ("edit-prompts.jsonl" if lookup else "prompts.jsonl")
    p.write_text("".join(json.dumps({"question_id": i + 1, "category": "code", "turns": [texts[i % len(texts)]]})
                         + "\n" for i in range(n)), encoding="utf-8")
    return load_prompts(str(p))


def one_case(case: str, a, binary, tmp: Path) -> dict:
    drafter = bk.DRAFTER_MODEL if case.endswith("draft") else bk.DRAFTER_LOOKUP
    target, draft = pair_for(case, tmp)
    levels = [int(x) for x in a.concurrency.split(",")]
    curve, steps = curve_for(target, draft, drafter, max(levels), a.k, a.threads, a.repeats)
    base, spec = servers_for(binary, target, draft, drafter, a.k, max(levels), a.threads, a.ctx, tmp, case)
    try:
        prompts = prompt_set(tmp, a.prompts, lookup=drafter == bk.DRAFTER_LOOKUP)
        opts = BenchOptions(urls=(spec.url,), baseline_url=base.url, n_predict=a.n, temp="0", seed=0, timeout_s=1800.0)
        res = sweep(prompts, opts, levels,
                    on_level=lambda c, url, role: print(f"  {case}: concurrency {c}, {role}", file=sys.stderr))
    finally:
        spec.stop()
        base.stop()
    decode_only = predicted(curve, res, a.k, drafter)
    on_steps = predict_on_steps(curve, steps, res, a.k, drafter, a.prompts)  # the server's own steps
    pred = {c: p.speedup for c, p in on_steps.items()}
    meas = res.speedups()
    cs = [c for c in levels if c in meas]
    pc = [c for c in cs if c in pred]
    mk = bk.knee_of(cs, [meas[c] for c in cs]) if cs and not res.drafted_nothing() else None
    pk = bk.knee_of(pc, [pred[c] for c in pc]) if pc else None
    return {"case": case, "target": target.name, "draft": draft.name if drafter == bk.DRAFTER_MODEL else "",
            "curve": curve, "steps": steps, "sweep": res, "pred": pred, "meas": meas, "measured_knee": mk,
            "predicted_knee": pk, "on_steps": on_steps, "decode_only": decode_only}


def step(kn) -> float:
    """The knee on the log2 axis: where it stops (log2 of stops_at), beyond the last level when it always pays."""
    import math

    if kn.always:
        return math.log2(kn.pays_up_to) + 1
    return math.log2(kn.stops_at)


def print_case(r: dict) -> None:
    print(f"\n== {r['case']}: {r['target']}" + (f" + {r['draft']}" if r["draft"] else " (prompt lookup)"))
    print(f"batched curve (spectui probe --batched{'' if not r['curve'].cached else ', cached'}):")
    for ln in kt.table(r["curve"], None)[1:]:
        print("  " + ln)
    for ln in step_costs.table(r["steps"]):
        print("  " + ln)
    for ln in report_lines(r["sweep"], r["pred"]):
        print(ln)
    for ln in prediction_lines(r["on_steps"], r["sweep"]):
        print(ln)
    print("decode steps alone (the batched curve at B = c, the earlier prediction): "
          + ", ".join(f"{c}: {x:.2f}x" for c, x in sorted(r["decode_only"].items())))
    mk, pk = r["measured_knee"], r["predicted_knee"]
    if mk and pk:
        within = abs(step(mk) - step(pk)) <= 1
        errs = {c: (r["pred"][c] - r["meas"][c]) / r["meas"][c] for c in r["pred"] if c in r["meas"]}
        worst = max(errs.items(), key=lambda kv: abs(kv[1])) if errs else None
        print(f"knee: measured {mk.words(mk.pays_up_to or 1, 'concurrency')}; predicted "
              f"{pk.words(pk.pays_up_to or 1, 'concurrency')}; "
              f"within one step: {'yes' if within else 'no'}")
        if worst:
            print(f"speedup error, predicted vs measured: worst {worst[1]:+.0%} at concurrency {worst[0]} "
                  f"({'within' if abs(worst[1]) <= 0.15 else 'outside'} 15%); by concurrency: "
                  + ", ".join(f"{c}: {e:+.0%}" for c, e in sorted(errs.items())))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--concurrency", default="1,2,4,8,16")
    ap.add_argument("-n", type=int, default=128, help="tokens a request")
    ap.add_argument("-k", type=int, default=4, help="draft length (server --spec-draft-n-max, the curve's k)")
    ap.add_argument("--prompts", type=int, default=16, help="distinct prompts (cycled: max(prompts, 2 c) a level)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=1024, help="context a slot (llama-server gets -c ctx x slots)")
    ap.add_argument("--repeats", type=int, default=3, help="the batched curve's rounds")
    ap.add_argument("--quick", action="store_true", help="tiny models, concurrency 1,2, -n 8: does it run")
    a = ap.parse_args()
    from servers import llama_server_binary

    binary = llama_server_binary()
    if binary is None:
        raise SystemExit("llama-server not built: scripts/build-llama-server.sh")
    cases = [c.strip() for c in a.cases.split(",") if c.strip()]
    if a.quick:
        cases, a.concurrency, a.n, a.prompts, a.repeats, a.k, a.threads = ["tiny-draft"], "1,2", 8, 2, 1, 3, 1
    bad = [c for c in cases if c not in CASES and not a.quick]
    if bad:
        raise SystemExit(f"unknown cases {bad}: choose from {', '.join(CASES)}")
    tmp = Path(tempfile.mkdtemp(prefix="spectui-knee-"))
    la = os.getloadavg()
    print(f"machine: {os.cpu_count()} CPUs, load average {la[0]:.2f} {la[1]:.2f} {la[2]:.2f} at start; -t "
          f"{a.threads}, -n {a.n}, -k {a.k}, concurrency {a.concurrency}, {a.prompts} prompts; {binary}")
    for case in cases:
        print_case(one_case(case, a, binary, tmp))
    la = os.getloadavg()
    print(f"\nload average at the end: {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}")


if __name__ == "__main__":
    main()
