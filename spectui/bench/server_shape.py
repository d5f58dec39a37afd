"""What ``spectui bench --concurrency`` needs to predict a level on the server's own steps
(``spectui.analysis.knee.server_steps``): the server's slots and each prompt's tokens as the server sees them (the
slot it picks for a request depends on the prompt it shares most with a free slot), and the prediction itself.

For llama-server: ``/props`` (``total_slots``), ``/apply-template`` (the chat template on the bench's messages)
and ``/tokenize`` (its tokens), one request each before the sweep. Another engine, or a server that does not
answer them: the slots are taken as the largest level and no prompts as sharing anything.
"""

from __future__ import annotations

import json
import urllib.request
from dataclasses import dataclass

from ..analysis.knee import server_steps as ss
from ..analysis.measured import batch_knee as bk
from ..analysis.measured import step_costs as sc
from ..analysis.measured.cachefile import CacheError
from ..attach.scraper import USER_AGENT, Deadline, FetchError, describe_error, http_get, open_url
from ..contract.errors import SpectuiError
from ..contract.events import KIND_LLAMA_SERVER
from ..engine.files.chat import chat_messages

MAX_TOKENS = 65536  # a prompt's tokens kept for the prefix (a tokenizer's answer is bounded: http_get's limit)


@dataclass(frozen=True)
class ServerShape:
    slots: int = 0  # 0: not said
    prompt_tokens: tuple[tuple[int, ...], ...] | None = None  # by prompt, as the server tokenizes them
    note: str = ""

    def prefix(self) -> tuple[tuple[int, ...], ...] | None:
        """prefix[i][j]: tokens prompts i and j share at their start."""
        toks = self.prompt_tokens
        if toks is None:
            return None
        out = []
        for a in toks:
            row = []
            for b in toks:
                n = 0
                for x, y in zip(a, b):
                    if x != y:
                        break
                    n += 1
                row.append(n)
            out.append(tuple(row))
        return tuple(out)


def _post(root: str, path: str, body: dict, timeout: float) -> dict:
    req = urllib.request.Request(root + path, data=json.dumps(body).encode(),  # noqa: S310 - http(s) checked
                                 headers={"Content-Type": "application/json", "User-Agent": USER_AGENT})
    with Deadline(timeout) as deadline:
        try:
            with open_url(req, deadline) as resp:
                raw = resp.read(16 * 1024 * 1024 + 1)
        except (OSError, ValueError) as exc:
            raise FetchError(deadline.message() if deadline.fired else describe_error(exc, timeout)) from None
    if len(raw) > 16 * 1024 * 1024:
        raise FetchError("answer larger than 16 MiB")
    doc = json.loads(raw.decode("utf-8", "replace"))
    if not isinstance(doc, dict):
        raise ValueError("not an object")
    return doc


def server_shape(dep, ps, system: str | None, timeout: float) -> ServerShape:
    """The speculating deployment's slots and prompts' tokens (llama-server); never raises for a server that
    does not say (the prediction then assumes what the module's docstring says)."""
    if dep.kind != KIND_LLAMA_SERVER:
        return ServerShape(note="not llama-server: slots from the levels, no shared prompt prefixes")
    t = min(timeout, 10.0)
    slots = 0
    try:
        text, _, _ = http_get(dep.root + "/props", t)
        slots = int(json.loads(text).get("total_slots") or 0)
    except (FetchError, ValueError, TypeError, AttributeError):
        pass
    toks: list[tuple[int, ...]] = []
    try:
        for p in ps.prompts:
            tpl = _post(dep.root, "/apply-template", {"messages": chat_messages(p.turns[:1], [], system)}, t)
            got = _post(dep.root, "/tokenize", {"content": str(tpl.get("prompt", "")), "add_special": True}, t)
            ids = got.get("tokens")
            if not isinstance(ids, list):
                raise ValueError("no tokens")
            toks.append(tuple(int(x) if isinstance(x, int) else -1 for x in ids[:MAX_TOKENS]))
    except (FetchError, ValueError, TypeError, AttributeError):
        return ServerShape(slots, None, "the server did not tokenize the prompts: no shared prompt prefixes")
    return ServerShape(slots, tuple(toks))


