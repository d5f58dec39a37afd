"""Drafters: who proposes the next k tokens. One interface, four kinds (``Drafter.name`` is the
``--drafter`` value, one of ``contract.events.DRAFTERS``).

- ``DraftModelDrafter`` ("model"): a small model with its own llama.cpp context, greedy at temperature 0 and
  sampled from q at the same temperature otherwise. Its KV cache is kept exactly in sync with the
  accepted text: before drafting it decodes, as one batch, every accepted token it has not decoded yet
  (the last emitted token, plus d_k when all k drafts were accepted: d_k is proposed, never decoded);
  after verification ``accept()`` removes its rejected positions with llama_memory_seq_rm.
- ``NgramDrafter`` ("ngram"): prompt lookup - the longest recent n-gram (n = 3, 2, 1) that ends the context
  and occurred earlier proposes what followed it. A point mass: q(x) = 1.
- ``NoDrafter`` ("none"): proposes nothing; the loop then runs the target alone (the baseline) through the
  same passes and events.
- ``HeadDrafter`` ("eagle3" or "mtp"): an EAGLE-3 head or the target's own MTP layers (made by
  ``spec_heads.make_head_drafter``), drafting from the target's hidden states; it also hears of every target
  decode (``target_decoded``).

Interface: ``start()`` at the beginning of a run (caches cleared), ``prefill(prompt)`` inside pass 0,
``propose(tokens, k, temperature, rng) -> Proposal`` and ``accept(n_accepted)`` after verification.
``tokens`` is the whole accepted context (prompt + emitted); it only grows during a run.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..contract.events import DRAFT_STOP_K, DRAFT_STOP_NO_MATCH, DRAFT_STOP_NONE, DRAFT_STOP_P_MIN
from .eagle3 import TOP_K
from .llama_ext import top_of_row
from .llama_lib import llama
from .models import LoadedModel
from .rowmath import RowPool
from .topn import LLAMA_DRAFT_TOP_K, llama_confidence, top_ids
from .verify import logsumexp, sample, softmax


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

    def release(self) -> None:
        """The q rows and row copies are read no more (the pass is finished): back to the drafter's pool."""
        if self.pool is not None:
            for q in self.q_rows or ():
                self.pool.give(q)
            self.q_rows = None

    def complete(self, between: Callable[[], object] | None = None) -> "Proposal":
        """Fill in what propose() deferred (DraftLimits.defer): q(d_i) at T = 0 and the top-N, from copies of
        the draft's raw rows, with the same functions and in the same order as the undeferred path, so the
        numbers are identical. Safe to call from another thread than propose's; a no-op when nothing is
        pending. ``between`` is called before each position (the engine's finishing thread waits there for a
        decode to run)."""
        for entry in self.pending:
            _finish_row(self, *entry, between=between)
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


class Drafter:
    name = "none"
    keep_rows = False  # copy raw logit rows into proposals (tests / debugging)

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


class NoDrafter(Drafter):
    name = "none"

    def propose(self, tokens, k, temperature, rng) -> Proposal:
        return Proposal()


