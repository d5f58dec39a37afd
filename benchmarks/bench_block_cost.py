"""A block drafter's draft cost by k beside a draft model's: one draft pass for the block, k decodes for the model.

    python benchmarks/bench_block_cost.py [--dir DIR] [--ks 1,2,4,8,15] [--reps 30] [-t THREADS]

For each block drafter (dflash, dspark) on its generated pair (``DIR/{kind}-agree-{target,draft}.gguf``, written by
make_block_models.py when ``--dir`` is not given), one engine holds the block drafter and a separate draft model
(the tests' tiny llama model, seed 1, the same vocabulary) for the same target. At each k, after the prompt:

- the block drafter's ``propose`` of k tokens at T = 0 (ONE draft decode of the block, and spectui's reading of its
  rows), and how many draft decodes it made (``BlockHead.n_runs``);
- the draft model's ``propose`` of k tokens at T = 0 (k draft decodes);
- one target decode of one token.

Medians in ms. The tiny generated models say what the code around llama.cpp's calls costs, not what a real
drafter costs; run it on an idle machine.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

from bench_spec_heads import median_ms  # noqa: E402 - the heads' benchmark times a draft step the same way

PROMPT = "the hash map handles collisions"


def measure(target: Path, block_draft: Path, draft_model: Path, kind: str, ks: list[int], reps: int,
            threads: int) -> list[tuple[int, float, int, float, float]]:
    """(k, block ms, block draft decodes per propose, draft model ms, target decode ms) at each k."""
    import numpy as np  # noqa: PLC0415

    from spectui.engine.drafters.base import DraftLimits  # noqa: PLC0415
    from spectui.engine.loop import Engine  # noqa: PLC0415
    from spectui.engine.run.prefill import decode_prompt, single_decode_ms  # noqa: PLC0415

    rows = []
    with Engine(str(target), str(draft_model), n_ctx=512, threads=threads, head=kind, head_file=str(block_draft),
                warn=lambda m: None) as e:
        parts = e.parts()
        parts.reset_for_run()
        tgt, block, model = parts.target, parts.head, parts.drafters.get("model")
        ids = tgt.tokenize(PROMPT)
        decode_prompt(tgt, block, ids)
        model.prefill(ids)
        tok = int(np.argmax(tgt.logits_last()))
        tokens = ids + [tok]
        rng = np.random.default_rng(0)
        target_ms = single_decode_ms(tgt, tok, len(ids), reps)
        for k in ks:
            before = block.head.n_runs
            lim = DraftLimits(k)
            block_ms = median_ms(lambda lim=lim: block.propose(tokens, lim, 0.0, rng), reps)
            per_call = (block.head.n_runs - before) / (reps + 1)
            model_ms = median_ms(lambda lim=lim: model.propose(tokens, lim, 0.0, rng), reps)
            rows.append((k, block_ms, int(round(per_call)), model_ms, target_ms))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default=None, help="folder with {dflash,dspark}-agree-{target,draft}.gguf")
    ap.add_argument("--ks", default="1,2,4,8,15", help="draft lengths (default %(default)s)")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("-t", "--threads", type=int, default=1)
    a = ap.parse_args(argv)

    import make_block_models  # noqa: PLC0415
    import tinymodels  # noqa: PLC0415

    ks = [int(x) for x in a.ks.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(a.dir) if a.dir else Path(tmp)
        draft_model = tinymodels.build_model(Path(tmp) / "draft-model.gguf", seed=1, name="tiny-draft", n_layer=2)
        for kind in ("dflash", "dspark"):
            if a.dir is None:
                make_block_models.build_block_pair(d, kind, 30.0)
            print(f"{kind}: k, block drafter ms (draft decodes per pass), draft model ms (k decodes), target decode ms")
            for k, bms, n, mms, tms in measure(d / f"{kind}-agree-target.gguf", d / f"{kind}-agree-draft.gguf",
                                               draft_model, kind, ks, a.reps, a.threads):
                print(f"  k={k:2d}  block {bms:7.3f} ms ({n} decode{'s' if n != 1 else ''})  "
                      f"draft model {mms:7.3f} ms  target {tms:6.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
