"""The drafter seam: what every drafter is and says about itself.

A drafter proposes the next tokens of a pass; the loop verifies them (engine/run/passes.py). Each drafter is
one module of this package that defines ``SPEC`` (a ``DrafterSpec``: its names, what it needs, the shape of
what it proposes, how to make it) and its class; ``spectui.engine.drafters`` finds them all
(``registry.specs()``). The lifecycle, as llama.cpp's ``common_speculative`` (begin / draft / accept):

- ``start()`` at the beginning of a run (caches cleared), ``prefill(prompt)`` inside pass 0;
- ``propose(tokens, k, temperature, rng) -> Proposal``: up to k drafts after ``tokens`` (the whole accepted
  context; it only grows during a run);
- ``accept(n_accepted)`` after verification: the drafter keeps the accepted drafts and drops the rest.

Also here: ``Proposal`` (what a pass drafted: ids, q of each, the q rows at T > 0, why drafting stopped),
``DraftLimits`` (how far to draft) and ``finish_row`` (a drafted position's q and top-N, shared by the
model-based drafters).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ...contract.events import DRAFT_STOP_NONE
from ..rowmath import RowPool
from ..topn import top_ids
from ..verify import logsumexp

# what a drafter drafts from; "target's tree sequences": no model, but a target context made with a token tree's
# sequences (a model-free drafter proposing trees: suffix-tree; EngineOptions.tree_seqs)
NEEDS = ("nothing", "draft model", "EAGLE-3 head", "target's MTP layers", "target's hidden states",
         "target's tree sequences")
TREE_TARGET = NEEDS[-1]
SHAPES = ("chain", "tree", "chain or tree")  # a chain is a tree with one branch; the last: a tree when the tree's
# options are given (an EAGLE-3 head: drafters/eagle3_tree.py)


@dataclass(frozen=True)
class DrafterResources:
    """What an engine has loaded that a drafter may draft from (``DrafterSpec.make``'s argument).

    Args:
        target: the target model (``llama.models.LoadedModel``).
        draft: the draft model, or None.
        head: the head drafter the engine loaded (``Engine(head=...)``), or None.
        params: per llama.cpp spec type, the options the user gave it (``--spec-ngram-*``: the type's params
            dataclass); a type not in it takes llama.cpp's defaults.
    """

    target: object
    draft: object | None = None
    head: object | None = None
    params: dict = field(default_factory=dict)


@dataclass(frozen=True)
class DrafterSpec:
    """One drafter, as it describes itself: the command line, --help, the ``d`` key, the trace and the docs
    read these fields and nothing else.

    Args:
        name: spectui's name (``--drafter NAME``, ``Settings.drafter``, the trace).
        spec_type: llama.cpp's ``--spec-type`` name for the same drafter, or "" where llama.cpp has none.
        needs: what it drafts from (one of ``NEEDS``).
        shape: what it proposes (one of ``SHAPES``).
        summary: one line for --help and the docs' list.
        make: the drafter on an engine's loaded resources, or None where they lack what it needs.
        order: its place in lists and in the ``d`` key's cycle (lower first).
        head: drafted by a head the engine must be loaded with (``Engine(head=name)``).
        priority: its place in a chain (lower drafts first): llama.cpp's order (common_speculative_init: the
            n-gram types, then the model-based ones).
        params: the maker of its options' params (llama.cpp's ``--spec-ngram-*``: fields named after them), None
            for a drafter without such options.
        block: it drafts all k tokens in one draft pass (a block drafter: DFlash, DSpark), so its draft cost is
            that pass's, whatever k.
    """

    name: str
    spec_type: str
    needs: str
    shape: str
    summary: str
    make: Callable[[DrafterResources], "Drafter | None"]
    order: int = 100
    head: bool = False
    priority: int = 100
    params: Callable[..., object] | None = None
    block: bool = False

    def __post_init__(self) -> None:
        if self.needs not in NEEDS or self.shape not in SHAPES:
            raise ValueError(f"drafter {self.name}: needs {self.needs!r} / shape {self.shape!r} unknown")


@dataclass
class Proposal:
    ids: list[int] = field(default_factory=list)
    q_probs: list[float] = field(default_factory=list)  # q(d_i) at the temperature in force (T=0: T=1 softmax)
    q_rows: list[np.ndarray] | None = None  # full q rows when temperature > 0 (None: point mass)
    logit_rows: list[np.ndarray] | None = None  # copies of the raw draft logits (only when debugging)
    # the draft's top-N (id, q) per drafted position when asked (top_n > 0); a point mass: [(d_i, 1.0)]
    top: list[list[tuple[int, float]]] | None = None
    stop: str = DRAFT_STOP_NONE  # why drafting stopped (events.DRAFT_STOPS)
    stop_p: float = -1.0  # the confidence that stopped it (DRAFT_STOP_P_MIN), else -1
    stop_row: np.ndarray | None = None  # debugging: the raw logits of the position refused for confidence
    # DraftLimits.defer: per drafted position, what complete() still has to compute (q_probs at T = 0, top)
    pending: list[tuple] = field(default_factory=list)
    pool: RowPool | None = None  # where complete() returns the row copies and release() the q rows
    own_rows: bool = False  # the pending rows are pool copies nobody else keeps (not debugging copies)
    heads: list[int] = field(default_factory=list)  # an EAGLE-3 / MTP head: which head drafted each id (0-based)
    drafter: str = ""  # in a chain (chain.ChainDrafter): the member that proposed this pass's drafts
    # a tree (draft_tree.py): each node's parent (-1: the root, the last accepted token; None: a chain), the q row
    # each expanded node's children were drawn from at T > 0 (-1: the root's) and the branch threshold
    parents: list[int] | None = None
    tree_q: dict[int, np.ndarray] | None = None
    p_split: float = 0.0

    def release(self) -> None:
        """The q rows and row copies are read no more (the pass is finished): back to the drafter's pool."""
        if self.pool is not None:
            for q in self.q_rows or ():
                self.pool.give(q)
            for q in (self.tree_q or {}).values():
                self.pool.give(q)
            self.q_rows = self.tree_q = None

    def complete(self, between: Callable[[], object] | None = None) -> "Proposal":
        """Fill in what propose() deferred (DraftLimits.defer): q(d_i) at T = 0 and the top-N, from copies of
        the draft's raw rows, with the same functions and in the same order as the undeferred path, so the
        numbers are identical. Safe to call from another thread than propose's; a no-op when nothing is
        pending. ``between`` is called before each position (the engine's finishing thread waits there for a
        decode to run)."""
        for entry in self.pending:
            finish_row(self, *entry, between=between)
            if self.pool is not None and self.own_rows:
                self.pool.give(entry[0])
        self.pending = []
        return self


