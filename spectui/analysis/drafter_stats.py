"""Statistics per drafter, for runs whose passes were proposed by more than one drafter (a chain: ``--spec-type
ngram-mod,draft-simple``; or the ``d`` key mid-run): each pass counts for the drafter that proposed it
(``PassEvent.drafter``; a trace from before that field: the pass's ``Settings.drafter``). The same definitions as
the run's (``stats``): acceptance rate = accepted / drafted; mean acceptance length = 1 + accepted / passes that
drafted (vLLM's; llama.cpp prints the same figure per spec type as "#mean acc len"). Under ``--draft-max auto`` a
chain's member the cost model left out of a pass (``PassEvent.left_out``: its predicted tokens/s below the target
alone's) counts that pass as left out."""

from __future__ import annotations

from dataclasses import dataclass

from ..contract.events import ACCEPTED, PassEvent
from .rates import mean_acceptance_length

LEFT_OUT_WHY = "its predicted tokens/s below the target alone's"  # why auto leaves a chain member out (chain_cost)


@dataclass(frozen=True)
class DrafterStat:
    """One drafter's share of a run: passes it drafted, tokens it drafted and had accepted."""

    name: str
    passes: int
    drafted: int
    accepted: int
    left_out: int = 0  # passes --draft-max auto left this chain member out of (it loses on this machine)

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.drafted if self.drafted else 0.0

    @property
    def mean_acceptance_length(self) -> float:
        return mean_acceptance_length(self.accepted, self.passes)


class ByDrafter:
    """The per-drafter counts, pass by pass (``RunStats`` feeds it every decode pass)."""

    def __init__(self) -> None:
        # name -> [passes, drafted, accepted, left out], in order of first draft (or first left out)
        self._counts: dict[str, list[int]] = {}

    def add(self, ev: PassEvent) -> None:
        """Count a decode pass for the drafter that proposed its drafts (a pass without drafts counts for none), and
        as left out for each chain member auto left out of it."""
        for name in ev.left_out:
            self._counts.setdefault(name, [0, 0, 0, 0])[3] += 1
        if not ev.drafts:
            return
        c = self._counts.setdefault(ev.drafter or ev.settings.drafter, [0, 0, 0, 0])
        c[0] += 1
        c[1] += len(ev.tree) or len(ev.drafts)  # a tree pass: every node verified
        c[2] += sum(1 for d in ev.drafts if d.verdict == ACCEPTED)

    def snapshot(self) -> tuple[DrafterStat, ...]:
        """Every drafter that drafted or was left out, in the order they first did."""
        return tuple(DrafterStat(name, *c) for name, c in self._counts.items())


def drafter_lines(stats: tuple[DrafterStat, ...]) -> list[str]:
    """The summary's lines, one per drafter, when more than one drafted (one drafter: the run's own lines say it).

    Args:
        stats: ``StatsSnapshot.by_drafter``.

    Returns:
        "drafter ngram-mod: 12 passes, 40 drafted, 31 accepted (77.5%), mean acceptance length 3.58", or nothing;
        a chain member auto left out adds "; auto left it out of 90 passes (its predicted tokens/s below the target
        alone's)".
    """
    if len(stats) < 2:
        return []
    return [f"drafter {s.name}: {s.passes} passes, {s.drafted} drafted, {s.accepted} accepted "
            f"({100 * s.acceptance_rate:.1f}%), mean acceptance length {s.mean_acceptance_length:.2f}"
            + (f"; auto left it out of {s.left_out} passes ({LEFT_OUT_WHY})" if s.left_out else "") for s in stats]


def drafter_dicts(stats: tuple[DrafterStat, ...]) -> list[dict]:
    """``--json``'s ``by_drafter``: one object per drafter that drafted (every run, one drafter too)."""
    return [{"drafter": s.name, "passes": s.passes, "drafted": s.drafted, "accepted": s.accepted,
             "acceptance_rate": s.acceptance_rate, "mean_acceptance_length": s.mean_acceptance_length,
             "left_out": s.left_out}
            for s in stats]