class NgramDrafter(Drafter):
    """Prompt lookup over the accepted context, incremental index per n (most recent occurrence wins)."""

    name = "ngram"

    def __init__(self, n_max: int = 3) -> None:
        self.n_max = n_max
        self.start()

    def start(self) -> None:
        self._index: list[dict[tuple, int]] = [dict() for _ in range(self.n_max + 1)]
        self._upto = 0  # end positions < _upto are indexed

    def _update(self, tokens: list[int]) -> None:
        if len(tokens) < self._upto + 1:
            self.start()  # a shorter context: a new run without start() (defensive)
        # index n-grams ending at j for every j <= len - 2 (so a continuation exists and the final
        # suffix itself is never its own match)
        last = len(tokens) - 2
        for j in range(self._upto, last + 1):
            for n in range(1, self.n_max + 1):
                if j - n + 1 < 0:
                    break
                self._index[n][tuple(tokens[j - n + 1 : j + 1])] = j
        self._upto = max(self._upto, last + 1)

    def propose(self, tokens, k, temperature, rng) -> Proposal:
        lim = k if isinstance(k, DraftLimits) else DraftLimits(int(k))
        k = lim.k
        if k <= 0:
            return Proposal()
        if len(tokens) < 2:
            return Proposal(stop=DRAFT_STOP_NO_MATCH)
        self._update(tokens)
        for n in range(min(self.n_max, len(tokens) - 1), 0, -1):
            j = self._index[n].get(tuple(tokens[-n:]))
            if j is not None:
                ids = list(tokens[j + 1 : j + 1 + k])
                # a point mass: q = 1 on each draft, so --draft-p-min never stops it
                top = [[(d, 1.0)] for d in ids] if lim.top_n > 0 else None
                return Proposal(ids=ids, q_probs=[1.0] * len(ids), q_rows=None, top=top,
                                stop=DRAFT_STOP_K if len(ids) == k else DRAFT_STOP_NO_MATCH)
        return Proposal(stop=DRAFT_STOP_NO_MATCH)


