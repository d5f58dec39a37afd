"""The mean acceptance length, defined once for every face (a run's summary, the per-drafter and tree
statistics, bench's aggregate, the batch knee's acceptance): vLLM's ``mean acceptance length`` and Spec-Bench's
tau, the tokens a drafting pass emits on average, its accepted drafts plus the target's own token. No UI
imports."""

from __future__ import annotations


def mean_acceptance_length(accepted: float, passes: float) -> float:
    """1 + accepted drafts per drafting pass; 0 before any pass drafted."""
    return 1.0 + accepted / passes if passes > 0 else 0.0
