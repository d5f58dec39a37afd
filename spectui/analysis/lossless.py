"""Greedy losslessness, one rule for the tests and the bench: at temperature 0 speculation must emit the
target's own greedy tokens; where the two part, the target-only run's step there must be a near tie.

A greedy speculative run verifies its drafts in batches of k + 1 tokens, the target-only run decodes one
token at a time, and llama.cpp's kernels round the two differently. A step is a near tie when its top-two
logit margin (the target-only run's, at the row that chose the token) is at most the kernels' noise: the
largest change a verify batch made to a logit's gap to the top token, measured for this target, machine and
backend (``spectui.analysis.measured.noise``, ``NoiseResult.threshold(k)``). There the batch may legitimately choose
the other token, and the texts part from that step on.

``check`` finds where two token sequences part (the first differing step) and judges it: equal when they do
not part, or part at a near tie; unequal (a real inequality: speculation changed the output) when the
margin there is above the noise. ``margins_of`` reads the reference's margins from its events (each pass's
``PassEvent.inspect``, recorded with --inspect-top >= 1). ``UNMEASURED_MARGIN`` is the threshold used only
where no noise was measured (rows built by hand, a caller that passes none).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..contract.events import PassEvent

UNMEASURED_MARGIN = 1e-3  # the near-tie threshold where the kernels' noise was not measured


def first_near_tie(margins: Sequence[float], threshold: float = UNMEASURED_MARGIN) -> int:
    """Index of the first step whose margin is at most ``threshold`` (and below it when ``threshold`` is 0:
    a measured noise of 0 makes no step a near tie); ``len(margins)`` when there is none."""
    return next((i for i, m in enumerate(margins) if is_near_tie(m, threshold)), len(margins))


def is_near_tie(margin: float | None, threshold: float) -> bool:
    """A margin within the noise: at most ``threshold`` (strictly below it when the noise is 0)."""
    if margin is None or math.isnan(margin):
        return False
    return margin < threshold if threshold <= 0 else margin <= threshold


def margins_of(events: Iterable) -> list[float] | None:
    """The margin that decided each emitted token, in order; None when a pass carries no inspector data for
    one of its tokens (a run without --inspect-top)."""
    out: list[float] = []
    for ev in events:
        if not isinstance(ev, PassEvent):
            continue
        by_pos = {ins.position: ins.margin for ins in ev.inspect}
        for i in range(len(ev.emitted)):
            m = by_pos.get(i)
            if m is None:
                return None
            out.append(m)
    return out


@dataclass(frozen=True)
class GreedyCheck:
    equal: bool  # no real inequality: the sequences do not part, or part at a near tie
    checked: int  # steps compared: through the parting step, else the shorter length
    first_difference: int  # the step where they part (-1: they do not)
    near_tie: int  # index of the reference's first near tie (-1 when there is none)
    margin: float | None = None  # the reference's top-two margin at the parting (None: no parting / unknown)
    threshold: float = UNMEASURED_MARGIN  # the near-tie threshold the parting was judged against

    @property
    def parted(self) -> bool:
        return self.first_difference >= 0

    @property
    def at_near_tie(self) -> bool:
        """They part, at a near tie (numerics)."""
        return self.parted and self.equal

    def describe(self) -> str:
        """Where the sequences part and at what margin against the noise ("" when they do not)."""
        if not self.parted:
            return ""
        m = "unknown" if self.margin is None else f"{self.margin:.3g}"
        if self.equal:
            return (f"parts at token {self.first_difference + 1}, margin {m} within the noise "
                    f"{self.threshold:.3g}: a near tie")
        return (f"parts at token {self.first_difference + 1}, margin {m} above the noise {self.threshold:.3g}: "
                "unequal")


def check(spec: Sequence[int], ref: Sequence[int], ref_margins: Sequence[float],
          threshold: float = UNMEASURED_MARGIN) -> GreedyCheck:
    """Compare a speculative run's tokens with the greedy reference's.

    Args:
        spec: the speculative run's token ids.
        ref: the target alone's greedy token ids; ref_margins: its top-two margin at each (``margins_of``).
        threshold: the near-tie threshold (the measured noise, ``NoiseResult.threshold``).

    Returns:
        The GreedyCheck: equal, or where they part and whether the reference's margin there is within the
        threshold (a near tie: the kernels' noise, not speculation).
    """
    tie = first_near_tie(ref_margins, threshold)
    n = min(len(ref), len(spec))
    diff = next((i for i in range(n) if spec[i] != ref[i]), -1)
    if diff < 0:
        return GreedyCheck(True, n, -1, tie if tie < len(ref_margins) else -1, None, threshold)
    margin = float(ref_margins[diff]) if diff < len(ref_margins) else None
    return GreedyCheck(is_near_tie(margin, threshold), diff + 1, diff, tie if tie < len(ref_margins) else -1,
                       margin, threshold)
