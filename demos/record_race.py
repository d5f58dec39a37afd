"""Record the demo's race act (spectui/data/race-{alone,lookup,draft}.jsonl.gz): one editing prompt (the
one `benchmarks/bench_regimes.py` found where prompt lookup pays on this CPU), run three ways one after
the other on the same loaded Qwen2.5-Coder pair (`spectui.race.record.record_race`, with its unrecorded
warm-up): the 1.5B target alone, prompt lookup at k = 3 (drafts copied from the prompt: free) and the 0.5B
draft model at k = 3 (drafts that cost a decode each). On 2 cores the first wins and the second loses; the
race act says why from the recordings' numbers. Kept small: -n 112, gzip.

    .venv/bin/python demos/record_race.py [--target T.gguf --draft D.gguf] [-t 2] [-n 112]

Then check them: `spectui race spectui/data/race-*.jsonl.gz --headless`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

MODELS = os.path.expanduser("~/.cache/spectui/models")
TARGET = os.path.join(MODELS, "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
DRAFT = os.path.join(MODELS, "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
SPECS = ({"k": 0}, {"k": 3, "drafter": "ngram"}, {"k": 3, "drafter": "model"})
NAMES = ("race-alone.jsonl.gz", "race-lookup.jsonl.gz", "race-draft.jsonl.gz")


def edit_prompt() -> str:
    out = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "bench_regimes.py"), "--print-prompt",
                          "edit"], capture_output=True, text=True, check=True)
    return out.stdout.rstrip("\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=TARGET)
    ap.add_argument("--draft", default=DRAFT)
    ap.add_argument("-n", type=int, default=112)
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-o", "--out-dir", default=os.path.join(REPO, "spectui", "data"))
    args = ap.parse_args()

    from spectui.commands.common import Drafting, ModelOptions, load_engine
    from spectui.contract.outputs import TRACE, check_output
    from spectui.race.record import RaceRecording, record_race

    t0 = time.time()
    tmp = tempfile.mkdtemp(prefix="spectui-race-demo-")
    extra = {"recording": {"script": "demos/record_race.py", "n_predict": args.n, "threads": args.threads}}
    models = ModelOptions(target=args.target, draft=args.draft, threads=args.threads, ctx_size=2048)
    rec = RaceRecording(edit_prompt(), tuple(SPECS), have_draft=True, inputs=(args.target, args.draft),
                        n_predict=args.n, record_dir=tmp, header_extra=extra)
    paths, _note = record_race(lambda use_draft: load_engine(models, Drafting(draft_model=use_draft)), rec)
    for src, name in zip(paths, NAMES):
        dest = check_output(os.path.join(args.out_dir, name), TRACE, inputs=[args.target, args.draft]).path
        shutil.move(src, dest)  # the bundle's new version (an older trace of the same name is replaced)
        print(f"wrote {dest} ({os.path.getsize(dest)} bytes)", file=sys.stderr)
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"done in {time.time() - t0:.0f} s; load {' '.join(f'{x:.2f}' for x in os.getloadavg())}", file=sys.stderr)


if __name__ == "__main__":
    main()
