"""ReplayKeys: the keys of a replay clock (the app's ``ReplayPlayer``), the same on a replayed run and on a
race: space / p pause and resume, → / ← step one event with passes forward / back (pausing), home / end
jump, faster / slower, r restart from the start.

A seek moves the player's cursor, then the app rebuilds its state from the events before it
(``app.rebuild()``) and repaints. The worker ends at the end of the recording (or at a pause it was told
to); ``play_on`` starts a new one from the cursor (``app.restart_worker()``) when there is more to play.
A screen mixes it in with InspectMode (resuming after inspect mode plays on too), lists its own bindings
for these actions from the bindings below (the footer's order is the face's) and may repaint more on a change
of the clock (``clock_changed``).
"""

from __future__ import annotations

from typing import Callable

from textual.binding import Binding

PAUSE = Binding("space,p", "pause", "pause")  # a live run's pause too
RESTART = Binding("r", "restart", "restart")  # a live run's restart too
STEP = [Binding("right", "step_forward", "step▶"), Binding("left", "step_back", "◀step")]
JUMP = [Binding("home", "jump_start", "start", show=False), Binding("end", "jump_end", "end", show=False)]


class ReplayKeys:

    def clock_changed(self) -> None:
        """The pause state or the speed changed: repaint what shows it."""
        self.app.settings_changed()

    def play_on(self) -> None:
        """Start a new worker from the cursor (the old one ended at the end of the recording, or paused)."""
        if not self.app.running and not self.app.player.at_end:
            self.app.restart_worker()

    def _seek(self, move_to: Callable[[], int]) -> None:
        move_to()
        self.app.rebuild()

    def resume_after_inspect(self) -> None:
        self.app.control.resume()
        self.play_on()

    def action_step_forward(self) -> None:
        self.app.control.pause()
        self._seek(self.app.player.step_forward)

    def action_step_back(self) -> None:
        self.app.control.pause()
        self._seek(self.app.player.step_back)

    def action_jump_start(self) -> None:
        self._seek(self.app.player.jump_start)
        self.play_on()

    def action_jump_end(self) -> None:
        self._seek(self.app.player.jump_end)

    def action_faster(self) -> None:
        self.app.player.faster()
        self.clock_changed()

    def action_slower(self) -> None:
        self.app.player.slower()
        self.clock_changed()

    def action_pause(self) -> None:
        control = self.app.control
        if control.paused:
            control.resume()
            self.play_on()
        else:
            control.pause()
        self.clock_changed()

    def action_restart(self) -> None:
        self._seek(self.app.player.jump_start)
        self.app.control.resume()
        self.play_on()
