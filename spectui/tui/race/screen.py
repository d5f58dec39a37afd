"""RaceScreen: one pane per lane (LaneHeader, the run face's TokenStream and PassRibbon), the RaceBanner on
top and the FinishLine below; side by side when the terminal is wide, stacked otherwise (80x24).

Keys as in the replay (space pause, ←/→ step, +/- or </> speed, home/end, r restart) on the one race clock;
tab moves the focus to the next pane, and the token inspector works in the focused pane as in a run: ``i``
pauses the race and puts the cursor on that pane's newest token, the arrows move it, enter opens the
InspectorScreen, escape leaves (the race goes on if inspect mode paused it)."""

from __future__ import annotations

from typing import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container
from textual.events import Resize
from textual.screen import Screen
from textual.widgets import Footer, Static

from ...views.inspector import first_cursor, move, view_at
from ..run.pass_ribbon import PassRibbon
from ..run.inspector_screen import InspectorScreen
from ..run.token_stream import TokenStream
from ...views.view import InspectCursor
from .finish_line import FinishLine
from .lane_header import LaneHeader
from .race_banner import RaceBanner

MIN_WIDTH, MIN_HEIGHT = 60, 20
WIDE_WIDTH, WIDE_HEIGHT = 110, 30  # side by side from here; stacked below

INSPECT_ACTIONS = frozenset({"cursor", "open_inspector", "leave_inspect"})
SHADOWED_IN_INSPECT = frozenset({"step_forward", "step_back"})


class Lane(Container):
    """One lane's pane."""


