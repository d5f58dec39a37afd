"""RaceScreen: one pane per lane (LaneHeader, the run face's TokenStream and PassRibbon), the RaceBanner on
top and the FinishLine below; side by side when the terminal is wide, stacked otherwise (80x24).

Keys as in the replay (shared.replay_keys: space pause, ←/→ step, +/- or </> speed, home/end, r restart)
on the one race clock; tab moves the focus to the next pane, and the token inspector works in the focused
pane as in a run (shared.inspect_mode): ``i`` pauses the race and puts the cursor on that pane's newest
token, the arrows move it, enter opens the InspectorScreen, escape leaves (the race goes on if inspect mode
paused it). ``?`` opens the race's help page (help_screen.py)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container

from ...views.inspector import first_cursor
from ...views.view import InspectCursor
from ..shared.inspect_mode import INSPECT_BINDINGS, InspectMode
from ..shared.pass_ribbon import PassRibbon
from ..shared.replay_keys import JUMP, PAUSE, RESTART, STEP, ReplayKeys
from ..shared.screen import FaceScreen
from ..shared.token_stream import TokenStream
from .finish_line import FinishLine
from .lane_header import LaneHeader
from .race_banner import RaceBanner

WIDE_WIDTH, WIDE_HEIGHT = 110, 30  # side by side from here; stacked below (FaceScreen: too small below 60x20)


class Lane(Container):
    """One lane's pane."""


class RaceScreen(ReplayKeys, InspectMode, FaceScreen):
    FACE_NAME = "spectui race"
    SHADOWED_IN_INSPECT = frozenset({"step_forward", "step_back"})
    NOTHING_TO_INSPECT = "no passes to inspect in this pane yet"
    BINDINGS = [
        PAUSE, *STEP,
        Binding("plus,greater_than_sign,equals_sign", "faster", "faster"),
        Binding("minus,less_than_sign", "slower", "slower"),
        *JUMP, RESTART,
        Binding("tab", "next_lane", "pane", priority=True),
        Binding("shift+tab", "prev_lane", "pane", show=False, priority=True),
    ] + INSPECT_BINDINGS

    def __init__(self, n_lanes: int) -> None:
        super().__init__()
        self.n_lanes = n_lanes
        self.focus_lane = 0
        self.cursor: InspectCursor | None = None  # inspect mode's cursor in the focused lane
        self._paused_for_inspect = False

    def compose_face(self) -> ComposeResult:
        # the widgets are kept as they are made (no queries: a paint may come before the mount is done)
        self.banner = RaceBanner(id="banner")
        self.finish = FinishLine(id="finish")
        self.headers = [LaneHeader(id=f"header-{i}") for i in range(self.n_lanes)]
        self.streams = [TokenStream(id=f"stream-{i}") for i in range(self.n_lanes)]
        self.ribbons = [PassRibbon(id=f"ribbon-{i}") for i in range(self.n_lanes)]
        self.panes = [Lane(id=f"lane-{i}", classes="lane") for i in range(self.n_lanes)]
        self.lanes_box = Container(id="lanes", classes="three" if self.n_lanes > 2 else "")
        yield self.banner
        with self.lanes_box:
            for i in range(self.n_lanes):
                with self.panes[i]:
                    yield self.headers[i]
                    yield self.streams[i]
                    yield self.ribbons[i]
        yield self.finish

    def on_mount(self) -> None:
        self.apply_layout()
        self.call_after_refresh(self.app.repaint_all)  # the worker may have delivered everything already

    def lay_out(self, w: int, h: int) -> None:
        self.lanes_box.set_class(w >= WIDE_WIDTH and h >= WIDE_HEIGHT, "wide")

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

    # keys of the race clock (shared.replay_keys) -----------------------------------------------------
    def clock_changed(self) -> None:
        self.app.repaint_all()  # the lane headers say PAUSED / RACING too

    def action_restart(self) -> None:
        self.leave_inspect(resume=False)
        super().action_restart()

    def action_next_lane(self) -> None:
        self._focus((self.focus_lane + 1) % self.n_lanes)

    def action_prev_lane(self) -> None:
        self._focus((self.focus_lane - 1) % self.n_lanes)

    def _focus(self, i: int) -> None:
        self.focus_lane = i
        if self.inspecting:  # the cursor follows to the new pane's newest token
            cursor = first_cursor(self._recent())
            if cursor is None:  # nothing to inspect there yet: inspect mode ends (and what it paused goes on)
                self.leave_inspect()
            else:
                self.cursor = cursor
        self.app.repaint_all()

    # the token inspector, in the focused lane (shared.inspect_mode) ------------------------------------
    def _recent(self) -> tuple:
        snap = self.app.lane_snapshot(self.focus_lane)
        return snap.recent if snap is not None else ()

    def inspect_changed(self) -> None:
        self.app.repaint_all()  # the panes' frames and headers show the focus too

    def ribbon_clicked(self, message: PassRibbon.TokenClicked) -> None:
        ribbon = message.ribbon  # the ribbon clicked: its pane takes the focus
        if ribbon in self.ribbons:
            self.focus_lane = self.ribbons.index(ribbon)
