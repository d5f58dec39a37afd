"""Running a sweep's plan on one loaded engine (each run's trace optionally recorded), and the verify
times no run measured, timed on demand afterwards for the cost model."""

from __future__ import annotations

from typing import Callable, Sequence

from ..analysis.stats import compute
from ..contract.control import RunControl
from ..contract.draft_length import K_MAX
from ..contract.errors import SpectuiError
from ..contract.events import RunEnded, Settings
from ..recording.trace import TraceWriter
from .aggregate import SweepRun
from .plan import BASELINE, Plan


class SweepRunFailed(SpectuiError):
    """A run of the sweep failed (the engine's RunEnded.error): the run failed, exit status 1, not bad input."""

    exit_code = 1


class SweepInterrupted(KeyboardInterrupt):
    """A run was stopped (Ctrl+C, SIGTERM, SIGHUP): ``runs`` are the ones completed before it."""

    def __init__(self, runs: list[SweepRun]) -> None:
        super().__init__()
        self.runs = runs


def trace_name(i: int, p: Plan) -> str:
    """The --record-dir file name of run ``i`` (0-based) of the plan."""
    tag = "base" if p.drafter == BASELINE else f"k{p.k}"
    return f"{i + 1:03d}-{tag}-t{p.temperature:g}-r{p.repeat + 1}.jsonl"


def run_sweep(
    engine,
    prompt: str,
    plan: Sequence[Plan],
    n_predict: int,
    seed: int,
    *,
    on_event: Callable[[Plan, object], None] | None = None,
    on_control: Callable[[RunControl], None] | None = None,
    open_trace: Callable[[int, Plan, dict], TraceWriter] | None = None,
) -> list[SweepRun]:
    """Run the plan on one loaded engine; each run's statistics come from its own events. ``on_control``
    sees each run's RunControl (a signal handler stops the current run through it); a stopped run raises
    SweepInterrupted with the runs completed before it. ``open_trace(i, run, header_extra)``: run ``i``'s
    TraceWriter (--record-dir; its file named by ``trace_name`` and checked by spectui.contract.outputs)."""
    runs: list[SweepRun] = []
    for i, p in enumerate(plan):
        settings = Settings(draft_max=p.k, temperature=p.temperature, drafter=p.drafter, seed=seed)
        trace_path = ""
        writer = None
        if open_trace is not None:
            writer = open_trace(i, p, {"sweep": {"run": i + 1, "of": len(plan)}})
            trace_path = str(writer.path)
        events = []
        control = RunControl(settings)
        if on_control is not None:
            on_control(control)
        try:
            for ev in engine.run(prompt, control, n_predict, overlap=True):
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
            raise SweepRunFailed(f"sweep run {p.label}, temp {p.temperature:g} failed: {end.error}")
        if end is not None and end.reason == "stopped":
            raise SweepInterrupted(runs)
        runs.append(SweepRun(p.temperature, p.k, p.drafter, p.repeat, compute(events), trace_path))
    return runs


def measure_missing_verify(engine, runs: Sequence[SweepRun], k_max: int = K_MAX) -> dict[int, float]:
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

