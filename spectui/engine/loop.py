"""The engine: ``Engine`` loads a target (and optional draft) model through llama.cpp's low-level API, checks
them, measures, renders chat prompts and runs the speculative loop: ``Engine.run()`` drafts, verifies in one
target decode, rolls back, and yields one ``PassEvent`` per pass (pass 0 = prefill), ``SettingsChanged``
between passes, ``RunEnded`` last.

Where the run lives: parts.py (``RunParts``: what ``Engine.parts()`` hands a run, the one seam between loading
and running; ``RunRequest``: what the run was asked for), passes.py (``PassLoop``: the pass decisions),
eventmaker.py (``PassEventMaker``: a decided pass made into its event), finisher.py (``Finisher``: passes finished
in order, inline or overlapped with the next pass on the ``FinishingThread``).

Choices at the run's edges (what its events say there):

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

import statistics
import sys
import threading
import time
from typing import Callable, Iterator

from ..contract.control import RunControl
from ..contract.errors import SpectuiError
from ..contract.events import Event, MachineProbe
from ..contract.options import INSPECT_TOP_DEFAULT, EngineOptions
from ..contract.params import INSPECT_TOP_LIMIT
from .cpu import OthersCpu, default_threads
from .cpu import spare_core as _spare_core
from .drafters import spec_params
from .drafters import specs as drafter_specs
from .drafters.base import Drafter, DrafterResources
from .drafters.draft_tree import TREE_SEQS, drafts_tree
from .drafters.spec_heads import check_head, make_head_drafter
from .files.chat import chat_template_of
from .files.pair import pair_warning
from .llama.abort import DecodeAbort
from .llama.devices import gpu_layers
from .llama.llama_lib import llama, system_has_amx
from .llama.models import LoadedModel
from .llama.preload import check_gguf_file, check_pair
from .rowmath import RowPool
from .run.finisher import FinishingThread
from .run.graph_path import GraphRun
from .run.graph_path import choose as choose_sampling
from .run.parts import Drafters, RunParts, RunRequest, TargetCursor
from .run.passes import PassLoop
from .run.pipeline import pipeline_setup
from .run.pipelined import PipelinedPassLoop
from .run.policy import DraftPolicy, DraftPolicyFactory

__all__ = ["DraftPolicy", "Engine", "INSPECT_TOP_DEFAULT", "INSPECT_TOP_LIMIT", "check_inspect_top"]

_UNSET = object()


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr)


class Engine:
    """Target (+ optional draft) model loaded through llama.cpp's low-level API, and the speculative loop.

    Args:
        target_path: the target's GGUF file.
        draft_path: the draft model's GGUF file (None: n-gram lookup or a head drafts, or nothing).
        options: how the models load and run (``EngineOptions``: -c, -t, -ngl, the head, --sampling, ...).
        warn: where warnings go (default: stderr).
        draft_policy: makes the draft-length policy of each run (auto k), or None.
        changes: ``options`` with these fields changed (``Engine(t, d, n_ctx=256, threads=1)``).

    Raises:
        SpectuiError: a missing or foreign file, vocabularies that cannot speculate together, a bad option.
    """

    def __init__(self, target_path: str, draft_path: str | None = None, options: EngineOptions | None = None, *,
                 warn: Callable[[str], None] | None = None, draft_policy: DraftPolicyFactory | None = None,
                 **changes) -> None:
        o = (options or EngineOptions()).but(**changes)
        self.warn = warn or _stderr
        self.draft_policy = draft_policy  # a fresh per-run draft-length policy (for settings.auto), or None
        self.target = self.draft = None
        self.head = self.head_file = None  # "eagle3" or "mtp" and its weights' file (spec_heads.py, _heads)
        self.head_in_every_run = bool(o.head_in_every_run)
        self._head = None
        self._closed = False
        self._finishing = FinishingThread()  # where run(overlap=True) finishes passes; its gate: ``decoding``
        self.abort = DecodeAbort()  # a run's stop ends the llama_decode in progress (abort.py)
        self.debug_hook: Callable[[dict], None] | None = None  # tests: per-pass logits (see passes.PassLoop)
        n_ctx = _check_n_ctx(o.n_ctx)
        self.inspect_top = check_inspect_top(o.inspect_top)
        self.threads, self.threads_why = _threads(o.threads)
        # -td, the draft thread and the pipelined passes' split (pipeline.py); what --pipeline auto chose and why
        self.pipeline = _pipeline(self.threads, o.threads, o.threads_draft, o.pipeline_threads, o.pin_pipeline)
        self.threads_draft, self.pipeline_choice = self.pipeline.threads[1], ""
        ngl_t, ngl_d = gpu_layers(o.n_gpu_layers, o.n_gpu_layers_draft, self.warn)
        tpath = check_gguf_file(target_path, "target")
        dpath = check_gguf_file(draft_path, "draft") if draft_path else None
        self.head, self.head_file, head_path, dpath = _heads(o.head, o.head_file, tpath, dpath)
        n_shared = check_pair(tpath, dpath, n_ctx, ngl_t, ngl_d, self.warn)
        params = spec_params(o.spec_options)  # llama.cpp's n-gram options, refused before any weights load
        # an EAGLE-3 head drafts trees when the tree's options ask for them (its context and the target's hold the
        # tree's sequences: drafters/eagle3_tree.py)
        self.head_tree = params.get("tree") if self.head == "eagle3" and drafts_tree(o.spec_options) else None
        self._load(tpath, dpath, (n_shared, ngl_t, ngl_d), o.but(n_ctx=n_ctx, grow_kv=o.grow_kv and o.head is None))
        self.target_info = self.target.info
        self.draft_info = self.draft.info if self.draft else None
        if self.draft is not None and (msg := pair_warning(tpath, dpath, self.draft.n_params, self.target.n_params)):
            self.warn(msg)
        self._others = OthersCpu()  # other processes' CPU use on our cores, sampled once per pass
        self._drafters = Drafters(self._make_drafters(o.head, head_path, params), self._head, self.warn)
        self._texts: dict[int, str] = {}  # token id -> its piece as text (inspector candidates)
        self._cursor, self._chat = TargetCursor(), _UNSET  # the target's KV cells between runs; its template (lazy)
        for m in (self.target, self.draft):
            if m is not None:
                m.gate = self._finishing.gate  # the models open the finishing thread's gate while they decode
                self.abort.attach(llama(), m.ctx)
        self.spare_core = _find_spare_core(o.spare_core, self.threads, self.target, self.draft)
        self._prob_rows = RowPool()  # the target's softmaxed rows and residuals (T > 0), reused

    def _make_drafters(self, head: str | None, head_path: str | None, params: dict) -> dict[str, "Drafter"]:
        """Every drafter this engine can switch to mid-run: each of the package's drafters whose needs this
        engine's models meet (drafters.specs(): none and the model-free ones always; the draft model's with a
        draft; the head's with that head)."""
        if head is not None:
            try:
                self._head = make_head_drafter(head, self.target, head_path, self.n_ctx, self.threads,
                                               self.head_tree)
            except BaseException:
                self.close()
                raise
        res = DrafterResources(target=self.target, draft=self.draft, head=self._head,
                               params=params)
        made = ((s.name, s.make(res)) for s in drafter_specs())
        return {name: d for name, d in made if d is not None}

    def _load(self, tpath, dpath, shared: tuple[int | None, int, int], o: EngineOptions) -> None:
        """Both models' weights and contexts (weights repacked unless --no-repack or an AMX build), and the context
        a run may fill (``o.n_ctx``: -c; llama.cpp pads a context to 256 cells); ``shared``: the ids both models
        choose among (``check_pair``), and each model's GPU layers."""
        n_shared, ngl_t, ngl_d = shared
        n_ctx = o.n_ctx
        # caches grown per run only where nothing else holds the contexts: numpy sampling, on the CPU
        self.grow_kv = o.grow_kv and (o.sampling == "cpu" or (o.sampling == "auto" and not ngl_t and not ngl_d))
        use_extra_bufts = not o.no_repack
        if use_extra_bufts and system_has_amx():
            use_extra_bufts = False
            self.warn(
                "warning: this llama.cpp build has AMX kernels, which crash on machines (VMs) without AMX "
                "state; loading without weight repacking (as --no-repack) to stay safe"
            )
        self.no_repack = not use_extra_bufts
        try:
            common = dict(n_ctx=o.n_ctx, threads=self.threads, use_extra_bufts=use_extra_bufts, n_batch=o.n_batch,
                          n_ubatch=o.n_ubatch, use_mmap=o.use_mmap, kv_cells=0 if self.grow_kv else None)
            # the graph path's target chain samples every row of a verify (n_outputs_max_per_seq 0: n_batch)
            # with a draft model both contexts hold a token tree's sequences (drafters/draft_tree.py); without one the
            # target does when an EAGLE-3 head or a model-free drafter proposes trees (drafters/suffix_tree.py)
            common["n_seq"] = TREE_SEQS if dpath or o.tree_seqs or self.head_tree is not None else 1
            self.target = LoadedModel(tpath, "target", n_gpu_layers=ngl_t, load_mtp=o.head == "mtp",
                                        n_outputs_max_per_seq=1 if o.sampling == "cpu" else 0, **common)
            if dpath:
                common["threads"] = self.threads_draft
                self.draft = LoadedModel(dpath, "draft", n_gpu_layers=ngl_d, **common)
                # Vocabularies may differ in size by padding rows (llama.cpp allows 128): both models choose
                # only among the ids they share, so a draft is always a target id and p, q have one support.
                self.target.n_use = self.draft.n_use = n_shared
            # --sampling: the run's row math in llama.cpp's graph or in numpy (graph_path.py), chosen once
            self.sampling, self.sampling_why = choose_sampling(o.sampling, self.target, self.draft, self.head)
            if self.sampling == "graph" and self.grow_kv:  # the graph's chains hold the contexts: full size now
                fit_caches([self.target, self.draft], n_ctx, n_ctx, self.abort)
                self.grow_kv = False
            self._graph = GraphRun(self.target, self.draft) if self.sampling == "graph" else None
        except BaseException:
            self.close()
            raise
        made = [m.n_ctx for m in (self.target, self.draft) if m is not None]
        self.n_ctx = n_ctx if self.grow_kv else min(n_ctx, *made)

    # ------------------------------------------------------------ small API
    @property
    def decoding(self) -> threading.Event:
        """Set while a model is inside llama_decode (or the loop waits for a pass to be finished): the
        windows in which other Python threads (the finisher, a trace writer: TraceWriter.gate) take the GIL
        without making the loop wait for it."""
        return self._finishing.gate

    def tokenize(self, text: str) -> list[int]:
        return self.target.tokenize(text)

    def detokenize(self, ids) -> str:
        return self.target.detokenize(ids)

    def close(self) -> None:
        finishing = getattr(self, "_finishing", None)
        if finishing is not None:  # a pass still being finished reads the models' vocabularies: let it end first
            finishing.close()
        if getattr(self, "pipeline", None) is not None:
            self.pipeline.thread.close()
        if getattr(self, "_head", None) is not None:  # the head's contexts read the target's: close them first
            self._head.head.close()
            self._head = None
        if getattr(self, "_graph", None) is not None:  # the chains are freed before their contexts
            self._graph.free()
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

    def measure_verify_ms(self, k: int, repeats: int = 3) -> float:
        """Median time of one target decode of a (k + 1)-token batch, rolled back. Between runs only.

        Args:
            k: draft tokens (the batch holds k + 1).
            repeats: timed decodes.

        Returns:
            The median, in ms.
        """
        if self.target is None:
            raise SpectuiError("the engine is closed")
        k = max(0, int(k))
        n = k + 1
        if n > self.target.n_batch:
            raise SpectuiError(f"a verify batch of {n} tokens exceeds the batch size {self.target.n_batch}")
        cur = self._cursor
        pos0 = cur.n_past
        if pos0 + n > min(self.n_ctx, self.target.n_ctx):  # the user's limit, or the cells the caches have now
            if cur.in_run:
                raise SpectuiError(f"no room left in the context to measure a verify batch of {n} tokens")
            pos0 = 0
            self.target.clear()
            cur.n_past = 0
        self.target.rollback(pos0)  # cells past the accepted context (an interrupted pass) would collide
        tok = cur.last_token
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
            probe: MachineProbe | None = None, chat_template: str = "", overlap: bool = False,
            pipeline_choice: str = "") -> Iterator[Event]:
        """Generate from ``prompt``, pass by pass (a ``passes.PassLoop`` over ``parts()``).

        Args:
            prompt: the text to continue.
            control: the settings, stop and pause, read between passes (default: ``RunControl()``).
            n_predict: tokens to emit at most (< 0: until EOG or a full context; 0: no pass).
            probe: this machine's verify cost (``spectui probe``), recorded in RunStarted for the policy and faces.
            chat_template: the label of the template ``prompt`` was rendered with (``chat_prompt``), recorded
                in RunStarted; "" for a raw prompt.
            overlap: finish each pass (the inspector's top-N, the reported probabilities, the texts, the event
                itself) on the finishing thread while the next pass drafts and verifies, where ``spare_core``
                says a core is free for it, and not under automatic k (its policy reads pass N before choosing
                pass N + 1). The events are the same, in the same order, but pass N's arrives once pass N + 1 has
                been decided: a consumer that changes the settings in reaction to pass N's event then changes
                pass N + 2 (without ``overlap``: pass N + 1). The faces and the headless runs, which never react
                to a pass that way, ask for it.
            pipeline_choice: what ``--pipeline auto`` chose and why (RunStarted); with a draft model the run is a
                ``pipelined.PipelinedPassLoop``, pipelining the passes under ``Settings.pipeline``.

        Returns:
            An iterator of RunStarted, PassEvent..., SettingsChanged..., RunEnded (always last, also after a
            stop, Ctrl+C or an error). The run starts when it is first iterated.

        Raises:
            SpectuiError: the engine is closed.
        """
        fit_for_run(self, prompt, int(n_predict))
        request = RunRequest(prompt=prompt, control=control or RunControl(), n_predict=int(n_predict), probe=probe,
                             chat_template=str(chat_template or ""), overlap=bool(overlap),
                             pipeline_choice=str(pipeline_choice or self.pipeline_choice or ""))
        parts = self.parts()
        return (PipelinedPassLoop if parts.pipeline is not None else PassLoop)(parts, request).events()

    def parts(self) -> RunParts:
        """The loaded parts a run works with: the one seam between loading and running (parts.py).

        Returns:
            A ``RunParts`` over this engine's own objects (models, drafters, the KV cursor, the reused buffers,
            the finishing thread), made per call, with the debug hook as it is now.

        Raises:
            SpectuiError: the engine is closed.
        """
        if self.target is None:
            raise SpectuiError("the engine is closed")
        return RunParts(
            target=self.target, draft=self.draft, drafters=self._drafters, head_in_every_run=self.head_in_every_run,
            policy_factory=self.draft_policy, cursor=self._cursor, rows=self._prob_rows, texts=self._texts,
            others=self._others, finishing=self._finishing, abort=self.abort, graph=self._graph,
            spare_core=self.spare_core,
            n_ctx=self.n_ctx, threads=self.threads, inspect_top=self.inspect_top, target_info=self.target_info,
            draft_info=self.draft_info, debug_hook=self.debug_hook,
            pipeline=self.pipeline if self._drafters.get("model") is not None else None,
        )

    @property
    def in_run(self) -> bool:
        """Whether a run is going on (its events not all consumed): measurements between runs refuse then."""
        return self._cursor.in_run

    @property
    def chat_template(self):
        """The target's chat template (``engine.files.chat.ChatTemplate``), None when the GGUF has none."""
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


