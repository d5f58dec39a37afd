"""The pass loop: one run, pass by pass, over the engine's parts (parts.py).

``PassLoop.events()`` yields ``RunStarted``, the prefill pass (pass 0), then one ``PassEvent`` per decode pass
(draft k tokens, verify them in one target decode, decide, roll back), ``SettingsChanged`` between passes when
the settings changed, and ``RunEnded`` last. The loop makes the decisions; each decided pass goes to the run's
``Finisher`` (finisher.py), which has it made into its event (eventmaker.py) inline or overlapped. The run's
choices (end of generation, k capping, n_predict, Ctrl+C) are listed in loop.py's docstring.

``PassLoop`` is made of a frame every strategy shares (``events``: the run's start, the prefill pass, the end of
the run and its errors), one strategy for the decode passes (``decode_passes``: here the serial one, each pass
drafting and then verifying) and the steps a strategy is made of (``_next_settings``, ``_choose_k``,
``_drafter_for``, ``_draft``, ``_verify_and_decide``; the pure decisions ``why_not_start`` and ``cut``).
Another strategy subclasses ``PassLoop`` and replaces ``decode_passes`` (parts.py says what it is handed).
"""

from __future__ import annotations

import time
from typing import Generator, Iterator

import numpy as np

from ...contract import events as E
from ...contract.draft_length import clamp_draft_length
from ...contract.errors import SpectuiError
from ...contract.events import Event, PassEvent, RunEnded, Settings
from ..drafters.base import Drafter, DraftLimits, Proposal
from ..drafters.draft_model import DraftModelDrafter
from ..llama.abort import DecodeAborted
from ..verify import greedy_verify, speculative_verify
from .eventmaker import PassEventMaker, PassWork, TargetProbs, pass_timing
from .finisher import Finisher
from .generation import Generation, RunCounters
from .graph_path import GraphTargetProbs, greedy_tokens_verify
from .parts import RunParts, RunRequest
from .policy import DraftPolicy
from .prefill import decode_prompt, first_token, run_started
from .tree_pass import chain_rows, tree_pass


def _described(exc: BaseException) -> str:
    """An unexpected failure in one line: its type and message."""
    return f"{type(exc).__name__}: {exc}".replace("\n", " ")


def why_not_start(prompt_tokens: list[int], n_ctx: int, n_predict: int, stopped: bool) -> tuple[str, str]:
    """(reason, error) when the run ends before the prefill pass; ("", "") when it can go on."""
    if not prompt_tokens:
        return E.STOP_ERROR, "the prompt is empty"
    if len(prompt_tokens) >= n_ctx:
        return E.STOP_CTX_FULL, (
            f"the prompt ({len(prompt_tokens)} tokens) does not fit the context (-c {n_ctx}) "
            "with room to generate"
        )
    if n_predict == 0:
        return E.STOP_N_PREDICT, ""
    if stopped:
        return E.STOP_USER, ""
    return "", ""


def cut(is_eog, ids: list[int], n_acc: int, tok: int, n_emitted: int, n_predict: int) -> tuple[int, str | None]:
    """How many of a pass's tokens (accepted drafts, then the target token) are emitted, cut at EOG (``is_eog``)
    / n_predict (``n_emitted`` already emitted), and the stop reason (None: go on)."""
    for i in range(n_acc + 1):
        t_id = ids[i] if i < n_acc else tok
        if is_eog(t_id):
            return i + 1, E.STOP_EOG
        if n_predict > 0 and n_emitted + i + 1 >= n_predict:
            return i + 1, E.STOP_N_PREDICT
    return n_acc + 1, None


def cap_k(draft_max: int, n_past: int, n_emitted: int, n_ctx: int, n_batch: int, n_predict: int) -> int | None:
    """The k a pass drafts: ``draft_max`` (already in 0..DRAFT_MAX_LIMIT: the settings' or the policy's) capped
    for a pass after ``n_past`` cells and ``n_emitted`` tokens: the verify batch fits the context and the batch
    size, and the pass cannot emit past n_predict. None: the context is full."""
    room = n_ctx - n_past  # free target cells; the verify batch needs k + 1 of them
    if room < 1:
        return None
    k = min(draft_max, room - 1, n_batch - 1)
    if n_predict > 0:
        k = min(k, n_predict - n_emitted - 1)
    return max(0, k)


def limits(s: Settings, k: int, inspect_top: int, defer: bool,
           members: tuple[tuple[str, int], ...] = (), children: int = 0) -> DraftLimits:
    """How far a pass under ``s`` drafts (k, --draft-p-min / --draft-min, the inspector's top-N, deferred; a
    chain's caps per member and a tree drafter's children per node under auto k)."""
    return DraftLimits(k, s.draft_p_min, s.draft_min, inspect_top, defer=defer, members=members, children=children)


