"""The acceptance rules as pure numpy functions (no llama.cpp, no state).

- Greedy (temperature 0): accept drafts while each equals the argmax of the target's logit row at its
  position; the target's argmax at the first mismatch replaces it (correction), or, when all k drafts
  were accepted, the argmax of the last row is a bonus token.
- Speculative sampling (temperature > 0, Leviathan et al. 2023 / Chen et al. 2023): accept draft x with
  probability min(1, p(x) / q(x)); at the first rejection sample from norm(max(0, p - q)); when all are
  accepted sample the bonus token from p. The emitted tokens are then distributed exactly as sampling from
  p one token at a time. A drafter without a distribution (n-gram lookup) is a point mass: q(x) = 1.

``p_rows`` / ``q_rows`` may be any indexable sequences (e.g. lazily computed rows): rows past the first
rejection are never touched, so a caller can avoid computing them.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .rowmath import exp_sum

_local = threading.local()


@dataclass(frozen=True)
class Verdict:
    n_accepted: int  # drafts accepted (a prefix of the drafts)
    token: int  # the target's own token: correction (n_accepted < k) or bonus (n_accepted == k)
    # speculative sampling only, per judged draft (0..n_accepted, the last one the rejection if any):
    accept_p: tuple[float, ...] = ()  # min(1, p(x) / q(x))
    u: tuple[float, ...] = ()  # the uniform drawn for the test (-1.0: none drawn, accept_p was 1)
    residual: np.ndarray | None = None  # norm(max(0, p - q)) the correction was drawn from (a rejection)


def softmax(logits: np.ndarray, temperature: float = 1.0, out: np.ndarray | None = None) -> np.ndarray:
    """Softmax of ``logits / temperature`` (temperature <= 0 is treated as 1), stable, as a new array (or in
    ``out``: a float32 row of the same length, for float32 input; the same numbers either way).

    float64 input stays float64 (exact tests); anything else is computed in float32 with the sum in double
    precision: exp(x - max) and its sum in one pass (rowmath: llama.cpp's own SIMD kernel where it is
    available), a fraction of a millisecond on a 150k-token row.
    """
    x = np.asarray(logits)
    if x.dtype == np.float64:
        x = x.copy()
        if temperature > 0 and temperature != 1.0:
            x *= 1.0 / temperature
        x -= x.max()
        np.exp(x, out=x)
        x /= x.sum()
        return x
    if out is not None and (out.dtype != np.float32 or out.shape != x.shape or x.dtype != np.float32):
        out = None
    if temperature > 0 and temperature != 1.0:
        x = np.multiply(x, np.float32(1.0 / temperature), dtype=np.float32, out=out)
        out = x  # exp(x - max) is written over the scaled copy
    else:
        x = np.ascontiguousarray(x, dtype=np.float32)
        if out is None:
            out = np.empty_like(x)
    y, s = exp_sum(x, float(x.max()), out)
    y /= np.float32(s)
    return y


def logsumexp(logits: np.ndarray, temperature: float = 1.0) -> float:
    """log(sum(exp(logits / temperature))), stable; float32 arithmetic on the row (it is 150k floats), the
    sum in double precision, exp and sum in one pass (rowmath)."""
    x = logits if (temperature <= 0 or temperature == 1.0) else logits / np.float32(temperature)
    m = float(x.max())
    _, s = exp_sum(x, m, _scratch(x))
    return m + float(np.log(s))


def _scratch(x: np.ndarray) -> np.ndarray | None:
    """A reusable float32 buffer for exp(x - m) of a row of this length (one per thread; a fresh 600 KB
    allocation per row costs page faults)."""
    if x.dtype != np.float32 or x.ndim != 1:
        return None
    buf = getattr(_local, "buf", None)
    if buf is None or len(buf) != len(x):
        buf = _local.buf = np.empty(len(x), dtype=np.float32)
    return buf


def prob_of(logits: np.ndarray, token: int, temperature: float = 1.0, lse: float | None = None) -> float:
    """p(token) under softmax(logits / temperature) without building the full distribution."""
    t = temperature if temperature > 0 else 1.0
    if lse is None:
        lse = logsumexp(logits, t)
    return float(np.exp(float(logits[token]) / t - lse))


_BLOCK = 1024


def sample(p: np.ndarray, rng: np.random.Generator) -> int:
    """Draw one index from the probability vector ``p`` (inverse CDF; p need not be exactly normalised).

    Two-level inverse CDF: block sums pick a block of 1024 entries, a cumulative sum inside it picks the
    entry (the same law as one big cumsum, about 10x cheaper on a 150k-token row).
    """
    p = np.asarray(p)
    n = len(p)
    starts = np.arange(0, n, _BLOCK)
    full = n - n % _BLOCK
    if p.dtype == np.float32 and p.ndim == 1 and full:
        # block sums as one reshaped reduction (float32 within a block, float64 across blocks): the same
        # law, a third of reduceat's time on a 150k-token row
        bs = p[:full].reshape(-1, _BLOCK).sum(axis=1).astype(np.float64)
        if full < n:
            bs = np.append(bs, float(p[full:].sum(dtype=np.float64)))
        cb = np.cumsum(bs)
    else:
        cb = np.cumsum(np.add.reduceat(p, starts, dtype=np.float64))
    u = rng.random() * cb[-1]
    b = min(int(np.searchsorted(cb, u, side="right")), len(cb) - 1)
    if b:
        u -= cb[b - 1]
    seg = p[starts[b] : starts[b] + _BLOCK]
    cs = np.cumsum(seg, dtype=np.float64)
    i = min(int(np.searchsorted(cs, u, side="right")), len(seg) - 1)
    idx = int(starts[b]) + i
    while p[idx] <= 0 and idx > 0:  # rounding at the very top can land on a zero-probability tail
        idx -= 1
    return idx


def accept_probability(p: np.ndarray, q: np.ndarray | None, x: int) -> float:
    """min(1, p(x) / q(x)); ``q`` None means a point mass on x (q(x) = 1)."""
    qx = 1.0 if q is None else float(q[x])
    px = float(p[x])
    if qx <= 0.0:  # the draft could not have proposed x; accept only if the target agrees it is possible
        return 1.0 if px > 0.0 else 0.0
    return min(1.0, px / qx)


def residual(p: np.ndarray, q: np.ndarray | None, x: int, out: np.ndarray | None = None) -> np.ndarray:
    """norm(max(0, p - q)), the distribution to sample from after rejecting draft x.

    For a point-mass q on x this is p with x removed. When p - q has no positive mass (p == q up to
    rounding; a rejection then has probability ~0) it falls back to p. Keeps p's dtype. ``out``: a row of
    p's dtype and shape to write it into (the same numbers).
    """
    p = np.asarray(p)
    if out is not None and (out.dtype != p.dtype or out.shape != p.shape):
        out = None
    if q is None:
        if out is None:
            r = p.copy()
        else:
            r = out
            np.copyto(r, p)
        r[x] = 0
    else:
        r = np.subtract(p, np.asarray(q, dtype=p.dtype), out=out)
        np.maximum(r, 0, out=r)
    s = float(r.sum(dtype=np.float64))
    if not s > 0.0:
        return p / p.dtype.type(p.sum(dtype=np.float64))
    r /= r.dtype.type(s)
    return r


def greedy_verify(logit_rows: Sequence[np.ndarray], draft_ids: Sequence[int]) -> Verdict:
    """Greedy rule over target logit rows 0..k (row i predicts the token after draft i)."""
    k = len(draft_ids)
    for i in range(k):
        best = int(np.argmax(logit_rows[i]))
        if best != draft_ids[i]:
            return Verdict(i, best)
    return Verdict(k, int(np.argmax(logit_rows[k])))


def speculative_verify(
    p_rows: Sequence[np.ndarray],
    q_rows: Sequence[np.ndarray | None] | None,
    draft_ids: Sequence[int],
    rng: np.random.Generator,
    out: np.ndarray | None = None,
) -> Verdict:
    """Speculative sampling over target probability rows 0..k and draft probability rows 0..k-1.

    ``q_rows`` None (or a None row) means the drafter is a point mass on its token. ``out``: a row the
    residual may be written into (rowmath.RowPool).
    """
    k = len(draft_ids)
    acc: list[float] = []
    us: list[float] = []
    for i in range(k):
        x = int(draft_ids[i])
        p = p_rows[i]
        q = None if q_rows is None else q_rows[i]
        a = accept_probability(p, q, x)
        acc.append(a)
        if a >= 1.0:
            us.append(-1.0)
            continue
        u = rng.random()
        us.append(u)
        if u < a:
            continue
        r = residual(p, q, x, out)
        return Verdict(i, sample(r, rng), tuple(acc), tuple(us), r)
    return Verdict(k, sample(p_rows[k], rng), tuple(acc), tuple(us))
