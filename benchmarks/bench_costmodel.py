"""Cost model check: predicted vs measured tokens/s for k = 1..8 on the Qwen pair, side by side, one run.

One engine is loaded. First, target verify times for batch sizes k + 1 = 1..9 are measured on demand
(``engine.measure_verify_ms``). Then one run at each k = 0..8 (temperature 0, same prompt and seed) is
measured. Predictions for every k are made from ONE run's statistics (by default the k = 8 run, which
measures acceptance at positions 1..8) plus the verify times measured on demand; a second column
predicts from the k = 2 run alone (acceptance beyond position 2 extrapolated), to show what the
extrapolation costs. Target: predicted within 10% of measured for k = 1..8. Two more columns predict
from the k = 2 run with no on-demand verify times: along a straight line through the sizes that run
measured (k = 0, 2), and along the hardware's curve (the on-demand times used as ``spectui probe``'s
curve: only its shape, scaled to the run's level), to show what the probe's curve buys.

    .venv/bin/python benchmarks/bench_costmodel.py [--target T --draft D] [-n 128] [--threads N] [--save DIR]
    .venv/bin/python benchmarks/bench_costmodel.py --from DIR    # recompute from saved traces, no model runs

``--save DIR`` keeps every run's trace and the on-demand verify times, so the comparison can be
recomputed later (``--from DIR``) without running the models again.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from spectui.contract.prompt import DEFAULT_PROMPT  # noqa: E402

MODELS = os.path.expanduser("~/.cache/spectui/models")
TARGET = os.path.join(MODELS, "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
DRAFT = os.path.join(MODELS, "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=TARGET)
    ap.add_argument("--draft", default=DRAFT)
    ap.add_argument("-p", "--prompt", default=DEFAULT_PROMPT)
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("--k-max", type=int, default=8)
    ap.add_argument("--source-k", type=int, default=None,
                    help="run whose statistics feed the prediction (default: k-max)")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--save", default=None, help="keep traces and verify times here")
    ap.add_argument("--from", dest="from_dir", default=None, help="recompute from a --save directory")
    args = ap.parse_args()
    if args.from_dir:
        import json

        meta_path = os.path.join(args.from_dir, "meta.json")
        if os.path.exists(meta_path):
            with open(meta_path) as fh:
                meta = json.load(fh)
            args.target, args.draft, args.n, args.threads = meta["target"], meta["draft"], meta["n"], meta["threads"]
        return report(*load(args.from_dir), args)
    for path in (args.target, args.draft):
        if not os.path.exists(path):
            print(f"bench_costmodel: model not found: {path} (../shared/models/fetch-qwen-coder-pair.sh)",
                  file=sys.stderr)
            return 2

    from spectui.analysis.cost.draft_policy import PolicyByMode
    from spectui.analysis.stats import compute
    from spectui.contract.control import RunControl
    from spectui.contract.events import Settings
    from spectui.engine.loop import Engine

    t_start = time.time()
    engine = Engine(args.target, args.draft, n_ctx=4096, threads=args.threads, draft_policy=PolicyByMode)
    try:
        # verify time per batch size, measured on demand (a warm-up run first so caches are hot)
        list(engine.run(args.prompt, RunControl(Settings(draft_max=0, drafter="none")), 8))
        verify = {k: engine.measure_verify_ms(k, repeats=5) for k in range(args.k_max + 1)}
        events_by_k = {}
        for k in range(args.k_max + 1):
            s = Settings(draft_max=k, temperature=0.0, drafter="model" if k else "none", seed=0)
            events_by_k[k] = list(engine.run(args.prompt, RunControl(s), args.n))
            snap = compute(events_by_k[k])
            print(f"  measured k={k}: {snap.tokens_per_second:.2f} t/s, acceptance "
                  f"{snap.acceptance_rate:.0%}", file=sys.stderr)
    finally:
        engine.close()
    if args.save:
        save(args.save, verify, events_by_k, args)
    print(f"(measuring took {time.time() - t_start:.0f} s)")
    return report(verify, {k: compute(evs) for k, evs in events_by_k.items()}, args)


def save(path, verify, events_by_k, args):
    import json

    from spectui.recording.trace import write_trace

    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "meta.json"), "w") as fh:
        json.dump({"target": args.target, "draft": args.draft, "n": args.n, "threads": args.threads,
                   "prompt": args.prompt}, fh)
    with open(os.path.join(path, "verify.json"), "w") as fh:
        json.dump({str(k): v for k, v in verify.items()}, fh)
    for k, evs in events_by_k.items():
        write_trace(os.path.join(path, f"k{k}.jsonl"), evs)


def load(path):
    import json

    from spectui.analysis.stats import compute
    from spectui.recording.trace import read_trace

    with open(os.path.join(path, "verify.json")) as fh:
        verify = {int(k): v for k, v in json.load(fh).items()}
    snaps = {}
    for k in sorted(verify):
        f = os.path.join(path, f"k{k}.jsonl")
        if os.path.exists(f):
            snaps[k] = compute(read_trace(f).events)
    return verify, snaps


def report(verify, snaps, args) -> int:
    from spectui.analysis.cost.costmodel import predict

    src_k = args.source_k if args.source_k is not None else max(snaps)
    args.k_max = max(snaps)

    # the source run's own verify time for its k (measured in the run) wins over the on-demand figure;
    # every other batch size comes from the on-demand measurement
    def feed(k):
        own = {kk: ms for kk, ms, n in snaps[k].verify_ms_by_k if kk == k and n}
        return {**verify, **own}

    pred = predict(snaps[src_k], k_max=args.k_max, verify_ms_by_k=feed(src_k), current_k=src_k)
    pred2 = predict(snaps[2], k_max=args.k_max, verify_ms_by_k=feed(2), current_k=2) if 2 in snaps else None
    pred2_line = predict(snaps[2], k_max=args.k_max, current_k=2) if 2 in snaps else None
    pred2_curve = predict(snaps[2], k_max=args.k_max, current_k=2, curve=verify) if 2 in snaps else None

    print(f"cost model vs measurement: {os.path.basename(args.target)} / {os.path.basename(args.draft)}, "
          f"-n {args.n}, temp 0, threads {args.threads or os.cpu_count()}, predictions from the k={src_k} run")
    print("verify ms by k (measured on demand): " + "  ".join(f"{k}:{v:.0f}" for k, v in verify.items()))
    print(f"draft ms/token {pred.draft_ms_per_token:.1f}, other ms/pass {pred.other_ms_per_pass:.1f} "
          f"(from the k={src_k} run); {pred.acceptance_note}")
    print()
    hdr = f"{'k':>2}  {'measured t/s':>12}  {'predicted':>9}  {'pred/meas':>9}  {'within 10%':>10}"
    if pred2 is not None:
        hdr += f"  {'pred from k=2 run':>17}  {'pred/meas':>9}"
    hdr += f"  {'meas tok/pass':>13}  {'pred tok/pass':>13}  {'pred w/ own times':>17}  {'pred/meas':>9}"
    if pred2_line is not None:
        hdr += f"  {'k=2 run, line':>13}  {'pred/meas':>9}  {'k=2 run, curve':>14}  {'pred/meas':>9}"
    print(hdr)
    # "own times": the acceptance part of the model alone - the prediction for k made with the k run's
    # own measured times (verify ms at k, draft ms/token, other ms/pass, k = 0 decode from the k = 0 run)
    # and the source run's acceptance; load-independent, so it separates the acceptance model's error
    # from the error of carrying times measured at one moment of a shared machine to another
    from spectui.analysis.cost.costmodel import conditional_rates, predict_from

    rates, weights = conditional_rates([(p.drafted, p.accepted) for p in snaps[src_k].acceptance_by_position])
    worst = 0.0
    ok_all = True
    own_worst: list[float] = []
    line_err: list[float] = []
    curve_err: list[float] = []
    for k in range(0, args.k_max + 1):
        m = snaps[k].tokens_per_second
        p = pred.tps_by_k[k]
        r = p / m if m else 0.0
        ok = abs(r - 1.0) <= 0.10
        if k >= 1:
            worst = max(worst, abs(r - 1.0))
            ok_all &= ok
        line = f"{k:>2}  {m:>12.2f}  {p:>9.2f}  {r:>9.3f}  {('yes' if ok else 'NO'):>10}"
        if pred2 is not None:
            p2 = pred2.tps_by_k[k]
            line += f"  {p2:>17.2f}  {p2 / m if m else 0:>9.3f}"
        line += f"  {snaps[k].tokens_per_pass:>13.2f}  {pred.tokens_per_pass_by_k[k]:>13.2f}"
        sk = snaps[k]
        own_v = {kk: ms for kk, ms, n in sk.verify_ms_by_k if kk == k and n}
        own_v[0] = snaps[0].target_decode_ms if 0 in snaps else verify[0]
        if k == 0:
            own_v = {0: sk.target_decode_ms}
        own = predict_from(rates, weights, own_v, sk.draft_ms_per_token,
                           sk.other_ms_total / sk.n_passes if sk.n_passes else 0.0, k_max=args.k_max)
        own_worst.append(abs(own.tps_by_k[k] / m - 1) if (m and k) else 0.0)
        line += f"  {own.tps_by_k[k]:>17.2f}  {own.tps_by_k[k] / m if m else 0:>9.3f}"
        if pred2_line is not None:
            pl, pc = pred2_line.tps_by_k[k], pred2_curve.tps_by_k[k]
            line += f"  {pl:>13.2f}  {pl / m if m else 0:>9.3f}  {pc:>14.2f}  {pc / m if m else 0:>9.3f}"
            if k:
                line_err.append(abs(pl / m - 1) if m else 0.0)
                curve_err.append(abs(pc / m - 1) if m else 0.0)
        print(line)
    print()
    print(f"worst |predicted/measured - 1| for k=1..{args.k_max}: {worst:.1%} "
          f"({'within' if ok_all else 'NOT within'} the 10% target)")
    print(f"with each run's own times (acceptance model alone): worst {max(own_worst):.1%}")
    if line_err:
        print(f"from the k=2 run alone: straight line worst {max(line_err):.1%}, "
              f"mean {sum(line_err) / len(line_err):.1%};"
              f" the probe's curve worst {max(curve_err):.1%}, mean {sum(curve_err) / len(curve_err):.1%}")
    best_meas = max(snaps, key=lambda k: snaps[k].tokens_per_second)
    print(f"best k measured: {best_meas}; best k predicted: {pred.best_k}")
    print(f"advice: {pred.advice}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
