"""ReplayScreen: a recorded run played back by a ReplayPlayer, under a banner that says so. Its keys
move through the recording: pause, step, jump, speed, restart from the beginning (shared.replay_keys, as
on the race's clock)."""

from __future__ import annotations

from typing import Iterator

from textual.app import ComposeResult
from textual.binding import Binding

from ...contract.control import RunControl
from ...contract.events import Event, RunStarted
from ...recording.player import ReplayPlayer
from ...views.view import ReplayPosition, ScreenView
from ..shared.replay_keys import JUMP, PAUSE, RESTART, STEP, ReplayKeys
from .replay_banner import ReplayBanner
from .run_screen import INSPECT_BINDINGS, RunScreen


class ReplayScreen(ReplayKeys, RunScreen):
    HELP_FOR_REPLAY = True
    SHADOWED_IN_INSPECT = frozenset({"step_forward", "step_back"})
    BINDINGS = [
        *STEP, *JUMP,
        Binding("greater_than_sign", "faster", "faster"),
        Binding("less_than_sign", "slower", "slower"),
        PAUSE, RESTART,
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
