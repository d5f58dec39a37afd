"""The pass loop: one run of an ``Engine``, pass by pass.

``PassLoop.events()`` yields ``RunStarted``, the prefill pass (pass 0), then one ``PassEvent`` per decode pass
(draft k tokens, verify them in one target decode, decide, roll back), ``SettingsChanged`` between passes when
the settings changed, and ``RunEnded`` last. The loop makes the decisions; each decided pass goes to the run's
``Finisher`` (finisher.py), which has it made into its event (eventmaker.py) inline or overlapped. The run's
choices (end of generation, k capping, n_predict, Ctrl+C) are listed in loop.py's docstring.
"""

from __future__ import annotations

import codecs
import statistics
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator, Protocol

import numpy as np

from ..contract import events as E
from ..contract.control import DRAFT_MAX_LIMIT, RunControl
from ..contract.errors import SpectuiError
from ..contract.events import Event, MachineProbe, PassEvent, RunEnded, RunStarted, Settings
from .drafters import DraftLimits, DraftModelDrafter, Drafter, Proposal
from .eventmaker import PassEventMaker, PassWork, TargetProbs, pass_timing
from .finisher import Finisher
from .graph_path import GraphTargetProbs, greedy_tokens_verify
from .models import LoadedModel
from .pipeline import Pipeline
from .verify import greedy_verify, logsumexp, sample, softmax, speculative_verify

if TYPE_CHECKING:
    from .loop import Engine


class DraftPolicy(Protocol):
    """What the loop asks of a draft-length policy (``spectui.analysis.draft_policy.PolicyByMode``): it sees
    every event of the run and, when ``settings.auto`` is set, chooses the next pass's k."""

    def observe(self, event: Event) -> None: ...

    def choose(self, settings: Settings) -> int: ...


@dataclass
class TargetCursor:
    """What the engine knows of the target's KV cache between runs (``Engine.measure_verify_ms`` reads it):
    the cells holding accepted context, the last accepted token, whether a run is going on, and the newest
    run's number (an older, abandoned run must not touch a newer run's state)."""

    n_past: int = 0
    last_token: int | None = None
    in_run: bool = False
    run_id: int = 0


class _RunState:
    """The counters and the stop reason of one run."""

    def __init__(self) -> None:
        self.reason = ""
        self.error = ""
        self.n_passes = 0
        self.n_emitted = 0
        self.n_drafted = 0
        self.n_accepted = 0


class _Generation:
    """What one run has generated so far: token history, accepted KV length, RNG, the UTF-8 text decoder."""

    def __init__(self, prompt_tokens: list[int], seed: int | None, debug_hook: Callable[[dict], None] | None) -> None:
        self.prompt_tokens = prompt_tokens
        self.tokens = list(prompt_tokens)
        self.n_past = 0
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.debug_hook = debug_hook  # tests: per-pass logits (the engine's hook when the run began)

    def reseed(self, seed: int | None) -> None:
        """A new RNG when the seed setting changed mid-run."""
        if seed != self.seed:
            self.rng = np.random.default_rng(seed)
            self.seed = seed


def single_decode_ms(model: LoadedModel, token: int, pos: int, repeats: int = 3) -> float:
    """Median time of single-token decodes at ``pos``, each rolled back (one warm-up decode first)."""
    times = []
    for i in range(repeats + 1):
        t = time.perf_counter()
        model.decode([token], pos, "last")
        dt = (time.perf_counter() - t) * 1000.0
        model.rollback(pos)
        if i:
            times.append(dt)
    return statistics.median(times)


class SequentialDrafting:
    """Drafting on the loop's own thread before each verify, as every loop in the field does; the pipelined
    loop's ``pipeline.Pipeline`` has the same steps (``propose`` before the verify, ``settle`` after it)."""

    def spare_core(self, s: Settings) -> bool:
        return True

    def propose(self, drafter: Drafter, g: "_Generation", lim: DraftLimits, s: Settings) -> Proposal | None:
        return drafter.propose(g.tokens, lim, s.temperature, g.rng) if lim.k > 0 else None

    def settle(self, drafter: Drafter, prop: Proposal | None, v, stop: str | None, span) -> None:
        if prop is not None:  # the drafter drops its rejected positions
            drafter.accept(v.n_accepted)

    def end(self) -> None:
        pass


