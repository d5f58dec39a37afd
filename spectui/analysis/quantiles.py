"""Quantiles, two ways: the live run's ITL percentiles by nearest rank (``percentile``, llama.cpp's and vLLM's
p50 / p95 of a run), and the watched servers' and the concurrency levels' by linear interpolation between the
closest ranks (``interpolated_quantile``, numpy's default)."""

from __future__ import annotations

import math


def percentile(values, q: float) -> float:
    """Nearest-rank percentile (q in 0..100); 0.0 for an empty list. A long ``array('d')`` (a million ITLs) by
    numpy's selection in linear time, not a sort of a million Python floats: the same number."""
    n = len(values)
    k = min(max(1, math.ceil(q / 100.0 * n)), n) - 1
    if n < 2048 or getattr(values, "typecode", "") != "d":
        return sorted(values)[k] if n else 0.0
    import numpy as np  # noqa: PLC0415 - only for long runs: a short run's summary stays free of it
    return float(np.partition(np.frombuffer(values, dtype=np.float64), k)[k])  # a copy: the view is let go


def interpolated_quantile(values, q: float) -> float | None:
    """Linear interpolation between the closest ranks (numpy's default; q in 0..1); None for an empty list.
    The watched servers' and the concurrency levels' figures (``percentile`` above is the live run's)."""
    if not values:
        return None
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)
