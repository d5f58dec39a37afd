"""Event making: a decided pass becomes its ``PassEvent``.

``PassEventMaker.make(work)`` turns what the pass loop decided (``PassWork``: the drafts, the verdict, the
target's logit rows) into the event: the inspector's record of every verified row, the drafts with their
verdicts and probabilities, the emitted tokens with their texts. It is pure work on the pass's own copies and
the run's text decoder (passes are made one at a time, in order), so the ``Finisher`` may run it on the
finishing thread. ``TargetProbs`` holds one pass's target probabilities; ``pass_timing`` stops a pass's clock.
"""

from __future__ import annotations

import codecs
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ...contract.events import (
    ACCEPTED,
    DISCARDED,
    REJECTED,
    Candidate,
    DraftToken,
    Inspection,
    PassEvent,
    PipeInfo,
    Settings,
    TargetToken,
    Timing,
    Token,
    TreeNode,
)
from ..cpu import OthersCpu
from ..drafters.base import Proposal
from ..llama.models import LoadedModel
from ..rowmath import RowPool
from ..topn import top_ids, top_two_margin
from ..verify import Verdict, logsumexp, softmax
from .pipeline import PipeWork


class TargetProbs:
    """The target's probability rows of one pass. At T > 0 rows are softmaxed at T on first use (rows past a
    rejection never are) and ``speculative_verify`` indexes them; ``prob(i, token)`` is the probability
    reported in events (at T = 0: the temperature-1 softmax)."""

    logit_scale = 1.0  # rows x this = the raw logits (graph_path.GraphTargetProbs: the chain's rows are row / T)

    def __init__(self, rows: np.ndarray, temperature: float, pool: RowPool | None = None) -> None:
        self.rows = rows
        self.t = temperature
        self.pool = pool  # where the softmaxed rows come from (and go back to once the pass is finished)
        self.cache: dict[int, np.ndarray] = {}
        self._lse: dict[int, float] = {}

    def __getitem__(self, i: int) -> np.ndarray:
        p = self.cache.get(i)
        if p is None:
            row = self.rows[i]
            p = softmax(row, self.t, out=self.pool.take(len(row)) if self.pool is not None else None)
            self.cache[i] = p
        return p

    def __len__(self) -> int:
        return len(self.rows)

    def prob(self, i: int, token: int) -> float:
        if self.t > 0:
            return float(self[i][token])
        return float(np.exp(float(self.rows[i][token]) - self.lse(i)))

    def lse(self, i: int) -> float:
        """log of row i's partition function at the reported temperature (T = 0: temperature 1)."""
        v = self._lse.get(i)
        if v is None:
            v = self._lse[i] = logsumexp(self.rows[i], self.t if self.t > 0 else 1.0)
        return v

    def probs(self, i: int, ids: np.ndarray) -> list[float]:
        """p of ``ids`` in row i at the reported temperature, without softmaxing a row not yet softmaxed."""
        if i in self.cache:
            p = self.cache[i]
            return [float(p[j]) for j in ids]
        r = self.rows[i]
        t = self.t if self.t > 0 else 1.0
        lse = self.lse(i)
        return [float(np.exp(float(r[j]) / t - lse)) for j in ids]


@dataclass
class PassWork:
    """What one decided pass hands to ``PassEventMaker.make``: its own copies of everything the event is made
    from (the run's text decoder is shared: passes are made one at a time, in order)."""

    index: int
    settings: Settings
    k: int
    ids: list[int]
    prop: Proposal | None
    p: TargetProbs
    verdict: Verdict
    kind: str
    n_out: int
    timing: Timing | None  # None (inline): measured when the event is made
    n_ctx_used: int
    decoder: codecs.IncrementalDecoder
    rows_buf: np.ndarray | None = None  # a reused copy of the target rows (back to the FinishingThread's buffers)
    resid_buf: np.ndarray | None = None  # the residual's buffer (T > 0), back to the maker's RowPool
    holds_view: bool = False  # p.rows is llama.cpp's own buffer: the next target decode waits for this pass
    # overlapped: called between the parts of the work (the finishing thread waits there for a decode to run)
    between: Callable[[], object] | None = None
    clock: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)  # draft_ms, verify_ms, pass start, run start
    pipe: PipeWork | None = None  # a pipelined pass (pipeline.py): what the draft thread did meanwhile
    left_out: tuple[str, ...] = ()  # the chain's members auto k left out of this pass (PassEvent.left_out)
    tree: tuple = ()  # a tree pass (tree_pass.py): every node as (id, parent, q, p, verdict, Judged or None)