class DraftModelDrafter(Drafter):
    name = "model"

    def __init__(self, model: LoadedModel) -> None:
        self.model = model
        self.n_past = 0  # draft KV positions holding accepted context
        self._decoded_drafts = 0  # drafts of the last proposal that sit in the draft KV (k - 1 at most)
        self._rows = RowPool()  # row copies of deferred positions and q rows, returned when a pass is finished
        self.graph = False  # the run's graph path (graph_path.py): a backend chain on the draft's context
        self.scale = 1.0  # raw logits = the rows read x this (the graph path at T > 0: T)

    def start(self) -> None:
        self.n_past = 0
        self._decoded_drafts = 0

    def prefill(self, prompt: list[int]) -> None:
        self.model.decode_chunked(prompt, 0)
        self.n_past = len(prompt)

    def _catch_up(self, tokens) -> None:
        """Decode, as one batch, every accepted token the draft KV does not hold yet."""
        m = self.model
        pending = tokens[self.n_past :]
        if not pending:  # cannot happen in the loop (the last token is never decoded yet); be safe
            m.rollback(len(tokens) - 1)
            self.n_past = len(tokens) - 1
            pending = tokens[-1:]
        m.decode_chunked(pending, self.n_past)
        self.n_past = len(tokens)

    def propose(self, tokens, k, temperature, rng) -> Proposal:
        m = self.model
        self._decoded_drafts = 0
        lim = k if isinstance(k, DraftLimits) else DraftLimits(int(k))
        k = lim.k
        if k <= 0:
            return Proposal()
        self._catch_up(tokens)
        ids: list[int] = []
        q_probs: list[float] = []
        q_rows: list[np.ndarray] | None = [] if temperature > 0 else None
        keep: list[np.ndarray] | None = [] if self.keep_rows else None
        top: list[list[tuple[int, float]]] | None = [] if lim.top_n > 0 else None
        n_top = max(lim.top_n, LLAMA_DRAFT_TOP_K if lim.p_min > 0 else 0)
        prop = Proposal(ids=ids, q_probs=q_probs, q_rows=q_rows, logit_rows=keep, top=top, stop=DRAFT_STOP_K,
                        pool=self._rows, own_rows=lim.defer and keep is None)
        for i in range(k):
            row = m.logits_last()
            # the top-N is what the inspector reads; with --draft-p-min the confidence test needs the top 10 now
            need_best = lim.p_min > 0 and i >= lim.n_min
            best = top_ids(row, n_top) if n_top and (need_best or not lim.defer) else None
            if need_best:  # (the graph path's rows at T > 0 are row / T: the top 10 scaled back)
                conf = llama_confidence(row, best) if self.scale == 1.0 else llama_confidence(
                    row[best] * np.float32(self.scale), np.arange(len(best)))
                if conf < lim.p_min:  # llama.cpp: this position's token is not drafted
                    prop.stop, prop.stop_p = DRAFT_STOP_P_MIN, conf
                    if keep is not None:
                        prop.stop_row = row.copy()
                    break
            if keep is not None:
                raw = row.copy() if self.scale == 1.0 else row * np.float32(self.scale)
            elif lim.defer:  # a reused buffer: a fresh 600 KB array per position costs its page faults
                raw = self._rows.take(len(row))
                np.copyto(raw, row)
            else:
                raw = row
            if keep is not None:
                keep.append(raw)
            d, q = self._draw(row, best, temperature, rng)
            if q is not None:
                q_rows.append(q)  # type: ignore[union-attr]
                q_probs.append(float(q[d]))
            entry = (raw, best, q, d, temperature, lim.top_n, n_top)
            if lim.defer:
                prop.pending.append(entry)
            else:
                _finish_row(prop, *entry)
            ids.append(d)
            if i < k - 1:
                if lim.cancel is not None and lim.cancel.is_set():
                    break
                m.decode([d], self.n_past + i, "last")
                self._decoded_drafts += 1
        return prop

    @property
    def decoded_drafts(self) -> int:
        """Drafts of the last proposal whose cells are in the draft's KV (after the accepted context)."""
        return self._decoded_drafts

    def hold(self, n_past: int, rollback: bool = False) -> None:
        """The draft's KV holds accepted context up to ``n_past`` and no draft after it (``rollback``: drop every
        cell from there on first). The pipelined loop (pipeline.py) moves the KV this way past a guess it
        decoded, and back to the accepted context after a block it threw away."""
        if rollback:
            self.model.rollback(n_past)
        self.n_past = n_past
        self._decoded_drafts = 0

    def _draw(self, row: np.ndarray, best: np.ndarray | None, temperature: float,
              rng: np.random.Generator) -> tuple[int, np.ndarray | None]:
        """One position's draft token and its q row (None at T = 0). ``graph`` (graph_path: a backend chain on
        the draft context): the chain's token, and at T > 0 its probability row copied (the next draft decode
        overwrites it); otherwise q = softmax(row / T) and a draw with the run's RNG, or the argmax."""
        if self.graph:
            d = self.model.sampled_token(-1)
            if temperature > 0:
                q = self._rows.take(len(row))
                np.copyto(q, self.model.probs_last())
                return d, q
            return d, None
        if temperature > 0:
            q = softmax(row, temperature, out=self._rows.take(len(row)))
            return sample(q, rng), q
        # argmax = top_ids(row)[0]: both break ties by the lower id
        return (int(best[0]) if best is not None else int(np.argmax(row))), None

    def accept(self, n_accepted: int) -> None:
        keep = min(n_accepted, self._decoded_drafts)
        if keep < self._decoded_drafts:
            self.model.rollback(self.n_past + keep)
        self.n_past += keep
        self._decoded_drafts = 0


