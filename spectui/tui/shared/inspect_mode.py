"""InspectMode: the token inspector on a face's screen, the same on the run face and in each race pane.

``i`` enters inspect mode (the run, replay or race pauses; the cursor starts on the newest pass's last
token), the arrows / h j k l move the cursor over the ribbon's tokens instead of doing what they do
otherwise (``check_action``: the screen's bindings list both, and the one whose mode is off gives way),
enter opens InspectorScreen for the token, escape leaves (resuming what inspect mode paused). A click on
a ribbon token opens the inspector directly. Nothing of this runs per pass: the cursor is one field of the
view, None while not inspecting.

A screen mixes it in before its FaceScreen and gives ``_recent()`` (the passes the cursor moves over),
``inspect_changed()`` (repaint what shows the cursor) and ``resume_after_inspect()``; it lists
``INSPECT_BINDINGS`` after its own keys and names in ``SHADOWED_IN_INSPECT`` its actions on the keys
inspect mode takes.
"""

from __future__ import annotations

from textual.binding import Binding

from ...views.inspector import first_cursor, move, view_at
from ...views.view import InspectCursor
from .inspector_screen import InspectorScreen
from .pass_ribbon import PassRibbon

# Inspect mode's keys; each screen lists them after its own (a subclass's BINDINGS replace its base's for
# the same key, so both meanings of an arrow must sit in one list; check_action picks by mode).
INSPECT_BINDINGS = [
    Binding("i", "inspect", "inspect"),
    Binding("left,h", "cursor(-1, 0)", "◀ tok", show=False),
    Binding("right,l", "cursor(1, 0)", "tok ▶", show=False),
    Binding("up,k", "cursor(0, -1)", "newer", show=False),
    Binding("down,j", "cursor(0, 1)", "older", show=False),
    Binding("enter", "open_inspector", "open"),
    Binding("escape", "leave_inspect", "leave"),
]
INSPECT_ACTIONS = frozenset({"cursor", "open_inspector", "leave_inspect"})


class InspectMode:
    SHADOWED_IN_INSPECT: frozenset[str] = frozenset()  # this screen's actions on the keys inspect mode takes
    NOTHING_TO_INSPECT = "no passes to inspect yet"

    cursor: InspectCursor | None = None  # inspect mode's cursor (None: not inspecting)
    _paused_for_inspect = False

    # ------------------------------------------------------------------ what a screen gives
    def _recent(self) -> tuple:  # pragma: no cover - every screen has one
        raise NotImplementedError

    def _head(self):
        """The run's RunStarted.head (an EAGLE-3 head / MTP layers), for the inspector's words; None without."""
        start = getattr(getattr(self.app, "snap", None), "start", None)
        return getattr(start, "head", None)

    def inspect_changed(self) -> None:
        """Repaint now: the ribbon draws the cursor, the status line the pause."""
        self.app.settings_changed()

    def resume_after_inspect(self) -> None:
        """Undo inspect mode's pause (a replay or a race also restarts its worker)."""
        self.app.control.resume()

    # ------------------------------------------------------------------ the mode
    @property
    def inspecting(self) -> bool:
        return self.cursor is not None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in INSPECT_ACTIONS:
            return self.inspecting
        if action in self.SHADOWED_IN_INSPECT:
            return not self.inspecting
        return True

    def _set_cursor(self, cursor: InspectCursor | None) -> None:
        was = self.inspecting
        self.cursor = cursor
        if was != self.inspecting:
            self.refresh_bindings()
        self.inspect_changed()

    def enter_inspect(self, cursor: InspectCursor | None = None) -> bool:
        """Inspect mode on (pausing the run), the cursor on ``cursor`` or the newest pass's last token."""
        self.app.refresh_from_state()
        cursor = cursor or self.cursor or first_cursor(self._recent())
        if cursor is None:
            self.notify(self.NOTHING_TO_INSPECT, timeout=2)
            return False
        if not self.inspecting:
            control = self.app.control
            self._paused_for_inspect = not control.paused
            control.pause()
        self._set_cursor(cursor)
        return True

    def leave_inspect(self, resume: bool = True) -> None:
        """Inspect mode off; what it paused goes on, unless ``resume`` is False (a restart resumes itself)."""
        if not self.inspecting:
            return
        self._set_cursor(None)
        if self._paused_for_inspect:
            self._paused_for_inspect = False
            if resume:
                self.resume_after_inspect()
                self.inspect_changed()

    def action_inspect(self) -> None:
        if self.inspecting:
            self.leave_inspect()
        else:
            self.enter_inspect()

    def action_leave_inspect(self) -> None:
        self.leave_inspect()

    def action_cursor(self, dx: int, dy: int) -> None:
        self._set_cursor(move(self._recent(), self.cursor, dx, dy))

    def _step(self, dx: int, dy: int):
        """The inspector screen's ←/→/↑/↓: move the cursor, return the token's view."""
        self.action_cursor(dx, dy)
        return view_at(self._recent(), self.cursor, self._head()) if self.cursor is not None else None

    def action_open_inspector(self) -> None:
        cursor = self.cursor
        view = view_at(self._recent(), cursor, self._head()) if cursor is not None else None
        if view is None:
            self.notify("that pass is no longer on screen", timeout=2)
            return
        self.app.push_screen(InspectorScreen(view, self._step))

    def on_pass_ribbon_token_clicked(self, message: PassRibbon.TokenClicked) -> None:
        self.ribbon_clicked(message)
        if self.enter_inspect(InspectCursor(message.pass_index, message.slot)):
            self.action_open_inspector()

    def ribbon_clicked(self, message: PassRibbon.TokenClicked) -> None:
        """Before a click opens the inspector (a race focuses the clicked pane)."""