def fit_for_run(engine: Engine, prompt, n_predict: int) -> None:
    """With ``engine.grow_kv``: caches for a run of ``prompt`` and ``n_predict`` tokens (its verify batches never
    pass n_predict: passes.cap_k); not while another run is going on (its caches stay as they are)."""
    if engine.grow_kv and engine.target is not None and not engine.in_run:
        n_prompt = len(engine.target.tokenize(prompt)) if isinstance(prompt, str) and prompt else 0
        need = engine.n_ctx if n_predict < 0 else n_prompt + n_predict + 2
        fit_caches([engine.target, engine.draft], min(engine.n_ctx, need), engine.n_ctx, engine.abort)


def fit_caches(models, need: int, n_ctx: int, abort: DecodeAbort) -> bool:
    """Each model's KV cache made ``need`` cells or more, in 256-cell steps up to ``n_ctx``, where it has fewer:
    a new context in place of the old (``models.resize_cells``), carrying ``abort``. Only where a run begins
    (every run starts with empty caches). True when one was made; None entries are skipped."""
    short = [m for m in models if m is not None and m.n_ctx < need]
    for m in short:
        m.resize_cells(min(n_ctx, -(-need // 256) * 256))
        abort.attach(llama(), m.ctx, again=True)
    return bool(short)


def _heads(head: str | None, head_file: str | None, tpath: str, dpath: str | None):
    """(head, the head's weights' file, the head's file, the draft model's file), refused in one line before any
    weights load. ``head_file``: the head's own file beside a separate draft model (``dpath``; the target itself
    for mtp); without it the draft is the head (llama.cpp's -md). (``Engine(head_in_every_run=False)``: the head
    reads the target's decodes only in runs that start drafting with it (bench, sweep, race: each run keeps its
    drafter, and the others pay nothing for the head); True: in every run, so a run may switch to it (the TUI's
    d).)"""
    if head is None:
        return None, None, None, dpath
    if head_file is not None:
        path = check_head(head, tpath, check_gguf_file(head_file, "head"))
    else:
        path, dpath = check_head(head, tpath, dpath), None
    return head, path or tpath, path, dpath  # the head's weights come from the target itself for mtp


def _find_spare_core(spare_core: bool | None, threads: int, target, draft) -> bool:
    """A core the decode leaves free (run(overlap=True) finishes passes there): None = when this process may
    use more cores than the decode threads, or when no layer of either model runs on the CPU."""
    on_cpu = any(m is not None and m.n_gpu_layers < m.n_layer + 1 for m in (target, draft))
    return _spare_core(threads, on_cpu) if spare_core is None else bool(spare_core)


def _pipeline(threads: int, given, threads_draft, split, pin: bool):
    """The engine's pipeline.PipelineSetup: -td checked (default -t), the split as given or from the cores."""
    td = _threads(threads_draft, "-td")[0] if threads_draft else None
    return pipeline_setup(threads, given, td, split, pin, default_threads().threads)


def _check_n_ctx(n_ctx) -> int:
    try:
        n_ctx = int(n_ctx)
    except (TypeError, ValueError):
        raise SpectuiError(f"context size must be an integer, got {n_ctx!r}") from None
    if n_ctx < 8:
        raise SpectuiError(f"context size {n_ctx} is too small (at least 8 tokens)")
    return n_ctx


def _threads(threads, flag: str = "-t") -> tuple[int, str]:
    """(-t, why): as given, or the physical performance cores within this process's affinity and CPU quota,
    as llama.cpp chooses them."""
    if threads:
        n, why = int(threads), flag
    else:
        choice = default_threads()
        n, why = choice.threads, choice.why
    if n < 1:
        raise SpectuiError(f"{flag}: threads must be at least 1, got {threads}")
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