def _finish_row(prop: Proposal, row: np.ndarray, best: np.ndarray | None, q: np.ndarray | None, d: int,
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



class HeadDrafter(Drafter):
    """An EAGLE-3 head (``eagle3.Eagle3Head``) or the target's own MTP block (``mtp.MtpHead``) behind the
    drafter interface. The head drafts from the target's hidden states, so it sees every target decode
    (``target_decoded``, called by the pass loop after the prefill chunks and after each verify, with the
    pass's verdict: the head writes its KV for the batch, keeps the accepted row's state and drops the rest,
    as llama-server does). Each drafted position's q is the head's own logit row, as for a draft model: the
    greedy token at T = 0 (the reference's top-k 10 choice, so the drafts equal llama.cpp's), a sample of
    softmax(row / T) above, and the same acceptance rules in the loop."""

    reads_target = True
    info = None  # events.HeadInfo, set by spec_heads.make_head_drafter (RunStarted.head)

    def __init__(self, name: str, head) -> None:
        self.name = name
        self.head = head
        self._n_vocab = int(head.n_vocab)

    def start(self) -> None:
        """A new run: the head's cache and its carried state are empty, as when it was made."""
        h = self.head
        h.rollback(0)
        if hasattr(h, "pending_pos"):  # EAGLE-3
            h.pending_pos, h.verify_pos_first = -1, -1
            h.pending_g = np.zeros_like(h.pending_g)
            h.verify_g = h.verify_g[:0]
        else:  # MTP
            h.pending_h = np.zeros_like(h.pending_h)
            h.verify_h = h.verify_h[:0]

    def _row(self, i: int = 0) -> np.ndarray:
        L = llama()
        return np.ctypeslib.as_array(L.llama_get_logits_ith(self.head.ctx, int(i)), shape=(self._n_vocab,))

    def target_decoded(self, tokens: list[int], pos0: int, n_accepted: int | None = None) -> None:
        """The target decoded ``tokens`` at ``pos0``.. (its hidden states are in its context now). After a
        verify, ``n_accepted`` drafts of ``tokens[1:]`` were accepted: keep those, drop the rest."""
        h = self.head
        h.process(list(tokens), int(pos0))
        if n_accepted is not None:
            h.accept(int(n_accepted))
            h.rollback(int(pos0) + 1 + int(n_accepted))

    def propose(self, tokens, k, temperature, rng) -> Proposal:
        lim = k if isinstance(k, DraftLimits) else DraftLimits(int(k))
        if lim.k <= 0 or not tokens:
            return Proposal()
        keep: list[np.ndarray] | None = [] if self.keep_rows else None
        q_rows: list[np.ndarray] | None = [] if temperature > 0 else None
        top: list[list[tuple[int, float]]] | None = [] if lim.top_n > 0 else None
        n_top = max(lim.top_n, LLAMA_DRAFT_TOP_K if lim.p_min > 0 else 0)
        prop = Proposal(ids=[], q_probs=[], q_rows=q_rows, logit_rows=keep, top=top, stop=DRAFT_STOP_K)
        steps: list[tuple] = []  # per position the head evaluated: (raw row copy, best, q, d, confidence)

        def pick(ctx, i: int = 0) -> tuple[int, float]:
            row = self._row(i).copy()
            best = top_ids(row, n_top) if n_top else None
            if temperature > 0:
                q = softmax(row, temperature)
                d = sample(q, rng)
            else:
                q = None
                d, _ = top_of_row(row, TOP_K)
            conf = llama_confidence(row, best) if lim.p_min > 0 else 1.0
            steps.append((row, best, q, int(d), conf))
            if len(steps) <= lim.n_min:  # --draft-min: never stop for --draft-p-min before N drafts
                conf = max(conf, lim.p_min)
            return int(d), conf

        h = self.head
        if self.name == "mtp":
            out = h.draft(tokens[-1], len(tokens) - 1, lim.k, lim.p_min, pick=pick)
        else:
            out = h.draft(tokens[-1], lim.k, lim.p_min, pick=pick)
        for i, (row, best, q, d, conf) in enumerate(steps):
            if i >= len(out):  # the position refused for confidence
                prop.stop, prop.stop_p = DRAFT_STOP_P_MIN, conf
                if keep is not None:
                    prop.stop_row = row
                break
            if keep is not None:
                keep.append(row)
            if q is not None:
                q_rows.append(q)  # type: ignore[union-attr]
                prop.q_probs.append(float(q[d]))
            _finish_row(prop, row, best, q, d, temperature, lim.top_n, n_top)
            prop.ids.append(d)
            prop.heads.append(h.head_of(i) if hasattr(h, "head_of") else 0)
        return prop