class RaceScreen(Screen):
    BINDINGS = [
        Binding("space,p", "pause", "pause"),
        Binding("right", "step_forward", "step▶"),
        Binding("left", "step_back", "◀step"),
        Binding("plus,greater_than_sign,equals_sign", "faster", "faster"),
        Binding("minus,less_than_sign", "slower", "slower"),
        Binding("home", "jump_start", "start", show=False),
        Binding("end", "jump_end", "end", show=False),
        Binding("r", "restart", "restart"),
        Binding("tab", "next_lane", "pane", priority=True),
        Binding("shift+tab", "prev_lane", "pane", show=False, priority=True),
        Binding("i", "inspect", "inspect"),
        Binding("left,h", "cursor(-1, 0)", "◀ tok", show=False),
        Binding("right,l", "cursor(1, 0)", "tok ▶", show=False),
        Binding("up,k", "cursor(0, -1)", "newer", show=False),
        Binding("down,j", "cursor(0, 1)", "older", show=False),
        Binding("enter", "open_inspector", "open"),
        Binding("escape", "leave_inspect", "leave"),
    ]

    def __init__(self, n_lanes: int) -> None:
        super().__init__()
        self.n_lanes = n_lanes
        self.focus_lane = 0
        self.cursor: InspectCursor | None = None  # inspect mode's cursor in the focused lane
        self._paused_for_inspect = False
        self._layout_key: object = None

    def compose(self) -> ComposeResult:
        # the widgets are kept as they are made (no queries: a paint may come before the mount is done)
        self.banner = RaceBanner(id="banner")
        self.finish = FinishLine(id="finish")
        self.headers = [LaneHeader(id=f"header-{i}") for i in range(self.n_lanes)]
        self.streams = [TokenStream(id=f"stream-{i}") for i in range(self.n_lanes)]
        self.ribbons = [PassRibbon(id=f"ribbon-{i}") for i in range(self.n_lanes)]
        self.panes = [Lane(id=f"lane-{i}", classes="lane") for i in range(self.n_lanes)]
        self.lanes_box = Container(id="lanes", classes="three" if self.n_lanes > 2 else "")
        self.too_small = Static("", id="too-small")
        yield self.banner
        with self.lanes_box:
            for i in range(self.n_lanes):
                with self.panes[i]:
                    yield self.headers[i]
                    yield self.streams[i]
                    yield self.ribbons[i]
        yield self.finish
        yield self.too_small
        yield Footer()

    def on_mount(self) -> None:
        self.apply_layout()
        self.call_after_refresh(self.app.repaint_all)  # the worker may have delivered everything already

    def on_resize(self, event: Resize) -> None:
        self.apply_layout()

    def apply_layout(self) -> None:
        w, h = self.app.size
        if (w, h) == self._layout_key:
            return
        self._layout_key = (w, h)
        small = w < MIN_WIDTH or h < MIN_HEIGHT
        self.set_class(small, "too-small")
        self.lanes_box.set_class(w >= WIDE_WIDTH and h >= WIDE_HEIGHT, "wide")
        if small:
            self.too_small.update(
                f"terminal too small: {w}x{h}\nspectui race needs at least {MIN_WIDTH}x{MIN_HEIGHT}\n(q quits)")

    def show(self, view, *, passes: list[bool], headers: bool, race: bool) -> None:
        """Hand the RaceView to the widgets: a lane's stream and ribbon when it has a new pass or phase,
        the headers with the statistics' pace, the banner and finish line when the race's state moved."""
        for i, lane in enumerate(view.lanes):
            if passes[i]:
                self.streams[i].show(lane.screen)
                self.ribbons[i].show(lane.screen)
            if headers:
                self.headers[i].show(lane)
            self.panes[i].set_class(lane.focused, "focused")
        if race:
            self.banner.set_class(bool(view.note), "with-note")
            self.banner.show(view)
            self.finish.show(view)

    # keys of the race clock -------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in INSPECT_ACTIONS:
            return self.cursor is not None
        if action in SHADOWED_IN_INSPECT:
            return self.cursor is None
        return True

    def _seek(self, move_to: Callable[[], int]) -> None:
        move_to()
        self.app.rebuild()

    def action_pause(self) -> None:
        control = self.app.control
        if control.paused:
            control.resume()
            self.app.play_on()
        else:
            control.pause()
        self.app.repaint_all()

    def action_step_forward(self) -> None:
        self.app.control.pause()
        self._seek(self.app.player.step_forward)

    def action_step_back(self) -> None:
        self.app.control.pause()
        self._seek(self.app.player.step_back)

    def action_jump_start(self) -> None:
        self._seek(self.app.player.jump_start)
        self.app.play_on()

    def action_jump_end(self) -> None:
        self._seek(self.app.player.jump_end)

    def action_restart(self) -> None:
        self.leave_inspect(resume=False)
        self._seek(self.app.player.jump_start)
        self.app.control.resume()
        self.app.play_on()

    def action_faster(self) -> None:
        self.app.player.faster()
        self.app.repaint_all()

    def action_slower(self) -> None:
        self.app.player.slower()
        self.app.repaint_all()

    def action_next_lane(self) -> None:
        self._focus((self.focus_lane + 1) % self.n_lanes)

    def action_prev_lane(self) -> None:
        self._focus((self.focus_lane - 1) % self.n_lanes)

    def _focus(self, i: int) -> None:
        self.focus_lane = i
        if self.cursor is not None:  # the cursor follows to the new pane's newest token
            self.cursor = first_cursor(self._recent())
            if self.cursor is None:
                self.leave_inspect()
        self.app.repaint_all()

    # the token inspector, in the focused lane ----------------------------------------------------------
    def _recent(self) -> tuple:
        snap = self.app.lane_snapshot(self.focus_lane)
        return snap.recent if snap is not None else ()

    def action_inspect(self) -> None:
        if self.cursor is not None:
            self.leave_inspect()
            return
        self.app.refresh_from_state()
        cursor = first_cursor(self._recent())
        if cursor is None:
            self.notify("no passes to inspect in this pane yet", timeout=2)
            return
        control = self.app.control
        self._paused_for_inspect = not control.paused
        control.pause()
        self.cursor = cursor
        self.refresh_bindings()
        self.app.repaint_all()

    def leave_inspect(self, resume: bool = True) -> None:
        if self.cursor is None:
            return
        self.cursor = None
        self.refresh_bindings()
        if self._paused_for_inspect and resume:
            self.app.control.resume()
            self.app.play_on()
        self._paused_for_inspect = False
        self.app.repaint_all()

    def action_leave_inspect(self) -> None:
        self.leave_inspect()

    def action_cursor(self, dx: int, dy: int) -> None:
        self.cursor = move(self._recent(), self.cursor, dx, dy)
        self.app.repaint_all()

    def _step(self, dx: int, dy: int):
        self.action_cursor(dx, dy)
        return view_at(self._recent(), self.cursor) if self.cursor is not None else None

    def action_open_inspector(self) -> None:
        view = view_at(self._recent(), self.cursor) if self.cursor is not None else None
        if view is None:
            self.notify("that pass is no longer on screen", timeout=2)
            return
        self.app.push_screen(InspectorScreen(view, self._step))

    def on_pass_ribbon_token_clicked(self, message: PassRibbon.TokenClicked) -> None:
        ribbon = getattr(message, "_sender", None)  # the ribbon that posted it
        if ribbon in self.ribbons:
            self.focus_lane = self.ribbons.index(ribbon)
        if self.cursor is None:
            control = self.app.control
            self._paused_for_inspect = not control.paused
            control.pause()
        self.cursor = InspectCursor(message.pass_index, message.slot)
        self.refresh_bindings()
        self.app.repaint_all()
        self.action_open_inspector()
