"""What the replay of llama-server's steps (server_steps.py) prices a step with, measured on this machine:
``StepCosts``, the prompt-chunk costs on the target and the draft and one row's sampling
(``spectui.engine.probes.step_probe``), cached beside the batched curve under the probe's own key; ``table`` for a
terminal.

No Textual imports; the engine only when measuring.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from ...contract.prompt import DEFAULT_PROMPT
from .cachefile import CachedRecord, Measurement
from .machine import cache_key, load_average

STEPS_VERSION = 1


@dataclass(frozen=True)
class StepCosts(CachedRecord):
    """Prompt-chunk costs on the target and the draft, and one row's sampling (``spectui.engine.probes.step_probe``)."""

    RECORD_VERSION, CACHE_NAME = STEPS_VERSION, "server steps"
    RECORD_WHAT = "malformed server-steps costs"
    chunks: tuple[int, ...]
    target_chunk_ms: tuple[float, ...]
    draft_chunk_ms: tuple[float, ...] = ()  # empty: no draft model
    sample_ms: float = 0.0
    context_tokens: int = 0
    repeats: int = 0
    version: int = STEPS_VERSION

    def __post_init__(self) -> None:
        if not self.chunks or list(self.chunks) != sorted(set(self.chunks)) or self.chunks[0] < 1:
            raise ValueError("chunks must be increasing positive sizes")
        if len(self.target_chunk_ms) != len(self.chunks) or (
                self.draft_chunk_ms and len(self.draft_chunk_ms) != len(self.chunks)):
            raise ValueError("one time per chunk size")
        if any(not (x > 0) for x in (*self.target_chunk_ms, *self.draft_chunk_ms)) or not self.sample_ms >= 0:
            raise ValueError("times must be positive")

    @property
    def quiet(self) -> bool:
        from .machine import quiet_machine  # noqa: PLC0415

        return quiet_machine(-1.0, self.loadavg, self.threads)  # the load average: no other cores sampled

    def to_dict(self) -> dict:
        d = asdict(self)
        for k in ("chunks", "target_chunk_ms", "draft_chunk_ms", "loadavg"):
            d[k] = list(d[k])
        return d

    @classmethod
    def _from_checked(cls, d: dict) -> "StepCosts":
        return cls(
            chunks=tuple(int(x) for x in d["chunks"]), target_chunk_ms=tuple(float(x) for x in d["target_chunk_ms"]),
            draft_chunk_ms=tuple(float(x) for x in d.get("draft_chunk_ms") or ()),
            sample_ms=float(d.get("sample_ms", 0.0)), context_tokens=int(d.get("context_tokens", 0)),
            repeats=int(d.get("repeats", 0)), **cls.shared(d),
        )


def measure_steps(engine, *, repeats: int, progress: Callable[[str], None] | None = None) -> StepCosts:
    from ...engine.probes.step_probe import measure_steps as measure  # noqa: PLC0415 - the engine only when measuring

    load0 = load_average()
    pts = measure(engine, repeats=repeats, prompt=DEFAULT_PROMPT, progress=progress)
    load1 = load_average()
    return StepCosts(
        chunks=pts.chunks, target_chunk_ms=tuple(pts.target_chunk_ms[c] for c in pts.chunks),
        draft_chunk_ms=tuple(pts.draft_chunk_ms[c] for c in pts.chunks) if pts.draft_chunk_ms else (),
        sample_ms=pts.sample_ms, threads=int(engine.threads), context_tokens=pts.context_tokens,
        repeats=pts.repeats, loadavg=tuple(max(a, b) for a, b in zip(load0, load1)),  # type: ignore[arg-type]
        measured_at=time.time(), wall_s=pts.wall_s,
    )


def steps_cache_key(engine, repeats: int) -> tuple[dict, str]:
    """The probe's own key (models, threads, placement, machine) plus the chunk sizes."""
    from ...engine.probes.step_probe import CHUNKS  # noqa: PLC0415

    base, digest = cache_key(engine)
    key = {"probe": base, "steps": {"version": STEPS_VERSION, "chunks": list(CHUNKS)}}
    h = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]
    return key, f"{digest}-steps-{h}"


STEPS = Measurement(StepCosts, key=lambda e, p: steps_cache_key(e, p["repeats"]),
                    measure=lambda e, p: measure_steps(e, **p), busy="the cached step costs were")


def cached_or_measure(engine, *, repeats: int, refresh: bool = False, directory: Path | None = None,
                      warn: Callable[[str], None] | None = None,
                      progress: Callable[[str], None] | None = None,
                      now_quiet: Callable[[int], bool] | None = None) -> StepCosts:
    """The step costs from the cache, or measured now (and stored); measured again once the machine is quiet
    when they were cached busy (as the batched curve)."""
    params = {"repeats": repeats, "progress": progress}
    return STEPS.get(engine, params, refresh=refresh, directory=directory, warn=warn, now_quiet=now_quiet)


def table(steps: StepCosts) -> list[str]:
    lines = ["prompt chunk cost (one llama_decode of one sequence of T prompt tokens, the last row's logits)",
             "     T  target ms" + ("  draft ms" if steps.draft_chunk_ms else "")]
    for i, c in enumerate(steps.chunks):
        lines.append(f"{c:>6}  {steps.target_chunk_ms[i]:>9.2f}" +
                     (f"  {steps.draft_chunk_ms[i]:>8.2f}" if steps.draft_chunk_ms else ""))
    lines.append(f"sampling one row (candidates, top-k {40}, greedy): {steps.sample_ms:.3f} ms")
    return lines