def pass_timing(draft_ms: float, verify_ms: float, tp: float, t0: float) -> Timing:
    """A pass's Timing, its clock stopped now (tp: the pass's start, t0: the run's)."""
    now = time.perf_counter()
    wall = (now - tp) * 1000.0
    return Timing(draft_ms=draft_ms, verify_ms=verify_ms, other_ms=max(0.0, wall - draft_ms - verify_ms),
                  wall_ms=wall, t_end=now - t0)


class PassEventMaker:
    """Makes one run's pass events. ``inspect_top``: the candidates recorded per verified row (0: no inspector
    record); ``texts``: the engine's token id -> text cache; ``prob_rows``: where the pass's softmaxed rows and
    residual go back to; ``others``: other processes' CPU, sampled once per event."""

    def __init__(self, target: LoadedModel, inspect_top: int, others: OthersCpu, prob_rows: RowPool,
                 texts: dict[int, str]) -> None:
        self.target = target
        self.inspect_top = inspect_top
        self.others = others
        self.prob_rows = prob_rows
        self.texts = texts

    def make(self, w: PassWork) -> PassEvent:
        """The pass's event from what the pass loop decided: the inspector's record, the drafts with their
        verdicts and probabilities, the emitted tokens with their texts."""
        prop, p, v, ids = w.prop, w.p, w.verdict, w.ids
        temp = w.settings.temperature
        between = w.between
        if prop is not None:
            prop.complete(between)
        n_acc, tok = v.n_accepted, v.token
        inspect = self._inspect(p, prop, ids, v, temp, between) if self.inspect_top else ()
        if between is not None:
            between()
        q_probs = prop.q_probs if prop is not None else []
        drafts = self._judged_drafts(w.decoder, ids, q_probs, n_acc, p)
        out, target_token = self._tokens(w.decoder, ids, q_probs, n_acc, tok, p.prob(n_acc, tok), w.kind, w.n_out)
        timing = w.timing if w.timing is not None else pass_timing(*w.clock)
        event = PassEvent(
            index=w.index, prefill=False, settings=w.settings, k=w.k, drafts=tuple(drafts), target=target_token,
            n_accepted=n_acc, emitted=tuple(out), timing=timing, n_ctx_used=w.n_ctx_used,
            others_cpu=self.others.sample(),  # other processes' CPU since the last sample (a /proc/stat read)
            draft_stop=prop.stop if prop is not None else "", draft_stop_p=prop.stop_p if prop is not None else -1.0,
            inspect=inspect, draft_heads=tuple(prop.heads) if prop is not None else (),
            drafter=(prop.drafter or w.settings.drafter) if prop is not None and prop.ids else "",
            left_out=w.left_out,
            pipeline=self._pipe_info(w.pipe) if w.pipe is not None else None,
            tree=tuple(TreeNode(id=t, text=self._text(t), prob=q, parent=par, verdict=vd, target_prob=pt, judged=jd)
                       for t, par, q, pt, vd, jd in w.tree),
        )
        # the pass's probability rows are read no more: back to the pool for the next passes
        for row in p.cache.values():
            self.prob_rows.give(row)
        p.cache = {}
        self.prob_rows.give(w.resid_buf)
        if prop is not None:
            prop.release()
        return event

    def _pipe_info(self, w: PipeWork) -> PipeInfo:
        """A pipelined pass's record; the tokens thrown away with their own texts (each piece alone: they never
        reach the output)."""
        thrown = tuple(Token(id=t, text=self._text(t)) for t in w.thrown)
        return PipeInfo(overlapped=w.overlapped, guess=w.guess, hit=w.hit, thrown=thrown, thrown_why=w.thrown_why,
                        overlap_ms=w.overlap_ms, draft_busy_ms=w.draft_busy_ms, cut_wait_ms=w.cut_wait_ms)

    def prefill_inspect(self, row: np.ndarray, token: int, temperature: float) -> tuple[Inspection, ...]:
        """The prefill pass's inspector record (its one row; no drafts)."""
        if not self.inspect_top:
            return ()
        return self._inspect(TargetProbs(row[None, :], temperature), None, [], Verdict(0, token), temperature)

    def _text(self, tid: int) -> str:
        t = self.texts.get(tid)
        if t is None:
            t = self.texts[tid] = self.target.piece(tid).decode("utf-8", errors="replace")
        return t

    def _candidates(self, pairs) -> tuple[Candidate, ...]:
        return tuple(Candidate(id=int(i), text=self._text(int(i)), prob=float(q)) for i, q in pairs)

    def _inspect(
        self, p: TargetProbs, prop: Proposal | None, ids: list[int], v: Verdict, temp: float,
        between: Callable[[], object] | None = None,
    ) -> tuple[Inspection, ...]:
        """The inspector's record of every row the target evaluated: its top-N and top-two margin, the draft's
        top-N, the acceptance test's numbers (T > 0) and, at a T > 0 rejection, the residual's top-N."""
        n = self.inspect_top
        out = []
        for i in range(len(ids) + 1):
            if between is not None:
                between()
            row = p.rows[i]
            best = top_ids(row, max(n, 2))
            if between is not None:
                between()
            tt = self._candidates(zip(best[:n], p.probs(i, best[:n])))
            dt: tuple[Candidate, ...] = ()
            if i < len(ids) and prop is not None and prop.top is not None:
                dt = self._candidates(prop.top[i])
            acc = u = -1.0
            if temp > 0 and i < len(v.accept_p):
                acc, u = v.accept_p[i], v.u[i]
            res: tuple[Candidate, ...] = ()
            if i == v.n_accepted and v.residual is not None:
                rb = top_ids(v.residual, n)
                res = self._candidates((j, v.residual[j]) for j in rb)
            margin = top_two_margin(row, best) * p.logit_scale
            out.append(Inspection(position=i, target_top=tt, draft_top=dt, margin=margin,
                                  accept_p=acc, u=u, residual_top=res))
        return tuple(out)

    def _judged_drafts(
        self, decoder, ids: list[int], q_probs: list[float], n_acc: int, p: TargetProbs
    ) -> list[DraftToken]:
        """The drafts with their verdicts; texts decoded on a copy of the decoder state (rejected ones never
        reach the output)."""
        state = decoder.getstate()
        texts = [decoder.decode(self.target.piece(d)) for d in ids]
        decoder.setstate(state)
        drafts = []
        for i, d in enumerate(ids):
            if i < n_acc:
                verdict, target_prob = ACCEPTED, p.prob(i, d)
            elif i == n_acc:
                verdict, target_prob = REJECTED, p.prob(i, d)
            else:
                verdict, target_prob = DISCARDED, 0.0
            drafts.append(DraftToken(id=d, text=texts[i], prob=q_probs[i], verdict=verdict, target_prob=target_prob))
        return drafts

    def _tokens(
        self, decoder, ids: list[int], q_probs: list[float], n_acc: int, tok: int, tok_prob: float, kind: str,
        n_out: int,
    ) -> tuple[list[Token], TargetToken | None]:
        """The first ``n_out`` of the accepted drafts then the target token, with their texts: (tokens, target
        token). The target token is None when the cut came before it."""
        out: list[Token] = []
        target_token = None
        for i in range(n_out):
            t_id = ids[i] if i < n_acc else tok
            txt = decoder.decode(self.target.piece(t_id))
            pr = q_probs[i] if i < n_acc else tok_prob
            out.append(Token(id=t_id, text=txt, prob=pr))
            if i == n_acc:
                target_token = TargetToken(id=tok, text=txt, prob=tok_prob, kind=kind)
        return out, target_token
