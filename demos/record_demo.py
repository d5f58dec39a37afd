"""Record the bundled demo trace (spectui/data/demo-trace.jsonl.gz) on the real Qwen2.5-Coder pair.

Drives spectui.engine.loop.Engine directly with a RunControl and changes the settings between passes
at fixed pass numbers (the loop reads the settings once per pass, so the change takes effect at the
next pass and the engine records a SettingsChanged event), so the recording shows acceptance changing:
code at k = 3 and temperature 0, longer drafts (k = 8: acceptance falls with depth), then sampling at
temperature 1.0 over prose and a poem (acceptance falls with temperature), then k = 2.

    .venv/bin/python demos/record_demo.py [--target T.gguf --draft D.gguf] [-o spectui/data/demo-trace.jsonl.gz]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

MODELS = os.path.expanduser("~/.cache/spectui/models")
TARGET = os.path.join(MODELS, "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
DRAFT = os.path.join(MODELS, "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")

QUESTION = (
    "Write a Python function is_palindrome(s) that ignores case, spaces and punctuation, with a docstring "
    "and three assert tests. Then explain in two short plain-English paragraphs, for a beginner, why it "
    "works and what its running time is, and end with a playful four-line poem about palindromes."
)
# Qwen2.5 instruct chat template (the engine parses special tokens in the prompt).
PROMPT = (
    "<|im_start|>system\nYou are a helpful coding assistant.<|im_end|>\n"
    f"<|im_start|>user\n{QUESTION}<|im_end|>\n<|im_start|>assistant\n"
)
START = dict(draft_max=3, temperature=0.0, drafter="model", seed=42)
# before pass N: settings changes (pass 0 is the prefill pass)
SCHEDULE = [
    (30, dict(draft_max=8)),
    (46, dict(temperature=1.0)),
    (60, dict(draft_max=2)),
]
N_PREDICT = 600


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=TARGET)
    ap.add_argument("--draft", default=DRAFT)
    ap.add_argument("-o", "--out", default=os.path.join(REPO, "spectui", "data", "demo-trace.jsonl.gz"))
    ap.add_argument("-n", type=int, default=N_PREDICT)
    ap.add_argument("-t", "--threads", type=int, default=1, help="1 is steadier on a shared machine")
    args = ap.parse_args()

    from spectui.contract.control import RunControl
    from spectui.engine.loop import Engine
    from spectui.contract.events import PassEvent, RunEnded, Settings
    from spectui.recording.trace import TraceWriter

    engine = Engine(args.target, args.draft, n_ctx=2048, threads=args.threads)
    control = RunControl(Settings(**START))
    schedule = dict(SCHEDULE)
    extra = {
        "recording": {
            "script": "demos/record_demo.py",
            "start_settings": START,
            "schedule": [{"before_pass": n, **ch} for n, ch in SCHEDULE],
            "question": QUESTION,
        }
    }
    t0 = time.time()
    tmp = args.out + ".tmp" + (".gz" if args.out.endswith(".gz") else "")
    with TraceWriter(tmp, extra) as w:
        for ev in engine.run(PROMPT, control, args.n):
            w.write(ev)
            if isinstance(ev, PassEvent):
                ch = schedule.get(ev.index + 1)
                if ch:
                    control.update(**ch)
                text = "".join(t.text for t in ev.emitted)
                print(text, end="", flush=True)
            if isinstance(ev, RunEnded):
                print(f"\n[{ev.reason}] passes={ev.n_passes} emitted={ev.n_emitted} drafted={ev.n_drafted} "
                      f"accepted={ev.n_accepted} wall={ev.wall_s:.1f}s", file=sys.stderr)
    engine.close()
    os.replace(tmp, args.out)
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes) in {time.time() - t0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
