"""The few best entries of a 150k-entry logit row, fast: what the inspector and --draft-p-min read.

``top_ids(row, n)``: ids of the n largest values, best first, ties broken by the lower id (the order
``np.argsort(-row, kind="stable")[:n]`` gives). A strided sample of the row bounds the n-th largest value
from below (its n largest are row values), so only the entries at or above that bound are sorted: about
0.1 ms on a Qwen row instead of 0.4 ms for a full argpartition.

``llama_confidence(row)``: the draft confidence llama.cpp's --draft-p-min tests, the top probability
after its draft sampler's top-k 10 (softmax over the 10 best logits at temperature 1).
"""

from __future__ import annotations

import numpy as np

_STRIDE = 16
LLAMA_DRAFT_TOP_K = 10  # common/speculative.cpp: the draft sampler is top-k 10, then the top candidate's p


def top_ids(row: np.ndarray, n: int) -> np.ndarray:
    r = np.asarray(row)
    n = min(int(n), len(r))
    if n <= 0:
        return np.empty(0, dtype=np.int64)
    sub = r[::_STRIDE]
    if len(sub) >= n:
        bound = np.partition(sub, len(sub) - n)[len(sub) - n]
        idx = np.flatnonzero(r >= bound)
    else:
        idx = np.arange(len(r))
    vals = r[idx]
    order = np.lexsort((idx, -vals.astype(np.float64)))[:n]
    return idx[order]


def top_two_margin(row: np.ndarray, ids: np.ndarray | None = None) -> float:
    """Largest minus second-largest value (logit units); ``ids`` = top_ids(row, >= 2) when known."""
    if ids is None or len(ids) < 2:
        ids = top_ids(row, 2)
    if len(ids) < 2:
        return float("inf")
    return float(row[ids[0]]) - float(row[ids[1]])


def llama_confidence(row: np.ndarray, ids: np.ndarray | None = None) -> float:
    """softmax(top-10 logits)[0] at temperature 1; ``ids`` = top_ids(row, >= 10) when known."""
    if ids is None or len(ids) < min(LLAMA_DRAFT_TOP_K, len(row)):
        ids = top_ids(row, LLAMA_DRAFT_TOP_K)
    v = np.asarray(row[ids[:LLAMA_DRAFT_TOP_K]], dtype=np.float64)
    return float(1.0 / np.exp(v - v[0]).sum())
