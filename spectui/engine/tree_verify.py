"""The acceptance rules of a token tree, as pure numpy functions (no llama.cpp, no state).

A tree is given by its nodes' token ids and parents (``parents[i]`` is node i's parent, -1 the root: the last
accepted token). The target evaluated the root and every node in one batch, so it has a row for each: row 0 the
root's, row i + 1 node i's. The walk starts at the root and moves to a child while one is accepted; it stops at
a node none of whose children is, and the target's own token there is the correction (or, at a leaf, the bonus).

- Greedy (temperature 0): a child is accepted when it is the argmax of its parent's row. The accepted path is then
  the target's greedy continuation, token for token, as long as the tree holds it.
- Temperature > 0: recursive rejection sampling without replacement (Jeon et al. 2024, "Recursive Speculative
  Decoding"; SpecInfer's multi-step speculative sampling with the draws made without replacement). At a node
  with target distribution p the children x_1, x_2, ... are judged in the order they were drawn: x_i is accepted
  with probability min(1, p_i(x_i) / r_i(x_i)), and on a rejection p_{i + 1} = norm(max(0, p_i - r_i)); when
  every child is rejected the token is drawn from the last residual. Here r_i is the distribution x_i was drawn
  from (``child_proposal``: q without the children drawn before it; for i >= 2 only tokens with q above the
  split; a drafter that proposes its children without drawing them, as suffix-tree, gives each the point mass on
  itself, its true law given the tree). Each step emits exactly p_i (the speculative-sampling identity min(r, p)
  + (1 - sum min(r, p)) * norm(max(0, p - r)) = p), so by induction the node emits exactly p. It holds as long as
  whether child i exists is decided before x_i is drawn (the drafter's best-first order guarantees it:
  drafters/draft_tree.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from .verify import sample


@dataclass(frozen=True)
class TreeVerdict:
    """Where a tree's walk went: the accepted nodes (root's child first), the target's token after them, the
    children judged and rejected on the way, and for each position of the path the last acceptance test made
    there (T > 0: min(1, p/r) and the uniform of the child accepted, or at the last node of the first child
    refused; the chain's ``Verdict`` fields), the residual of a correction, and every child judged at T > 0 as
    (node, p_i(x), r_i(x), min(1, p_i / r_i), u): the test that decided it (the inspector shows each node's)."""

    path: tuple[int, ...]
    token: int
    rejected: tuple[int, ...] = ()
    accept_p: tuple[float, ...] = ()
    u: tuple[float, ...] = ()
    residual: np.ndarray | None = None
    judged: tuple[tuple[int, float, float, float, float], ...] = ()


def children(parents: Sequence[int]) -> list[list[int]]:
    """Each node's children in the order they were added; index 0 the root's, index i + 1 node i's."""
    out: list[list[int]] = [[] for _ in range(len(parents) + 1)]
    for i, par in enumerate(parents):
        out[par + 1].append(i)
    return out


def depths(parents: Sequence[int]) -> list[int]:
    """Each node's depth (the root's children: 1); a parent always comes before its children."""
    d: list[int] = []
    for par in parents:
        d.append(1 if par < 0 else d[par] + 1)
    return d


def child_proposal(q: np.ndarray, drawn: Sequence[int], rank: int, split: float) -> np.ndarray | None:
    """The distribution a node's child number ``rank`` (1-based) is drawn from: q without the children drawn
    before it (``drawn``), and for rank >= 2 without the tokens whose q is at most ``split``; None when nothing is
    left. The drafter draws from it and the verifier judges by it (float64).

    Args:
        q: the draft's distribution at the node (at the run's temperature).
        drawn: the ids of the node's children drawn so far.
        rank: the child's number.
        split: the branch threshold (--draft-p-split; 0: none).

    Returns:
        The normalised distribution, or None.
    """
    r = np.array(q, dtype=np.float64)
    if drawn:
        r[np.asarray(drawn, dtype=np.int64)] = 0.0
    if rank >= 2 and split > 0:
        r[q <= split] = 0.0
    s = float(r.sum())
    if not s > 0.0:
        return None
    r /= s
    return r


def point_mass(x: int, n: int) -> np.ndarray:
    """The distribution of a child proposed without a draw: all its mass on ``x`` (of ``n`` ids).

    Args:
        x: the child's id.
        n: the vocabulary's size.

    Returns:
        The one-hot float64 row.
    """
    r = np.zeros(n, dtype=np.float64)
    r[x] = 1.0
    return r


def greedy_tree_verify(rows: Sequence[np.ndarray], ids: Sequence[int], parents: Sequence[int]) -> TreeVerdict:
    """The greedy walk: from the root, the child equal to the argmax of the current row, while there is one.

    Args:
        rows: the target's logit rows (row 0 the root's, row i + 1 node i's).
        ids: the nodes' token ids.
        parents: the nodes' parents (-1: the root).

    Returns:
        The verdict; ``rejected`` the children of the path's nodes that were not the argmax.
    """
    kids = children(parents)
    path: list[int] = []
    rejected: list[int] = []
    v = -1
    while True:
        best = int(np.argmax(rows[v + 1]))
        nxt = -1
        for c in kids[v + 1]:
            if ids[c] == best and nxt < 0:
                nxt = c
            else:
                rejected.append(c)
        if nxt < 0:
            return TreeVerdict(tuple(path), best, tuple(rejected))
        path.append(nxt)
        v = nxt


def rrs_tree_verify(p_of: Callable[[int], np.ndarray], q_of: Callable[[int], np.ndarray], ids: Sequence[int],
                    parents: Sequence[int], split: float, rng: np.random.Generator) -> TreeVerdict:
    """Recursive rejection sampling without replacement down the tree (see the module docstring).

    Args:
        p_of: the target's distribution at row i (0 the root, i + 1 node i) at the run's temperature.
        q_of: the draft's distribution at a node with children (-1 the root), the one its children were drawn from;
            None: a drafter that proposes its children without drawing them (suffix-tree), each child judged as a
            point mass on itself.
        ids: the nodes' token ids.
        parents: the nodes' parents (-1: the root).
        split: the threshold ``child_proposal`` applied to children after the first.
        rng: the run's generator.

    Returns:
        The verdict.
    """
    kids = children(parents)
    path: list[int] = []
    rejected: list[int] = []
    acc: list[float] = []
    us: list[float] = []
    judged: list[tuple[int, float, float, float, float]] = []
    v = -1
    while True:
        p = np.array(p_of(v + 1), dtype=np.float64)
        drawn: list[int] = []
        nxt, a, u, first = -1, -1.0, -1.0, (-1.0, -1.0)
        for rank, c in enumerate(kids[v + 1], start=1):
            x = int(ids[c])
            q = q_of(v)
            r = child_proposal(q, drawn, rank, split) if q is not None else point_mass(x, p.size)
            rx = float(r[x]) if r is not None else 0.0
            a = 1.0 if rx <= 0.0 else min(1.0, float(p[x]) / rx)
            u = -1.0 if a >= 1.0 else float(rng.random())
            judged.append((c, float(p[x]), rx, a, u))
            if a >= 1.0 or u < a:
                nxt = c
                break
            if rank == 1:
                first = (a, u)
            rejected.append(c)
            drawn.append(x)
            p = np.maximum(p - r, 0.0)
            s = float(p.sum())
            p = p / s if s > 0.0 else np.array(p_of(v + 1), dtype=np.float64)
        if kids[v + 1]:  # the test that accepted a child, or the first child's refusal (the chain's view)
            acc.append(a if nxt >= 0 else first[0])
            us.append(u if nxt >= 0 else first[1])
        if nxt < 0:
            resid = p if drawn else None
            return TreeVerdict(tuple(path), sample(p, rng), tuple(rejected), tuple(acc), tuple(us), resid,
                               tuple(judged))
        path.append(nxt)
        v = nxt
