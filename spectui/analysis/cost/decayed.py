"""A decayed success count per draft position: what the cost policy (draft_policy.py) learns acceptance and drafting
continuation from, older observations weighing ``ACC_DECAY`` less at each new one."""

from __future__ import annotations

from dataclasses import dataclass

ACC_DECAY = 0.97  # weight kept by older acceptance observations of a position at each new one


@dataclass
class DecayedRate:
    """A decayed success count at one draft position: ``trials`` passes that reached the question (acceptance:
    drafted this position with all earlier accepted; continuation: asked for it with the one before drafted),
    ``hits`` of them said yes (accepted; drafted)."""

    trials: float = 0.0
    hits: float = 0.0
    last_pass: int = -1  # decode-pass number when last observed

    def observe(self, hit: bool, pass_no: int) -> None:
        """One more pass that reached this position: ``hit`` whether it said yes, ``pass_no`` the decode pass."""
        self.trials = self.trials * ACC_DECAY + 1.0
        self.hits = self.hits * ACC_DECAY + (1.0 if hit else 0.0)
        self.last_pass = pass_no
