"""A head's cost per draft step on this machine (``spectui probe`` with ``--drafter eagle3 | mtp``, ``--head FILE``
or a head as ``--draft``): one EAGLE-3 / MTP draft step, the head reading a verify batch's hidden states, a
separate draft model's step when one is loaded beside it, and one target decode, measured side by side in one
run (``spectui.engine.probes.head_probe``) and shown as ratios to the target decode.

Cached beside the probe's own curve, as the batched curve is: the probe's key (models, threads, placement,
machine) plus the head's kind, its file and k, in ``<digest>-head-<hash>.json`` (``cachefile.Measurement``:
size-limited, one line for a corrupt file, which is then measured again). No Textual imports.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from ...contract.text import visible
from ...engine.drafters import block_names
from .cachefile import CachedRecord, Measurement

HEAD_COST_VERSION = 1
KIND_WORDS = {"eagle3": "EAGLE-3 head", "mtp": "MTP head", "dflash": "DFlash block", "dspark": "DSpark block"}


@dataclass(frozen=True)
class HeadCost(CachedRecord):
    RECORD_VERSION, CACHE_NAME = HEAD_COST_VERSION, "head cost"
    kind: str  # eagle3 | mtp
    k: int
    head_step_ms: float  # one draft step of the head
    head_read_ms: float  # the head reading a verify batch of k + 1 tokens (after every target decode)
    target_ms: float  # one target decode of one token
    draft_step_ms: float | None  # one step of a separate draft model (None: none loaded)
    head_file: str = ""
    target: str = ""
    draft: str = ""
    context_tokens: int = 0
    repeats: int = 0
    version: int = HEAD_COST_VERSION

    @property
    def head_ratio(self) -> float:
        """The head's draft step over one target decode (the cost ratio c of a head)."""
        return self.head_step_ms / self.target_ms if self.target_ms > 0 else 0.0

    @property
    def draft_ratio(self) -> float | None:
        if self.draft_step_ms is None or self.target_ms <= 0:
            return None
        return self.draft_step_ms / self.target_ms

    def to_dict(self) -> dict:
        d = asdict(self)
        d["loadavg"] = list(self.loadavg)
        d["head_ratio"] = self.head_ratio
        d["draft_ratio"] = self.draft_ratio
        return d

    @classmethod
    def _from_checked(cls, d: dict) -> "HeadCost":
        return cls(
            kind=str(d["kind"]), k=int(d["k"]), head_step_ms=float(d["head_step_ms"]),
            head_read_ms=float(d["head_read_ms"]), target_ms=float(d["target_ms"]),
            draft_step_ms=None if d.get("draft_step_ms") is None else float(d["draft_step_ms"]),
            head_file=str(d.get("head_file", "")), target=str(d.get("target", "")), draft=str(d.get("draft", "")),
            context_tokens=int(d.get("context_tokens", 0)), repeats=int(d.get("repeats", 0)), **cls.shared(d),
        )


def head_cache_key(engine, k: int, repeats: int) -> tuple[dict, str]:
    """The probe's own key plus the head's kind, its file and the measurement's k and repeats."""
    from .machine import cache_key, file_identity  # noqa: PLC0415

    base, digest = cache_key(engine)
    key = {"probe": base, "head": {"version": HEAD_COST_VERSION, "kind": engine.head,
                                   "file": file_identity(engine.head_file), "k": int(k), "repeats": int(repeats)}}
    h = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]
    return key, f"{digest}-head-{h}"


def measure(engine, k: int, repeats: int) -> HeadCost:
    from ...contract.prompt import DEFAULT_PROMPT  # noqa: PLC0415
    from ...engine.probes.head_probe import measure_head  # noqa: PLC0415 - the engine only when measuring
    from .machine import load_average  # noqa: PLC0415

    load0 = load_average()
    pts = measure_head(engine, DEFAULT_PROMPT, k=k, repeats=repeats)
    load1 = load_average()
    return HeadCost(
        kind=pts.kind, k=pts.k, head_step_ms=pts.head_step_ms, head_read_ms=pts.head_read_ms,
        target_ms=pts.target_ms, draft_step_ms=pts.draft_step_ms, head_file=str(engine.head_file or ""),
        target=engine.target_info.name, draft=engine.draft_info.name if engine.draft_info is not None else "",
        threads=int(engine.threads), context_tokens=pts.context_tokens, repeats=pts.repeats,
        loadavg=tuple(max(a, b) for a, b in zip(load0, load1)),  # type: ignore[arg-type]
        measured_at=time.time(), wall_s=pts.wall_s,
    )


HEAD = Measurement(HeadCost, key=lambda e, p: head_cache_key(e, p["k"], p["repeats"]),
                   measure=lambda e, p: measure(e, **p))


def cached_or_measure(engine, *, k: int, repeats: int, refresh: bool = False, directory: Path | None = None,
                      warn: Callable[[str], None] | None = None) -> HeadCost:
    """The head's cost on this machine: from the cache (same models, threads, machine, head, k), or measured.

    Args:
        engine: the loaded engine with its head (``--head``, ``--drafter mtp``).
        k: the draft length a step is measured at; repeats: measured rounds (the median is kept).
        refresh: measure again even when a cached result exists; directory: the cache folder.
        warn: gets the one-line messages (a corrupt cache file).

    Returns:
        The HeadCost: each drafter's step beside one target decode.
    """
    return HEAD.get(engine, {"k": k, "repeats": repeats}, refresh=refresh, directory=directory, warn=warn)


def render(c: HeadCost) -> str:
    """The lines ``spectui probe`` prints under its curve: each drafter's step beside one target decode.

    Args:
        c: the head's measured cost.

    Returns:
        The lines, joined.
    """
    src = "cached" if c.cached else f"measured now in {c.wall_s:.2f} s"
    lines = [f"draft step cost, k={c.k} ({src}; median of {c.repeats} at {c.context_tokens} tokens of context; "
             f"load {c.loadavg[0]:.2f}):"]
    lines.append(f"  {'target decode, 1 token':44s} {c.target_ms:9.3f} ms  1.00x")
    word = KIND_WORDS.get(c.kind, c.kind)
    step = f"1 draft pass of {c.k}" if c.kind in block_names() else "1 draft step"  # a block: the whole k at once
    lines.append(f"  {word + ' (' + c.kind + '), ' + step:44s} {c.head_step_ms:9.3f} ms  {c.head_ratio:.2f}x"
                 f"  ({visible(os.path.basename(c.head_file))})")
    read_ratio = c.head_read_ms / c.target_ms if c.target_ms > 0 else 0.0
    lines.append(f"  {'  + reading a verify of ' + str(c.k + 1) + ' tokens, per pass':44s} {c.head_read_ms:9.3f} ms"
                 f"  {read_ratio:.2f}x")
    if c.kind == "eagle3":  # what the read costs, and why it is not spectui's doing
        lines.append("    (llama.cpp's eagle3 graph computes logits for every row written: docs/eagle3-mtp.md)")
    if c.draft_step_ms is not None:
        lines.append(f"  {'separate draft model, 1 draft step':44s} {c.draft_step_ms:9.3f} ms  {c.draft_ratio:.2f}x"
                     f"  ({visible(c.draft)})")
    else:
        lines.append("  no separate draft model loaded (--draft FILE beside --head or --drafter mtp compares one)")
    return "\n".join(lines)
