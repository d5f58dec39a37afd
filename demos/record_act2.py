"""Record the demo's second act (spectui/data/demo-act2.jsonl.gz): the best regime this CPU allows.

The search (`benchmarks/bench_regimes.py`) found one regime where speculation beats the target alone on
the 2-core machine: prompt lookup (`--drafter ngram`, drafts copied from the prompt, so they cost
nothing) on an editing task, where most of the answer is already in the prompt, at k = 3 (a verify
batch of 4, which llama.cpp's 4-row kernel tiles make cheap). The act starts with the target alone for
``SWITCH_AT`` passes, then switches to prompt lookup at k = 3, so the tokens/s chart shows the step and
the replay says, from the recording's own numbers, how much it bought.

    .venv/bin/python demos/record_act2.py [--target T.gguf] [-t 2] [-o spectui/data/demo-act2.jsonl.gz]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

TARGET = os.path.join(os.path.expanduser("~/.cache/spectui/models"), "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
START = dict(draft_max=0, temperature=0.0, drafter="none", seed=0)
SWITCH_AT = 40  # before this pass: prompt lookup at k = 3
SWITCH = dict(draft_max=3, drafter="ngram")
N_PREDICT = 420


def edit_prompt() -> str:
    out = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "bench_regimes.py"), "--print-prompt",
                          "edit"], capture_output=True, text=True, check=True)
    return out.stdout.rstrip("\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=TARGET)
    ap.add_argument("-o", "--out", default=os.path.join(REPO, "spectui", "data", "demo-act2.jsonl.gz"))
    ap.add_argument("-n", type=int, default=N_PREDICT)
    ap.add_argument("-t", "--threads", type=int, default=2)
    args = ap.parse_args()

    from spectui.contract.control import RunControl
    from spectui.engine.loop import Engine
    from spectui.contract.events import PassEvent, RunEnded, Settings
    from spectui.recording.trace import TraceWriter

    prompt = edit_prompt()
    engine = Engine(args.target, None, n_ctx=2048, threads=args.threads)
    control = RunControl(Settings(**START))
    extra = {"recording": {"script": "demos/record_act2.py", "start_settings": START,
                           "schedule": [{"before_pass": SWITCH_AT, **SWITCH}], "load_start": os.getloadavg()[0]}}
    t0 = time.time()
    tmp = args.out + ".tmp" + (".gz" if args.out.endswith(".gz") else "")
    with TraceWriter(tmp, extra) as w:
        for ev in engine.run(prompt, control, args.n):
            w.write(ev)
            if isinstance(ev, PassEvent):
                if ev.index + 1 == SWITCH_AT:
                    control.update(**SWITCH)
                print("".join(t.text for t in ev.emitted), end="", flush=True)
            if isinstance(ev, RunEnded):
                print(f"\n[{ev.reason}] passes={ev.n_passes} emitted={ev.n_emitted} drafted={ev.n_drafted} "
                      f"accepted={ev.n_accepted} wall={ev.wall_s:.1f}s", file=sys.stderr)
    engine.close()
    os.replace(tmp, args.out)
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes) in {time.time() - t0:.0f} s; "
          f"load {os.getloadavg()[0]:.2f}", file=sys.stderr)


if __name__ == "__main__":
    main()
