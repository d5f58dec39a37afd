"""``suffix-tree``: suffix decoding proposing a token tree (Arctic Inference's tree speculation), verified as the
draft model's trees are, every node in one target decode (docs/trees.md, run/tree_pass.py).

The suffix trees, their counts and the match are suffix decoding's (``suffix.py``); where the chain walks from the
matched string to its most frequent continuation only, the tree keeps several: from the matched string, the
continuations are offered best first by their path probability (the product of child count / parent count along
the path, as the chain's), the likeliest filled next, until the node budget is spent, as Arctic's
``SuffixTree::_speculate_tree`` does. A node below ``min_token_prob`` is never offered; a node's depth stays within
the tree's (match + depth at most ``max_tree_depth``) and ``max_spec_factor`` x m + ``max_spec_offset`` caps the
nodes of a match of m tokens as it caps the chain's drafts. The tree drafter's limits hold too (``TreeParams``):
``--spec-eagle-topk`` children a node (the most frequent), ``-np`` leaves, ``--spec-num-steps`` the depth. The tree
with the highest score (the sum of its nodes' probabilities) over the match lengths and both suffix trees drafts
(ties: the longer match, then the request's own tree), as for the chain.

Each node's q is its frequency share (count / its parent string's count). The children are not drawn: at T = 0 the
target's greedy walk judges them; at T > 0 each is judged as the point mass on itself (``tree_verify``: its true law
given the tree), so the recursive rejection sampling stays exact. Under ``--draft-max auto`` the cost model may ask
for a chain in a pass (``DraftLimits.children`` 1): then it drafts suffix decoding's own chain.

The target holds the tree's branches as sequences of one unified cache, so the engine makes its context with
``draft_tree.TREE_SEQS`` sequences: always beside a draft model, and without one when a command asks for this
drafter (``EngineOptions.tree_seqs``).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from ...contract.events import DRAFT_STOP_K, DRAFT_STOP_NO_MATCH
from .base import TREE_TARGET, DrafterSpec, DraftLimits, Proposal
from .draft_tree import TREE_SEQS, TreeParams
from .suffix import FACTOR_EPS, SuffixDrafter, SuffixParams, SuffixTree


@dataclass
class TreeDraft:
    """One tree speculation: the nodes' ids, parents (-1: the root, the context's last token), frequency shares and
    path probabilities, their sum (the score) and the length of the context match it continues."""

    ids: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    shares: list[float] = field(default_factory=list)
    probs: list[float] = field(default_factory=list)
    score: float = 0.0
    match_len: int = 0


@dataclass(frozen=True)
class TreeBounds:
    """How far one tree may grow: its nodes, a node's children, its leaves (0: no cap), its depth and the lowest
    path probability."""

    nodes: int
    topk: int
    leaves: int
    depth: int
    min_prob: float


def grow(tree: SuffixTree, ends: np.ndarray, m: int, b: TreeBounds) -> TreeDraft:
    """The tree from the string of m tokens that ends at ``ends`` (see the module docstring): the likeliest offered
    continuation next, its own continuations offered once it is in.

    Args:
        tree: the suffix tree.
        ends: where the matched string's occurrences end.
        m: the match's length.
        b: the bounds.

    Returns:
        The tree (empty where nothing continues the match above ``b.min_prob``).
    """
    out = TreeDraft(match_len=m)
    heap: list[tuple[float, int, int, float, int, np.ndarray]] = []  # (-prob, order, token, share, parent, ends)
    kids: dict[int, int] = {}  # node (-1 the root) -> its children so far
    depth: list[int] = []
    offered = [0]  # continuations offered so far: equal probabilities are filled in the order offered

    def offer(par: int, prob: float, at: np.ndarray) -> None:
        d = depth[par] if par >= 0 else 0
        if d >= b.depth or m + d >= tree.max_depth:
            return
        for token, count, after in tree.continuations(at)[: b.topk]:
            share = float(np.float32(count) / np.float32(at.size))
            p = float(np.float32(prob) * np.float32(share))
            if p >= b.min_prob:
                heapq.heappush(heap, (-p, offered[0], token, share, par, after))
                offered[0] += 1

    offer(-1, 1.0, ends)
    leaves = 0
    while heap and len(out.ids) < b.nodes:
        neg, _, token, share, par, after = heapq.heappop(heap)
        new_leaf = par < 0 or kids.get(par, 0) > 0
        if new_leaf and b.leaves > 0 and leaves >= b.leaves:
            continue
        leaves += new_leaf
        kids[par] = kids.get(par, 0) + 1
        depth.append(depth[par] + 1 if par >= 0 else 1)
        out.ids.append(token)
        out.parents.append(par)
        out.shares.append(share)
        out.probs.append(-neg)
        out.score += -neg
        offer(len(out.ids) - 1, -neg, after)
    return out


def speculate_tree(tree: SuffixTree, context, max_nodes: int, params: SuffixParams, tp: TreeParams,
                   k: int) -> TreeDraft:
    """The best-scored tree over the match lengths in one suffix tree (ties: the longer match).

    Args:
        tree: the suffix tree.
        context: the token ids to continue.
        max_nodes: the node budget.
        params: suffix decoding's options (the factor, offset and probability floor).
        tp: the tree's limits (children per node, leaves, depth).
        k: the pass's draft length (``tp``'s depth defaults to it).

    Returns:
        The tree (empty where nothing continues the context).
    """
    best = TreeDraft()
    for m, ends in tree.matches(context):
        cap = int(m * params.max_spec_factor + params.max_spec_offset + FACTOR_EPS)
        bounds = TreeBounds(max(0, min(max_nodes, cap)), max(1, tp.topk), tp.parallel, tp.depth(k),
                            params.min_token_prob)
        draft = grow(tree, ends, m, bounds)
        if draft.score >= best.score:
            best = draft
    return best


class SuffixTreeDrafter(SuffixDrafter):
    """Suffix decoding proposing trees (see the module docstring): the request's and the global suffix trees as
    ``suffix``'s, one tree proposal a pass, or ``suffix``'s own chain when the pass asks for one.

    Args:
        params: suffix decoding's options (vLLM's defaults when None).
        tree: the tree's limits (the tree drafter's defaults when None).
    """

    name = "suffix-tree"

    def __init__(self, params: SuffixParams | None = None, tree: TreeParams | None = None) -> None:
        super().__init__(params)
        self.tree = tree or TreeParams()

    def propose(self, tokens, k, temperature, rng) -> Proposal:
        lim = k if isinstance(k, DraftLimits) else DraftLimits(int(k))
        if lim.children == 1 or lim.k <= 0:  # a chain asked for (auto k), or nothing
            return super().propose(tokens, lim, temperature, rng)
        self.follow(tokens)
        budget = self.tree.budget(lim.k)
        cache = self.cache
        ctx = tokens[-cache.max_tree_depth:]
        mine = speculate_tree(cache.local_tree, ctx, budget, self.params, self.tree, lim.k)
        other = speculate_tree(cache.global_tree, ctx, budget, self.params, self.tree, lim.k)
        best = mine if mine.score >= other.score else other
        if not best.ids:
            return Proposal(stop=DRAFT_STOP_NO_MATCH)
        return Proposal(ids=best.ids, q_probs=best.shares, parents=best.parents,
                        stop=DRAFT_STOP_K if len(best.ids) == budget else DRAFT_STOP_NO_MATCH)


def _make(res) -> SuffixTreeDrafter | None:
    if getattr(res.target, "n_seq", 1) < TREE_SEQS:  # the target's context holds one sequence: no tree to verify
        return None
    return SuffixTreeDrafter(tree=res.params.get("tree"))


SPEC = DrafterSpec(name="suffix-tree", spec_type="", needs=TREE_TARGET, shape="tree", order=27, priority=8,
                   summary="suffix decoding proposing a tree: several frequent continuations from the suffix trees, "
                           "best first, verified in one target decode (docs/trees.md)",
                   make=_make)

__all__ = ["SPEC", "SuffixTreeDrafter", "TreeBounds", "TreeDraft", "grow", "speculate_tree"]
