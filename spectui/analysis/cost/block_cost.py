"""What a block drafter costs (DFlash, DSpark: ``engine.drafters.block_names()``): one draft pass proposes the
whole block, so a pass's draft time does not grow with k. ``costmodel.predict`` prices such a run by its draft
time per drafting pass (a fixed part, nothing per draft token), and its advice says so. Imports nothing of the UI."""

from __future__ import annotations

from ...engine.drafters import block_names
from ..stats import StatsSnapshot


def block_drafted(snapshot: StatsSnapshot) -> bool:
    """Every draft of the run came from a block drafter.

    Args:
        snapshot: the run's statistics (``by_drafter``: who drafted).

    Returns:
        True when at least one draft was made and all by block drafters.
    """
    names = [s.name for s in snapshot.by_drafter if s.drafted]
    return bool(names) and all(n in block_names() for n in names)


def draft_unit(draft_ms_per_token: float, draft_ms_fixed: float, target_decode_ms: float) -> tuple[str, float, str]:
    """The advice's draft cost: ("token", its cost in target decodes, "") for a drafter priced per draft token;
    ("pass", the pass's cost in target decodes, " whatever k") for one priced by its pass alone (a block)."""
    t0 = target_decode_ms
    if draft_ms_per_token == 0 < draft_ms_fixed and t0 > 0:
        return "pass", draft_ms_fixed / t0, " whatever k"
    return "token", draft_ms_per_token / t0 if t0 else 0.0, ""
