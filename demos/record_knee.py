"""Record the knee act: ``spectui probe --batched`` on a pair (the draft model, then prompt lookup), its table, chart
and the reason in words computed from the numbers, as an asciicast v2 file
(``spectui.commands.cast.write_asciicast``).

    .venv/bin/python demos/record_knee.py -o demos/knee.cast                       # the Qwen pair, -t 2
    .venv/bin/python demos/record_knee.py --target T.gguf --draft D.gguf --acceptance 0.6 -o knee.cast
    asciinema play demos/knee.cast

The acceptance is ``--acceptance`` (and ``--acceptance-lookup`` for the prompt-lookup act) or ``--acceptance-from``
a trace (default: 0.7 for the draft model, 0.5 for prompt lookup: give the figures of your own runs). Measuring takes minutes on a 2-core CPU; a curve
already cached (``spectui probe --batched`` with the same sizes) is used as is. Record on a quiet machine:
the probe says when it was not.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spectui.commands.cast import write_asciicast  # noqa: E402
from spectui.commands.probe import ProbeOptions, probe_main  # noqa: E402
from spectui.contract.options import ModelOptions  # noqa: E402

MODELS = [ROOT.parent / "shared" / "models", Path(os.environ.get("SPECTUI_MODELS", Path.home() / ".cache" / "spectui"
                                                                  / "models"))]
QWEN_T = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
QWEN_D = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
LINE_S = 0.06  # seconds between printed lines
PAUSE_S = 4.0  # between the acts


def probe_text(target: str, draft: str | None, args, acceptance: float | None) -> str:
    buf = io.StringIO()
    models = ModelOptions(target=target, draft=draft, threads=args.threads, ctx_size=1024)
    probe_main(ProbeOptions(models=models, max_batch=4, repeats=args.repeats, batched=True,
                            batch_seqs=args.batch_seqs, batch_ks=args.ks, acceptance=acceptance,
                            acceptance_from=args.acceptance_from, drafter="model" if draft else "ngram"), out=buf)
    text = buf.getvalue()
    return text[text.index("spectui probe --batched"):]  # the batched act (the probe's own figures are elsewhere)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target")
    ap.add_argument("--draft")
    ap.add_argument("--acceptance", type=float, default=None, help="the draft model's per-draft acceptance")
    ap.add_argument("--acceptance-lookup", type=float, default=None, help="prompt lookup's (default: --acceptance)")
    ap.add_argument("--acceptance-from", default=None)
    ap.add_argument("--batch-seqs", type=int, default=16)
    ap.add_argument("--ks", default="1,2,4")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-o", "--out", default=str(ROOT / "demos" / "knee.cast"))
    a = ap.parse_args()
    if a.target is None:
        d = next((m for m in MODELS if (m / QWEN_T).exists() and (m / QWEN_D).exists()), None)
        if d is None:
            raise SystemExit("give --target/--draft, or fetch the Qwen pair "
                             "(../shared/models/fetch-qwen-coder-pair.sh)")
        a.target, a.draft = str(d / QWEN_T), str(d / QWEN_D)
    acts = []
    if a.draft:
        acts.append(("draft model", probe_text(a.target, a.draft, a, a.acceptance if a.acceptance is not None
                                               else (None if a.acceptance_from else 0.7))))
    look = a.acceptance_lookup if a.acceptance_lookup is not None else a.acceptance
    acts.append(("prompt lookup", probe_text(a.target, None, a, look if look is not None
                                             else (None if a.acceptance_from else 0.5))))
    chunks, t = [], 0.5
    for i, (name, text) in enumerate(acts):
        if i:
            t += PAUSE_S
            chunks.append((t, "\x1b[2J\x1b[H"))
        chunks.append((t, f"\x1b[1mWhere speculation stops paying as the batch grows: {name}\x1b[0m\r\n\r\n"))
        for line in text.splitlines():
            t += LINE_S
            chunks.append((t, line + "\r\n"))
    n, dur = write_asciicast(a.out, 110, 52, chunks, t, None, title="spectui: the batched knee")
    print(f"wrote {a.out}: {n} events, {dur:.1f} s")


if __name__ == "__main__":
    main()
