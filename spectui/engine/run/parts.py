"""What a run is made of: the loaded engine's parts and the run's request, handed to a pass loop once per run.

``Engine.run`` makes a ``RunRequest`` (what this run was asked for) and takes a ``RunParts`` (``Engine.parts()``:
everything loaded that the run works with: the models, the drafters, the KV cursor, the reused buffers, the
finishing thread, the decode's abort, the draft-length policy's factory) and hands both to a pass loop
(``passes.PassLoop``). A pass loop reads nothing else of the engine: the parts are the declared seam between
loading (loop.py) and running (passes.py, eventmaker.py, finisher.py).

A second pass-loop strategy (one that, for instance, drafts block n + 1 on its own thread while the target
verifies block n) is made from the same two objects: it subclasses ``PassLoop``, keeps its frame (RunStarted, the
prefill pass, the settings between passes, the end of the run) and its steps (choose k, verify, decide, roll
back), and replaces ``PassLoop.decode_passes``. What it needs beyond these parts is a new field here, made by
``Engine.parts()``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from ...contract.control import RunControl
from ...contract.errors import SpectuiError
from ...contract.events import MachineProbe, ModelInfo
from ..cpu import OthersCpu
from ..drafters import head_names
from ..drafters.base import Drafter
from ..drafters.chain import CHAIN_SEPARATOR, ChainDrafter, chain_names
from ..drafters.head import HeadDrafter
from ..llama.abort import DecodeAbort
from ..llama.models import LoadedModel
from ..rowmath import RowPool
from .finisher import FinishingThread
from .graph_path import GraphRun
from .pipeline import PipelineSetup
from .policy import DraftPolicyFactory


@dataclass
class TargetCursor:
    """What the engine knows of the target's KV cache between runs (``Engine.measure_verify_ms`` reads it):
    the cells holding accepted context, the last accepted token, whether a run is going on, and the newest
    run's number (an older, abandoned run must not touch a newer run's state)."""

    n_past: int = 0
    last_token: int | None = None
    in_run: bool = False
    run_id: int = 0


class Drafters:
    """Every drafter an engine can switch to mid-run, by name: "none", "ngram", "model" (with a draft model) and
    the head's name ("eagle3" or "mtp", with a head). One per engine, shared by its runs.

    Args:
        by_name: the drafters, by the names ``Settings.drafter`` takes.
        head: the engine's head drafter (also in ``by_name`` under its name), or None.
        warn: where the one warning goes ('model' asked for without a draft model).
    """

    def __init__(self, by_name: dict[str, Drafter], head: HeadDrafter | None, warn: Callable[[str], None]) -> None:
        self.by_name = by_name
        self.head = head
        self.warn = warn
        self.warned_no_draft = False
        self._chains: dict[str, Drafter] = {}  # chains made so far, by Settings.drafter

    def pick(self, name: str) -> Drafter:
        """The drafter for ``Settings.drafter`` = ``name``.

        Args:
            name: "none", "ngram", "model" or a head's name.

        Returns:
            That drafter; n-gram lookup for "model" when no draft model is loaded (with one warning per engine).

        Raises:
            SpectuiError: a head's name on an engine loaded without that head.
        """
        if CHAIN_SEPARATOR in name:
            return self._chain(name)
        d = self.by_name.get(name)
        if d is None and name in head_names():
            raise SpectuiError(f"--drafter {name} needs the engine loaded with its head (Engine(head={name!r}))")
        if d is None:  # "model" without a draft model
            if not self.warned_no_draft:
                self.warned_no_draft = True
                self.warn("warning: no draft model loaded; the 'model' drafter falls back to n-gram lookup")
            d = self.by_name["ngram"]
        return d

    def _chain(self, name: str) -> Drafter:
        """The chain ``name`` ("ngram-mod,model": spectui's names in priority order), made once per engine; a member
        this engine cannot draft with (a draft model's without one, a head it was not loaded with) is left out
        with one warning, as llama.cpp leaves out a type whose model is missing."""
        chain = self._chains.get(name)
        if chain is None:
            members = [(n, self.by_name[n]) for n in chain_names(name) if n in self.by_name]
            missing = [n for n in chain_names(name) if n not in self.by_name]
            if missing:
                self.warn(f"warning: the chain {name} drafts without {', '.join(missing)} (not loaded)")
            chain = self._chains[name] = ChainDrafter(members) if len(members) > 1 else (
                members[0][1] if members else self.by_name["none"])
        return chain

    def get(self, name: str) -> Drafter | None:
        """The drafter loaded under ``name``, or None (no fallback, no warning)."""
        return self.by_name.get(name)

    def values(self) -> Iterable[Drafter]:
        return self.by_name.values()

    def restart(self, keep_rows: bool) -> None:
        """Every drafter's ``start()`` (a run begins: their caches are empty); ``keep_rows``: copy the raw
        logit rows into proposals (the debug hook reads them)."""
        for d in self.by_name.values():
            d.start()
            d.keep_rows = keep_rows


@dataclass(frozen=True)
class RunRequest:
    """What one run was asked for (``Engine.run``'s arguments, checked).

    Attributes:
        prompt: the text to continue (already rendered with a chat template, when one was used).
        control: the settings, stop and pause the loop reads between passes.
        n_predict: tokens to emit at most (< 0: until EOG or a full context; 0: no pass).
        probe: this machine's verify curve (``spectui probe``), recorded in RunStarted, or None.
        chat_template: the label of the template ``prompt`` was rendered with ("" for a raw prompt).
        overlap: finish each pass on the finishing thread while the next one decodes (where a core is spare).
        pipeline_choice: what ``--pipeline auto`` chose and why (RunStarted.pipeline_choice; "" otherwise).
    """

    prompt: str
    control: RunControl
    n_predict: int
    probe: MachineProbe | None = None
    chat_template: str = ""
    overlap: bool = False
    pipeline_choice: str = ""


@dataclass(frozen=True)
class RunParts:
    """The loaded engine's parts a run works with (see the module docstring); ``Engine.parts()`` makes one.

    The objects are the engine's own (a run changes the models' KV caches, the cursor, the drafters' state and
    the reused buffers); the object holding them is frozen, so a pass loop cannot swap a part mid-run.

    Attributes:
        target: the target model and its context.
        draft: the draft model, or None.
        drafters: every drafter a run may switch to, by name.
        head_in_every_run: the head reads the target's decodes in every run (True), or only in runs that
            start with it (``Engine(head_in_every_run=False)``).
        policy_factory: makes the run's draft-length policy (auto k), or None.
        cursor: the target's KV cursor between runs.
        rows: the reused rows of the target's probabilities and residuals (T > 0).
        texts: token id -> its text, filled by the inspector's candidates (kept between runs).
        others: other processes' CPU on this process's cores, sampled once per pass.
        finishing: the engine's finishing thread (``Engine.run(overlap=True)``).
        abort: ends the llama_decode in progress when the run's control stops (abort.py).
        graph: the graph path's chains (``--sampling graph``), or None.
        spare_core: a core is left free by the decode (overlap is allowed).
        n_ctx: the context the run may fill (the user's -c, at most what llama.cpp made).
        threads: the decode threads.
        inspect_top: candidates recorded per verified position (0: off).
        target_info: the target's ``ModelInfo`` (RunStarted.target).
        draft_info: the draft's ``ModelInfo`` (RunStarted.draft), or None.
        debug_hook: tests: called with each pass's logits, or None (the engine's hook when the run was asked).
        pipeline: the draft thread and the thread split of pipelined passes (``Settings.pipeline``), or None
            without a draft model.
    """

    target: LoadedModel
    draft: LoadedModel | None
    drafters: Drafters
    head_in_every_run: bool
    policy_factory: DraftPolicyFactory | None
    cursor: TargetCursor
    rows: RowPool
    texts: dict[int, str]
    others: OthersCpu
    finishing: FinishingThread
    abort: DecodeAbort
    graph: GraphRun | None
    spare_core: bool
    n_ctx: int
    threads: int
    inspect_top: int
    target_info: ModelInfo
    draft_info: ModelInfo | None
    debug_hook: Callable[[dict], None] | None = None
    pipeline: PipelineSetup | None = None

    @property
    def head(self) -> HeadDrafter | None:
        """The engine's head drafter (EAGLE-3 or MTP), or None."""
        return self.drafters.head

    def reset_for_run(self) -> None:
        """Empty both KV caches and restart the drafters (a run, or a measurement that runs like one, begins)."""
        self.target.clear()
        if self.draft is not None:
            self.draft.clear()
        self.cursor.n_past = 0
        self.others.sample()  # a new baseline: the prefill pass reports from here
        self.drafters.restart(keep_rows=self.debug_hook is not None)


__all__ = ["Drafters", "RunParts", "RunRequest", "TargetCursor"]
