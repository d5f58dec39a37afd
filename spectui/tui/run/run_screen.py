"""RunScreen: the widgets of one run (live or replayed), its layout by terminal size, and the fan-out
of each ScreenView to the widgets that need repainting. LiveScreen and ReplayScreen add their keys.

Also the token inspector, the same on both: ``i`` enters inspect mode (the run or replay pauses; the
cursor starts on the newest pass's last token), the arrows / h j k l move the cursor over the ribbon's
tokens instead of doing what they do otherwise (``check_action``: the screen's bindings list both, and
the one whose mode is off gives way), enter opens InspectorScreen for the token, escape leaves (resuming
what inspect mode paused). A click on a ribbon token opens the inspector directly. Nothing of this runs
per pass: the cursor is one field of the view, None while not inspecting."""

from __future__ import annotations

from typing import Iterator

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container
from textual.widgets import Footer, Static

from ...contract.control import RunControl
from ...contract.events import Event
from .acceptance_by_confidence import AcceptanceByConfidence
from .acceptance_by_position import AcceptanceByPosition
from ...views.inspector import first_cursor, move, view_at
from .contention_bar import ContentionBar
from .inter_token_latency import InterTokenLatency
from ..shared.panel import KeepLines
from ..shared.screen import FaceScreen
from .pass_ribbon import PassRibbon
from .prediction_panel import PredictionPanel
from .run_metrics import RunMetrics
from .status_line import StatusLine
from .token_stream import TokenStream
from .tokens_per_second import TokensPerSecond
from ...views.view import InspectCursor, ReplayPosition, ScreenView
from .inspector_screen import InspectorScreen

WIDE_WIDTH, WIDE_HEIGHT = 110, 32  # at least this: bordered grid; else the compact 80x24 layout

# Inspect mode's keys; each screen lists them before its own (a subclass's BINDINGS replace its base's
# for the same key, so both meanings of an arrow must sit in one list; check_action picks by mode).
INSPECT_BINDINGS = [
    Binding("i", "inspect", "inspect"),
    Binding("left,h", "cursor(-1, 0)", "◀ tok", show=False),
    Binding("right,l", "cursor(1, 0)", "tok ▶", show=False),
    Binding("up,k", "cursor(0, -1)", "newer", show=False),
    Binding("down,j", "cursor(0, 1)", "older", show=False),
    Binding("enter", "open_inspector", "open"),
    Binding("escape", "leave_inspect", "leave"),
    Binding("b", "acceptance_view", "by q", show=False),
]
INSPECT_ACTIONS = frozenset({"cursor", "open_inspector", "leave_inspect"})


class Body(KeepLines, Container):
    """The panels' grid (its background under the panels' borders: asked again on every update)."""


class KeyFooter(KeepLines, Footer):
    """Textual's footer; hands back its lines while the keys do not change."""


