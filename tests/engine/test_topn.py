"""spectui.engine.topn: the inspector's top-N and --draft-p-min's confidence, against plain numpy."""

from __future__ import annotations

import numpy as np
import pytest

from spectui.contract.control import RunControl
from spectui.contract.events import Settings
from spectui.engine.topn import llama_confidence, top_ids, top_two_margin


def test_top_ids_match_a_stable_argsort_ties_included():
    rng = np.random.default_rng(1)
    for trial in range(300):
        n = int(rng.integers(1, 40))
        size = int(rng.integers(1, 3000))
        if trial % 2:  # many ties: the lower id comes first, as argsort's stable order
            row = rng.integers(-5, 5, size).astype(np.float32)
        else:
            row = rng.standard_normal(size).astype(np.float32)
        assert list(top_ids(row, n)) == list(np.argsort(-row, kind="stable")[:n]), (n, size)
    assert list(top_ids(np.zeros(3, np.float32), 0)) == []


def test_margin_and_llama_confidence():
    row = np.array([0.0, 3.0, 1.0, 2.5] + [-10.0] * 20, dtype=np.float32)
    assert top_two_margin(row) == pytest.approx(0.5)
    top10 = np.sort(row.astype(np.float64))[::-1][:10]
    assert llama_confidence(row) == pytest.approx(np.exp(top10[0]) / np.exp(top10).sum())


def test_run_control_clamps_p_min_and_draft_min():
    c = RunControl(Settings(draft_p_min=1.7, draft_min=99))
    assert c.settings.draft_p_min == 1.0 and c.settings.draft_min == 32
    assert c.update(draft_p_min=-0.2, draft_min=-3).draft_p_min == 0.0
    assert c.settings.draft_min == 0
