"""``tree``: the draft model proposes a tree of tokens, verified by the target in one decode (docs/trees.md).

The tree grows best first, as EAGLE-2's dynamic tree: every node offers its children in rank order, each child
slot has a score, and the best slot of the whole tree is filled next, until the node budget is spent. A slot's
score is its parent's path score times the chance that the walk takes the child of that rank (the ranks before
it refused, this one accepted), from the run's earlier verdicts by the node's draft confidence, each rate starting
from the rank's q (``RankRates``); with no verdict yet the score is EAGLE-2's path probability, the product of q
along the path. At temperature 0 a node's children are its top tokens. At temperature > 0 they are drawn from q
without replacement (``tree_verify.child_proposal``); a slot's score is known before its child is drawn, so
whether a child exists never depends on its own draw, which keeps the target's recursive rejection sampling exact
(``tree_verify``).

The limits, in llama.cpp's and SGLang's spellings (``TreeParams``): the pass's k (``--draft-max``) is the node
budget, as llama-speculative stops once its target batch holds ``--draft-max`` drafts; ``-np N`` (llama-speculative's
parallel drafts) caps the leaves (branches); ``--draft-p-split P`` lets a node branch only into tokens whose q is
above P (llama-speculative's split test, which also applies at -np's default); SGLang's ``--spec-eagle-topk`` caps
each node's children, ``--spec-num-steps`` the depth and ``--spec-num-draft-tokens`` the tokens verified (the
nodes plus the root). Under ``--draft-max auto`` the cost model may ask a pass for a chain (``DraftLimits.children``
1: analysis/cost/tree_cost.py): the search then keeps one child a node and the pass is proposed, verified and
reported as a chain, its q rows the rows its drafts were drawn from.

The draft's KV cache: the accepted context is sequence 0 and ends with the root (the last accepted token). A
node is decoded (to read its row) in its parent's sequence when it is the parent's first decoded child, else in a
new sequence that shares the parent's cells (llama_memory_seq_cp up to the parent: no KV data copied, the
context is made with a unified cache); the nodes whose rows the search needs next are decoded together, one
llama_decode per batch. After the verdict ``accept_tree`` keeps the accepted path's decoded nodes in sequence 0
and drops every other cell (llama_memory_seq_keep / seq_cp / seq_rm).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ...contract.draft_length import DRAFT_MAX_LIMIT
from ...contract.events import DRAFT_STOP_K
from ..llama.kv_tree import decode_tree, seq_copy, seq_drop, seq_keep
from ..llama.models import LoadedModel
from ..rowmath import RowPool
from ..topn import top_ids
from ..tree_verify import child_proposal
from ..verify import logsumexp, sample, softmax
from .base import Drafter, DrafterSpec, DraftLimits, Proposal

TREE_SEQS = DRAFT_MAX_LIMIT + 1  # sequences of a context that drafts or verifies trees (nodes + the root's)
DEFAULT_TOPK = 4  # SGLang's speculative_eagle_topk default
LLAMA_P_SPLIT = 0.1  # llama.cpp's --draft-p-split default (common.h: p_split)


@dataclass(frozen=True)
class TreeParams:
    """A tree's limits as the user gave them (0 / -1: not given).

    Args:
        topk: children per node (SGLang's --spec-eagle-topk).
        steps: the depth (SGLang's --spec-num-steps; 0: the pass's k).
        draft_tokens: tokens verified, the root included (SGLang's --spec-num-draft-tokens; 0: k + 1).
        parallel: leaves (llama-speculative's -np; 0: no cap).
        p_split: a child after a node's first needs q above this (--draft-p-split; -1: llama.cpp's 0.1 with -np,
            else none).
    """

    topk: int = DEFAULT_TOPK
    steps: int = 0
    draft_tokens: int = 0
    parallel: int = 0
    p_split: float = -1.0

    def split(self) -> float:
        """The branch threshold in force."""
        if self.p_split >= 0:
            return self.p_split
        return LLAMA_P_SPLIT if self.parallel > 0 else 0.0

    def budget(self, k: int) -> int:
        """The nodes a pass of draft length ``k`` drafts."""
        n = min(k, TREE_SEQS - 1)
        return min(n, self.draft_tokens - 1) if self.draft_tokens > 0 else n

    def depth(self, k: int) -> int:
        """The deepest node of a pass of draft length ``k``."""
        return min(self.steps, k) if self.steps > 0 else k


def tree_params(given: Sequence[tuple[str, object]]) -> TreeParams | None:
    """The tree's params from the options given (``(option name, value)`` pairs), or None when none was.

    Args:
        given: the options' click names and values (``spec_eagle_topk``, ``spec_num_steps``,
            ``spec_num_draft_tokens``, ``spec_tree_np``, ``spec_tree_p_split``).

    Returns:
        The params.
    """
    names = {"spec_eagle_topk": "topk", "spec_num_steps": "steps", "spec_num_draft_tokens": "draft_tokens",
             "spec_tree_np": "parallel", "spec_tree_p_split": "p_split"}
    fields = {names[k]: v for k, v in given if k in names and v is not None}
    return TreeParams(**fields) if fields else None


def drafts_tree(given: Sequence[tuple[str, object]]) -> bool:
    """Whether the options given ask for trees: any of the tree's options but ``-np``, or ``-np`` above 1 (``-np 1``
    alone stays a chain, as in llama-speculative).

    Args:
        given: the options' click names and values, as ``tree_params`` reads them.

    Returns:
        True when a drafter that can draft trees (the draft model, an EAGLE-3 head) should.
    """
    names = {k for k, v in given if v is not None}
    if names & {"spec_tree_p_split", "spec_eagle_topk", "spec_num_steps", "spec_num_draft_tokens"}:
        return True
    return any(k == "spec_tree_np" and v is not None and int(v) > 1 for k, v in given)


class RankRates:
    """What a run's verdicts taught the tree drafter: how often a node's first child, and a later one, was accepted
    when it was judged, by the node's draft confidence (its top q, in fifths). The draft's q is a poor guess of it
    (at T > 0 a sampled first child is accepted far more often than its rank's q says where q is flat: the target
    samples alike), so a slot's score is its parent's path score times the learned chance that the walk takes it
    (the ranks before it refused, this one accepted); each rate starts from the rank's q, worth ``PRIOR`` verdicts.
    Learned from earlier passes only: a slot's score never depends on the draws of its own pass."""

    PRIOR = 2.0

    def __init__(self) -> None:
        # (confidence fifth, or -1: any, rank 1 or 2: later) -> [judged, accepted]
        self.counts: dict[tuple[int, int], list[float]] = {}

    def rate(self, conf: float, rank: int, prior: float) -> float:
        """The chance a judged child of this rank (the first, or any later one) is accepted under a node of
        confidence ``conf``: its confidence fifth's count, starting from the rank's count over every fifth, which
        starts from ``prior``."""
        r = min(rank, 2)
        judged, accepted = self.counts.get((-1, r), (0.0, 0.0))
        pooled = (accepted + self.PRIOR * prior) / (judged + self.PRIOR)
        judged, accepted = self.counts.get((min(int(conf * 5), 4), r), (0.0, 0.0))
        return min(0.999, max(1e-6, (accepted + self.PRIOR * pooled) / (judged + self.PRIOR)))

    def learn(self, conf: float, rank: int, accepted: bool) -> None:
        for key in ((min(int(conf * 5), 4), min(rank, 2)), (-1, min(rank, 2))):
            c = self.counts.setdefault(key, [0.0, 0.0])
            c[0] += 1
            c[1] += accepted

    def learn_tree(self, judged: tuple, path: Sequence[int]) -> None:
        """A tree's verdicts (``TreeSearch.judged``: parents, ranks, confidences): at each node of the accepted
        ``path`` its children were judged in rank order up to the one accepted; at the last, all of them, refused."""
        parents, ranks, conf = judged
        kids: dict[int, list[int]] = {}
        for i, par in enumerate(parents):
            kids.setdefault(par, []).append(i)
        for j, u in enumerate([-1, *path]):
            nxt = path[j] if j < len(path) else -1
            for c in kids.get(u, ()):
                self.learn(conf[u], ranks[c], c == nxt)
                if c == nxt:
                    break

    def log_score(self, probs: list[float], rank: int) -> float:
        """log of the chance the walk takes the child of ``rank``: the ranks before it refused, it accepted (each
        rate starting from the rank's q)."""
        out = 0.0
        for j in range(1, rank + 1):
            a = self.rate(probs[0], j, probs[j - 1])
            out += math.log(a if j == rank else 1.0 - a)
        return out