@dataclass(frozen=True)
class DraftLimits:
    """How far to draft in one pass: at most ``k``; with ``p_min`` > 0 stop at the first position whose
    confidence (llama.cpp's: top-10 softmax at temperature 1) is below it, but never before ``n_min``
    drafts. ``top_n`` > 0 asks for the draft's top-N per position (the inspector)."""

    k: int
    p_min: float = 0.0
    n_min: int = 0
    top_n: int = 0
    # decide only what the pass needs (the token; q(d) at T > 0) and leave the rest of each position (q(d)
    # at T = 0, the top-N) to Proposal.complete(), on copies of the rows (the engine's overlapped finishing)
    defer: bool = False
    # set: stop before the next draft decode (a pipelined block drafted ahead and no longer wanted: pipeline.py)
    cancel: threading.Event | None = None
    # a chain (chain.ChainDrafter) under --draft-max auto: (member, its most drafts) pairs, 0 leaving the member
    # out of the pass; a member not named drafts up to k
    members: tuple[tuple[str, int], ...] = ()
    # a tree drafter under --draft-max auto: its most children per node in this pass (0: its own limits; 1: a chain,
    # proposed and verified as one: the cost model chose it over a tree, analysis/cost/tree_cost.py)
    children: int = 0


class Drafter:
    name = "none"
    keep_rows = False  # copy raw logit rows into proposals (tests / debugging)
    reads_tree = False  # a head whose ``target_decoded`` reads a tree verify's rows (``rows``): head.HeadDrafter

    def start(self) -> None:
        """A new run begins (the target's and the draft's caches are empty)."""

    def prefill(self, prompt: list[int]) -> None:
        """Pass 0: evaluate the prompt (draft model only)."""

    def propose(
        self, tokens: list[int], k: int | DraftLimits, temperature: float, rng: np.random.Generator
    ) -> Proposal:
        """Up to k drafts after ``tokens``.

        Args:
            tokens: the whole accepted context (prompt + emitted; it only grows during a run).
            k: the most drafts, or ``DraftLimits`` (k, --draft-p-min / --draft-min, the inspector's top-N, defer).
            temperature: 0: greedy drafts; above: drafts sampled from q at this temperature.
            rng: the run's generator (samples at T > 0).

        Returns:
            The ``Proposal``: the ids, q of each, the q rows at T > 0, why drafting stopped.
        """
        raise NotImplementedError

    def accept(self, n_accepted: int) -> None:
        """Verification accepted the first ``n_accepted`` drafts of the last proposal: the drafter keeps them
        (and its KV cache drops the rest).

        Args:
            n_accepted: how many of the proposal's drafts, from its first, were accepted.
        """

    def accept_tree(self, path) -> None:
        """Verification of a tree proposal (``Proposal.parents``) accepted the nodes ``path``, the root's child
        first: the drafter keeps them and drops the rest. A chain's path is its first drafts.

        Args:
            path: the accepted nodes' indices.
        """
        self.accept(len(path))


def finish_row(prop: Proposal, row: np.ndarray, best: np.ndarray | None, q: np.ndarray | None, d: int,
                temperature: float, top_n: int, n_top: int, between: Callable[[], object] | None = None) -> None:
    """One drafted position's numbers besides the token: q(d) at T = 0 (the temperature-1 softmax) and the
    top-N (id, q) pairs. ``row``: the draft's raw logits at that position (a copy when deferred).
    ``between`` (deferred work) is called before each of its two parts."""
    if between is not None:
        between()
    if temperature > 0:
        if prop.top is not None:
            if best is None:
                best = top_ids(row, n_top)
            prop.top.append([(int(j), float(q[j])) for j in best[:top_n]])
        return
    if best is None and prop.top is not None:
        best = top_ids(row, n_top)
    if between is not None:
        between()
    lse = logsumexp(row)
    prop.q_probs.append(float(np.exp(float(row[d]) - lse)))
    if prop.top is not None:
        prop.top.append([(int(j), float(np.exp(float(row[j]) - lse))) for j in best[:top_n]])


def loaded_head(name: str) -> Callable[[DrafterResources], "Drafter | None"]:
    """``make`` for a head's SPEC: the engine's head drafter when the engine was loaded with the head ``name``
    (``Engine(head=name)``), else None."""
    return lambda res: res.head if res.head is not None and res.head.name == name else None
