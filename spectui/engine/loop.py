"""The speculative loop: ``Engine.run()`` drafts, verifies in one target decode, rolls back, and yields one
``PassEvent`` per pass (pass 0 = prefill), ``SettingsChanged`` between passes, ``RunEnded`` last.

Choices where the brief left room (documented here and in the report):

- End of generation: the EOG token counts as an emitted token (as llama.cpp counts it in n_predict), is
  in ``PassEvent.emitted`` with text "" (special tokens render as empty text), and ends the run with
  reason "eog". Tokens after it in the same pass are cut; when the EOG was an accepted draft the pass's
  ``target`` is None.
- k is capped so that the pass can never emit more than the tokens still allowed by n_predict
  (k <= remaining - 1) and so that the verify batch fits the context (k <= free cells - 1).
  ``PassEvent.k`` is the capped value (what the drafter was asked for).
- ``n_predict < 0`` means no limit (until EOG or a full context); ``n_predict == 0`` runs no pass.
- ``RunEnded.n_passes`` counts decode passes (the prefill pass excluded), like ``StatsSnapshot.n_passes``.
- Ctrl+C (KeyboardInterrupt) inside the loop ends the run with reason "stopped" (RunEnded is yielded,
  the exception is not re-raised); a closed generator (GeneratorExit) just releases the engine.
"""

from __future__ import annotations

import codecs
import statistics
import sys
import threading
import time
import uuid
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass
from typing import Callable, Iterator, Protocol

import numpy as np
import psutil

from ..contract.control import DRAFT_MAX_LIMIT, RunControl
from .cpu import OthersCpu, default_threads
from .cpu import spare_core as _spare_core
from ..contract.errors import SpectuiError
from ..contract.events import (
    ACCEPTED,
    BONUS,
    CORRECTION,
    DISCARDED,
    PLAIN,
    REJECTED,
    STOP_CTX_FULL,
    STOP_EOG,
    STOP_ERROR,
    STOP_N_PREDICT,
    STOP_USER,
    DraftToken,
    Event,
    PassEvent,
    RunEnded,
    RunStarted,
    Settings,
    SettingsChanged,
    Candidate,
    Inspection,
    MachineProbe,
    TargetToken,
    Timing,
    Token,
)
from . import models as M
from .chat import chat_template_of
from .drafters import DraftLimits, DraftModelDrafter, Drafter, NgramDrafter, NoDrafter, Proposal
from .pair import same_file_warning, size_warning
from .rowmath import RowPool
from .topn import top_ids, top_two_margin
from .verify import Verdict, greedy_verify, logsumexp, sample, softmax, speculative_verify

class DraftPolicy(Protocol):
    """What the loop asks of a draft-length policy (``spectui.analysis.draft_policy.PolicyByMode``): it sees
    every event of the run and, when ``settings.auto`` is set, chooses the next pass's k."""

    def observe(self, event: Event) -> None: ...

    def choose(self, settings: Settings) -> int: ...


INSPECT_TOP_DEFAULT = 5  # --inspect-top: candidates recorded per verified position
INSPECT_TOP_LIMIT = 50

# The draft should be well under the target's size to pay off; above this parameter ratio we warn.


_UNSET = object()


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr)


class _TargetProbs:
    """The target's probability rows of one pass. At T > 0 rows are softmaxed at T on first use (rows past a
    rejection never are) and ``speculative_verify`` indexes them; ``prob(i, token)`` is the probability
    reported in events (at T = 0: the temperature-1 softmax)."""

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


