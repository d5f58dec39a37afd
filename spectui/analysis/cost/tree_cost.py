"""``--draft-max auto`` with a tree drafter (``--drafter tree``, ``suffix-tree``): each pass either a chain of k or a
tree of n nodes, whichever the cost model predicts the most tokens per second for on this machine (docs/trees.md).

- What a tree yields. The walk goes from the root to a child while one is accepted. The chance that it reaches and
  accepts a node is its parent's chance times the chance that the walk takes the node's rank there: the ranks before
  it refused, this one accepted. For a first child at depth d that is the chain's conditional acceptance a_d (the
  cost model's: :mod:`.costmodel`, learned from the chain passes and from the first children the tree passes judged);
  for a later child of rank r, b_r, learned from the later children the tree passes judged (accepted when the ranks
  before were refused), starting from ``LATER_PRIOR``. The expected accepted length of a tree is the sum of its
  nodes' chances. The tree of n nodes is grown best first, the likeliest slot next and at most ``TREE_TOPK``
  children a node, as the drafters grow theirs (draft_tree's EAGLE-2 order, suffix-tree's frequency order), so
  E(n) = 1 + the sum of the first n chances.
- What it costs. Drafting: a draft model decodes a tree level by level, the nodes of a level that have children in
  one batch; a batch of w rows costs verify_ms(w - 1) / verify_ms(0) single decodes (the verify curve's shape: the
  draft model runs on the same hardware and llama.cpp), so a tree costs 1 + the sum of its levels' batches in draft
  decodes, at the run's cost per draft token; a chain of k costs k, as the chain's price says. A model-free drafter
  (suffix-tree) pays its lookup per pass whatever it proposes. Verifying: n + 1 tokens, verify_ms(n), the same curve
  (the probe's, scaled to the run) that prices a chain's k + 1.
- tokens/s = 1000 E(n) / (draft ms + verify_ms(n) + the loop's other ms per pass), for n = 1..k_max, against the
  chain's best. A tree is chosen only when it is predicted ``TREE_MARGIN`` faster than every chain (k = 0 included):
  on a tie the chain is the cheaper and the better measured. Where verify tokens are expensive (a CPU, about half a
  decode each on 2 cores) the tree's extra nodes rarely pay and the choice is mostly a short chain; where they are
  nearly free (a GPU) and the first child is often refused, a wide tree wins.

Imports nothing of the UI.
"""

from __future__ import annotations

import functools
import heapq
from dataclasses import dataclass, field
from typing import Sequence

from ...contract.events import ACCEPTED, PassEvent
from ...engine.drafters import by_name
from .costmodel import Prediction
from .decayed import DecayedRate

TREE_TOPK = 4  # children per node the model grows (the tree drafter's default --spec-eagle-topk)
LATER_PRIOR = 0.3  # a later child's acceptance before any is judged (the chance the walk takes rank r >= 2)
LATER_WEIGHT = 0.5  # the prior's weight, in judged children
TREE_MARGIN = 0.02  # a tree must be predicted this much faster than the best chain to be chosen


@functools.lru_cache(maxsize=64)
def is_tree(name: str) -> bool:
    """The drafter ``name`` proposes trees (``DrafterSpec.shape`` "tree": ``tree``, ``suffix-tree``).

    Args:
        name: a drafter's spectui name.

    Returns:
        True for a tree drafter; False for a chain drafter, a chain of drafters and an unknown name.
    """
    spec = by_name(name)
    return spec is not None and spec.shape == "tree"


@dataclass(frozen=True)
class TreeOption:
    """The best tree the model found: its nodes, predicted tokens/s, tokens and ms per pass, draft decodes, and the
    best chain's tokens/s and k it was compared with."""

    n: int
    tps: float
    tokens_per_pass: float
    ms_per_pass: float
    draft_units: float
    chain_tps: float
    chain_k: int

    def why(self) -> str:
        """The choice in one line (``CostPolicy.last_reason``)."""
        return (f"tree of {self.n} nodes: {self.tokens_per_pass:.2f} tokens in {self.ms_per_pass:.0f} ms, "
                f"{self.tps:.2f} t/s predicted > the best chain (k = {self.chain_k}) {self.chain_tps:.2f} t/s")


