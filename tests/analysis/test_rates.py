"""The mean acceptance length, defined once (spectui.analysis.rates): 1 + accepted drafts per drafting pass,
0 before any pass drafted; the run's statistics, the per-drafter and tree statistics and bench's aggregate all
read it."""

from __future__ import annotations

from spectui.analysis.drafter_stats import DrafterStat
from spectui.analysis.rates import mean_acceptance_length
from spectui.analysis.tree_stats import TreeStats


def test_the_definition():
    assert mean_acceptance_length(0, 0) == 0.0
    assert mean_acceptance_length(6, 4) == 2.5
    assert mean_acceptance_length(0, 3) == 1.0  # every draft refused: the target's own token each pass


def test_the_statistics_use_it():
    assert DrafterStat("model", passes=4, drafted=8, accepted=6).mean_acceptance_length == 2.5
    assert TreeStats(passes=4, nodes=20, accepted=6).mean_acceptance_length == 2.5
