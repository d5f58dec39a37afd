"""What a sweep runs (draft lengths: ``spectui.contract.draft_length.parse_ks``; temperatures:
``spectui.contract.params.parse_temps``): the order of the runs.

Order of runs: for each repeat, for each temperature, the baseline (the target alone: drafter "none",
same prompt, same seed) then each k, so that slow drifts of a shared machine hit all cells alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..contract.draft_length import parse_ks  # noqa: F401 - the one k parser, for sweep and bench
from ..contract.options import ModelOptions
from ..contract.params import parse_temps  # noqa: F401 - the one temperature parser, for sweep and bench

SWEEP_DRAFT_MAX = "2,5,10"  # the sweep's -k when none is given: a short, a middle and a long draft
BASELINE = "none"  # the baseline's drafter: the target alone
TARGET_ONLY = "target only"  # how the baseline is labelled in tables, charts, reports and progress


@dataclass(frozen=True)
class SweepOptions:
    """``spectui sweep``'s options as the command line gave them (``contract.options.options_from``), handed whole
    from the command to the runs: the models, the prompt, the grid (``draft_max`` and ``temp``, comma-separated;
    the target alone runs at each temperature too), the repeats, the export (``as_json`` / ``as_csv``, on stdout or
    atomically to ``output``) and ``record_dir``, where each run's trace is kept."""

    models: ModelOptions = ModelOptions()
    prompt: str | None = None
    prompt_file: str | None = None
    n_predict: int = 256
    draft_max: str = SWEEP_DRAFT_MAX
    temp: str = "0,0.8"
    seed: int = 0
    drafter: str | None = None
    repeat: int = 1
    as_json: bool = False
    as_csv: bool = False
    record_dir: str | None = None
    output: str | None = None
    force: bool = False


def run_label(drafter: str, k: int) -> str:
    """"target only" for the baseline, else "k=N"."""
    return TARGET_ONLY if drafter == BASELINE else f"k={k}"


@dataclass(frozen=True)
class Plan:
    """One run to do."""

    temperature: float
    k: int
    drafter: str
    repeat: int

    @property
    def label(self) -> str:
        return run_label(self.drafter, self.k)


def make_plan(ks: Sequence[int], temps: Sequence[float], repeats: int, drafter: str) -> list[Plan]:
    """Every (temperature, k) run plus the baseline, ``repeats`` times, in the order described above."""
    plan = []
    for rep in range(repeats):
        for t in temps:
            plan.append(Plan(t, 0, BASELINE, rep))
            for k in ks:
                plan.append(Plan(t, k, drafter, rep))
    return plan
