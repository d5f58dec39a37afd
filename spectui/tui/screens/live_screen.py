"""LiveScreen: a run on the engine. Its keys change the run's settings through RunControl (the engine
reads them at its next pass): k, temperature, drafter, auto k, pause, restart, a new prompt."""

from __future__ import annotations

from typing import Callable, Iterable, Iterator

from textual.binding import Binding

from ...control import RunControl
from ...events import DRAFTERS, Event
from .prompt_screen import PromptScreen
from .run_screen import RunScreen

Source = Callable[[RunControl, str], Iterable[Event]]


class LiveScreen(RunScreen):
    BINDINGS = [
        Binding("up,plus,equals_sign", "k_up", "k+"),
        Binding("down,minus", "k_down", "k-"),
        Binding("right,t", "temp_up", "temp+"),
        Binding("left,T", "temp_down", "temp-"),
        Binding("space,p", "pause", "pause"),
        Binding("r", "restart", "restart"),
        Binding("n", "new_prompt", "prompt"),
        Binding("d", "drafter", "drafter"),
        Binding("a", "auto_k", "auto k"),
    ]

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
        snap = self.app.snap
        start = snap.start if snap else None
        if start is not None and start.draft is None:
            return tuple(d for d in DRAFTERS if d != "model")
        return DRAFTERS

    def action_drafter(self) -> None:
        choices = self.drafter_choices()
        cur = self.app.control.settings.drafter
        self._update(drafter=choices[(choices.index(cur) + 1) % len(choices)] if cur in choices else choices[0])

    def action_auto_k(self) -> None:
        self._update(auto=None if self.app.control.settings.auto else "cost")

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
