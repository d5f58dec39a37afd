"""Greedy losslessness, one rule for the tests and the bench: at temperature 0 speculation must emit the
target's own greedy tokens, up to the first near tie of the target-only run.

A near tie is a step whose top-two logit margin (the target's, at the row that chose the token) is below
``LOSSLESS_MARGIN``: there a batched verify may legitimately round the argmax differently from a one-token
decode, and the texts may part from that step on. ``check`` compares two token sequences up to the first
near tie of the reference; ``margins_of`` reads the reference's margins from its events (each pass's
``PassEvent.inspect``, recorded with --inspect-top >= 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from ..contract.events import PassEvent

LOSSLESS_MARGIN = 1e-3  # top-two logit gap below which kernel numerics may legitimately flip the argmax


def first_near_tie(margins: Sequence[float], threshold: float = LOSSLESS_MARGIN) -> int:
    """Index of the first step whose margin is below ``threshold``; ``len(margins)`` when there is none."""
    return next((i for i, m in enumerate(margins) if m < threshold), len(margins))


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
    equal: bool  # the sequences agree on every step before the cut
    checked: int  # steps compared (the cut: first near tie of the reference, or the shorter length)
    first_difference: int  # first differing step (-1 when none before the cut)
    near_tie: int  # index of the reference's first near tie (-1 when there is none)


def check(spec: Sequence[int], ref: Sequence[int], ref_margins: Sequence[float],
          threshold: float = LOSSLESS_MARGIN) -> GreedyCheck:
    """Compare ``spec`` with the greedy reference ``ref`` up to the reference's first near tie."""
    tie = first_near_tie(ref_margins, threshold)
    cut = min(tie, len(ref), len(spec))
    diff = next((i for i in range(cut) if spec[i] != ref[i]), -1)
    return GreedyCheck(diff < 0, cut, diff, tie if tie < len(ref_margins) else -1)
