"""A tree pass's verify: every node of a drafted tree in one target decode, the walk, and the target's KV cache
left holding the accepted path only.

The batch is the root (the last accepted token) and every node, each at its depth's position and in the sequences
of the leaves below it (leaf j is sequence j; the root is in all of them). Before the decode each leaf's sequence
is given the accepted context (llama_memory_seq_cp from sequence 0: the context is made with a unified cache, so
only the cells' sequence sets change), and llama.cpp's attention mask then lets each token see the context and
its own ancestors, nothing else. After the walk (``tree_verify``) the cache keeps one leaf's sequence below the
last accepted node (llama_memory_seq_keep), hands it back to sequence 0 and drops the cells past the accepted
path: no cell is copied, no branch decoded twice.

The pass is then seen as a chain (``TreeOutcome``): the accepted path, and the first child refused after it, are
its drafts, with their rows; the loop decides, cuts and reports it as it does a chain's, and the event carries the
whole tree besides (``PassEvent.tree``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ...contract.errors import SpectuiError
from ...contract.events import ACCEPTED, DISCARDED, REJECTED
from ...contract.judged import Judged
from ..drafters.base import Proposal
from ..llama.kv_tree import decode_tree, seq_copy, seq_drop, seq_keep
from ..llama.models import LoadedModel
from ..rowmath import RowPool
from ..tree_verify import TreeVerdict, children, depths, greedy_tree_verify, rrs_tree_verify
from ..verify import Verdict, logsumexp
from .eventmaker import TargetProbs


@dataclass
class TreeOutcome:
    """A verified tree seen as a chain: the target's probabilities of the chain's rows, its verdict and draft ids,
    the accepted path's node indices, every node as (id, parent, q, p, verdict, Judged or None), the verify's ms."""

    p: TargetProbs
    verdict: Verdict
    ids: list[int]
    path: tuple[int, ...]
    nodes: tuple[tuple[int, int, float, float, str, Judged | None], ...]
    verify_ms: float

    def chain(self) -> tuple[TargetProbs, Verdict, None, float]:
        """What a chain's verify gives the pass loop: (probabilities, verdict, no residual buffer, verify ms)."""
        return self.p, self.verdict, None, self.verify_ms


def leaf_sequences(parents: list[int]) -> tuple[list[list[int]], int]:
    """Each node's sequence ids (the leaves below it, leaf j being sequence j) and the number of leaves.

    Args:
        parents: the nodes' parents (-1: the root); a parent comes before its children.

    Returns:
        (sequences of node i at index i, leaves).
    """
    kids = children(parents)
    seqs: list[list[int]] = [[] for _ in parents]
    n_leaves = 0
    for i in range(len(parents)):
        if not kids[i + 1]:
            seqs[i] = [n_leaves]
            n_leaves += 1
    for i in range(len(parents) - 1, -1, -1):
        par = parents[i]
        if par >= 0:
            seqs[par] = sorted(set(seqs[par]) | set(seqs[i]))
    return seqs, n_leaves


def decode_all(target: LoadedModel, last: int, n_past: int, prop: Proposal) -> tuple[list[list[int]], float]:
    """The root and every node in one target decode (see the module docstring). Returns the nodes' sequences and
    the decode's ms."""
    parents = prop.parents or []
    seqs, n_leaves = leaf_sequences(parents)
    if n_leaves > target.n_seq:
        raise SpectuiError(f"a tree of {n_leaves} leaves needs a context of as many sequences ({target.n_seq})")
    for j in range(1, n_leaves):
        seq_copy(target, 0, j)
    t = time.perf_counter()
    decode_tree(target, [last] + list(prop.ids), [n_past] + [n_past + d for d in depths(parents)],
                       [list(range(n_leaves))] + seqs)
    return seqs, (time.perf_counter() - t) * 1000.0


def keep_path(target: LoadedModel, n_past: int, parents: list[int], seqs: list[list[int]], path) -> None:
    """The target's cache after the walk: the context, the root and the accepted path in sequence 0, nothing else."""
    last = path[-1] if path else -1
    kids = children(parents)
    node = last
    while kids[node + 1]:  # a leaf below the last accepted node: its sequence holds the path
        node = kids[node + 1][0]
    keep = seqs[node][0] if node >= 0 else 0
    seq_keep(target, keep)
    if keep != 0:
        seq_copy(target, keep, 0)
        seq_drop(target, keep)
    target.rollback(n_past + 1 + len(path))


def walk(rows: np.ndarray, temperature: float, prop: Proposal, rng: np.random.Generator,
         pool: RowPool) -> tuple[TreeVerdict, TargetProbs]:
    """The verdict over the tree's rows (greedy at T = 0, recursive rejection sampling above), and the rows'
    probabilities (softmaxed at T > 0 where the walk read them)."""
    parents = prop.parents or []
    tp = TargetProbs(rows, temperature, pool)
    if temperature > 0:
        tree_q = prop.tree_q or {}  # none for a node whose children were not drawn (point masses: suffix-tree)
        v = rrs_tree_verify(tp.__getitem__, tree_q.get, prop.ids, parents, prop.p_split, rng)
    else:
        v = greedy_tree_verify(rows, prop.ids, parents)
    return v, tp


def chain_nodes(parents: list[int], tv: TreeVerdict | TreeOutcome) -> list[int]:
    """The nodes a verified tree is seen as (a chain): the accepted path, then the first child refused after it."""
    kids = children(parents)
    return list(tv.path) + kids[(tv.path[-1] if tv.path else -1) + 1][:1]


