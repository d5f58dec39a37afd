"""A tree's statistics (--drafter tree: ``PassEvent.tree``): how many nodes each pass verified, how many were pruned,
and acceptance by depth (a node of depth d is accepted when the walk passed through it); and, under --draft-max auto,
the passes a tree drafter drafted a chain because the cost model predicted it faster (``chain_passes``).

``TreeCounts.add(ev)`` per pass, ``snapshot()`` the frozen ``TreeStats`` (None: no tree pass); ``RunStats``
keeps one (``StatsSnapshot.tree``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ..contract.events import ACCEPTED, DISCARDED, PassEvent
from ..engine.drafters import by_name
from .rates import mean_acceptance_length


@dataclass(frozen=True)
class DepthStat:
    """Nodes verified at one depth of the trees, and how many the walk accepted."""

    depth: int  # 1: the root's children
    nodes: int
    accepted: int

    @property
    def rate(self) -> float:
        return self.accepted / self.nodes if self.nodes else 0.0


@dataclass(frozen=True)
class TreeStats:
    """What the tree passes of a run verified."""

    passes: int = 0
    nodes: int = 0  # every node verified, over the passes
    accepted: int = 0
    pruned: int = 0  # nodes below a node the walk never reached
    by_depth: tuple[DepthStat, ...] = ()
    chain_passes: int = 0  # passes a tree drafter drafted as a chain (--draft-max auto chose it)

    @property
    def nodes_per_pass(self) -> float:
        return self.nodes / self.passes if self.passes else 0.0

    @property
    def mean_acceptance_length(self) -> float:
        """Tokens a tree pass emits on average before a cut: its accepted nodes and the target's token."""
        return mean_acceptance_length(self.accepted, self.passes)

    def record(self) -> dict:
        """The figures as JSON (every face's ``tree``: run and replay ``--json``, race ``--json``, bench ``--json``).

        Returns:
            passes, chain_passes (auto's), nodes, accepted, pruned, nodes_per_pass, mean_acceptance_length,
            by_depth (depth, nodes, accepted).
        """
        return {"passes": self.passes, "chain_passes": self.chain_passes, "nodes": self.nodes,
                "accepted": self.accepted, "pruned": self.pruned,
                "nodes_per_pass": self.nodes_per_pass, "mean_acceptance_length": self.mean_acceptance_length,
                "by_depth": [{"depth": d.depth, "nodes": d.nodes, "accepted": d.accepted} for d in self.by_depth]}

    def depth_text(self) -> str:
        """Acceptance by depth in one line: ``1:62% (5/8)  2:50% (5/10)``."""
        return "  ".join(f"{d.depth}:{100 * d.rate:.0f}% ({d.accepted}/{d.nodes})" for d in self.by_depth)


def pooled(trees: Iterable[TreeStats | None]) -> TreeStats | None:
    """Several runs' tree figures summed (a bench's category, a race's lanes); None when none drafted a tree.

    Args:
        trees: each run's ``StatsSnapshot.tree``.

    Returns:
        The pooled figures, or None.
    """
    known = [t for t in trees if t is not None]
    if not known:
        return None
    nodes: dict[int, list[int]] = {}
    for t in known:
        for d in t.by_depth:
            slot = nodes.setdefault(d.depth, [0, 0])
            slot[0] += d.nodes
            slot[1] += d.accepted
    return TreeStats(sum(t.passes for t in known), sum(t.nodes for t in known), sum(t.accepted for t in known),
                     sum(t.pruned for t in known), tuple(DepthStat(d, n, a) for d, (n, a) in sorted(nodes.items())),
                     sum(t.chain_passes for t in known))


class TreeCounts:
    """The running sums behind ``TreeStats``."""

    def __init__(self) -> None:
        self.passes = self.nodes = self.accepted = self.pruned = self.chain_passes = 0
        self.depth_nodes: list[int] = []
        self.depth_accepted: list[int] = []

    def add(self, ev: PassEvent) -> None:
        """Count a pass's tree (a tree drafter's pass without one: a chain; any other pass counts for nothing)."""
        if not ev.tree:
            spec = by_name(ev.drafter) if ev.drafts else None
            self.chain_passes += spec is not None and spec.shape == "tree"
            return
        self.passes += 1
        self.nodes += len(ev.tree)
        depth: list[int] = []
        for nd in ev.tree:
            d = 1 if nd.parent < 0 or nd.parent >= len(depth) else depth[nd.parent] + 1
            depth.append(d)
            while len(self.depth_nodes) < d:
                self.depth_nodes.append(0)
                self.depth_accepted.append(0)
            self.depth_nodes[d - 1] += 1
            if nd.verdict == ACCEPTED:
                self.accepted += 1
                self.depth_accepted[d - 1] += 1
            elif nd.verdict == DISCARDED:
                self.pruned += 1

    def snapshot(self) -> TreeStats | None:
        if not self.passes and not self.chain_passes:
            return None
        return TreeStats(self.passes, self.nodes, self.accepted, self.pruned,
                         tuple(DepthStat(i + 1, n, a) for i, (n, a) in enumerate(zip(self.depth_nodes,
                                                                                     self.depth_accepted))),
                         self.chain_passes)
