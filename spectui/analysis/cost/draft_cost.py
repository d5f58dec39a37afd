"""What drafting costs a run under ``--draft-max auto``, learned from its passes (``CostPolicy.draft``: see
:mod:`spectui.analysis.cost.draft_policy`), in the unit the drafter pays in:

- a draft model or a head (EAGLE-3, MTP): ms per drafted token, one draft decode each;
- a model-free drafter (prompt lookup, the n-gram types, suffix): ms per pass that drafts (its lookup costs the
  same whatever it drafts);
- a block drafter (DFlash, DSpark: ``engine.drafters.block_names()``): its ONE draft pass proposes the whole
  block, so it is priced by the pass. The pass's draft ms is kept per number of drafts made (EWMA, steady passes
  only), and the price is the straight line through those measured points (least squares, never falling with k):
  flat when the run measures it flat, so an extra draft token costs the verify's extra row and whatever the pass
  measurably grows by, not a draft step. One measured size gives a flat line at its cost.

Only a pass that follows a drafting pass teaches the steady cost (after k = 0 passes the draft model first
catches up on the text it skipped: a one-off cost, not the price of the next k); the first drafting pass's
figure stands until then. Before any draft: the start's calibration (``RunStarted.draft_decode_ms``, one draft
decode; a block's pass is one draft decode too), ``NGRAM_DRAFT_MS`` for a model-free drafter.

Imports nothing of the UI.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from ...engine.drafters import block_names
from .chain_cost import model_free

TIME_ALPHA = 0.25  # EWMA weight of a new timing observation
NGRAM_DRAFT_MS = 0.0  # prior draft cost per token of prompt lookup (measured: microseconds)


def ewma(old: float | None, new: float, alpha: float = TIME_ALPHA) -> float:
    """``new`` folded into the running mean ``old`` (``new`` itself when there is none yet).

    Args:
        old: the mean so far, or None.
        new: the new observation.
        alpha: the new observation's weight.

    Returns:
        The updated mean.
    """
    return new if old is None else old + alpha * (new - old)


def block_line(by_k: Mapping[int, float], fallback: float) -> tuple[float, float]:
    """A block drafter's pass cost as (ms per draft token, ms per pass that drafts): the least-squares line
    through the measured draft ms per pass by drafts made, its slope held at 0 or more (a larger block never
    costs less) and its value at k = 0 at 0 or more (else the least-squares line through 0).

    Args:
        by_k: measured draft ms per pass by the number of drafts it made.
        fallback: the pass cost before anything is measured.

    Returns:
        (slope, intercept): drafting k tokens costs ``intercept + k * slope``; (0, the mean) with one size
        measured, (0, ``fallback``) with none.
    """
    if not by_k:
        return 0.0, max(0.0, fallback)
    ks, ms = list(by_k), list(by_k.values())
    mk, mm = sum(ks) / len(ks), sum(ms) / len(ms)
    var = sum((k - mk) ** 2 for k in ks)
    slope = max(0.0, sum((k - mk) * (m - mm) for k, m in zip(ks, ms)) / var) if var > 0 else 0.0
    fixed = mm - slope * mk
    if fixed < 0:  # the pass grows faster than in proportion to k: the line through 0 instead
        return sum(k * m for k, m in zip(ks, ms)) / sum(k * k for k in ks), 0.0
    return slope, fixed


@dataclass
class DraftCost:
    """A run's draft cost, per drafted token or per drafting pass as its drafter pays (module docstring)."""

    drafter: str = "model"
    calib_ms: float = 0.0  # the start's single draft decode
    per_unit: float | None = None  # ms per drafted token (a model) or per drafting pass (model-free, a block)
    steady: bool = False  # per_unit comes from a pass that followed a drafting pass
    by_k: dict[int, float] = field(default_factory=dict)  # a block drafter's draft ms per pass by drafts made

    def reset(self, drafter: str) -> None:
        """Forget what was measured: a new run, or a different drafter (it costs differently).

        Args:
            drafter: the drafter now drafting (``Settings.drafter``).
        """
        self.drafter, self.per_unit, self.steady = drafter, None, False
        self.by_k.clear()

    def per_pass(self) -> bool:
        """The drafter pays by the pass, not by the draft token (model-free, or a block)."""
        return self.drafter in block_names() or model_free(self.drafter)

    def observe(self, nd: int, draft_ms: float, steady: bool) -> None:
        """A pass that made ``nd`` > 0 drafts in ``draft_ms`` of draft time.

        Args:
            nd: the drafts it made.
            draft_ms: its draft time (``PassTiming.draft_ms``).
            steady: the pass before it drafted too (no catch-up in this one).
        """
        per = draft_ms / (1 if self.per_pass() else nd)
        if steady:  # the first steady figure replaces a catch-up one outright
            self.per_unit = ewma(self.per_unit if self.steady else None, per)
            self.steady = True
            if self.drafter in block_names():
                self.by_k[nd] = ewma(self.by_k.get(nd), draft_ms)
        elif self.per_unit is None:
            self.per_unit = per

    def costs(self) -> tuple[float, float]:
        """(ms per drafted token, ms per pass that drafts), as ``costmodel.predict_from`` takes them.

        Returns:
            A model's (its per-token cost, 0); a model-free drafter's (0, its lookup per pass); a block
            drafter's line through its measured pass costs (``block_line``).
        """
        if self.drafter in block_names():
            return block_line(self.by_k, self.calib_ms if self.per_unit is None else self.per_unit)
        if model_free(self.drafter):
            return 0.0, NGRAM_DRAFT_MS if self.per_unit is None else self.per_unit
        return (self.calib_ms if self.per_unit is None else self.per_unit), 0.0