class _Search:
    """One pass's best-first search (see the module docstring): the nodes, the slots, the draft's rows. ``d`` is
    the drafter: its ``params``, ``rates`` and ``pool``, and ``decode_nodes(search, v)``, which reads the rows of v
    and of the nodes the search needs next (a draft model's: ``TreeDrafter``; an EAGLE-3 head's: ``eagle3_tree``)."""

    def __init__(self, d: "TreeDrafter", lim: DraftLimits, temperature: float, rng: np.random.Generator) -> None:
        p = d.params
        self.d, self.t, self.rng = d, temperature, rng
        self.budget, self.max_depth = p.budget(lim.k), p.depth(lim.k)
        # under auto k the cost model may ask for a chain (lim.children 1): the first children only
        self.topk = min(max(1, p.topk), lim.children) if lim.children > 0 else max(1, p.topk)
        self.split, self.parallel = p.split(), p.parallel
        self.ids: list[int] = []
        self.parents: list[int] = []
        self.depth: list[int] = []
        self.logp: list[float] = []  # log path score: the product of the q of the ranks along the path
        self.q_probs: list[float] = []
        self.rank: list[int] = []  # each node's rank among its parent's children
        self.info: dict[int, tuple] = {}  # decoded node (-1 root) -> (top ids, their q, the q row at T > 0)
        self.drawn: dict[int, list[int]] = {}
        self.heap: list[tuple[float, int, int, int, bool]] = []  # (-score, order, node, rank, exact)
        self.n_pushed = 0
        self.leaves = 0

    def push(self, v: int, rank: int, score: float, exact: bool) -> None:
        heapq.heappush(self.heap, (-score, self.n_pushed, v, rank, exact))
        self.n_pushed += 1

    def read_row(self, v: int, row: np.ndarray) -> None:
        """What the search keeps of node v's draft row: its top-k ranks' q (T = 0: at temperature 1), and at
        T > 0 the q row its children are drawn from."""
        if self.t > 0:
            q = softmax(row, self.t, out=self.d.pool.take(len(row)))
            best = top_ids(q, self.topk)
            self.info[v] = (best, [float(q[j]) for j in best], q)
        else:
            best = top_ids(row, self.topk)
            lse = logsumexp(row)
            self.info[v] = (best, [math.exp(float(row[j]) - lse) for j in best], None)

    def slot_score(self, v: int, rank: int) -> float | None:
        """The log score of v's child slot ``rank``, v's row read: v's path score times the learned chance that the
        walk takes the rank's child (``RankRates``: whatever child is drawn at T > 0, a slot's score never depends
        on its own draw). None: the slot cannot be filled (past the top-k, or at most the split)."""
        lp = self.logp[v] if v >= 0 else 0.0
        _, probs, q = self.info[v]
        if rank > len(probs) or probs[rank - 1] <= 0 or (rank >= 2 and probs[rank - 1] <= self.split):
            return None
        return lp + self.d.rates.log_score(probs, rank)

    def draw(self, v: int, rank: int) -> tuple[int, float] | None:
        """v's child number ``rank``: its id and q (None: nothing left to draw). T = 0: v's token of that rank;
        T > 0: a draw from q without the children drawn before (``tree_verify.child_proposal``)."""
        best, probs, q = self.info[v]
        if q is None:
            return int(best[rank - 1]), probs[rank - 1]
        r = child_proposal(q, self.drawn.get(v, ()), rank, self.split)
        if r is None:
            return None
        x = sample(r, self.rng)
        return x, float(q[x])

    def run(self) -> None:
        """Fill the best slot until the budget is spent or no slot is left."""
        first = self.slot_score(-1, 1)
        if first is not None:
            self.push(-1, 1, first, True)
        while self.heap and len(self.ids) < self.budget:
            neg, _, v, rank, exact = heapq.heappop(self.heap)
            if v not in self.info:
                if not self.d.decode_nodes(self, v):
                    continue
            if not exact:  # a first child's score was its parent's bound; now the parent's row is read
                score = self.slot_score(v, rank)
                if score is not None:
                    self.push(v, rank, score, True)
                continue
            self.fill(v, rank, -neg)

    def fill(self, v: int, rank: int, score: float) -> None:
        """Add v's child number ``rank`` (if the leaves allow it), its path score the slot's, and offer the slots
        after it."""
        adds_leaf = v < 0 or rank > 1
        if adds_leaf and self.parallel > 0 and self.leaves >= self.parallel:
            return
        got = self.draw(v, rank)
        if got is None:
            return
        x, qx = got
        i = len(self.ids)
        self.ids.append(x)
        self.parents.append(v)
        self.depth.append(1 if v < 0 else self.depth[v] + 1)
        self.logp.append(score)
        self.q_probs.append(qx)
        self.rank.append(rank)
        self.drawn.setdefault(v, []).append(x)
        self.leaves += 1 if adds_leaf else 0
        if rank < self.topk:
            score = self.slot_score(v, rank + 1)
            if score is not None:
                self.push(v, rank + 1, score, True)
        if self.depth[i] < self.max_depth:  # its first child's score is at most its own path score
            self.push(i, 1, self.logp[i], False)

    def judged(self) -> tuple:
        """What the run's verdicts on this tree will teach ``RankRates.learn_tree``: (parents, ranks, each decoded
        node's confidence)."""
        return self.parents, self.rank, {v: info[1][0] for v, info in self.info.items()}

    def proposal(self) -> Proposal:
        """The tree as a proposal; at T > 0 the q rows its children were drawn from (the others back to the
        drafter's pool)."""
        tree_q = None
        if self.t > 0:
            tree_q = {v: self.info[v][2] for v in self.drawn}
            for v, info in self.info.items():
                if v not in self.drawn:
                    self.d.pool.give(info[2])
        return Proposal(ids=self.ids, q_probs=self.q_probs, stop=DRAFT_STOP_K, pool=self.d.pool, parents=self.parents,
                        tree_q=tree_q, p_split=self.split)

    def pending(self, first: int, cap: int) -> list[int]:
        """``first`` and up to cap - 1 more nodes whose first-child slots wait, best first, none decoded yet."""
        waiting = sorted(e for e in self.heap if e[3] == 1 and e[2] not in self.info and e[2] != first)
        return [first] + [e[2] for e in waiting[: cap - 1]]