def walk_verdicts(nodes) -> tuple[list[bool], list[tuple[int, bool]]]:
    """What a verified tree says of each rank: where the walk went, every child judged in rank order up to the one
    accepted.

    Args:
        nodes: ``PassEvent.tree`` (each with ``parent`` and ``verdict``), parents before children.

    Returns:
        (first: whether the first child was accepted, by depth of its parent from the root's 0; later: (rank,
        accepted) of every later child judged).
    """
    kids: dict[int, list[int]] = {}
    for i, nd in enumerate(nodes):
        kids.setdefault(nd.parent, []).append(i)
    first: list[bool] = []
    later: list[tuple[int, bool]] = []
    u = -1
    while kids.get(u):
        nxt = -1
        for rank, c in enumerate(kids[u], start=1):
            ok = nodes[c].verdict == ACCEPTED
            if rank == 1:
                first.append(ok)
            else:
                later.append((rank, ok))
            if ok:
                nxt = c
                break
        if nxt < 0:
            break
        u = nxt
    return first, later


def grow(first: Sequence[float], later: Sequence[float], n_max: int,
         topk: int = TREE_TOPK) -> list[tuple[float, int, int]]:
    """The best-first tree, node by node (see the module docstring).

    Args:
        first: a first child's acceptance by its depth (index 0: the root's children); its length caps the depth.
        later: a later child's acceptance by rank (index 0: rank 2; the last held beyond).
        n_max: the most nodes.
        topk: the most children a node.

    Returns:
        Per node added, in order: (its chance of being reached and accepted, its depth, its parent's index or -1).
    """
    def rate(depth: int, rank: int) -> float:
        if rank == 1:
            return first[depth - 1]
        return later[min(rank - 2, len(later) - 1)] if later else 0.0

    out: list[tuple[float, int, int]] = []
    heap: list[tuple[float, int, int, int, float]] = []  # (-chance, order, parent, rank, parent's x refusals)

    def offer(par: int, depth: int, rank: int, base: float) -> None:
        if depth <= len(first) and rank <= topk:
            heapq.heappush(heap, (-base * rate(depth, rank), len(out) * topk + rank, par, rank, base))

    offer(-1, 1, 1, 1.0)
    while heap and len(out) < n_max:
        neg, _, par, rank, base = heapq.heappop(heap)
        depth = out[par][1] + 1 if par >= 0 else 1
        out.append((-neg, depth, par))
        offer(par, depth, rank + 1, base * (1.0 - rate(depth, rank)))
        offer(len(out) - 1, depth + 1, 1, -neg)
    return out


def draft_units(nodes: Sequence[tuple[float, int, int]], verify_ms: Sequence[float]) -> list[float]:
    """A draft model's decodes for each prefix of a tree (1..len(nodes) nodes): one for the root's row, then per level
    a batch of the nodes that have children, costing verify_ms(w - 1) / verify_ms(0) single decodes.

    Args:
        nodes: (chance, depth, parent) per node, parents first (``grow``; only the depths and parents are read).
        verify_ms: the verify curve by k (a batch of k + 1 tokens).

    Returns:
        The decodes by prefix (a chain of k: k).
    """
    def batch(w: int) -> float:  # (nothing measured yet: one decode a batch, as a chain's)
        if not verify_ms or verify_ms[0] <= 0:
            return 1.0
        return verify_ms[min(w - 1, len(verify_ms) - 1)] / verify_ms[0]

    width: dict[int, int] = {}
    parents: set[int] = set()
    out: list[float] = []
    for _, depth, par in nodes:
        if par >= 0 and par not in parents:
            parents.add(par)
            width[depth - 1] = width.get(depth - 1, 0) + 1
        out.append(1.0 + sum(batch(w) for w in width.values()))
    return out


def tree_shape_of(nodes) -> list[tuple[float, int, int]]:
    """A verified tree (``PassEvent.tree``) as ``grow`` gives one: (0, depth, parent) per node."""
    depth: list[int] = []
    for nd in nodes:
        depth.append(1 if nd.parent < 0 or nd.parent >= len(depth) else depth[nd.parent] + 1)
    return [(0.0, d, nd.parent) for d, nd in zip(depth, nodes)]


