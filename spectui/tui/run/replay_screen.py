"""ReplayScreen: a recorded run played back by a ReplayPlayer, under a banner that says so. Its keys
move through the recording: pause, step, jump, speed, restart from the beginning."""

from __future__ import annotations

from typing import Callable, Iterator

from textual.app import ComposeResult
from textual.binding import Binding

from ...contract.control import RunControl
from ...contract.events import Event, RunStarted
from ...recording.player import ReplayPlayer
from .replay_banner import ReplayBanner
from ...views.view import ReplayPosition, ScreenView
from .run_screen import INSPECT_BINDINGS, RunScreen


class ReplayScreen(RunScreen):
    HELP_FOR_REPLAY = True
    SHADOWED_IN_INSPECT = frozenset({"step_forward", "step_back"})
    BINDINGS = [
        Binding("right", "step_forward", "step▶"),
        Binding("left", "step_back", "◀step"),
        Binding("home", "jump_start", "start", show=False),
        Binding("end", "jump_end", "end", show=False),
        Binding("greater_than_sign", "faster", "faster"),
        Binding("less_than_sign", "slower", "slower"),
        Binding("space,p", "pause", "pause"),
        Binding("r", "restart", "restart"),
    ] + INSPECT_BINDINGS

    def __init__(self, player: ReplayPlayer) -> None:
        super().__init__()
        self.player = player
        self.recording = next((ev for ev in player.events if isinstance(ev, RunStarted)), None)

    def compose(self) -> ComposeResult:
        yield ReplayBanner(id="banner")
        yield from super().compose()

    def on_mount(self) -> None:
        self.banner = self.query_one(ReplayBanner)

    def show(self, view: ScreenView, *, passes: bool, stats: bool, status: bool) -> None:
        super().show(view, passes=passes, stats=stats, status=status)
        self.banner.show(view)

    def events(self, control: RunControl, prompt: str) -> Iterator[tuple[int | None, Event]]:
        return self.player.iter_indexed(control)

    def position(self) -> ReplayPosition:
        return ReplayPosition(self.player.speed, self.player.cursor, len(self.player), self.recording)

    def playing_badge(self, running: bool) -> tuple[str, str]:
        return ("REPLAY" if running else "REPLAY END"), "magenta"

    # keys -------------------------------------------------------------------------------------
    def _seek(self, move: Callable[[], int]) -> None:
        move()
        self.app.state.rebuild(self.player.prefix())
        self.app.repaint_all()

    def _play_on(self) -> None:
        """Start a new worker from the cursor (the old one ended at the end of the recording)."""
        if not self.app.running and not self.player.at_end:
            self.app.restart_worker()

    def action_step_forward(self) -> None:
        self.app.control.pause()
        self._seek(self.player.step_forward)

    def action_step_back(self) -> None:
        self.app.control.pause()
        self._seek(self.player.step_back)

    def action_jump_start(self) -> None:
        self._seek(self.player.jump_start)
        self._play_on()

    def action_jump_end(self) -> None:
        self._seek(self.player.jump_end)

    def action_faster(self) -> None:
        self.player.faster()
        self.app.settings_changed()

    def action_slower(self) -> None:
        self.player.slower()
        self.app.settings_changed()

    def action_pause(self) -> None:
        control = self.app.control
        if control.paused:
            control.resume()
            self._play_on()
        else:
            control.pause()
        self.app.settings_changed()

    def resume_after_inspect(self) -> None:
        self.app.control.resume()
        self._play_on()

    def action_restart(self) -> None:
        self._seek(self.player.jump_start)
        self.app.control.resume()
        self._play_on()
