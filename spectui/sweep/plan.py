"""What a sweep runs: the parsed temperatures (draft lengths: ``spectui.contract.draft_length.parse_ks``), and
the order of the runs.

Order of runs: for each repeat, for each temperature, the baseline (the target alone: drafter "none",
same prompt, same seed) then each k, so that slow drifts of a shared machine hit all cells alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from ..contract.control import TEMPERATURE_LIMIT
from ..contract.draft_length import parse_ks  # noqa: F401 - the one k parser, for sweep and bench
from ..contract.errors import SpectuiError

SWEEP_DRAFT_MAX = "2,5,10"  # the sweep's -k when none is given: a short, a middle and a long draft
BASELINE = "none"  # the baseline's drafter: the target alone
TARGET_ONLY = "target only"  # how the baseline is labelled in tables, charts, reports and progress


def run_label(drafter: str, k: int) -> str:
    """"target only" for the baseline, else "k=N"."""
    return TARGET_ONLY if drafter == BASELINE else f"k={k}"


def parse_temps(value: str) -> list[float]:
    """"0,0.8" -> [0.0, 0.8] (duplicates dropped, order kept)."""
    out: list[float] = []
    for part in str(value).split(","):
        part = part.strip()
        if not part:
            continue
        try:
            t = float(part)
        except ValueError:
            raise SpectuiError(
                f"--temp takes comma-separated numbers 0..{TEMPERATURE_LIMIT:g} (e.g. 0,0.8), not {value!r}"
            ) from None
        if not (0.0 <= t <= TEMPERATURE_LIMIT) or math.isnan(t):
            raise SpectuiError(f"--temp values must be between 0 and {TEMPERATURE_LIMIT:g}, not {part}")
        if t not in out:
            out.append(t)
    if not out:
        raise SpectuiError("--temp needs at least one temperature (e.g. 0,0.8)")
    return out


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