def chain_view(rows: np.ndarray, tv: TreeVerdict, tp: TargetProbs, prop: Proposal,
               pool: RowPool) -> tuple[TargetProbs, Verdict, list[int]]:
    """The verified tree as a chain: the accepted path then the first child refused after it, their rows (a copy:
    the chain's rows 0..n), probabilities and verdict."""
    chain = chain_nodes(prop.parents or [], tv)
    idx = [0] + [c + 1 for c in chain]
    p = TargetProbs(np.take(rows, idx, axis=0), tp.t, pool)
    for j, r in enumerate(idx):
        if r in tp.cache:
            p.cache[j] = tp.cache.pop(r)
    for row in tp.cache.values():
        pool.give(row)
    tp.cache = {}
    resid = None if tv.residual is None else tv.residual.astype(np.float32)
    verdict = Verdict(len(tv.path), tv.token, tv.accept_p, tv.u, resid)
    return p, verdict, [prop.ids[c] for c in chain]


def node_records(rows: np.ndarray, temperature: float, prop: Proposal, tv: TreeVerdict):
    """Every node as (id, parent, q, the target's p of it in its parent's row, verdict, the test that judged it at
    T > 0 or None)."""
    t = temperature if temperature > 0 else 1.0
    lse: dict[int, float] = {}
    on_path, refused = set(tv.path), set(tv.rejected)
    tests = {c: Judged(p=pj, r=r, accept_p=a, u=u) for c, pj, r, a, u in tv.judged}
    out = []
    for i, (x, par) in enumerate(zip(prop.ids, prop.parents or [])):
        row = rows[par + 1]
        if par not in lse:
            lse[par] = logsumexp(row, t)
        p = float(np.exp(float(row[x]) / t - lse[par]))
        verdict = ACCEPTED if i in on_path else REJECTED if i in refused else DISCARDED
        out.append((int(x), int(par), float(prop.q_probs[i]), p, verdict, tests.get(i)))
    return tuple(out)


def verify_tree(target: LoadedModel, pool: RowPool, last: int, n_past: int, temperature: float, prop: Proposal,
                rng: np.random.Generator) -> TreeOutcome:
    """Verify a tree proposal in one target decode and keep the accepted path in the target's cache.

    Args:
        target: the target model (a context of ``n_seq`` >= the tree's leaves).
        pool: where softmaxed rows come from and go back to.
        last: the last accepted token (the root).
        n_past: the target's cells of accepted context (the root goes at this position).
        temperature: the pass's temperature.
        prop: the tree (``Proposal.parents``).
        rng: the run's generator.

    Returns:
        The outcome, seen as a chain.
    """
    if target.chain_rows:
        raise SpectuiError("--drafter tree verifies with numpy's rows: run it with --sampling cpu")
    seqs, verify_ms = decode_all(target, last, n_past, prop)
    rows = target.logits_rows(len(prop.ids) + 1)
    tv, tp = walk(rows, temperature, prop, rng, pool)
    nodes = node_records(rows, temperature, prop, tv)
    p, verdict, ids = chain_view(rows, tv, tp, prop, pool)
    # the event's drafts are the chain's: their q are its nodes' (the path need not be the first nodes drafted)
    prop.q_probs = [prop.q_probs[i] for i in chain_nodes(prop.parents or [], tv)]
    keep_path(target, n_past, prop.parents or [], seqs, tv.path)
    return TreeOutcome(p=p, verdict=verdict, ids=ids, path=tv.path, nodes=nodes, verify_ms=verify_ms)


def tree_pass(loop, g, s, prop: Proposal, drafter) -> TreeOutcome:
    """A pass loop's tree proposal verified (``verify_tree``); the drafter keeps the accepted path.

    Args:
        loop: the pass loop (``passes.PassLoop``: its target, row pool, finisher, head and graph path).
        g: the run's ``Generation``.
        s: the pass's settings.
        prop: the tree.
        drafter: the drafter that proposed it.

    Returns:
        The outcome, seen as a chain.

    Raises:
        SpectuiError: a head that cannot read a tree verify (a block drafter) reads the run's target decodes, or the
            graph path is on.
    """
    if (loop.head is not None and not loop.head.reads_tree) or loop.graph is not None:
        raise SpectuiError("a tree runs with --sampling cpu, beside no head but an EAGLE-3 head or MTP layers")
    loop.fin.free_rows()  # the decode overwrites the rows the previous pass's finishing may still read
    out = verify_tree(loop.target, loop.parts.rows, g.tokens[-1], g.n_past, s.temperature, prop, g.rng)
    drafter.accept_tree(out.path)
    return out


def chain_rows(prop: Proposal | None, tree: TreeOutcome | None) -> list[int] | None:
    """The rows of a tree's batch that its chain (``chain_view``: the root, the accepted path, the first child
    refused after it) was read from, in the chain's order: a head that reads every target decode reads these.

    Args:
        prop: the pass's proposal.
        tree: the pass's verified tree, or None (a chain's pass).

    Returns:
        The batch's row of each token of the chain, the root's (0) first; None for a chain's pass (its rows in order).
    """
    if tree is None or prop is None:
        return None
    return [0] + [c + 1 for c in chain_nodes(prop.parents or [], tree)]
