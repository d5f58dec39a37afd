"""The pass animation's clock: phases, their durations, and when each phase starts. No Textual here.

A pass with drafts arrives PENDING (its drafts shown as guesses), turns VERDICT after ``PENDING_S``
(accepted drafts underlined, rejected ones struck through) and SETTLED after ``VERDICT_S`` (rejected
drafts removed). A pass without drafts is SETTLED at once. ``phase_at(age)`` is the pure rule;
``PassClock`` keeps the newest pass's arrival for the live TUI (and says when the next phase change
is due, so the UI wakes only then); ``phase_steps`` plans the same phases for ``spectui cast`` when
the gap to the next pass is known.
"""

from __future__ import annotations

PENDING, VERDICT, SETTLED = "pending", "verdict", "settled"
PENDING_S = 0.12  # drafts shown as pending this long after their pass arrives
VERDICT_S = 0.9  # rejected drafts stay struck through until this age, then disappear
FAST_GAP_S = 0.5  # passes arriving closer than this skip the pending phase (it would only flicker); so does a
# pass that arrives with others unseen before it (the passes come faster than the frames)


def phase_at(age: float, has_drafts: bool = True) -> str:
    """The phase of a pass ``age`` seconds after it arrived."""
    if not has_drafts:
        return SETTLED
    if age < PENDING_S:
        return PENDING
    if age < VERDICT_S:
        return VERDICT
    return SETTLED


def next_change(age: float, has_drafts: bool = True) -> float | None:
    """Seconds from ``age`` to the pass's next phase change; None once it is settled."""
    if not has_drafts or age >= VERDICT_S:
        return None
    return (PENDING_S if age < PENDING_S else VERDICT_S) - age


def phase_steps(has_drafts: bool, gap: float | None) -> list[tuple[float, str]]:
    """(offset from arrival, phase) for one pass, squeezed into ``gap`` seconds before the next pass
    (None: the last pass, shown at full length). Pending takes at most a third of the gap, the verdict
    ends by two thirds of it, so every phase is seen even when passes follow each other quickly."""
    if not has_drafts:
        return [(0.0, SETTLED)]
    gap = VERDICT_S * 1.5 if gap is None else max(0.0, gap)
    return [(0.0, PENDING), (min(PENDING_S, gap / 3), VERDICT), (min(VERDICT_S, 2 * gap / 3), SETTLED)]


class PassClock:
    """The newest pass's arrival time (on the caller's clock) and so its phase; ``freeze`` pins one."""

    def __init__(self, freeze: str | None = None) -> None:
        self.freeze = freeze
        self.reset()

    def reset(self) -> None:
        self.key: object = None
        self.t0 = 0.0
        self.has_drafts = False
        self._prev_arrival = float("-inf")

    def arrive(self, key: object, has_drafts: bool, now: float, skipped: bool = False) -> bool:
        """Note the pass ``key`` (any identity) seen at ``now``; True if it is a new one. ``skipped``: passes
        came since the last one seen that no frame showed (it is then fast, whatever the gap)."""
        if key is self.key:
            return False
        fast = skipped or now - self._prev_arrival < FAST_GAP_S
        self._prev_arrival = now
        self.key = key
        self.has_drafts = has_drafts
        self.t0 = now - (PENDING_S + 1e-6 if fast else 0.0)  # (+1e-6: past pending despite rounding)
        return True

    def phase(self, now: float) -> str:
        if self.freeze is not None:
            return self.freeze
        if self.key is None:
            return SETTLED
        return phase_at(now - self.t0, self.has_drafts)

    def next_change(self, now: float) -> float | None:
        """Seconds until the phase changes next (None: nothing is animating, no frame is needed)."""
        if self.freeze is not None or self.key is None:
            return None
        return next_change(now - self.t0, self.has_drafts)
