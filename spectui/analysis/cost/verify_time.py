"""The target's verify time by draft length k (a batch of k + 1 tokens), for the cost model
(spectui/analysis/cost/costmodel.py, whose docstring says how): the times measured in a run, gaps interpolated,
the rest extrapolated along a least-squares line; or the hardware's measured curve (``spectui probe``),
scaled to the run's level. Each time says where it came from (``SRC_*``).

Imports nothing of the UI.
"""

from __future__ import annotations

from typing import Mapping, Sequence

# where each verify time came from (Prediction.verify_source_by_k)
SRC_RUN = "run"  # measured in this run (or passed in as measured)
SRC_CURVE = "probe"  # the hardware's measured curve, scaled to the run's level
SRC_INTERPOLATED = "interpolated"
SRC_EXTRAPOLATED = "extrapolated"


def verify_curve(
    points: Mapping[int, float], k_max: int, curve: Mapping[int, float] | None = None
) -> tuple[list[float], list[bool], str]:
    """Verify ms for k = 0..k_max from measured {k: ms}, and the hardware's curve when given (see the
    module docstring). Returns (ms by k, measured-in-the-run by k, note)."""
    out, sources, note = verify_sources(points, k_max, curve)
    return out, [src == SRC_RUN for src in sources], note


def curve_scale(points: Mapping[int, float], base: Sequence[float]) -> tuple[float, list[int]]:
    """The run's level relative to a curve: sum of measured ms / sum of the curve's ms at the same k
    (k within the curve); 1.0 when nothing is shared. Also the shared k."""
    common = sorted(k for k, ms in points.items() if 0 <= k < len(base) and ms > 0 and base[k] > 0)
    if not common:
        return 1.0, []
    return sum(points[k] for k in common) / sum(base[k] for k in common), common


def verify_sources(
    points: Mapping[int, float], k_max: int, curve: Mapping[int, float] | None = None
) -> tuple[list[float], list[str], str]:
    """Verify ms for k = 0..k_max and where each came from (SRC_*), and the note."""
    pts = {int(k): float(ms) for k, ms in points.items() if ms > 0 and k >= 0}
    cur = {int(k): float(ms) for k, ms in (curve or {}).items() if ms > 0 and k >= 0}
    if cur:
        base, _, _ = _straight_curve(cur, k_max)
        scale, common = curve_scale(pts, base)
        top = max(cur)
        out, src = [], []
        for k in range(k_max + 1):
            if k in pts:
                out.append(pts[k])
                src.append(SRC_RUN)
            else:
                out.append(base[k] * scale)
                src.append(SRC_CURVE if k <= top else SRC_EXTRAPOLATED)
        note = f"verify time from the probe's curve (k=0..{top})"
        if common:
            note += (f", scaled x{scale:.2f} to this run's level (measured here at k="
                     f"{','.join(str(k) for k in common)})")
        if k_max > top:
            note += f"; k>{top} extrapolated along the curve's least-squares line"
        return out, src, note
    out, meas, note = _straight_curve(pts, k_max)
    src = []
    top = max(pts) if pts else -1
    for k in range(k_max + 1):
        if meas[k]:
            src.append(SRC_RUN)
        elif len(pts) > 1 and min(pts) < k < top:
            src.append(SRC_INTERPOLATED)
        else:
            src.append(SRC_EXTRAPOLATED)
    return out, src, note


def _straight_curve(points: Mapping[int, float], k_max: int) -> tuple[list[float], list[bool], str]:
    """Measured points, linear interpolation between them and a least-squares line beyond."""
    pts = sorted((int(k), float(ms)) for k, ms in points.items() if ms > 0 and k >= 0)
    if not pts:
        return [0.0] * (k_max + 1), [False] * (k_max + 1), "no verify time measured yet"
    ks = [k for k, _ in pts]
    ms = [m for _, m in pts]
    if len(pts) == 1:
        k0, m0 = pts[0]
        out = [m0] * (k_max + 1)
        flags = [k == k0 for k in range(k_max + 1)]
        return out, flags, f"only k={k0} measured: verify time assumed flat ({m0:.0f} ms) for every k"
    n = len(pts)
    mk = sum(ks) / n
    mm = sum(ms) / n
    sxx = sum((k - mk) ** 2 for k in ks)
    slope = sum((k - mk) * (m - mm) for k, m in pts) / sxx if sxx else 0.0
    slope = max(0.0, slope)
    known = dict(pts)
    out: list[float] = []
    flags: list[bool] = []
    for k in range(k_max + 1):
        if k in known:
            out.append(known[k])
            flags.append(True)
            continue
        flags.append(False)
        if k > ks[-1]:
            out.append(ms[-1] + slope * (k - ks[-1]))
        elif k < ks[0]:
            out.append(max(0.5 * ms[0], ms[0] - slope * (ks[0] - k)))
        else:
            hi = next(i for i, kk in enumerate(ks) if kk > k)
            k_lo, k_hi = ks[hi - 1], ks[hi]
            m_lo, m_hi = ms[hi - 1], ms[hi]
            out.append(m_lo + (m_hi - m_lo) * (k - k_lo) / (k_hi - k_lo))
    measured = ",".join(str(k) for k in ks)
    note = (
        f"verify time measured for k={measured}; gaps interpolated, k>{ks[-1]} extrapolated along a "
        f"least-squares line ({slope:.1f} ms per extra token)"
    )
    return out, flags, note