TreeSearch = _Search  # the search, for the other drafters of trees (eagle3_tree.py)


class TreeDrafter(Drafter):
    """The draft model drafting a tree (see the module docstring).

    Args:
        model: the draft model (its context made with ``TREE_SEQS`` sequences).
        params: the tree's limits (None: the defaults).
    """

    name = "tree"

    def __init__(self, model: LoadedModel, params: TreeParams | None = None) -> None:
        self.model = model
        self.params = params or TreeParams()
        self.n_past = 0  # draft KV positions of sequence 0 holding accepted context
        self.pool = RowPool()
        self._seq_of: dict[int, int] = {}  # decoded node of the last proposal -> its sequence
        self._extended: set[int] = set()  # decoded nodes (-1 root) whose sequence a child extends
        self._next_seq = 1
        self._parents: list[int] = []  # the last proposal's parents
        self.rates = RankRates()  # the run's verdicts by rank and confidence
        self._judged: tuple | None = None  # the last proposal's (parents, ranks, confidence by node)

    def start(self) -> None:
        self.n_past = 0
        self._seq_of = {}
        self.rates = RankRates()

    def prefill(self, prompt: list[int]) -> None:
        self.model.decode_chunked(prompt, 0)
        self.n_past = len(prompt)
        self.model.kv_user = self

    def _catch_up(self, tokens: list[int]) -> None:
        """Decode, as one batch, every accepted token sequence 0 does not hold yet (all of them after another
        drafter used the draft's cache)."""
        m = self.model
        if m.kv_user is not self:
            m.rollback(0)
            self.n_past, m.kv_user = 0, self
        if self.n_past >= len(tokens):
            m.rollback(len(tokens) - 1)
            self.n_past = len(tokens) - 1
        m.decode_chunked(tokens[self.n_past:], self.n_past)
        self.n_past = len(tokens)

    def propose(self, tokens, k, temperature, rng) -> Proposal:
        lim = k if isinstance(k, DraftLimits) else DraftLimits(int(k))
        if lim.k <= 0 or self.model.n_seq < TREE_SEQS:
            return Proposal()
        self._catch_up(tokens)
        s = _Search(self, lim, temperature, rng)
        self._seq_of, self._extended, self._next_seq = {-1: 0}, set(), 1
        self._parents = s.parents
        s.read_row(-1, self.model.logits_last())
        s.run()
        self._judged = (s.parents, s.rank, {v: info[1][0] for v, info in s.info.items()})
        if lim.children == 1:
            return self._as_chain(s, temperature)
        return s.proposal()

    def _as_chain(self, s: _Search, temperature: float) -> Proposal:
        """A search of one child per node proposed as a chain (verified as one: the pass loop's chain verify), each
        draft's q row the row of the node before it at T > 0 (the others back to the pool)."""
        q_rows = None
        if temperature > 0:
            rows = [-1, *range(len(s.ids) - 1)] if s.ids else []
            q_rows = [s.info[v][2] for v in rows]
            for v, info in s.info.items():
                if v not in rows:
                    self.pool.give(info[2])
        return Proposal(ids=s.ids, q_probs=s.q_probs, q_rows=q_rows, stop=DRAFT_STOP_K, pool=self.pool)

    def decode_nodes(self, s: _Search, v: int) -> bool:
        """Decode ``v`` and the nodes the search needs next in one batch, each in its sequence (see the module
        docstring), and read their rows. False: no sequence is left for ``v``."""
        batch, seqs = [], []
        for w in s.pending(v, s.topk):
            par = s.parents[w]
            if par not in self._extended:
                seq = self._seq_of[par]
                self._extended.add(par)
            elif self._next_seq < self.model.n_seq:
                seq, self._next_seq = self._next_seq, self._next_seq + 1
                seq_copy(self.model, self._seq_of[par], seq, -1, self._pos(par, s) + 1)
            else:
                continue
            self._seq_of[w] = seq
            batch.append(w)
            seqs.append([seq])
        if not batch:
            return False
        decode_tree(self.model, [s.ids[w] for w in batch], [self._pos(w, s) for w in batch], seqs)
        rows = self.model.logits_rows(len(batch))
        for j, w in enumerate(batch):
            s.read_row(w, rows[j])
        return v in s.info

    def _pos(self, v: int, s: _Search) -> int:
        """Node v's position (the root's: the last accepted token's)."""
        return self.n_past - 1 + (s.depth[v] if v >= 0 else 0)

    def accept_tree(self, path: Sequence[int]) -> None:
        """Keep the accepted path's decoded nodes in sequence 0 and drop every other cell of the tree.

        Args:
            path: the accepted nodes, the root's child first.
        """
        m = self.model
        c = 0
        while c < len(path) and path[c] in self._seq_of:
            c += 1
        seq = self._seq_of[path[c - 1]] if c else 0
        seq_keep(m, seq)
        if seq != 0:
            seq_copy(m, seq, 0)
            seq_drop(m, seq)
        m.rollback(self.n_past + c)
        self.n_past += c
        self._seq_of = {}
        if self._judged is not None:
            self.rates.learn_tree(self._judged, path)
            self._judged = None

    def accept(self, n_accepted: int) -> None:
        """Without the tree's path (a caller that knows only a count): the chain of first children.

        Args:
            n_accepted: how many nodes of that chain were accepted.
        """
        path: list[int] = []
        for i, par in enumerate(self._parents):
            if len(path) < n_accepted and par == (path[-1] if path else -1):
                path.append(i)
        self.accept_tree(path)


def _make(res) -> TreeDrafter | None:
    if res.draft is None or res.draft.n_seq < TREE_SEQS:
        return None
    return TreeDrafter(res.draft, res.params.get("tree"))


SPEC = DrafterSpec(name="tree", spec_type="", needs="draft model", shape="tree", order=12, priority=11,
                   summary="the draft model proposes a tree (top-k branches, best paths first) verified in one "
                           "target decode (-np, --draft-p-split, --spec-eagle-topk; docs/trees.md)",
                   make=_make)

__all__ = ["DEFAULT_TOPK", "SPEC", "TREE_SEQS", "RankRates", "TreeDrafter", "TreeParams", "TreeSearch", "drafts_tree",
           "tree_params"]
