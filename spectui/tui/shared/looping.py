"""A paced face that loops, for ``spectui demo``: the run's replay and the race play to their end, hold the
finished screen, and start over (or hand over to the next act). Generic over the face: the demo passes the
app class (``tui.run.app.SpectuiApp``, ``tui.race.app.RaceApp``) and the name of its restart action. Textual
is imported when a class is made, so ``spectui demo --headless`` never loads it."""

from __future__ import annotations

import functools

LOOP_HOLD_S = 6.0  # the finished screen stays this long before the demo starts over


@functools.lru_cache(maxsize=None)
def looping(base, restart: str):
    """``base`` (a paced face: the run's SpectuiApp or the race's RaceApp), looping: once its player is at
    the end and at rest the finished screen holds for ``loop_hold_s`` seconds, then ``restart`` (the name of
    its screen's action that starts over) runs again (``next_act``: the app exits with "next" instead, for
    the next act). The welcome line and the act's reason are shown when it starts. Written once for both
    kinds of act: the hold is armed from the paint, which every state change, key and worker end goes
    through. One class per base (made once: a demo running for hours makes an app per act and loop, and
    Textual keeps what it learns of a class), configured per app by ``demo_setup``."""
    from textual.binding import Binding  # noqa: PLC0415 - importing this module loads no Textual (demo --headless)
    class Looping(base):
        BINDINGS = [Binding("w", "why", "why")]
        loops = 0
        _hold = None  # the timer holding the finished screen
        welcome = ""
        reason = ""
        loop_hold_s = LOOP_HOLD_S
        next_act = False

        def demo_setup(self, welcome: str, reason: str, loop_hold_s: float, next_act: bool):
            self.welcome, self.reason, self.loop_hold_s, self.next_act = welcome, reason, loop_hold_s, next_act
            return self

        def on_mount(self) -> None:  # Textual also runs the base's on_mount (handlers follow the MRO)
            self.notify(self.welcome, timeout=6)
            if self.reason:
                show_reason(self, self.reason)

        def action_why(self) -> None:
            if self.reason:
                show_reason(self, self.reason, whole=True)

        def _at_rest(self) -> bool:
            return self.player.at_end and not self.running and not self.control.paused

        def _paint(self, now: float) -> None:
            super()._paint(now)
            if self._hold is None and self._at_rest():
                self._hold = self.set_timer(self.loop_hold_s, self._loop_again)

        def _loop_again(self) -> None:
            self._hold = None
            if not self._at_rest():
                return
            self.loops += 1
            if self.next_act:
                self.exit("next")
                return
            getattr(self.face_screen(), restart)()

    Looping.__name__ = Looping.__qualname__ = "Demo" + base.__name__
    return Looping


REASON_S = 8.0  # the act's short "why" note stays this long (a click dismisses it sooner)


def reason_headline(reason: str) -> str:
    """The reason's first sentence (the verdict), for the note an 80x24 screen can spare."""
    first = reason.split("\n", 1)[0]
    cut = first.find(". ")
    return first[:cut + 1] if cut > 0 else first


def show_reason(app, reason: str, whole: bool = False) -> None:
    """The act's reason as a note: its first sentence and a pointer to ``w``, which shows it whole (a click
    on a note dismisses it)."""
    if whole:
        app.notify(reason, title="why", timeout=max(REASON_S, 12.0))
    else:
        app.notify(reason_headline(reason) + " (w: why)", title="why", timeout=REASON_S)
