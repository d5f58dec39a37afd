"""The heads' temperature-0 choice (llama_ext.top_of_row) equals a top-k 10 over the whole row, as the
reference's sampler takes it: the best token and its probability in the softmax over the 10 best logits."""

from __future__ import annotations

import numpy as np
import pytest

from spectui.engine.llama.llama_ext import TOP_K, top_of_row


def whole_row(row: np.ndarray, k: int = TOP_K) -> tuple[int, float]:
    """A top-k over the whole row, sorted as llama.cpp's candidates: (first maximal id, softmax of the best)."""
    order = np.argsort(-row.astype(np.float64), kind="stable")[:min(k, len(row))]
    z = row[order].astype(np.float64)
    return int(order[0]), float(1.0 / np.exp(z - z[0]).sum())


@pytest.mark.parametrize("n", [1, 9, 10, 11, 4096, 4097, 151936])
@pytest.mark.parametrize("scale", [0.01, 1.0, 30.0])
def test_top_of_row_equals_a_top_k_over_the_whole_row(n, scale):
    rng = np.random.default_rng(n)
    for _ in range(20):
        row = (rng.standard_normal(n) * scale).astype(np.float32)
        best, p = top_of_row(row)
        want_best, want_p = whole_row(row)
        assert best == want_best
        assert p == pytest.approx(want_p, rel=1e-12, abs=0.0)


def test_ties_masked_ids_and_a_peaked_row():
    n = 151936
    row = np.full(n, -np.inf, dtype=np.float32)  # a head with a smaller draft vocabulary (d2t): -inf elsewhere
    row[[5, 70000, 151000]] = [2.0, 3.0, 3.0]  # a tie at the top: the first maximal id, as a stable sort
    best, p = top_of_row(row)
    assert best == 70000
    assert p == pytest.approx(whole_row(row)[1], rel=1e-12)
    flat = np.zeros(n, dtype=np.float32)  # every logit equal: 10 of them share the softmax
    assert top_of_row(flat) == (0, pytest.approx(0.1, rel=1e-12))
    peaked = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    peaked[123456] = 40.0  # one sure token, the rest far below (the floor of the subsample still finds 10)
    best, p = top_of_row(peaked)
    assert (best, p) == (123456, pytest.approx(whole_row(peaked)[1], rel=1e-12))