def _first_token(row: np.ndarray, temperature: float, rng: np.random.Generator,
                 graph: LoadedModel | None = None) -> tuple[int, float, np.ndarray]:
    """The prefill pass's token, its probability and the raw row: sampled at T > 0, argmax (temperature-1
    probability) at 0. ``graph`` (the target, its chain attached: graph_path.py): at T > 0 drawn from the
    chain's p with the run's RNG, and the raw row is the chain's row x T (the inspector's)."""
    if temperature > 0 and graph is not None:
        p = graph.probs_last()
        tok = sample(p, rng)
        return tok, float(p[tok]), row * np.float32(temperature)
    if temperature > 0:
        p = softmax(row, temperature)
        tok = sample(p, rng)
        return tok, float(p[tok]), row
    tok = int(np.argmax(row))
    return tok, float(np.exp(float(row[tok]) - logsumexp(row))), row


def _graph_set(loop: "PassLoop", g: _Generation, s: Settings) -> None:
    """The graph path's chains (graph_path.py) for a pass's settings (the run's end takes them off)."""
    if loop.graph is not None:
        loop.graph.set(s.temperature, s.seed, g.rng, loop.e._drafters.values())


def _described(exc: BaseException) -> str:
    """An unexpected failure in one line: its type and message."""
    return f"{type(exc).__name__}: {exc}".replace("\n", " ")


def _decode_prompt(tgt, head, prompt_tokens: list[int]) -> tuple[float, float]:
    """The prompt through the target; with an EAGLE-3 / MTP head, chunk by chunk, the head reading each chunk's
    hidden states before the next chunk overwrites them. Returns (the target's ms, the head's ms)."""
    t_v = time.perf_counter()
    if head is None:
        tgt.decode_chunked(prompt_tokens, 0)
        return (time.perf_counter() - t_v) * 1000.0, 0.0
    verify_ms = head_ms = 0.0
    n, step = len(prompt_tokens), max(1, min(tgt.n_batch, 512))
    for i in range(0, n, step):
        chunk = prompt_tokens[i:i + step]
        tgt.decode(chunk, i, "last" if i + step >= n else "none")
        t_h = time.perf_counter()
        verify_ms += (t_h - t_v) * 1000.0
        head.target_decoded(chunk, i)
        t_v = time.perf_counter()
        head_ms += (t_v - t_h) * 1000.0
    return verify_ms, head_ms

def _run_started(loop: "PassLoop", prompt: str, prompt_tokens: list[int], settings: Settings) -> RunStarted:
    """A run's first event, with single-token decode times of both models measured at position 0."""
    e = loop.e
    calib_tok = prompt_tokens[0] if prompt_tokens else 0
    target_ms = single_decode_ms(e.target, calib_tok, 0)
    draft_ms = single_decode_ms(e.draft, calib_tok, 0) if e.draft is not None else 0.0
    return RunStarted(
        run_id=uuid.uuid4().hex[:12], started_at=time.time(), target=e.target_info, draft=e.draft_info,
        prompt=prompt, prompt_tokens=len(prompt_tokens), n_predict=loop.n_predict, n_ctx=e.n_ctx,
        threads=e.threads, settings=settings, target_decode_ms=target_ms, draft_decode_ms=draft_ms,
        inspect_top=e.inspect_top, probe=loop.probe, chat_template=loop.chat,
        head=getattr(e._head, "info", None),
        sampling="graph" if loop.graph is not None else "cpu",
        threads_draft=e.threads_draft if e.draft is not None else 0,
        pipeline_threads=tuple(e.pipeline_threads) if e.draft is not None else (), pipeline_choice=loop.pipeline_choice,
    )