def left_out(members: tuple[tuple[str, int], ...]) -> tuple[str, ...]:
    """The chain members a pass's caps leave out (capped at 0), in order (``PassEvent.left_out``)."""
    return tuple(name for name, most in members if most <= 0)


def _verify_record(index: int, g: Generation, rows: np.ndarray, ids: list[int], prop: Proposal | None, v,
                   temperature: float) -> dict:
    """What the debug hook is handed for a verified pass (tests: the logits behind the verdict)."""
    n_acc = v.n_accepted
    return {"index": index, "n_past": g.n_past, "target_logits": np.array(rows[: n_acc + 1]),
            "draft_ids": list(ids), "n_accepted": n_acc, "token": v.token,
            "draft_logits": prop.logit_rows if prop is not None else None, "temperature": temperature,
            "target_logits_all": np.array(rows), "verdict": v,
            "draft_stop_logits": prop.stop_row if prop is not None else None}


class PassLoop:
    """One run (see the module docstring); ``Engine.run`` makes one per call.

    Args:
        parts: the engine's loaded parts (``Engine.parts()``); the loop reads nothing else of the engine.
        request: what the run was asked for.

    The run's own state (``Generation``, ``RunCounters``, the ``Finisher``, the draft-length policy) is made
    when ``events()`` starts and kept here.
    """

    def __init__(self, parts: RunParts, request: RunRequest) -> None:
        self.parts, self.request, self.target = parts, request, parts.target
        self.control, self.n_predict = request.control, request.n_predict
        self.cursor = parts.cursor
        self.cursor.run_id += 1
        self.run_id = self.cursor.run_id
        self.may_overlap = request.overlap and parts.spare_core
        self.st = RunCounters()
        self.policy: DraftPolicy | None = None
        self.members, self.children = (), 0  # auto k: a chain's caps per member; a tree drafter's children per node
        self.head = None  # the engine's head when it reads this run's target decodes (set at the run's start)
        self.t0 = self.started_at = 0.0  # the run's clock, and the unix time at its start
        self.graph = parts.graph  # graph_path.GraphRun: the run's backend chains, or None

    def _observe(self, ev: Event) -> Event:
        if self.policy is not None:  # it sees every event of the run (its memory is its own aggregates)
            self.policy.observe(ev)
        return ev

    # ------------------------------------------------------------ the frame (every strategy)
    def events(self) -> Iterator[Event]:
        """The run's events; RunEnded always last (a stop, Ctrl+C or an error end the run with their reason).

        Returns:
            A generator: RunStarted, PassEvent (pass 0: the prefill), SettingsChanged..., RunEnded. Closing it
            early releases the engine (passes still being finished end first).
        """
        parts, st = self.parts, self.st
        self.policy = parts.policy_factory() if parts.policy_factory else None
        maker = PassEventMaker(self.target, parts.inspect_top, parts.others, parts.rows, parts.texts)
        self.fin = Finisher(parts.finishing, maker, self.may_overlap)
        self.t0, self.started_at = time.perf_counter(), time.time()  # one instant: RunStarted.started_at is t0
        self.cursor.in_run = True
        aborting = parts.abort.watching(self.control)  # a stop ends the decode in progress (abort.py)
        aborting.__enter__()
        try:
            for ev in self._body():
                yield self._observe(ev)
        except GeneratorExit:  # the consumer let go: passes still being finished end before anything else runs
            self.fin.settle()
            raise
        except (KeyboardInterrupt, DecodeAborted):  # DecodeAborted: the pass it cut is never an event
            st.reason = E.STOP_USER
        except SpectuiError as exc:
            st.reason, st.error = E.STOP_ERROR, str(exc)
        except Exception as exc:  # noqa: BLE001 - any engine failure ends the run with its message
            st.reason, st.error = E.STOP_ERROR, _described(exc)
        finally:
            aborting.__exit__(None, None, None)
            if self.run_id == self.cursor.run_id:
                self.cursor.in_run = False
                if self.graph is not None:  # the graph path's chains come off with the run
                    self.graph.off(parts.drafters.values())
        # passes decided before the run ended (the last one, or one before a stop, Ctrl+C or an error) still
        # reach the consumer, in order, before RunEnded (a closed generator never gets here)
        try:
            for ev in self.fin.drain():
                yield self._observe(ev)
        except KeyboardInterrupt:
            st.reason = st.reason or E.STOP_USER
        except Exception as exc:  # noqa: BLE001 - a pass that cannot be finished ends the run with its message
            st.reason, st.error = E.STOP_ERROR, _described(exc)
        yield self._observe(RunEnded(
            reason=st.reason or E.STOP_ERROR, error=st.error, n_passes=st.n_passes, n_emitted=st.n_emitted,
            n_drafted=st.n_drafted, n_accepted=st.n_accepted, wall_s=time.perf_counter() - self.t0,
        ))

    def _body(self) -> Iterator[Event]:
        """RunStarted, the prefill pass, then decode passes until a stop reason is set."""
        st, parts, prompt = self.st, self.parts, self.request.prompt
        parts.reset_for_run()
        if not isinstance(prompt, str):
            raise SpectuiError("the prompt must be text")
        # an empty prompt is empty, even where the tokenizer would add a BOS token to it
        prompt_tokens = self.target.tokenize(prompt) if prompt else []
        settings = self.control.settings
        g = Generation(prompt_tokens, settings.seed, parts.debug_hook)
        self._set_sampling(g, settings)
        # the head reads the target's decodes in this run (Engine.head_in_every_run, or the run starts with it)
        head = parts.head
        self.head = head if head is not None and (parts.head_in_every_run or settings.drafter == head.name) else None
        yield run_started(parts, self.request, prompt_tokens, settings, self.started_at)
        st.reason, st.error = why_not_start(prompt_tokens, parts.n_ctx, self.n_predict, self.control.stopped)
        if st.reason:
            return
        yield self._prefill_pass(g, settings)
        if st.reason:
            return
        yield from self.decode_passes(g, settings)

    def _set_sampling(self, g: Generation, s: Settings) -> None:
        """The graph path's chains (graph_path.py) for a pass's settings (the run's end takes them off)."""
        if self.graph is not None:
            self.graph.set(s.temperature, s.seed, g.rng, self.parts.drafters.values())

    def _prefill_pass(self, g: Generation, settings: Settings) -> PassEvent:
        """The target evaluates the whole prompt and picks the first token (no drafts); its wall time is the TTFT."""
        tgt, st = self.target, self.st
        prompt_tokens = g.prompt_tokens
        tp = time.perf_counter()
        drafter = self.parts.drafters.pick(settings.drafter)
        t_d = time.perf_counter()
        drafter.prefill(prompt_tokens)
        draft_ms = (time.perf_counter() - t_d) * 1000.0
        verify_ms, head_ms = decode_prompt(tgt, self.head, prompt_tokens)
        draft_ms += head_ms
        row = tgt.logits_last()
        temp = settings.temperature
        tok, prob, row = first_token(row, temp, g.rng, tgt if tgt.chain_rows else None)
        if g.debug_hook is not None:
            g.debug_hook({"index": 0, "n_past": 0, "target_logits": row[None, :].copy(), "draft_ids": [],
                          "n_accepted": 0, "token": tok, "draft_logits": None, "temperature": temp,
                          "target_logits_all": row[None, :].copy()})
        inspect = self.fin.maker.prefill_inspect(row, tok, temp)
        self.cursor.n_past = g.n_past = len(prompt_tokens)
        text = g.decoder.decode(tgt.piece(tok))
        g.tokens.append(tok)
        self.cursor.last_token = tok
        st.n_emitted = 1
        if tgt.is_eog(tok):
            st.reason = E.STOP_EOG
        elif 0 < self.n_predict <= 1:
            st.reason = E.STOP_N_PREDICT
        return PassEvent(
            index=0, prefill=True, settings=settings, k=0, target=E.TargetToken(id=tok, text=text, prob=prob,
                                                                               kind=E.PLAIN),
            emitted=(E.Token(id=tok, text=text, prob=prob),), timing=pass_timing(draft_ms, verify_ms, tp, self.t0),
            n_ctx_used=g.n_past, others_cpu=self.parts.others.sample(), inspect=inspect,
        )

    # ------------------------------------------------------------ the strategy: serial decode passes
    def decode_passes(self, g: Generation, settings: Settings) -> Iterator[Event]:
        """The decode passes after the prefill, until a stop reason is set: settings read between passes
        (SettingsChanged when they changed), k chosen, then one pass at a time, drafting and then verifying.
        Another strategy replaces this method (see the module docstring).

        Args:
            g: the run's generation so far (the prefill pass's token included).
            settings: the settings the prefill pass ran with.
        """
        st, fin = self.st, self.fin
        prev = settings
        index = 1
        while True:
            s = yield from self._next_settings(index, prev)
            if s is None:
                return
            prev = s
            tp = time.perf_counter() - fin.take_waited()
            g.reseed(s.seed)
            self._set_sampling(g, s)
            k = self._choose_k(g, s)
            if k is None:
                st.reason = E.STOP_CTX_FULL
                return
            fin.mode_for(s, self._spare_core_for(s))
            work, stop = self._decode_pass(g, s, k, index, tp)
            fin.submit(work)
            yield from fin.drain_decided()
            index += 1
            if stop:
                st.reason = stop
                return

    def _decode_pass(self, g: Generation, s: Settings, k: int, index: int, tp: float) -> tuple[PassWork, str | None]:
        """Draft k tokens, then verify and decide (``_verify_and_decide``)."""
        drafter = self._drafter_for(s)
        prop, draft_ms = self._draft(g, s, k, drafter)
        return self._verify_and_decide(g, s, k, index, tp, drafter, prop, draft_ms)

    # ------------------------------------------------------------ the steps a strategy is made of
    def _next_settings(self, index: int, prev: Settings) -> Generator[Event, None, Settings | None]:
        """Between passes: a stop ends the run, a pause waits (a paused screen shows every pass decided so far),
        changed settings are announced (SettingsChanged before pass ``index``). Yields the events this hands on;
        returns the next pass's settings, or None when the run stops (its reason set)."""
        st, control, fin = self.st, self.control, self.fin
        if control.stopped:
            st.reason = E.STOP_USER
            return None
        if control.paused:
            yield from fin.drain()
        control.wait_if_paused()
        if control.stopped:
            st.reason = E.STOP_USER
            return None
        s = control.settings
        if s != prev:
            yield from fin.drain()  # events stay in the order things happened
            yield E.SettingsChanged(before_pass=index, old=prev, new=s, t=time.perf_counter() - self.t0)
        return s

    def _choose_k(self, g: Generation, s: Settings) -> int | None:
        """The draft length for the next pass: --draft-max or the auto-k policy, capped so that the verify
        batch fits the context and the batch size and the pass cannot emit past n_predict. None: the
        context is full."""
        draft_max = s.draft_max  # in range: RunControl clamps the settings (clamp_settings)
        if s.auto:
            if self.policy is None:
                raise SpectuiError("automatic draft length needs a draft-length policy (Engine(draft_policy=...))")
            draft_max = clamp_draft_length(self.policy.choose(s))  # the one range rule, where a policy's k enters
        auto = s.auto and self.policy is not None
        self.members, self.children = (self.policy.members(), self.policy.children()) if auto else ((), 0)
        return cap_k(draft_max, g.n_past, self.st.n_emitted, self.parts.n_ctx, self.target.n_batch, self.n_predict)

    def _spare_core_for(self, s: Settings) -> bool:
        """A core is left for the finishing thread in a pass under ``s`` (a strategy that takes them says no)."""
        return True

    def _drafter_for(self, s: Settings) -> Drafter:
        """The pass's drafter (``Settings.drafter``); a head only in a run whose target decodes it read."""
        drafter = self.parts.drafters.pick(s.drafter)
        if drafter is self.parts.head and self.head is None:
            raise SpectuiError(f"--drafter {s.drafter}: the head did not read this run's target decodes (it drafts "
                               "only in runs that start with it here)")
        return drafter

    def _draft(self, g: Generation, s: Settings, k: int, drafter: Drafter) -> tuple[Proposal | None, float]:
        """``drafter``'s proposal of at most k tokens after ``g.tokens`` (None for k = 0) and its ms."""
        t_d = time.perf_counter()
        lim = limits(s, k, self.parts.inspect_top, self.fin.overlap, self.members, self.children)
        prop = drafter.propose(g.tokens, lim, s.temperature, g.rng) if k > 0 else None
        return prop, (time.perf_counter() - t_d) * 1000.0

    def _verify_and_decide(self, g: Generation, s: Settings, k: int, index: int, tp: float, drafter: Drafter,
                           prop: Proposal | None, draft_ms: float) -> tuple[PassWork, str | None]:
        """Verify the proposal in one target decode, decide, roll back; returns what the pass's event is made
        from and the stop reason (EOG or n_predict reached) or None. Only what decides the pass happens here;
        the inspector's top-N, the probabilities the event reports, the token texts and the event itself are
        left to the Finisher (on copies of the logit rows when it runs overlapped)."""
        tree = tree_pass(self, g, s, prop, drafter) if prop is not None and prop.parents is not None else None
        ids = tree.ids if tree is not None else prop.ids if prop is not None else []  # a tree: seen as a chain
        p, v, resid, verify_ms = tree.chain() if tree is not None else self._verify(g, s, ids, prop, index)
        t_v = time.perf_counter()
        span = (t_v - verify_ms / 1000.0, t_v)  # (about) the target's decode, which a draft thread may overlap
        if self.head is not None:  # an EAGLE-3 / MTP head reads the verify batch's hidden states (drafter work)
            t_h = time.perf_counter()
            self.head.target_decoded([g.tokens[-1]] + ids, g.n_past, v.n_accepted, rows=chain_rows(prop, tree))
            draft_ms += (time.perf_counter() - t_h) * 1000.0
        # the finishing thread reads the rows while the next pass drafts: llama.cpp's buffer itself when draft
        # decodes come first (the next verify waits for it), else a copy
        rows_buf, keep_view = self.fin.keep_rows(p, k > 0 and isinstance(drafter, DraftModelDrafter))
        n_acc, kd = v.n_accepted, len(ids)
        kind = E.PLAIN if kd == 0 else (E.BONUS if n_acc == kd else E.CORRECTION)
        n_out, stop = cut(self.target.is_eog, ids, n_acc, v.token, self.st.n_emitted, self.n_predict)
        pipe = self._settle(drafter, prop, v, stop, span) if tree is None else None
        self._advance(g, ids, n_acc, v.token, n_out, len(tree.nodes) if tree is not None else len(ids))
        # The pass's times: overlapped, the pass ends here (what follows is off its path); inline, making the
        # event is part of it, so the clock stops when the event is made. Other processes' CPU is sampled then.
        timing = pass_timing(draft_ms, verify_ms, tp, self.t0) if self.fin.overlap else None
        work = PassWork(index=index, settings=s, k=k, ids=ids, prop=prop, p=p, verdict=v, kind=kind, n_out=n_out,
                        timing=timing, n_ctx_used=g.n_past, decoder=g.decoder, left_out=left_out(self.members),
                        rows_buf=rows_buf, holds_view=keep_view, clock=(draft_ms, verify_ms, tp, self.t0),
                        # the verdict's residual is the debug hook's to keep; otherwise its buffer is reused
                        resid_buf=resid if g.debug_hook is None else None, pipe=pipe,
                        tree=tree.nodes if tree is not None else ())
        return work, stop

    def _verify(self, g: Generation, s: Settings, ids: list[int], prop: Proposal | None, index: int):
        """One target decode over [last, d1..dk] with logits for all k + 1 positions, and the verdict: (target
        probabilities, verdict, the residual's buffer or None, verify ms)."""
        tgt, temp, pool = self.target, s.temperature, self.parts.rows
        self.fin.free_rows()  # the decode overwrites the rows the previous pass's finishing may still read
        t_v = time.perf_counter()
        tgt.decode([g.tokens[-1]] + ids, g.n_past, "all")
        verify_ms = (time.perf_counter() - t_v) * 1000.0
        rows = tgt.logits_rows(len(ids) + 1)
        graph = tgt.chain_rows  # the graph path with a chain on the target (graph_path.target_p_for)
        p = GraphTargetProbs.of(tgt, rows, temp, pool) if graph and temp > 0 else TargetProbs(rows, temp, pool)
        resid = None
        if temp > 0:
            resid = pool.take(rows.shape[1]) if ids else None
            v = speculative_verify(p, prop.q_rows if prop is not None else None, ids, g.rng, out=resid)
        else:  # on the graph path: the chain's argmax of each of the same rows
            v = greedy_tokens_verify(tgt, ids) if graph else greedy_verify(rows, ids)
        if g.debug_hook is not None:
            g.debug_hook(_verify_record(index, g, rows, ids, prop, v, temp))
        return p, v, resid, verify_ms

    def _settle(self, drafter: Drafter, prop: Proposal | None, v, stop: str | None, span: tuple[float, float]):
        """After the verdict the drafter drops its rejected positions; returns a strategy's record of it, or None."""
        return None if prop is None else drafter.accept(v.n_accepted)

    def _advance(self, g: Generation, ids: list[int], n_acc: int, tok: int, n_out: int, n_drafted: int) -> None:
        """Roll back (the target keeps [last, accepted drafts]), the accepted tokens in, the counters."""
        if n_acc < len(ids):
            self.target.rollback(g.n_past + 1 + n_acc)
        g.accepted(ids[:n_acc], tok)
        self.cursor.n_past, self.cursor.last_token = g.n_past, tok
        self.st.count_pass(n_drafted, n_acc, n_out)
