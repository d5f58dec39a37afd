"""Running a sweep's plan on one loaded engine (each run's trace optionally recorded), and the verify
times no run measured, timed on demand afterwards for the cost model."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from ..contract.control import RunControl
from ..contract.errors import SpectuiError
from ..contract.events import RunEnded, Settings
from ..analysis.stats import compute
from ..recording.trace import TraceWriter
from .aggregate import SweepRun
from .plan import BASELINE, Plan


def run_sweep(
    engine,
    prompt: str,
    plan: Sequence[Plan],
    n_predict: int,
    seed: int,
    record_dir: Path | None = None,
    on_event: Callable[[Plan, object], None] | None = None,
) -> list[SweepRun]:
    """Run the plan on one loaded engine; each run's statistics come from its own events."""
    runs: list[SweepRun] = []
    for i, p in enumerate(plan):
        settings = Settings(draft_max=p.k, temperature=p.temperature, drafter=p.drafter, seed=seed)
        trace_path = ""
        writer = None
        if record_dir is not None:
            tag = "base" if p.drafter == BASELINE else f"k{p.k}"
            name = f"{i + 1:03d}-{tag}-t{p.temperature:g}-r{p.repeat + 1}.jsonl"
            trace_path = str(record_dir / name)
            writer = TraceWriter(trace_path, {"sweep": {"run": i + 1, "of": len(plan)}})
        events = []
        try:
            for ev in engine.run(prompt, RunControl(settings), n_predict):
                events.append(ev)
                if writer is not None:
                    writer.write(ev)
                if on_event is not None:
                    on_event(p, ev)
        finally:
            if writer is not None:
                writer.close()
        end = next((e for e in reversed(events) if isinstance(e, RunEnded)), None)
        if end is not None and end.error:
            raise SpectuiError(f"sweep run {p.label}, temp {p.temperature:g} failed: {end.error}")
        if end is not None and end.reason == "stopped":
            raise KeyboardInterrupt
        runs.append(SweepRun(p.temperature, p.k, p.drafter, p.repeat, compute(events), trace_path))
    return runs


def measure_missing_verify(engine, runs: Sequence[SweepRun], k_max: int = 16) -> dict[int, float]:
    """Verify times for the batch sizes no run used, measured on demand (between runs, never during)."""
    seen = {k for r in runs for k, _, n in r.stats.verify_ms_by_k if n}
    out: dict[int, float] = {}
    for k in range(k_max + 1):
        if k in seen:
            continue
        try:
            out[k] = float(engine.measure_verify_ms(k, repeats=2))
        except SpectuiError:
            break
    return out