class Engine:
    """Target (+ optional draft) model loaded through llama.cpp's low-level API, and the speculative loop."""

    def __init__(
        self,
        target_path: str,
        draft_path: str | None = None,
        n_ctx: int = 4096,
        threads: int | None = None,
        no_repack: bool = False,
        warn: Callable[[str], None] | None = None,
        n_batch: int = 512,
        n_gpu_layers: int | str | None = None,
        n_gpu_layers_draft: int | str | None = None,
        n_ubatch: int | None = None,
        use_mmap: bool | None = None,
        inspect_top: int = INSPECT_TOP_DEFAULT,
        draft_policy: Callable[[], "DraftPolicy"] | None = None,
        spare_core: bool | None = None,
    ) -> None:
        self.warn = warn or _stderr
        self.draft_policy = draft_policy  # a fresh per-run draft-length policy (for settings.auto), or None
        self.target = None
        self.draft = None
        self._closed = False
        self._gen = 0
        self._pool: ThreadPoolExecutor | None = None
        self.debug_hook: Callable[[dict], None] | None = None  # tests: per-pass logits (see _decode_pass)
        n_ctx = _check_n_ctx(n_ctx)
        self.inspect_top = check_inspect_top(inspect_top)
        self.threads, self.threads_why = _threads(threads)
        ngl_t, ngl_d = self._gpu_layers(n_gpu_layers, n_gpu_layers_draft)
        tpath = M.check_gguf_file(target_path, "target")
        dpath = M.check_gguf_file(draft_path, "draft") if draft_path else None
        n_shared = self._check_pair(tpath, dpath, n_ctx, ngl_t, ngl_d)
        self._load(tpath, dpath, n_shared, ngl_t, ngl_d, n_ctx=n_ctx, no_repack=no_repack, n_batch=n_batch,
                   n_ubatch=n_ubatch, use_mmap=use_mmap)
        # llama.cpp pads the context (to 256 cells); the user's -c is the limit we honour
        self.n_ctx = min(n_ctx, self.target.n_ctx, self.draft.n_ctx if self.draft else n_ctx)
        self.target_info = self.target.info
        self.draft_info = self.draft.info if self.draft else None
        if self.draft is not None:  # the same file twice, a swapped pair, a draft not much smaller (pair.py)
            msg = same_file_warning(tpath, dpath) or size_warning(self.draft.n_params, self.target.n_params)
            if msg:  # one warning that names it (the same file is not also "not much smaller")
                self.warn(msg)
        self._others = OthersCpu()  # other processes' CPU use on our cores, sampled once per pass
        self._drafters: dict[str, Drafter] = {"none": NoDrafter(), "ngram": NgramDrafter()}
        if self.draft is not None:
            self._drafters["model"] = DraftModelDrafter(self.draft)
        self._warned_no_draft = False
        self._texts: dict[int, str] = {}  # token id -> its piece as text (inspector candidates)
        self._n_past = 0  # target KV cells holding accepted context (between runs: the last run's)
        self._in_run = False
        self._last_token = None
        self._chat = _UNSET  # the target's chat template, read on first use
        # A core the decode leaves free (run(overlap=True) finishes passes there): None = when this process may
        # use more cores than the decode threads, or when no layer of either model runs on the CPU.
        on_cpu = any(m is not None and m.n_gpu_layers < m.n_layer + 1 for m in (self.target, self.draft))
        self.spare_core = _spare_core(self.threads, on_cpu) if spare_core is None else bool(spare_core)
        # set while a model decodes (LoadedModel.gate) or while the loop waits for a pass to be finished: the
        # finishing thread works only then, so the loop's own Python never waits for the GIL behind it
        self._gate = threading.Event()
        for m in (self.target, self.draft):
            if m is not None:
                m.gate = self._gate
        self._rows_free: list[np.ndarray] = []  # target row buffers (copies for a finishing pass), reused
        self._prob_rows = RowPool()  # the target's softmaxed rows and residuals (T > 0), reused

    def _gpu_layers(self, n_gpu_layers, n_gpu_layers_draft) -> tuple[int, int]:
        """-ngl / -ngld as layer counts (-1 = all): every layer by default on a build that can offload, as
        llama.cpp does; 0 on a CPU-only build (with one warning when layers were asked for)."""
        ngl_t = M.parse_gpu_layers(n_gpu_layers, "-ngl/--n-gpu-layers")
        ngl_d = M.parse_gpu_layers(n_gpu_layers_draft, "-ngld/--n-gpu-layers-draft")
        if M.supports_gpu_offload():
            return (-1 if ngl_t is None else ngl_t), (-1 if ngl_d is None else ngl_d)
        if (ngl_t or 0) != 0 or (ngl_d or 0) != 0:
            self.warn(
                "warning: this llama.cpp build cannot offload to a GPU (no GPU backend or device), so "
                "-ngl/-ngld are ignored and every layer runs on the CPU; see README: GPU builds"
            )
        return 0, 0

    def _check_pair(self, tpath, dpath, n_ctx: int, ngl_t: int, ngl_d: int) -> int | None:
        """Cheap vocabulary-only loads first: the vocabulary check and the memory estimate before any weights
        load. Returns the number of token ids both models share (None without a draft)."""
        tv = M.VocabOnly(tpath, "target")
        dv = None
        n_shared = None
        try:
            parts = [M.ModelMemory.of(tv, tpath, n_ctx, ngl_t)]
            if dpath:
                dv = M.VocabOnly(dpath, "draft")
                n_shared = M.check_vocabs(tv, dv)
                parts.append(M.ModelMemory.of(dv, dpath, n_ctx, ngl_d))
        finally:
            tv.close()
            if dv is not None:
                dv.close()
        devices = M.gpu_devices() if ngl_t or ngl_d else []
        M.placement_report(parts, psutil.virtual_memory().available, devices, self.warn)
        return n_shared

    def _load(self, tpath, dpath, n_shared: int | None, ngl_t: int, ngl_d: int, *, n_ctx: int, no_repack: bool,
              n_batch: int, n_ubatch: int | None, use_mmap: bool | None) -> None:
        """Both models' weights and contexts (weights repacked unless --no-repack or an AMX build)."""
        use_extra_bufts = not no_repack
        if use_extra_bufts and M.system_has_amx():
            use_extra_bufts = False
            self.warn(
                "warning: this llama.cpp build has AMX kernels, which crash on machines (VMs) without AMX "
                "state; loading without weight repacking (as --no-repack) to stay safe"
            )
        self.no_repack = not use_extra_bufts
        try:
            common = dict(n_ctx=n_ctx, threads=self.threads, use_extra_bufts=use_extra_bufts, n_batch=n_batch,
                          n_ubatch=n_ubatch, use_mmap=use_mmap)
            self.target = M.LoadedModel(tpath, "target", n_gpu_layers=ngl_t, **common)
            if dpath:
                self.draft = M.LoadedModel(dpath, "draft", n_gpu_layers=ngl_d, **common)
                # Vocabularies may differ in size by padding rows (llama.cpp allows 128): both models choose
                # only among the ids they share, so a draft is always a target id and p, q have one support.
                self.target.n_use = self.draft.n_use = n_shared
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------ small API
    @property
    def decoding(self) -> threading.Event:
        """Set while a model is inside llama_decode (or the loop waits for a pass to be finished): the
        windows in which other Python threads (the finisher, a trace writer: TraceWriter.gate) take the GIL
        without making the loop wait for it."""
        return self._gate

    def tokenize(self, text: str) -> list[int]:
        return self.target.tokenize(text)

    def detokenize(self, ids) -> str:
        return self.target.detokenize(ids)

    def close(self) -> None:
        pool, self._pool = getattr(self, "_pool", None), None
        if pool is not None:  # a pass still being finished reads the models' vocabularies: let it end first
            self._gate.set()  # (it may be waiting for a decode that will not come)
            pool.shutdown(wait=True)
            self._gate.clear()
        for m in (self.draft, self.target):
            if m is not None:
                m.close()
        self.draft = None
        self.target = None
        self._closed = True

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _single_decode_ms(self, model: M.LoadedModel, token: int, pos: int, repeats: int = 3) -> float:
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

    def measure_verify_ms(self, k: int, repeats: int = 3) -> float:
        """Median time of one target decode of a (k + 1)-token batch, rolled back. Between runs only."""
        if self.target is None:
            raise SpectuiError("the engine is closed")
        k = max(0, int(k))
        n = k + 1
        if n > self.target.n_batch:
            raise SpectuiError(f"a verify batch of {n} tokens exceeds the batch size {self.target.n_batch}")
        pos0 = self._n_past
        if pos0 + n > self.n_ctx:
            if self._in_run:
                raise SpectuiError(f"no room left in the context to measure a verify batch of {n} tokens")
            pos0 = 0
            self.target.clear()
            self._n_past = 0
        self.target.rollback(pos0)  # cells past the accepted context (an interrupted pass) would collide
        tok = self._last_token
        if tok is None:
            ids = self.target.tokenize("a", add_special=False)
            tok = ids[0] if ids else 0
        times = []
        for _ in range(max(1, repeats)):
            t = time.perf_counter()
            self.target.decode([tok] * n, pos0, "all")
            times.append((time.perf_counter() - t) * 1000.0)
            self.target.rollback(pos0)
        return statistics.median(times)

    # ------------------------------------------------------------ the run
    def run(self, prompt: str, control: RunControl | None = None, n_predict: int = 128,
            probe: MachineProbe | None = None, chat_template: str = "", overlap: bool = False) -> Iterator[Event]:
        """Generate from ``prompt``; yields RunStarted, PassEvent..., SettingsChanged..., RunEnded (always last).
        ``probe``: this machine's verify cost (``spectui probe``), recorded in RunStarted for the policy and faces.
        ``chat_template``: the label of the template ``prompt`` was rendered with (``chat_prompt``), recorded
        in RunStarted; "" for a raw prompt.

        ``overlap``: finish each pass (the inspector's top-N, the reported probabilities, the texts, the event
        itself) on the finishing thread while the next pass drafts and verifies, where ``spare_core`` says a
        core is free for it, and not under automatic k (its policy reads pass N before choosing pass N + 1).
        The events are the same, in the same order, but pass N's arrives once pass N + 1 has been decided: a
        consumer that changes the settings in reaction to pass N's event then changes pass N + 2 (without
        ``overlap``: pass N + 1). The faces and the headless runs, which never react to a pass that way, ask
        for it."""
        if self.target is None:
            raise SpectuiError("the engine is closed")
        self._gen += 1
        return self._run(self._gen, prompt, control or RunControl(), int(n_predict), probe, str(chat_template or ""),
                         bool(overlap))

    @property
    def chat_template(self):
        """The target's chat template (``engine.chat.ChatTemplate``), None when the GGUF has none."""
        if self._chat is _UNSET:
            if self.target is None:
                raise SpectuiError("the engine is closed")
            self._chat = chat_template_of(self.target)
        return self._chat

    def chat_prompt(self, messages) -> tuple[str, str]:
        """(prompt text, template label) for chat ``messages``, rendered with the target's template and its
        generation prompt; raises SpectuiError when the model has no template."""
        tpl = self.chat_template
        if tpl is None:
            raise SpectuiError("the target model has no chat template (tokenizer.chat_template); use --no-chat")
        return tpl.render(messages), tpl.label

    def _pick_drafter(self, name: str) -> Drafter:
        d = self._drafters.get(name)
        if d is None:  # "model" without a draft model
            if not self._warned_no_draft:
                self._warned_no_draft = True
                self.warn("warning: no draft model loaded; the 'model' drafter falls back to n-gram lookup")
            d = self._drafters["ngram"]
        return d

    def _run(self, gen: int, prompt: str, control: RunControl, n_predict: int,
             probe: MachineProbe | None = None, chat: str = "", overlap: bool = False) -> Iterator[Event]:
        st = _RunState(self.draft_policy() if self.draft_policy else None)
        st.probe = probe
        st.may_overlap = overlap and self.spare_core
        t0 = time.perf_counter()
        self._in_run = True
        try:
            for ev in self._body(st, t0, prompt, control, n_predict, chat):
                st.observe(ev)
                yield ev
        except GeneratorExit:  # the consumer let go: passes still being finished end before anything else runs
            self._settle(st)
            raise
        except KeyboardInterrupt:
            st.reason = STOP_USER
        except SpectuiError as exc:
            st.reason, st.error = STOP_ERROR, str(exc)
        except Exception as exc:  # noqa: BLE001 - any engine failure ends the run with its message
            st.reason = STOP_ERROR
            st.error = f"{type(exc).__name__}: {exc}".replace("\n", " ")
        finally:
            if gen == self._gen:  # an older, abandoned generator must not touch a newer run's state
                self._in_run = False
        # passes decided before the run ended (the last one, or one before a stop, Ctrl+C or an error) still
        # reach the consumer, in order, before RunEnded (a closed generator never gets here)
        try:
            for ev in self._drain(st):
                st.observe(ev)
                yield ev
        except KeyboardInterrupt:
            st.reason = st.reason or STOP_USER
        except Exception as exc:  # noqa: BLE001 - a pass that cannot be finished ends the run with its message
            st.reason, st.error = STOP_ERROR, f"{type(exc).__name__}: {exc}".replace("\n", " ")
        end = RunEnded(
            reason=st.reason or STOP_ERROR,
            error=st.error,
            n_passes=st.n_passes,
            n_emitted=st.n_emitted,
            n_drafted=st.n_drafted,
            n_accepted=st.n_accepted,
            wall_s=time.perf_counter() - t0,
        )
        st.observe(end)
        yield end

    # ------------------------------------------------------------ one run, pass by pass
    def _body(self, st: "_RunState", t0: float, prompt: str, control: RunControl, n_predict: int,
              chat: str = "") -> Iterator[Event]:
        """RunStarted, the prefill pass, then decode passes until a stop reason is set in ``st``."""
        self._reset_for_run()
        if not isinstance(prompt, str):
            raise SpectuiError("the prompt must be text")
        # an empty prompt is empty, even where the tokenizer would add a BOS token to it
        prompt_tokens = self.target.tokenize(prompt) if prompt else []
        settings = control.settings
        st.started = self._run_started(prompt, prompt_tokens, n_predict, settings, st.probe, chat)
        yield st.started
        st.reason, st.error = self._why_not_start(prompt_tokens, control, n_predict)
        if st.reason:
            return
        g = _Generation(prompt_tokens, settings.seed, self.debug_hook)
        yield self._prefill_pass(st, g, settings, t0, n_predict)
        if st.reason:
            return
        yield from self._decode_passes(st, g, control, settings, t0, n_predict)

    def _reset_for_run(self) -> None:
        """Empty both KV caches and restart the drafters."""
        self.target.clear()
        if self.draft is not None:
            self.draft.clear()
        self._n_past = 0
        self._others.sample()  # a new baseline: the prefill pass reports from here
        for d in self._drafters.values():
            d.start()
            d.keep_rows = self.debug_hook is not None

    def _run_started(self, prompt: str, prompt_tokens: list[int], n_predict: int, settings: Settings,
                     probe: MachineProbe | None = None, chat: str = "") -> RunStarted:
        """The first event, with single-token decode times of both models measured at position 0."""
        calib_tok = prompt_tokens[0] if prompt_tokens else 0
        target_ms = self._single_decode_ms(self.target, calib_tok, 0)
        draft_ms = self._single_decode_ms(self.draft, calib_tok, 0) if self.draft is not None else 0.0
        return RunStarted(
            run_id=uuid.uuid4().hex[:12],
            started_at=time.time(),
            target=self.target_info,
            draft=self.draft_info,
            prompt=prompt,
            prompt_tokens=len(prompt_tokens),
            n_predict=n_predict,
            n_ctx=self.n_ctx,
            threads=self.threads,
            settings=settings,
            target_decode_ms=target_ms,
            draft_decode_ms=draft_ms,
            inspect_top=self.inspect_top,
            probe=probe,
            chat_template=chat,
        )

    def _why_not_start(self, prompt_tokens: list[int], control: RunControl, n_predict: int) -> tuple[str, str]:
        """(reason, error) when the run ends before the prefill pass; ("", "") when it can go on."""
        if not prompt_tokens:
            return STOP_ERROR, "the prompt is empty"
        if len(prompt_tokens) >= self.n_ctx:
            return STOP_CTX_FULL, (
                f"the prompt ({len(prompt_tokens)} tokens) does not fit the context (-c {self.n_ctx}) "
                "with room to generate"
            )
        if n_predict == 0:
            return STOP_N_PREDICT, ""
        if control.stopped:
            return STOP_USER, ""
        return "", ""

    # ---------------- pass 0: prefill
    def _prefill_pass(
        self, st: "_RunState", g: "_Generation", settings: Settings, t0: float, n_predict: int
    ) -> PassEvent:
        """The target evaluates the whole prompt and picks the first token (no drafts); its wall time is the TTFT."""
        tgt = self.target
        prompt_tokens = g.prompt_tokens
        tp = time.perf_counter()
        drafter = self._pick_drafter(settings.drafter)
        t_d = time.perf_counter()
        drafter.prefill(prompt_tokens)
        draft_ms = (time.perf_counter() - t_d) * 1000.0
        t_v = time.perf_counter()
        tgt.decode_chunked(prompt_tokens, 0)
        verify_ms = (time.perf_counter() - t_v) * 1000.0
        row = tgt.logits_last()
        temp = settings.temperature
        tok, prob = _first_token(row, temp, g.rng)
        if g.debug_hook is not None:
            g.debug_hook({"index": 0, "n_past": 0, "target_logits": row[None, :].copy(), "draft_ids": [],
                             "n_accepted": 0, "token": tok, "draft_logits": None, "temperature": temp,
                             "target_logits_all": row[None, :].copy()})
        inspect: tuple[Inspection, ...] = ()
        if self.inspect_top:
            inspect = self._inspect(_TargetProbs(row[None, :], temp), None, [], Verdict(0, tok), temp)
        self._n_past = g.n_past = len(prompt_tokens)
        text = g.decoder.decode(tgt.piece(tok))
        target_token = TargetToken(id=tok, text=text, prob=prob, kind=PLAIN)
        emitted = (Token(id=tok, text=text, prob=prob),)
        g.tokens.append(tok)
        self._last_token = tok
        st.n_emitted = 1
        if tgt.is_eog(tok):
            st.reason = STOP_EOG
        elif 0 < n_predict <= 1:
            st.reason = STOP_N_PREDICT
        wall = (time.perf_counter() - tp) * 1000.0
        return PassEvent(
            index=0, prefill=True, settings=settings, k=0, target=target_token, emitted=emitted,
            timing=Timing(draft_ms=draft_ms, verify_ms=verify_ms, other_ms=max(0.0, wall - draft_ms - verify_ms),
                          wall_ms=wall, t_end=time.perf_counter() - t0),
            n_ctx_used=g.n_past, others_cpu=self._others.sample(), inspect=inspect,
        )

    # ---------------- decode passes
    def _decode_passes(
        self, st: "_RunState", g: "_Generation", control: RunControl, settings: Settings, t0: float, n_predict: int
    ) -> Iterator[Event]:
        """Settings read between passes (SettingsChanged when they changed), k chosen, one pass each."""
        prev = settings
        index = 1
        while True:
            if control.stopped:
                st.reason = STOP_USER
                return
            if control.paused:  # a paused screen shows every pass decided so far
                yield from self._drain(st)
            control.wait_if_paused()
            if control.stopped:
                st.reason = STOP_USER
                return
            s = control.settings
            if s != prev:
                yield from self._drain(st)  # events stay in the order things happened
                yield SettingsChanged(before_pass=index, old=prev, new=s, t=time.perf_counter() - t0)
                prev = s
            tp = time.perf_counter() - st.waited_s
            st.waited_s = 0.0
            g.reseed(s.seed)
            k = self._choose_k(st, g, s, n_predict)
            if k is None:
                st.reason = STOP_CTX_FULL
                return
            st.overlap = self._overlap_for(st, s)
            work, stop = self._decode_pass(st, g, s, k, index, tp, t0, n_predict)
            self._submit(st, work)
            # inline: this pass's event now; overlapped: the previous pass's (finished while this one decoded),
            # and this one's is finished while the next pass decodes
            yield from self._drain(st, keep=1 if st.overlap else 0)
            index += 1
            if stop:
                st.reason = stop
                return

    # ---------------- choosing k
    def _choose_k(self, st: "_RunState", g: "_Generation", s: Settings, n_predict: int) -> int | None:
        """The draft length for the next pass: --draft-max or the auto-k policy, capped so that the verify
        batch fits the context and the batch size and the pass cannot emit past n_predict. None: the
        context is full."""
        k_want = s.draft_max
        if s.auto:
            if st.policy is None:
                raise SpectuiError("automatic draft length needs a draft-length policy (Engine(draft_policy=...))")
            k_want = int(st.policy.choose(s))
        k_want = max(0, min(DRAFT_MAX_LIMIT, k_want))
        room = self.n_ctx - g.n_past  # free target cells; the verify batch needs k + 1 of them
        if room < 1:
            return None
        k = min(k_want, room - 1, self.target.n_batch - 1)
        if n_predict > 0:
            k = min(k, n_predict - st.n_emitted - 1)
        return max(0, k)

    # ---------------- one decode pass: draft, verify, decide, roll back (then finish: the event)
    def _decode_pass(
        self, st: "_RunState", g: "_Generation", s: Settings, k: int, index: int, tp: float, t0: float,
        n_predict: int,
    ) -> tuple["_PassWork", str | None]:
        """Draft k tokens, verify them in one target decode, decide, roll back; returns what the pass's event
        is made from (``_finish``) and the stop reason (EOG or n_predict reached) or None. Only what decides
        the pass happens here; the inspector's top-N, the probabilities the event reports, the token texts
        and the event itself are left to ``_finish`` (on copies of the logit rows when it runs overlapped)."""
        tgt = self.target
        temp = s.temperature
        drafter = self._pick_drafter(s.drafter)
        overlap = st.overlap

        # draft
        t_d = time.perf_counter()
        lim = DraftLimits(k, s.draft_p_min, s.draft_min, self.inspect_top, defer=overlap)
        prop = drafter.propose(g.tokens, lim, temp, g.rng) if k > 0 else None
        draft_ms = (time.perf_counter() - t_d) * 1000.0
        ids = prop.ids if prop is not None else []
        kd = len(ids)

        # verify: one target decode over [last, d1..dk], logits for all k + 1 positions; it overwrites the rows
        # the previous pass's finishing may still read (it had this pass's draft decodes to finish them)
        if st.rows_busy is not None:
            if not st.rows_busy.done():  # the draft decodes were too short to finish it: copy from now on
                st.copy_rows = True
            self._wait_for(st.rows_busy)
            st.rows_busy = None
        t_v = time.perf_counter()
        tgt.decode([g.tokens[-1]] + ids, g.n_past, "all")
        verify_ms = (time.perf_counter() - t_v) * 1000.0
        rows = tgt.logits_rows(kd + 1)
        p = _TargetProbs(rows, temp, self._prob_rows)
        resid = None
        if temp > 0:
            resid = self._prob_rows.take(rows.shape[1]) if kd else None
            v = speculative_verify(p, prop.q_rows if prop is not None else None, ids, g.rng, out=resid)
        else:
            v = greedy_verify(rows, ids)
        n_acc = v.n_accepted
        tok = v.token
        if g.debug_hook is not None:
            g.debug_hook({"index": index, "n_past": g.n_past, "target_logits": np.array(rows[: n_acc + 1]),
                             "draft_ids": list(ids), "n_accepted": n_acc, "token": tok,
                             "draft_logits": prop.logit_rows if prop is not None else None, "temperature": temp,
                             "target_logits_all": np.array(rows), "verdict": v,
                             "draft_stop_logits": prop.stop_row if prop is not None else None})
        rows_buf = None
        keep_view = False
        if overlap:
            # the finishing thread reads the rows while the next pass drafts: straight from llama.cpp's buffer
            # when draft decodes come first (the next verify waits for it: st.rows_busy), else from a copy
            keep_view = k > 0 and isinstance(drafter, DraftModelDrafter) and not st.copy_rows
            if not keep_view:
                rows_buf = self._rows_copy(rows)
                p.rows = rows_buf[: len(rows)]
        kind = PLAIN if kd == 0 else (BONUS if n_acc == kd else CORRECTION)
        n_out, stop = self._cut(st, ids, n_acc, tok, n_predict)

        # roll back: target keeps [last, accepted drafts]; the drafter drops its rejected positions
        if n_acc < kd:
            tgt.rollback(g.n_past + 1 + n_acc)
        g.n_past += 1 + n_acc
        self._n_past = g.n_past
        if prop is not None:
            drafter.accept(n_acc)
        g.tokens.extend(ids[:n_acc])
        g.tokens.append(tok)
        self._last_token = tok

        st.n_passes += 1
        st.n_emitted += n_out
        st.n_drafted += kd
        st.n_accepted += n_acc
        # The pass's times: overlapped, the pass ends here (what follows is off its path); inline, _finish is
        # part of it, so the clock stops when the event is made. Other processes' CPU is sampled then too.
        timing = _pass_timing(draft_ms, verify_ms, tp, t0) if overlap else None
        work = _PassWork(index=index, settings=s, k=k, ids=ids, prop=prop, p=p, verdict=v, kind=kind, n_out=n_out,
                         timing=timing, n_ctx_used=g.n_past, decoder=g.decoder,
                         rows_buf=rows_buf, holds_view=keep_view, clock=(draft_ms, verify_ms, tp, t0),
                         # the verdict's residual is the debug hook's to keep; otherwise its buffer is reused
                         resid_buf=resid if g.debug_hook is None else None)
        return work, stop

    def _finish(self, w: "_PassWork") -> PassEvent:
        """The pass's event from what ``_decode_pass`` decided: the inspector's record, the drafts with their
        verdicts and probabilities, the emitted tokens with their texts. Pure work on copies and the run's
        text decoder (passes are finished one at a time, in order), so it may run on the finishing thread."""
        prop, p, v, ids = w.prop, w.p, w.verdict, w.ids
        temp = w.settings.temperature
        between = self._gate.wait if w.gated else None
        if prop is not None:
            prop.complete(between)
        n_acc, tok = v.n_accepted, v.token
        inspect = self._inspect(p, prop, ids, v, temp, between) if self.inspect_top else ()
        if between is not None:
            between()
        q_probs = prop.q_probs if prop is not None else []
        drafts = self._judged_drafts(w.decoder, ids, q_probs, n_acc, p)
        out, target_token = self._tokens(w.decoder, ids, q_probs, n_acc, tok, p.prob(n_acc, tok), w.kind, w.n_out)
        if w.rows_buf is not None:
            self._rows_free.append(w.rows_buf)
        timing = w.timing if w.timing is not None else _pass_timing(*w.clock)
        event = PassEvent(
            index=w.index, prefill=False, settings=w.settings, k=w.k, drafts=tuple(drafts), target=target_token,
            n_accepted=n_acc, emitted=tuple(out), timing=timing, n_ctx_used=w.n_ctx_used,
            others_cpu=self._others.sample(),  # other processes' CPU since the last sample (a /proc/stat read)
            draft_stop=prop.stop if prop is not None else "", draft_stop_p=prop.stop_p if prop is not None else -1.0,
            inspect=inspect,
        )
        # the pass's probability rows are read no more: back to the pools for the next passes
        for row in p.cache.values():
            self._prob_rows.give(row)
        p.cache = {}
        self._prob_rows.give(w.resid_buf)
        if prop is not None:
            prop.release()
        return event

    # ---------------- finishing passes, in order, inline or overlapped with the next pass
    @staticmethod
    def _overlap_for(st: "_RunState", s: Settings) -> bool:
        """Finish this pass on the finishing thread? When the run asked for it and a core is spare
        (``run(overlap=True)``), and not under automatic k: its policy must see pass N's event before it
        chooses pass N + 1's k."""
        return st.may_overlap and not s.auto

    def _submit(self, st: "_RunState", work: "_PassWork") -> None:
        if st.overlap:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spectui-finish")
            work.gated = True
            fut = self._pool.submit(self._finish, work)
            st.pending.append(fut)
            if work.holds_view:
                st.rows_busy = fut
        else:
            st.pending.append(self._finish(work))

    def _wait_for(self, fut: Future) -> float:
        """Block until a pass is finished, the gate open meanwhile (the finishing thread has the GIL to itself).
        Returns the seconds waited."""
        if fut.done():
            return 0.0
        t = time.perf_counter()
        self._gate.set()
        try:
            wait_futures([fut])
        finally:
            self._gate.clear()
        return time.perf_counter() - t

    def _drain(self, st: "_RunState", keep: int = 0) -> Iterator[Event]:
        """Yield finished pass events, oldest first, until at most ``keep`` are still pending."""
        while len(st.pending) > keep:
            item = st.pending[0]
            if isinstance(item, Future):
                # the loop waiting for the finishing thread is the loop's time: the next pass's (Timing.other_ms)
                st.waited_s += self._wait_for(item)
                if item is st.rows_busy:
                    st.rows_busy = None
                ev = item.result()
            else:
                ev = item
            st.pending.popleft()
            yield ev

    def _settle(self, st: "_RunState") -> None:
        """Wait for every pass still being finished, and drop them (an abandoned run)."""
        for item in st.pending:
            if isinstance(item, Future):
                self._wait_for(item)
        st.pending.clear()
        st.rows_busy = None

    def _rows_copy(self, rows: np.ndarray) -> np.ndarray:
        """A reused buffer of at least len(rows) rows holding a copy of ``rows``."""
        buf = self._rows_free.pop() if self._rows_free else None
        if buf is None or len(buf) < len(rows) or buf.shape[1] != rows.shape[1]:
            buf = np.empty((max(len(rows), 5), rows.shape[1]), dtype=np.float32)
        np.copyto(buf[: len(rows)], rows)
        return buf

    def _text(self, tid: int) -> str:
        t = self._texts.get(tid)
        if t is None:
            t = self._texts[tid] = self.target.piece(tid).decode("utf-8", errors="replace")
        return t

    def _candidates(self, pairs) -> tuple[Candidate, ...]:
        return tuple(Candidate(id=int(i), text=self._text(int(i)), prob=float(q)) for i, q in pairs)

    def _inspect(
        self, p: "_TargetProbs", prop: Proposal | None, ids: list[int], v: Verdict, temp: float,
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
            out.append(Inspection(position=i, target_top=tt, draft_top=dt, margin=top_two_margin(row, best),
                                  accept_p=acc, u=u, residual_top=res))
        return tuple(out)

    def _judged_drafts(
        self, decoder, ids: list[int], q_probs: list[float], n_acc: int, p: "_TargetProbs"
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

    def _cut(self, st: "_RunState", ids: list[int], n_acc: int, tok: int, n_predict: int) -> tuple[int, str | None]:
        """How many of the pass's tokens (accepted drafts, then the target token) are emitted, cut at EOG /
        n_predict, and the stop reason (None: go on)."""
        for i in range(n_acc + 1):
            t_id = ids[i] if i < n_acc else tok
            if self.target.is_eog(t_id):
                return i + 1, STOP_EOG
            if n_predict > 0 and st.n_emitted + i + 1 >= n_predict:
                return i + 1, STOP_N_PREDICT
        return n_acc + 1, None

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


def _pass_timing(draft_ms: float, verify_ms: float, tp: float, t0: float) -> Timing:
    """A pass's Timing, its clock stopped now (tp: the pass's start, t0: the run's)."""
    now = time.perf_counter()
    wall = (now - tp) * 1000.0
    return Timing(draft_ms=draft_ms, verify_ms=verify_ms, other_ms=max(0.0, wall - draft_ms - verify_ms),
                  wall_ms=wall, t_end=now - t0)


def _check_n_ctx(n_ctx) -> int:
    try:
        n_ctx = int(n_ctx)
    except (TypeError, ValueError):
        raise SpectuiError(f"context size must be an integer, got {n_ctx!r}") from None
    if n_ctx < 8:
        raise SpectuiError(f"context size {n_ctx} is too small (at least 8 tokens)")
    return n_ctx


def _threads(threads) -> tuple[int, str]:
    """(-t, why): as given, or the physical performance cores within this process's affinity and CPU quota,
    as llama.cpp chooses them."""
    if threads:
        n, why = int(threads), "-t"
    else:
        choice = default_threads()
        n, why = choice.threads, choice.why
    if n < 1:
        raise SpectuiError(f"threads must be at least 1, got {threads}")
    return n, why


def check_inspect_top(n) -> int:
    """--inspect-top N: 0 (off) .. INSPECT_TOP_LIMIT."""
    try:
        n = int(n)
    except (TypeError, ValueError):
        raise SpectuiError(f"--inspect-top must be a whole number, got {n!r}") from None
    if not 0 <= n <= INSPECT_TOP_LIMIT:
        raise SpectuiError(f"--inspect-top must be between 0 and {INSPECT_TOP_LIMIT}, got {n}")
    return n


def _first_token(row: np.ndarray, temperature: float, rng: np.random.Generator) -> tuple[int, float]:
    """The prefill pass's token and its probability: sampled at T > 0, argmax (temperature-1 probability) at 0."""
    if temperature > 0:
        p = softmax(row, temperature)
        tok = sample(p, rng)
        return tok, float(p[tok])
    tok = int(np.argmax(row))
    return tok, float(np.exp(float(row[tok]) - logsumexp(row)))


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


class _RunState:
    """Counters, stop reason and the auto-k policy of one run."""

    def __init__(self, policy: "DraftPolicy | None" = None) -> None:
        self.reason = ""
        self.error = ""
        self.n_passes = 0
        self.n_emitted = 0
        self.n_drafted = 0
        self.n_accepted = 0
        self.started: RunStarted | None = None
        self.policy = policy  # observes every event of the run (its memory is its own aggregates)
        self.probe: MachineProbe | None = None
        self.may_overlap = False  # run(overlap=True) where a core is spare
        self.overlap = False  # this pass is finished on the finishing thread (Engine._overlap_for)
        self.pending: deque = deque()  # passes decided, not yet yielded: Future[PassEvent] or PassEvent
        self.rows_busy: Future | None = None  # the pass still reading the target's logit buffer, if any
        self.copy_rows = False  # a verify had to wait for rows_busy: finishing passes read copies instead
        self.waited_s = 0.0  # the loop's wait for a finishing pass since the last pass began (goes to the next)


    def observe(self, ev: Event) -> None:
        if self.policy is not None:
            self.policy.observe(ev)


@dataclass
class _PassWork:
    """What one decided pass hands to ``Engine._finish``: its own copies of everything the event is made from
    (the run's text decoder is shared: passes are finished one at a time, in order)."""

    index: int
    settings: Settings
    k: int
    ids: list[int]
    prop: Proposal | None
    p: _TargetProbs
    verdict: Verdict
    kind: str
    n_out: int
    timing: Timing | None  # None (inline): measured when the event is made
    n_ctx_used: int
    decoder: codecs.IncrementalDecoder
    rows_buf: np.ndarray | None = None  # a reused copy of the target rows (returned to Engine._rows_free)
    resid_buf: np.ndarray | None = None  # the residual's buffer (T > 0), returned to Engine._prob_rows
    holds_view: bool = False  # p.rows is llama.cpp's own buffer: the next target decode waits for this pass
    gated: bool = False  # finished on the finishing thread, in the gate's windows
    clock: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)  # draft_ms, verify_ms, pass start, run start
