"""LiveScreen: a run on the engine. Its keys change the run's settings through RunControl (the engine
reads them at its next pass): k, temperature, drafter, auto k, --draft-p-min, pause, restart, a new
prompt; and the token inspector's (RunScreen: i, then the arrows move its cursor instead of k / temp)."""

from __future__ import annotations

from typing import Callable, Iterable, Iterator

from textual.binding import Binding

from ...contract.control import RunControl
from ...contract.events import CHAIN_SEPARATOR, Event
from ...engine.drafters import head_names, specs
from ..shared.replay_keys import PAUSE, RESTART
from .prompt_screen import PromptScreen
from .run_screen import INSPECT_BINDINGS, RunScreen

Source = Callable[[RunControl, str], Iterable[Event]]

# --draft-p-min steps for ] / [ (llama.cpp's default for its speculative server is 0.75; 0 = off)
P_MIN_STEPS = (0.0, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 0.95)


def next_p_min(current: float, up: bool) -> float:
    """The next step above (``up``) or below ``current`` (a value between steps goes to the nearest one
    in that direction); the ends stay put."""
    if up:
        return next((p for p in P_MIN_STEPS if p > current + 1e-9), P_MIN_STEPS[-1])
    return next((p for p in reversed(P_MIN_STEPS) if p < current - 1e-9), P_MIN_STEPS[0])


DEFAULT_CHAIN = "ngram-mod,model"  # the chain d offers beside a draft model: llama.cpp's ngram-mod, then the model


class LiveScreen(RunScreen):
    SHADOWED_IN_INSPECT = frozenset({"k_up", "k_down", "temp_up", "temp_down"})
    BINDINGS = [
        Binding("up,plus,equals_sign", "k_up", "k+"),
        Binding("down,minus", "k_down", "k-"),
        Binding("right,t", "temp_up", "temp+"),
        Binding("left,T", "temp_down", "temp-"),
        PAUSE, RESTART,
        Binding("n", "new_prompt", "prompt"),
        Binding("d", "drafter", "drafter"),
        Binding("a", "auto_k", "auto k"),
        Binding("o", "pipeline", "pipeline"),
        Binding("right_square_bracket", "p_min(1)", "p-min+", show=False),
        Binding("left_square_bracket", "p_min(0)", "p-min-", show=False),
    ] + INSPECT_BINDINGS

    def __init__(self, source: Source, recorder=None) -> None:
        super().__init__()
        self.source = source
        self.recorder = recorder

    def events(self, control: RunControl, prompt: str) -> Iterator[tuple[int | None, Event]]:
        rec = self.recorder
        for ev in self.source(control, prompt):
            if rec is not None:
                rec.write(ev)
            yield None, ev

    # keys -------------------------------------------------------------------------------------
    def _update(self, **changes) -> None:
        self.app.control.update(**changes)
        self.app.settings_changed()

    def action_k_up(self) -> None:
        self._update(draft_max=self.app.control.settings.draft_max + 1, auto=None)

    def action_k_down(self) -> None:
        self._update(draft_max=self.app.control.settings.draft_max - 1, auto=None)

    def action_temp_up(self) -> None:
        self._update(temperature=round(self.app.control.settings.temperature + 0.1, 1))

    def action_temp_down(self) -> None:
        self._update(temperature=round(self.app.control.settings.temperature - 0.1, 1))

    def drafter_choices(self) -> tuple[str, ...]:
        """What ``d`` cycles through, in the drafters' own order (``spectui.engine.drafters.specs()``): those that
        need nothing, the draft model's when the run has one (the tree's only without a head) and the head (eagle3,
        mtp, dflash, dspark) the engine was loaded with; then the chains: the one the run started with, and with a
        draft model ``DEFAULT_CHAIN`` (llama.cpp's ngram-mod before the draft model); ``none`` last."""
        snap = self.app.snap
        start = snap.start if snap else None
        heads = head_names()
        if start is None:
            return tuple(s.name for s in specs() if not s.head and s.name != "none") + ("none",)
        head = start.head.kind if start.head is not None and start.head.kind in heads else (
            start.settings.drafter if start.settings.drafter in heads else None)  # a trace without .head
        have = {"nothing": True, "draft model": start.draft is not None}
        singles = [s.name for s in specs() if s.name != "none" and ((s.name == head) if s.head
                                                                   else have.get(s.needs, False))
                   and not (s.shape == "tree" and head is not None)]  # a tree never drafts beside a loaded head
        chains = [start.settings.drafter] if CHAIN_SEPARATOR in start.settings.drafter else []
        if start.draft is not None:
            chains.append(DEFAULT_CHAIN)
        return tuple(dict.fromkeys([*singles, *chains, "none"]))

    def action_drafter(self) -> None:
        choices = self.drafter_choices()
        cur = self.app.control.settings.drafter
        self._update(drafter=choices[(choices.index(cur) + 1) % len(choices)] if cur in choices else choices[0])

    def action_p_min(self, up: int) -> None:
        self._update(draft_p_min=next_p_min(self.app.control.settings.draft_p_min, bool(up)))

    def action_auto_k(self) -> None:
        self._update(auto=None if self.app.control.settings.auto else "cost")

    def action_pipeline(self) -> None:
        """--pipeline on / off from the next pass (a run without a draft model has nothing to overlap)."""
        start = self.app.snap.start if self.app.snap else None
        if start is not None and not start.pipeline_threads:
            self.notify("--pipeline needs a draft model (--draft)", timeout=3)
            return
        self._update(pipeline=not self.app.control.settings.pipeline)

    def action_pause(self) -> None:
        control = self.app.control
        control.resume() if control.paused else control.pause()
        self.app.settings_changed()

    def action_restart(self) -> None:
        self.app.restart_run()
        self.notify("restarted with the same prompt", timeout=2)

    def action_new_prompt(self) -> None:
        def done(value: str | None) -> None:
            if value:
                self.app.prompt = value
                self.action_restart()

        self.app.push_screen(PromptScreen(self.app.prompt), done)
