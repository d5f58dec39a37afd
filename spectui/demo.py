"""``spectui demo``: the bundled recording replayed in the TUI, looping until quit. No model needed.

The trace in ``spectui/data/demo-trace.jsonl.gz`` is a real run on the Qwen2.5-Coder 1.5B / 0.5B pair
(Q4_K_M), recorded by ``demos/record_demo.py`` (how, exactly: demos/README.md). It is package data, so a
plain ``pip install .`` finds it. The screen says it is a recording (the replay banner names the
models and the recording date); when the replay reaches the end it holds the final screen for a few
seconds and starts over, for a conference booth.
"""

from __future__ import annotations

import os
import sys
from importlib import resources

import click

from .errors import SpectuiError

DEMO_TRACE = "demo-trace.jsonl.gz"
LOOP_HOLD_S = 6.0  # the finished screen stays this long before the demo starts over


def demo_trace_path() -> str:
    """Path of the bundled demo trace (found in the installed package, not the source tree)."""
    ref = resources.files("spectui").joinpath("data", DEMO_TRACE)
    path = os.fspath(ref) if isinstance(ref, os.PathLike) else str(ref)
    if not os.path.isfile(path):
        raise SpectuiError(f"the bundled demo trace is missing ({path}): reinstall spectui")
    return path


def make_demo_app(events, theme: str | None = None, speed: float = 1.0, loop_hold_s: float = LOOP_HOLD_S, **kw):
    """The replay app, looping: at the end it holds for ``loop_hold_s`` seconds, then jumps to the start."""
    from .control import RunControl
    from .player import ReplayPlayer
    from .tui.app import SpectuiApp, StateChanged

    class DemoApp(SpectuiApp):
        loops = 0
        _hold = None  # the timer holding the finished screen

        def on_mount(self) -> None:  # Textual also runs SpectuiApp.on_mount (handlers follow the MRO)
            self.notify("spectui demo: a recording of a real run, no model needed (q quits)", timeout=6)

        def _at_rest(self) -> bool:
            return self.player.at_end and not self.running and not self.control.paused

        def on_state_changed(self, message: StateChanged) -> None:  # also the worker's last word
            self._arm()

        def settings_changed(self) -> None:  # a key: resuming at the end starts the hold again
            super().settings_changed()
            self._arm()

        def _arm(self) -> None:
            if self._hold is None and self._at_rest():
                self._hold = self.set_timer(loop_hold_s, self._loop_again)

        def _loop_again(self) -> None:
            self._hold = None
            if self._at_rest():
                self.loops += 1
                self.run_screen.action_jump_start()

    player = ReplayPlayer(events, speed=speed)
    return DemoApp(None, RunControl(), theme=theme, replay=player, title="spectui demo (recording)", **kw)


@click.command("demo", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--theme", type=str, default=None, help="TUI theme (see themes/)")
@click.option("--speed", type=str, default="1", show_default=True, help="0.25..8 or 'max'")
@click.option("--headless", is_flag=True, help="no TUI: print the recording's text and summary once")
def demo_cmd(theme: str | None, speed: str, headless: bool) -> None:
    """Replay the bundled recording (Qwen2.5-Coder 1.5B + 0.5B draft) in a loop; q quits."""
    from .cli import fail
    from .player import parse_speed
    from .replay import load_for_tui, replay_headless

    try:
        sp = parse_speed(speed)
        path = demo_trace_path()
        if headless:
            replay_headless(path, sys.stdout, speed=sp if speed != "1" else float("inf"))
            return
        from .tui.app import run_app
        from .tui.themes import check_theme

        check_theme(theme)
        _header, events = load_for_tui(path)
        sys.exit(run_app(make_demo_app(events, theme=theme, speed=sp)) or 0)
    except SpectuiError as exc:
        fail(str(exc))
