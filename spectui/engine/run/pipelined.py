"""The pipelined pass-loop strategy (``--pipeline``): ``PipelinedPassLoop``, a ``passes.PassLoop`` whose passes
under ``Settings.pipeline`` draft on the engine's draft thread (pipeline.py: the thread and the block) while the
target verifies the pass before.

It keeps PassLoop's frame and steps and replaces four of them: ``_draft`` (the drafts come from the block drafted
during the previous verify, a hit's, or from a block drafted afresh on the draft thread, which then goes on
drafting ahead), ``_settle`` (after the verdict: keep the block drafted ahead for the next pass, or throw it away
and roll the draft's KV back), ``_spare_core_for`` (a split that takes every core leaves none to the finishing
thread) and ``decode_passes`` (the draft thread is stopped before the run ends). A pass that is not pipelined
(the setting off, another drafter than the draft model, k = 0, the graph path) is the sequential pass, on the
loop's own thread, at the sequential threads. ``Engine.run`` uses this loop for every run of an engine with a
draft model: the setting may change between passes, as every setting.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import Iterator

from ...contract.events import SPEC_CHANGED, SPEC_END, SPEC_GUESS, SPEC_NONE, SPEC_REJECTED, Event, Settings
from ..drafters.base import Drafter, DraftLimits, Proposal
from ..drafters.draft_model import DraftModelDrafter
from .generation import Generation
from .parts import RunParts, RunRequest
from .passes import PassLoop, cap_k, limits
from .pipeline import SWITCH_INTERVAL_S, Block, PipeWork, affinity, draft_block, overlap_ms, pin


def _same_settings(a: Settings, b: Settings) -> bool:
    """A block drafted ahead under ``a`` serves a pass under ``b``: the same settings (k aside under automatic
    k, where the policy chooses it: the block is then cut to the k chosen, or drafted on to it)."""
    if b.auto:
        return dataclasses.replace(a, draft_max=0) == dataclasses.replace(b, draft_max=0)
    return a == b


def _cut_to(prop: Proposal, k: int) -> Proposal:
    """The first ``k`` drafts of a proposal (a block drafted ahead, for a pass that asks for fewer)."""
    cut = lambda xs: xs[:k] if xs is not None else None  # noqa: E731
    return dataclasses.replace(prop, ids=prop.ids[:k], q_probs=prop.q_probs[:k], q_rows=cut(prop.q_rows),
                               logit_rows=cut(prop.logit_rows), top=cut(prop.top), pending=prop.pending[:k],
                               heads=prop.heads[:k], stop="k", stop_p=-1.0, stop_row=None)


class PipelinedPassLoop(PassLoop):
    """One run of an engine with a draft model (see the module docstring)."""

    def __init__(self, parts: RunParts, request: RunRequest) -> None:
        super().__init__(parts, request)
        self.setup = parts.pipeline
        self.drafter: DraftModelDrafter = parts.drafters.get("model")
        self.block: Block | None = None  # this pass's block
        self.ahead: Block | None = None  # a hit's block: its ``spec`` are the next pass's drafts
        self.work: PipeWork | None = None  # this pass's record, made by _draft, completed by _settle
        self.split = False  # the contexts are at the pipelined split
        self._saved: tuple | None = None  # (switch interval, draft gate, loop thread's affinity) while split

    def _pipelined(self, s: Settings, drafter: Drafter, k: int) -> bool:
        return bool(s.pipeline) and k > 0 and drafter is self.drafter and self.graph is None

    def decode_passes(self, g: Generation, settings: Settings) -> Iterator[Event]:
        try:
            yield from super().decode_passes(g, settings)
        finally:  # the draft thread stops, the contexts get their sequential threads back, before the run ends
            self._end()

    def _spare_core_for(self, s: Settings) -> bool:
        return not s.pipeline or sum(self.setup.split) < self.setup.cores

    def _draft(self, g: Generation, s: Settings, k: int, drafter: Drafter) -> tuple[Proposal | None, float]:
        on = self._pipelined(s, drafter, k)
        thrown = self._keep_or_throw(s, on)
        self._set_split(on)
        why = SPEC_CHANGED if thrown else SPEC_NONE
        if not on:
            self.work = PipeWork(thrown=thrown, thrown_why=why) if thrown else None
            return super()._draft(g, s, k, drafter)
        t_d = time.perf_counter()
        b = self._block(g, s, limits(s, k, self.parts.inspect_top, self.fin.overlap))
        b.wait(b.drafts_ready)
        self.block = b
        self.work = PipeWork(overlapped=b.given, thrown=thrown, thrown_why=why, draft_busy_ms=b.busy_s * 1000.0)
        return b.first, (time.perf_counter() - t_d) * 1000.0

    def _keep_or_throw(self, s: Settings, on: bool) -> list[int]:
        """The block drafted ahead (a hit's), kept for this pass or thrown away (its drafts returned)."""
        a = self.ahead
        if a is None:
            return []
        if not (on and _same_settings(a.settings, s)):
            a.cancel.set()
        a.finish()
        if on and not a.cancel.is_set() and a.spec is not None:
            return []
        self.ahead = None
        # the accepted context ends with the guess (it was the target's token): drop it and the drafts after it
        self.drafter.hold(a.base + len(a.first.ids), rollback=True)
        return list(a.spec.ids) if a.spec is not None else []

    def _block(self, g: Generation, s: Settings, lim: DraftLimits) -> Block:
        """This pass's block on the draft thread: a hit's drafts (cut to this pass's k), or drafted afresh."""
        a, self.ahead = self.ahead, None
        n_past, n_emitted = g.n_past, self.st.n_emitted
        draft_max = lim.k if s.auto else s.draft_max

        def next_limits(m: int) -> DraftLimits | None:
            k = cap_k(draft_max, n_past + m + 1, n_emitted + m + 1, self.parts.n_ctx, self.target.n_batch,
                      self.n_predict)
            return dataclasses.replace(lim, k=k) if k else None

        b = Block(list(g.tokens), lim, s, next_limits)
        if a is not None:
            b.first, b.given, b.decoded, b.busy_s = a.spec, True, self.drafter.decoded_drafts, a.spec_ms() / 1000.0
            if lim.k < len(a.spec.ids):
                b.first, b.decoded = _cut_to(a.spec, lim.k), min(b.decoded, lim.k - 1)
        b.done = self.setup.thread.submit(draft_block, self.drafter, b)
        return b

    def _settle(self, drafter: Drafter, prop: Proposal | None, v, stop: str | None, span: tuple[float, float]):
        """A hit keeps the block drafted ahead for the next pass; a miss stops the draft thread after its decode in
        progress and rolls the draft's KV back to the accepted context. Returns the pass's PipeWork or None."""
        b, self.block = self.block, None
        w, self.work = self.work, None
        if b is None:
            super()._settle(drafter, prop, v, stop, span)
            return w
        m, n_acc = len(b.first.ids), v.n_accepted
        if stop is None and n_acc == m:
            b.wait(b.guess_ready)  # the last draft's decode: the next pass needs it, hit or miss
            w.hit = b.guess >= 0 and b.guess == v.token
        w.overlap_ms = overlap_ms(b.spec_t, span, time.perf_counter())
        w.guess = b.guess
        if w.hit:
            self.ahead = b
            return w
        t = time.perf_counter()
        b.cancel.set()
        b.finish()
        w.cut_wait_ms = (time.perf_counter() - t) * 1000.0
        w.thrown += ([b.guess] if b.guess >= 0 else []) + (list(b.spec.ids) if b.spec is not None else [])
        if w.thrown:
            w.thrown_why = SPEC_END if stop else SPEC_REJECTED if n_acc < m else SPEC_GUESS
        self.drafter.hold(b.base + min(n_acc, b.decoded), rollback=True)
        return w

    def _end(self) -> None:
        """The run ends (also on errors and stops): the draft thread stops, the contexts get their sequential
        threads back. What was drafted ahead is dropped (the next run clears the caches)."""
        for b in (self.block, self.ahead):
            if b is not None and b.done is not None:
                b.cancel.set()
                b.done.exception()  # waits; what it raised is the run's no more
        self.block = self.ahead = None
        self._set_split(False)

    def _set_split(self, on: bool) -> None:
        """Both contexts at the pipelined split (or back at the sequential counts); while split, the GIL's switch
        interval is short, the draft's decodes leave the finishing thread's gate alone, and with the setup's
        ``pin`` the loop's thread and the draft thread run on cores of their own."""
        if on == self.split:
            return
        setup, draft = self.setup, self.parts.draft
        t, td = setup.split if on else setup.threads
        self.target.set_threads(t)
        draft.set_threads(td)
        if on:
            self._saved = (sys.getswitchinterval(), draft.gate, affinity())
            sys.setswitchinterval(min(self._saved[0], SWITCH_INTERVAL_S))
            draft.gate = None
            cores = sorted(self._saved[2] or ())
            if setup.pin and len(cores) >= t + td:
                pin(set(cores[:t]))
                setup.thread.cores = set(cores[t:t + td])
        elif self._saved is not None:
            interval, draft.gate, mask = self._saved
            sys.setswitchinterval(interval)
            if setup.thread.cores is not None:
                pin(mask)
                setup.thread.cores = None
        self.split = on
