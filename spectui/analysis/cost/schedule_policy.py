"""The ``schedule`` draft-length policy (``--draft-max schedule``; ``heuristic`` is another name for it).

Hugging Face transformers' "heuristic" schedule for assistant models
(``num_assistant_tokens_schedule="heuristic"``): +2 after a pass whose drafts were all accepted, -1
otherwise, kept within 1..32. It starts at ``settings.draft_max`` when that is >= 1, else at 5 (HF
starts at 20, far too long for a CPU where verifying is not free). It never chooses 0: this is the
comparison baseline, not an advisor. The engine's loop drives it as it drives the cost policy
(spectui/analysis/cost/draft_policy.py): ``observe(event)`` for every event, ``choose(settings)`` before each pass.

Imports nothing of the UI.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...contract.draft_length import DRAFT_MAX_LIMIT
from ...contract.events import Event, PassEvent, RunStarted, Settings
from .costmodel import Prediction


@dataclass
class SchedulePolicy:
    """Hugging Face's heuristic schedule: +2 after a fully accepted pass, -1 otherwise (1..32)."""

    name: str = "schedule"
    k: int | None = None
    last_choice: int = 0
    last_reason: str = ""
    last_prediction: Prediction | None = None

    def observe(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self.k = None
        elif isinstance(event, PassEvent) and not event.prefill and event.k > 0 and self.k is not None:
            full = len(event.drafts) == event.k and event.n_accepted == event.k
            self.k = min(DRAFT_MAX_LIMIT, self.k + 2) if full else max(1, self.k - 1)

    def members(self) -> tuple[tuple[str, int], ...]:
        """Every member of a chain drafts up to the schedule's k: ()."""
        return ()

    def children(self) -> int:
        """A tree drafter drafts its trees (0): the schedule chooses their node budget."""
        return 0

    def choose(self, settings: Settings) -> int:
        if self.k is None:
            self.k = settings.draft_max if settings.draft_max >= 1 else 5
            self.k = max(1, min(DRAFT_MAX_LIMIT, self.k))
        if settings.drafter == "none":
            self.last_choice, self.last_reason = 0, "no drafter"
            return 0
        self.last_choice, self.last_reason = self.k, "schedule (+2 after a fully accepted pass, -1 otherwise)"
        return self.k
