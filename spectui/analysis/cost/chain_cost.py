"""``--draft-max auto`` with a chain (``--spec-type ngram-mod,draft-simple``): each member priced by its own
measured cost and its own acceptance, and left out of the passes where it loses on this machine.

``ChainCost`` keeps one cost policy per member (``CostPolicy``, the one a drafter alone runs under: see
:mod:`spectui.analysis.cost.draft_policy`), fed what that member did:

- a pass the member drafted (``PassEvent.drafter``) teaches it its acceptance by draft position, its drafting
  continuation, the target's verify time for that many drafts and its draft cost: the time the pass spent
  drafting, lookups of the members before it that found nothing included (the chain pays for them before this
  member drafts), per drafted token for a model or a head, per pass for a model-free member, per pass by block
  length for a block drafter (DFlash, DSpark: :mod:`.draft_cost`);
- a pass that drafted nothing teaches every member the pass's cost: where the member was asked (k > 0 and not left
  out) that it found no draft, as a pass of its own asking for drafts and making none; the others, a k = 0 pass
  (the target alone); each member counts as asked for its own k, not the pass's (the largest of theirs);
- before its own drafts are measured, a draft model's cost per token is the run's start calibration
  (``RunStarted.draft_decode_ms``, a single draft decode measured at start), a model-free drafter's (the n-gram
  types, suffix) ``NGRAM_DRAFT_MS``: its lookup time once it has drafted.

Before each pass every member's policy chooses its own k as it would alone: warm-up at k = 1, exploring,
settling at k = 0 when even an optimistic reading of its acceptance puts its tokens/s below the target alone's
(or at once, when the probe's verify curve says even 95% acceptance cannot pay), re-probing now and then. A member
at k = 0 is left out of the pass (the chain does not ask it: ``DraftLimits.members``), the others draft up to
their own k, and the pass's k is the largest. So the chain keeps drafting with the members that pay, and a member
that lost comes back when its re-probe says it pays again. Every pass names the members left out
(``PassEvent.left_out``); ``why`` says it in one line with their figures.

Imports nothing of the UI.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Protocol

from ...contract.events import CHAIN_SEPARATOR, Event, PassEvent, RunStarted, Settings, SettingsChanged
from ...engine.drafters import by_name
from ...engine.drafters.base import TREE_TARGET
from .costmodel import Prediction


class MemberPolicy(Protocol):
    """What ``ChainCost`` asks of each member's policy (``CostPolicy``)."""

    n_decode_passes: int
    last_reason: str
    last_prediction: Prediction | None

    def observe(self, event: Event) -> None: ...

    def choose(self, settings: Settings) -> int: ...


@functools.lru_cache(maxsize=64)
def model_free(name: str) -> bool:
    """The drafter ``name`` drafts without a model (the n-gram types, suffix: a lookup, microseconds a token).

    Args:
        name: a drafter's spectui name ("ngram-mod", "model").

    Returns:
        True for a drafter whose spec needs no model (nothing, or the target's tree sequences: suffix-tree); False
        for a model or a head, and for an unknown name.
    """
    spec = by_name(name)
    return spec is not None and spec.needs in ("nothing", TREE_TARGET)


def is_chain(drafter: str) -> bool:
    """``Settings.drafter`` names a chain of two drafters or more ("ngram-mod,model")."""
    return CHAIN_SEPARATOR in drafter


def _as(settings: Settings, name: str) -> Settings:
    return dataclasses.replace(settings, drafter=name)


def _figures(p: Prediction | None) -> str:
    """"at most 9.1 tok/s drafting (k = 1) < 12.0 target alone" from a member's last prediction, or ""."""
    if p is None or not p.ready or len(p.tps_by_k) < 2:
        return ""
    best = max(range(1, len(p.tps_by_k)), key=lambda k: p.tps_by_k[k])
    return f"at most {p.tps_by_k[best]:.1f} tok/s drafting (k = {best}) < {p.tps_by_k[0]:.1f} target alone"


class ChainCost:
    """One cost policy per member of a chain; each pass, each member's own k (0: left out).

    Args:
        drafter: the chain's ``Settings.drafter`` ("ngram-mod,model"), members in priority order.
        make: a fresh member policy (a ``CostPolicy`` with the run's verify curve).
    """

    def __init__(self, drafter: str, make: Callable[[], MemberPolicy]) -> None:
        self.drafter = drafter
        self.policies: dict[str, MemberPolicy] = {name: make() for name in drafter.split(CHAIN_SEPARATOR)}
        self.caps: tuple[tuple[str, int], ...] = ()  # the last choice: (member, its k), priority order

    @classmethod
    def started(cls, start: RunStarted, make: Callable[[], MemberPolicy]) -> "ChainCost":
        """The member policies of the chain ``start.settings.drafter``, each started as at ``start``.

        Args:
            start: the run's start (or one made for a chain switched to mid-run).
            make: a fresh member policy.

        Returns:
            The ChainCost, ``start`` observed.
        """
        chain = cls(start.settings.drafter, make)
        chain.observe(start)
        return chain

    def observe(self, event: Event) -> None:
        """One event of the run, routed to the members it teaches (see the module docstring).

        Args:
            event: the event the run just yielded.
        """
        if isinstance(event, RunStarted):
            for name, pol in self.policies.items():
                pol.observe(dataclasses.replace(event, settings=_as(event.settings, name)))
        elif isinstance(event, SettingsChanged):
            for name, pol in self.policies.items():
                pol.observe(dataclasses.replace(event, old=_as(event.old, name), new=_as(event.new, name)))
        elif isinstance(event, PassEvent) and not event.prefill:
            self._observe_pass(event)

    def _observe_pass(self, ev: PassEvent) -> None:
        # under auto each member was asked for its own k (the pass's is the largest); a fixed k asks them all for it
        caps = dict(self.caps) if ev.settings.auto else {}
        for name, pol in self.policies.items():
            k = min(ev.k, caps.get(name, ev.k))
            if ev.drafts and name != ev.drafter:  # it learned nothing of this pass, but the run went on (its
                pol.n_decode_passes += 1  # re-probes count passes)
            else:  # the pass it drafted, or one no member drafted: asked for its k (0: left out, or a k = 0 pass)
                pol.observe(ev if k == ev.k else dataclasses.replace(ev, k=k))

    def choose(self, settings: Settings) -> int:
        """Each member's k for the next pass (``caps``); the pass's k is the largest.

        Args:
            settings: the pass's settings (``settings.drafter``: this chain).

        Returns:
            The pass's k (0: every member loses here, the pass is a plain decode).
        """
        self.caps = tuple((name, max(0, pol.choose(_as(settings, name)))) for name, pol in self.policies.items())
        return max((k for _, k in self.caps), default=0)

    def left_out(self) -> tuple[str, ...]:
        """The members the last choice left out (k = 0), in priority order."""
        return tuple(name for name, k in self.caps if k <= 0)

    def why(self) -> str:
        """The last choice in one line: each member's k, and for those left out why, with their figures.

        Returns:
            "chain: ngram-mod k = 4; model left out (speculation loses: k = 0: at most 9.1 tok/s drafting
            (k = 1) < 12.0 target alone)".
        """
        parts = []
        for name, k in self.caps:
            pol = self.policies[name]
            if k > 0:
                parts.append(f"{name} k = {k}")
                continue
            figures = _figures(pol.last_prediction)
            parts.append(f"{name} left out ({pol.last_reason}{': ' + figures if figures else ''})")
        return "chain: " + "; ".join(parts)