class PassLoop:
    """One run of ``engine`` (see the module docstring); ``Engine.run`` makes one per call. It reads the engine's
    loaded state (models, drafters, the KV cursor, the reused row pools) and keeps the run's own."""

    def __init__(self, engine: "Engine", control: RunControl, n_predict: int, probe: MachineProbe | None,
                 chat: str, overlap: bool, pipeline_choice: str = "") -> None:
        self.e = engine
        self.target = engine.target
        self.control = control
        self.n_predict = n_predict
        self.probe = probe
        self.chat = chat
        self.cursor: TargetCursor = engine._cursor
        self.cursor.run_id += 1
        self.run_id = self.cursor.run_id
        self.may_overlap = overlap and engine.spare_core
        self.st = _RunState()
        self.policy: DraftPolicy | None = None
        self.head = None  # the engine's head when it reads this run's target decodes (set at the run's start)
        self.t0 = 0.0
        self.graph = getattr(engine, "_graph", None)  # graph_path.GraphRun: the run's backend chains, or None
        self.pipeline_choice = pipeline_choice  # RunStarted.pipeline_choice (--pipeline auto's choice and why)
        # who drafts: the loop, or with a draft model the pipeline (on the loop too for passes not pipelined)
        self.drafting = SequentialDrafting()
        if engine.draft is not None and "model" in engine._drafters:
            self.drafting = Pipeline(engine, self, self.drafting)

    def _observe(self, ev: Event) -> Event:
        if self.policy is not None:  # it sees every event of the run (its memory is its own aggregates)
            self.policy.observe(ev)
        return ev

    def events(self, prompt: str) -> Iterator[Event]:
        """The run's events; RunEnded always last (a stop, Ctrl+C or an error end the run with their reason)."""
        e, st = self.e, self.st
        self.policy = e.draft_policy() if e.draft_policy else None
        maker = PassEventMaker(self.target, e.inspect_top, e._others, e._prob_rows, e._texts)
        self.fin = Finisher(e._finishing, maker, self.may_overlap)
        self.t0 = time.perf_counter()
        self.cursor.in_run = True
        try:
            for ev in self._body(prompt):
                yield self._observe(ev)
        except GeneratorExit:  # the consumer let go: passes still being finished end before anything else runs
            self.fin.settle()
            raise
        except KeyboardInterrupt:
            st.reason = E.STOP_USER
        except SpectuiError as exc:
            st.reason, st.error = E.STOP_ERROR, str(exc)
        except Exception as exc:  # noqa: BLE001 - any engine failure ends the run with its message
            st.reason, st.error = E.STOP_ERROR, _described(exc)
        finally:
            self.drafting.end()  # the draft thread stops before anything else touches the models
            if self.run_id == self.cursor.run_id:
                self.cursor.in_run = False
                if self.graph is not None:  # the graph path's chains come off with the run
                    self.graph.off(self.e._drafters.values())
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

    # ------------------------------------------------------------ one run, pass by pass
    def _body(self, prompt: str) -> Iterator[Event]:
        """RunStarted, the prefill pass, then decode passes until a stop reason is set."""
        st = self.st
        self.e._reset_for_run()
        if not isinstance(prompt, str):
            raise SpectuiError("the prompt must be text")
        # an empty prompt is empty, even where the tokenizer would add a BOS token to it
        prompt_tokens = self.target.tokenize(prompt) if prompt else []
        settings = self.control.settings
        g = _Generation(prompt_tokens, settings.seed, self.e.debug_hook)
        _graph_set(self, g, settings)
        # the head reads the target's decodes in this run (Engine.head_in_every_run, or the run starts with it)
        self.head = self.e._head if self.e.head_in_every_run or settings.drafter == self.e.head else None
        yield _run_started(self, prompt, prompt_tokens, settings)
        st.reason, st.error = self._why_not_start(prompt_tokens)
        if st.reason:
            return
        yield self._prefill_pass(g, settings)
        if st.reason:
            return
        yield from self._decode_passes(g, settings)

    def _why_not_start(self, prompt_tokens: list[int]) -> tuple[str, str]:
        """(reason, error) when the run ends before the prefill pass; ("", "") when it can go on."""
        n_ctx = self.e.n_ctx
        if not prompt_tokens:
            return E.STOP_ERROR, "the prompt is empty"
        if len(prompt_tokens) >= n_ctx:
            return E.STOP_CTX_FULL, (
                f"the prompt ({len(prompt_tokens)} tokens) does not fit the context (-c {n_ctx}) "
                "with room to generate"
            )
        if self.n_predict == 0:
            return E.STOP_N_PREDICT, ""
        if self.control.stopped:
            return E.STOP_USER, ""
        return "", ""

    # ---------------- pass 0: prefill
    def _prefill_pass(self, g: _Generation, settings: Settings) -> PassEvent:
        """The target evaluates the whole prompt and picks the first token (no drafts); its wall time is the TTFT."""
        tgt, st = self.target, self.st
        prompt_tokens = g.prompt_tokens
        tp = time.perf_counter()
        drafter = self.e._pick_drafter(settings.drafter)
        t_d = time.perf_counter()
        drafter.prefill(prompt_tokens)
        draft_ms = (time.perf_counter() - t_d) * 1000.0
        verify_ms, head_ms = _decode_prompt(tgt, self.head, prompt_tokens)
        draft_ms += head_ms
        row = tgt.logits_last()
        temp = settings.temperature
        tok, prob, row = _first_token(row, temp, g.rng, tgt if tgt.chain_rows else None)
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
            n_ctx_used=g.n_past, others_cpu=self.e._others.sample(), inspect=inspect,
        )

    # ---------------- decode passes
    def _decode_passes(self, g: _Generation, settings: Settings) -> Iterator[Event]:
        """Settings read between passes (SettingsChanged when they changed), k chosen, one pass each."""
        st, control, fin = self.st, self.control, self.fin
        prev = settings
        index = 1
        while True:
            if control.stopped:
                st.reason = E.STOP_USER
                return
            if control.paused:  # a paused screen shows every pass decided so far
                yield from fin.drain()
            control.wait_if_paused()
            if control.stopped:
                st.reason = E.STOP_USER
                return
            s = control.settings
            if s != prev:
                yield from fin.drain()  # events stay in the order things happened
                yield E.SettingsChanged(before_pass=index, old=prev, new=s, t=time.perf_counter() - self.t0)
                prev = s
            tp = time.perf_counter() - fin.take_waited()
            g.reseed(s.seed)
            _graph_set(self, g, s)
            k = self._choose_k(g, s)
            if k is None:
                st.reason = E.STOP_CTX_FULL
                return
            fin.mode_for(s, self.drafting.spare_core(s))
            work, stop = self._decode_pass(g, s, k, index, tp)
            fin.submit(work)
            yield from fin.drain_decided()
            index += 1
            if stop:
                st.reason = stop
                return

    def _choose_k(self, g: _Generation, s: Settings) -> int | None:
        """The draft length for the next pass: --draft-max or the auto-k policy, capped so that the verify
        batch fits the context and the batch size and the pass cannot emit past n_predict. None: the
        context is full."""
        k_want = s.draft_max
        if s.auto:
            if self.policy is None:
                raise SpectuiError("automatic draft length needs a draft-length policy (Engine(draft_policy=...))")
            k_want = int(self.policy.choose(s))
        return self.cap_k(k_want, g.n_past, self.st.n_emitted)

    def cap_k(self, k_want: int, n_past: int, n_emitted: int) -> int | None:
        """``k_want`` capped for a pass after ``n_past`` cells and ``n_emitted`` tokens (``_choose_k``'s rule);
        None: the context is full. Reads only what a run never changes (the draft thread asks it too)."""
        k_want = max(0, min(DRAFT_MAX_LIMIT, k_want))
        room = self.e.n_ctx - n_past  # free target cells; the verify batch needs k + 1 of them
        if room < 1:
            return None
        k = min(k_want, room - 1, self.target.n_batch - 1)
        if self.n_predict > 0:
            k = min(k, self.n_predict - n_emitted - 1)
        return max(0, k)

    # ---------------- one decode pass: draft, verify, decide, roll back (then the Finisher: the event)
    def _decode_pass(self, g: _Generation, s: Settings, k: int, index: int, tp: float) -> tuple[PassWork, str | None]:
        """Draft k tokens, verify them in one target decode, decide, roll back; returns what the pass's event
        is made from and the stop reason (EOG or n_predict reached) or None. Only what decides the pass
        happens here; the inspector's top-N, the probabilities the event reports, the token texts and the
        event itself are left to the Finisher (on copies of the logit rows when it runs overlapped)."""
        drafter = self.e._pick_drafter(s.drafter)
        if drafter is self.e._head and self.head is None:
            raise SpectuiError(f"--drafter {s.drafter}: the head did not read this run's target decodes (it drafts "
                               "only in runs that start with it here)")
        t_d = time.perf_counter()
        lim = DraftLimits(k, s.draft_p_min, s.draft_min, self.e.inspect_top, defer=self.fin.overlap)
        prop = self.drafting.propose(drafter, g, lim, s)
        draft_ms = (time.perf_counter() - t_d) * 1000.0
        ids = prop.ids if prop is not None else []
        p, v, resid, verify_ms = self._verify(g, s, ids, prop, index)
        t_v = time.perf_counter()
        span = (t_v - verify_ms / 1000.0, t_v)  # (about) the target's decode: the draft thread may overlap it
        if self.head is not None:  # an EAGLE-3 / MTP head reads the verify batch's hidden states (drafter work)
            t_h = time.perf_counter()
            self.head.target_decoded([g.tokens[-1]] + ids, g.n_past, v.n_accepted)
            draft_ms += (time.perf_counter() - t_h) * 1000.0
        # the finishing thread reads the rows while the next pass drafts: llama.cpp's buffer itself when draft
        # decodes come first (the next verify waits for it), else a copy
        rows_buf, keep_view = self.fin.keep_rows(p, k > 0 and isinstance(drafter, DraftModelDrafter))
        n_acc, kd = v.n_accepted, len(ids)
        kind = E.PLAIN if kd == 0 else (E.BONUS if n_acc == kd else E.CORRECTION)
        n_out, stop = self._cut(ids, n_acc, v.token, self.n_predict)
        pipe = self.drafting.settle(drafter, prop, v, stop, span)
        self._advance(g, ids, n_acc, v.token, n_out)
        # The pass's times: overlapped, the pass ends here (what follows is off its path); inline, making the
        # event is part of it, so the clock stops when the event is made. Other processes' CPU is sampled then.
        timing = pass_timing(draft_ms, verify_ms, tp, self.t0) if self.fin.overlap else None
        work = PassWork(index=index, settings=s, k=k, ids=ids, prop=prop, p=p, verdict=v, kind=kind, n_out=n_out,
                        timing=timing, n_ctx_used=g.n_past, decoder=g.decoder,
                        rows_buf=rows_buf, holds_view=keep_view, clock=(draft_ms, verify_ms, tp, self.t0),
                        # the verdict's residual is the debug hook's to keep; otherwise its buffer is reused
                        resid_buf=resid if g.debug_hook is None else None, pipe=pipe)
        return work, stop

    def _verify(self, g: _Generation, s: Settings, ids: list[int], prop: Proposal | None, index: int):
        """One target decode over [last, d1..dk] with logits for all k + 1 positions, and the verdict: (target
        probabilities, verdict, the residual's buffer or None, verify ms)."""
        tgt, temp, pool = self.target, s.temperature, self.e._prob_rows
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
            n_acc = v.n_accepted
            g.debug_hook({"index": index, "n_past": g.n_past, "target_logits": np.array(rows[: n_acc + 1]),
                          "draft_ids": list(ids), "n_accepted": n_acc, "token": v.token,
                          "draft_logits": prop.logit_rows if prop is not None else None, "temperature": temp,
                          "target_logits_all": np.array(rows), "verdict": v,
                          "draft_stop_logits": prop.stop_row if prop is not None else None})
        return p, v, resid, verify_ms

    def _cut(self, ids: list[int], n_acc: int, tok: int, n_predict: int) -> tuple[int, str | None]:
        """How many of the pass's tokens (accepted drafts, then the target token) are emitted, cut at EOG /
        n_predict, and the stop reason (None: go on)."""
        for i in range(n_acc + 1):
            t_id = ids[i] if i < n_acc else tok
            if self.target.is_eog(t_id):
                return i + 1, E.STOP_EOG
            if n_predict > 0 and self.st.n_emitted + i + 1 >= n_predict:
                return i + 1, E.STOP_N_PREDICT
        return n_acc + 1, None

    def _advance(self, g: _Generation, ids: list[int], n_acc: int, tok: int, n_out: int) -> None:
        """Roll back (the target keeps [last, accepted drafts]; the drafting settled the drafter's side), the
        accepted tokens into the history, the run's counters."""
        kd = len(ids)
        if n_acc < kd:
            self.target.rollback(g.n_past + 1 + n_acc)
        g.n_past += 1 + n_acc
        self.cursor.n_past = g.n_past
        g.tokens.extend(ids[:n_acc])
        g.tokens.append(tok)
        self.cursor.last_token = tok
        st = self.st
        st.n_passes += 1
        st.n_emitted += n_out
        st.n_drafted += kd
        st.n_accepted += n_acc