class RunScreen(KeepLines, FaceScreen):
    """The run's panels; ``show`` repaints only the groups the app says changed."""

    HELP_FOR_REPLAY = False
    SHADOWED_IN_INSPECT: frozenset[str] = frozenset()  # this screen's actions on the keys inspect mode takes

    def __init__(self) -> None:
        super().__init__()
        self.cursor: InspectCursor | None = None  # inspect mode's cursor (None: not inspecting)
        self._paused_for_inspect = False

    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        yield ContentionBar(id="contention")
        with Body(id="body"):
            yield TokenStream(id="stream")
            yield PassRibbon(id="ribbon")
            yield AcceptanceByPosition(id="acceptance")
            yield AcceptanceByConfidence(id="confidence")
            yield RunMetrics(id="metrics")
            yield TokensPerSecond(id="tps")
            yield InterTokenLatency(id="itl")
            yield PredictionPanel(id="prediction")
        yield Static("", id="too-small")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.pass_panels = (self.query_one(TokenStream), self.query_one(PassRibbon))  # follow every pass
        self.confidence = self.query_one(AcceptanceByConfidence)
        self.stats_panels = (self.query_one(AcceptanceByPosition), self.confidence, self.query_one(RunMetrics),
                             self.query_one(TokensPerSecond), self.query_one(InterTokenLatency),
                             self.query_one(PredictionPanel))  # follow the statistics, throttled
        self.status_line = self.query_one(StatusLine)
        self.contention_bar = self.query_one(ContentionBar)
        self.apply_layout()

    def lay_out(self, w: int, h: int) -> None:
        self.query_one("#body").set_class(w < WIDE_WIDTH or h < WIDE_HEIGHT, "narrow")

    def show(self, view: ScreenView, *, passes: bool, stats: bool, status: bool) -> None:
        """Hand ``view`` to the widget groups that need it: the pass panels, the statistics, the status."""
        if passes:
            for panel in self.pass_panels:
                panel.show(view)
        if stats:
            for panel in self.stats_panels:
                panel.show(view)
        if status:
            self.status_line.show(view)
            self.contention_bar.show(view)
            if not stats:  # its title shows the p-min asked for
                self.confidence.show(view)

    # the token inspector ----------------------------------------------------------------------------
    @property
    def inspecting(self) -> bool:
        return self.cursor is not None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in INSPECT_ACTIONS:
            return self.inspecting
        if action in self.SHADOWED_IN_INSPECT:
            return not self.inspecting
        return True

    def _recent(self) -> tuple:
        snap = self.app.snap
        return snap.recent if snap is not None else ()

    def _set_cursor(self, cursor: InspectCursor | None) -> None:
        was = self.inspecting
        self.cursor = cursor
        if was != self.inspecting:
            self.refresh_bindings()
        self.app.settings_changed()  # one paint now: the ribbon draws the cursor

    def enter_inspect(self, cursor: InspectCursor | None = None) -> bool:
        """Inspect mode on (pausing the run), the cursor on ``cursor`` or the newest pass's last token."""
        self.app.refresh_from_state()
        cursor = cursor or self.cursor or first_cursor(self._recent())
        if cursor is None:
            self.notify("no passes to inspect yet", timeout=2)
            return False
        if not self.inspecting:
            control = self.app.control
            self._paused_for_inspect = not control.paused
            control.pause()
        self._set_cursor(cursor)
        return True

    def leave_inspect(self) -> None:
        if not self.inspecting:
            return
        self._set_cursor(None)
        if self._paused_for_inspect:
            self._paused_for_inspect = False
            self.resume_after_inspect()
        self.app.settings_changed()

    def resume_after_inspect(self) -> None:
        """Undo inspect mode's pause (a replay also restarts its worker)."""
        self.app.control.resume()

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
        return view_at(self._recent(), self.cursor) if self.cursor is not None else None

    def action_open_inspector(self) -> None:
        cursor = self.cursor
        view = view_at(self._recent(), cursor) if cursor is not None else None
        if view is None:
            self.notify("that pass is no longer on screen", timeout=2)
            return
        self.app.push_screen(InspectorScreen(view, self._step))

    def on_pass_ribbon_token_clicked(self, message: PassRibbon.TokenClicked) -> None:
        if self.enter_inspect(InspectCursor(message.pass_index, message.slot)):
            self.action_open_inspector()

    def action_acceptance_view(self) -> None:
        """``b``: in the 80x24 layout, acceptance by draft position <-> by draft confidence (the wide
        layout shows both)."""
        body = self.query_one("#body")
        if not body.has_class("narrow"):
            self.notify("both acceptance panels are on screen (b switches them at 80x24)", timeout=2)
            return
        body.toggle_class("by-confidence")

    # what differs between a live run and a replay ------------------------------------------------
    def events(self, control: RunControl, prompt: str) -> Iterator[tuple[int | None, Event]]:
        """(position or None, event) for the worker thread to feed into the screen state."""
        raise NotImplementedError

    def position(self) -> ReplayPosition | None:
        return None

    def playing_badge(self, running: bool) -> tuple[str, str]:
        return "RUNNING", "green"