def best_tree(pred: Prediction, later: Sequence[float], topk: int = TREE_TOPK) -> TreeOption | None:
    """The tree of n = 1..k_max nodes with the most predicted tokens/s, from a chain's prediction (its acceptance
    by position, verify curve, draft and other costs) and the later children's acceptance.

    Args:
        pred: the cost model's prediction for the chain (``predict_from``).
        later: a later child's acceptance by rank (index 0: rank 2).
        topk: the most children a node.

    Returns:
        The best tree and the best chain it beats, or None (no timings, or k_max 0).
    """
    if not pred.ready or pred.k_max < 1:
        return None
    nodes = grow(pred.acceptance_by_position, later, pred.k_max, topk)
    units = draft_units(nodes, pred.verify_ms_by_k)
    best: TreeOption | None = None
    chain_k = max(range(pred.k_max + 1), key=lambda k: (round(pred.tps_by_k[k], 9), -k))
    total = 1.0
    for n, (chance, _, _) in enumerate(nodes, start=1):
        total += chance
        ms = (pred.draft_ms_fixed + units[n - 1] * pred.draft_ms_per_token + pred.verify_ms_by_k[n]
              + pred.other_ms_per_pass)
        tps = 1000.0 * total / ms if ms > 0 else 0.0
        if best is None or tps > best.tps:
            best = TreeOption(n, tps, total, ms, units[n - 1], pred.tps_by_k[chain_k], chain_k)
    return best


@dataclass
class TreeChoice:
    """A cost policy's chain-or-tree choice for a tree drafter: the later children's acceptance it learned, and the
    last choice (``children``: 1 a chain, 0 a tree; ``last``: the tree it weighed)."""

    later: list[DecayedRate] = field(default_factory=list)  # rank 2, 3, ...
    children: int = 0
    last: TreeOption | None = None

    def reset(self) -> None:
        """Forget what was learned (a change of temperature or drafter)."""
        self.later.clear()
        self.last = None

    def learn(self, ev: PassEvent, first: list[DecayedRate], n_pass: int, verify_ms: Sequence[float]) -> float:
        """A tree pass's verdicts: its first children by depth into ``first`` (the chain's positions), its later
        children by rank here.

        Args:
            ev: the tree pass.
            first: the cost policy's acceptance by position.
            n_pass: the decode pass's number.
            verify_ms: the verify curve by k in use (it prices the tree's draft batches).

        Returns:
            The tree's draft decodes (``draft_units``), the unit its draft time is priced in.
        """
        firsts, laters = walk_verdicts(ev.tree)
        while len(first) < len(firsts):
            first.append(DecayedRate())
        for d, ok in enumerate(firsts):
            first[d].observe(ok, n_pass)
        for rank, ok in laters:
            while len(self.later) < rank - 1:
                self.later.append(DecayedRate())
            self.later[rank - 2].observe(ok, n_pass)
        return draft_units(tree_shape_of(ev.tree), verify_ms)[-1]

    def later_rates(self) -> list[float]:
        """b_r for r = 2..TREE_TOPK: each rank's decayed count with the prior; a rank never judged, the one before
        it (or the prior)."""
        out: list[float] = []
        for r in range(TREE_TOPK - 1):
            if r < len(self.later) and self.later[r].trials > 0:
                p = self.later[r]
                out.append((p.hits + LATER_PRIOR * LATER_WEIGHT) / (p.trials + LATER_WEIGHT))
            else:
                out.append(out[-1] if out else LATER_PRIOR)
        return out

    def begin(self, drafter: str) -> None:
        """Before a pass is chosen: a tree drafter drafts a chain unless ``choose`` finds a tree faster."""
        self.children = 1 if is_tree(drafter) else 0

    def choose(self, pred: Prediction) -> TreeOption | None:
        """The tree to draft this pass, when one is predicted ``TREE_MARGIN`` faster than every chain (then
        ``children`` 0), else None (a chain: ``children`` stays 1).

        Args:
            pred: the chain's prediction.

        Returns:
            The tree option, or None.
        """
        if self.children != 1:
            return None
        self.last = best_tree(pred, self.later_rates())
        if self.last is None or self.last.tps <= self.last.chain_tps * (1.0 + TREE_MARGIN):
            return None
        self.children = 0
        return self.last