def load_steps(path: str) -> sc.StepCosts | None:
    """The step costs in a ``spectui probe --batched --json`` file (None: a probe made before they were)."""
    try:
        with open(path, "rb") as fh:
            doc = json.loads(fh.read(16 * 1024 * 1024).decode("utf-8").strip().splitlines()[-1])
        steps = (doc.get("batched") or {}).get("steps")
        return sc.StepCosts.from_dict(steps) if steps else None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, IndexError, AttributeError, CacheError):
        raise SpectuiError(f"--knee-probe: {path} has unreadable step costs") from None


def workload(res, lv, shape: ServerShape, n_prompts: int) -> ss.Workload:
    """A measured level as the replay's workload: its requests in order (prompt i mod the prompts, the prompt
    tokens the server counted or tokenized, the output tokens it sent), c in flight, the server's slots."""
    toks = shape.prompt_tokens
    reqs = []
    for i, out in enumerate(lv.output_each):
        p = i % max(1, n_prompts)
        n_in = lv.prompt_each[i] if i < len(lv.prompt_each) and lv.prompt_each[i] > 0 else (
            len(toks[p]) if toks is not None and p < len(toks) else 64)
        reqs.append((p, n_in, max(1, out)))
    slots = shape.slots if shape.slots >= lv.concurrency else max(max(res.levels), lv.concurrency)
    return ss.Workload(tuple(reqs), lv.concurrency, slots, shape.prefix())


def predict_on_steps(curve: bk.BatchCurve, steps: sc.StepCosts, res, k: int, drafter: str | None,
                     n_prompts: int) -> dict[int, ss.LevelPrediction]:
    """Each level that drafted, predicted on the server's own steps with its measured acceptance (the module
    docstring of ``analysis.server_steps``); both deployments replayed on the same requests."""
    drafter = drafter or (bk.DRAFTER_MODEL if curve.has_draft else bk.DRAFTER_LOOKUP)
    costs = ss.ServerCosts(curve, steps)
    shape = res.shape if isinstance(res.shape, ServerShape) else ServerShape()
    out = {}
    for lv in res.spec:
        if not lv.output_each or lv.drafted <= 0:
            continue
        spec = ss.speculation_of_level(k, lv.drafted, lv.accepted, lv.drafts, lv.output_tokens, lv.n_requests,
                                       drafter == bk.DRAFTER_MODEL and costs.has_draft)
        if spec is None:
            continue
        out[lv.concurrency] = ss.predict_level(costs, workload(res, lv, shape, n_prompts), spec)
    return out


def prediction_lines(preds: dict[int, ss.LevelPrediction], res) -> list[str]:
    """Predicted against measured, per level: tokens/s of both deployments, the speedup, TTFT p50."""
    if not preds:
        return []
    base = {lv.concurrency: lv for lv in res.base}
    spec = {lv.concurrency: lv for lv in res.spec}
    lines = ["on the server's own steps (predicted / measured):",
             " conc  baseline tok/s    spec tok/s        speedup          spec TTFT p50 ms  passes a step"]
    for c, p in sorted(preds.items()):
        b, s = base.get(c), spec.get(c)
        mb = f"{b.tokens_per_second:.1f}" if b else "-"
        ms = f"{s.tokens_per_second:.1f}" if s else "-"
        msp = f"{s.tokens_per_second / b.tokens_per_second:.2f}x" if b and s and b.tokens_per_second > 0 else "-"
        mt = f"{s.ttft_ms_p50:.0f}" if s and s.ttft_ms_p50 is not None else "-"
        lines.append(f"{c:>5}  {p.base_tps:>6.1f} / {mb:<7} {p.spec_tps:>6.1f} / {ms:<7} {p.speedup:>5.2f}x / "
                     f"{msp:<7} {p.spec_ttft_ms:>7.0f} / {mt:<7} {p.micro_batches_per_step:>5.2f}")
    if getattr(res.shape, "note", ""):
        lines.append(f"({res.shape.note})")
    return lines
