"""What both of spectui's apps (the local run's SpectuiApp and the attach screen's AttachApp) do the same
way at start and stop: register the themes, turn SIGTERM/SIGHUP (a dropped SSH session) into the app's
own quit, end the process when that quit cannot finish (a deadline), watch for a terminal that is gone,
and cycle themes in one order."""

from __future__ import annotations

import asyncio
import signal
import threading

from ...contract.exitcodes import STOP_SIGNALS, SignalStop, for_signal
from .themes import DEFAULT_THEME, available_themes, textual_theme


def register_themes(app, name: str) -> None:
    """Every theme in themes/ registered with ``app``, ``name`` in force."""
    for theme in available_themes():
        app.register_theme(textual_theme(theme))
    app.theme = name


def theme_order() -> list[str]:
    names = list(available_themes())
    return [DEFAULT_THEME] + sorted(n for n in names if n != DEFAULT_THEME)


def next_theme(current: str) -> str:
    order = theme_order()
    cur = current if current in order else order[0]
    return order[(order.index(cur) + 1) % len(order)]


def quit_on_signal(app, signum: int) -> None:
    """A signal's clean stop: the app quits as with q, and its exit status is 128 + the signal
    (spectui.contract.exitcodes; the first signal counts). On the app's event loop."""
    if getattr(app, "stop_signal", None) is None:
        app.stop_signal = int(signum)
    arm_deadline(app)
    app.action_quit()


LOST_TERMINAL_GRACE_S = 1.0  # a hang-up (SIGHUP, the terminal watch): no screen to restore, end soon


def arm_deadline(app) -> None:
    """A stop was asked: the process ends within the app's deadline even if the app cannot finish it (within
    ``LOST_TERMINAL_GRACE_S`` for a terminal that is gone: there is no screen left to restore)."""
    deadline = getattr(app, "deadline", None)
    if deadline is not None:
        sig = app.stop_signal if app.stop_signal is not None else signal.SIGHUP
        hup = getattr(signal, "SIGHUP", None)
        deadline.arm(for_signal(sig), LOST_TERMINAL_GRACE_S if sig == hup else None)


def stop_from_anywhere(app, loop, signum: int) -> None:
    """A stop asked off the event loop (a signal handler, the terminal watch): the exit status noted and the
    deadline armed here, at once, and the clean quit scheduled on the loop (which may be blocked: a terminal
    that is gone blocks Textual's writes, and the deadline then ends the process)."""
    if getattr(app, "stop_signal", None) is None:
        app.stop_signal = int(signum)
    arm_deadline(app)
    try:
        loop.call_soon_threadsafe(quit_on_signal, app, signum)
    except RuntimeError:  # the loop is closed: the app is on its way out already
        pass


def exit_status(app, failed: bool = False) -> int:
    """The app's exit status: 128 + the signal that stopped it, else 1 when the run failed, else the
    app's own return code (0)."""
    from ...contract.exitcodes import FAILED, for_signal  # noqa: PLC0415

    sig = getattr(app, "stop_signal", None)
    if sig is not None:
        return for_signal(sig)
    code = int(app.return_code or 0)
    return code or (FAILED if failed else 0)


def install_quit_signals(app) -> dict[int, object]:
    """SIGINT, SIGTERM and SIGHUP run ``app.action_quit`` (a clean stop that flushes a recording), set
    ``app.stop_signal`` and arm the app's deadline; the previous handlers are returned for
    ``remove_signals``. (Ctrl+C typed in the TUI is a key, bound to the same quit with status 130.) Plain
    ``signal.signal`` handlers, not the event loop's: they run even while the loop is blocked (on a
    terminal that is gone), and a blocked loop is then ended by the deadline. Over a command's SignalStop
    only when it hands over (``hand_over``: the live run's, installed before its models loaded), acting on
    a signal it noted."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # pragma: no cover
        return {}
    if threading.current_thread() is not threading.main_thread():  # pragma: no cover
        return {}
    installed: dict[int, object] = {}
    noted = None  # a signal the command's SignalStop noted before the app started (hand_over)

    def handler(signum, frame) -> None:
        stop_from_anywhere(app, loop, signum)

    for sig in STOP_SIGNALS:
        old = signal.getsignal(sig)
        stop = getattr(old, "__self__", None)
        if isinstance(stop, SignalStop):
            if not stop.hand_over:
                continue  # the command handles it (spectui cast renders the app under its own handler)
            noted = stop.signum if noted is None else noted
        try:
            signal.signal(sig, handler)
            installed[sig] = old
        except (OSError, RuntimeError, ValueError):  # pragma: no cover
            pass
    if noted is not None:  # it came while the app was starting: the same clean quit once the screen is up
        app.call_after_refresh(quit_on_signal, app, noted)
    return installed


def remove_signals(signals: dict[int, object]) -> None:
    for sig, old in signals.items():
        try:
            signal.signal(sig, old)
        except (OSError, RuntimeError, ValueError, TypeError):  # pragma: no cover
            pass


def watch_terminal(app):
    """Start the terminal watch for ``app`` (when it has a terminal to watch): a lost terminal stops it
    as SIGHUP would (exit 129), its deadline armed. Returns the watch, or None."""
    from .terminal import TerminalWatch  # noqa: PLC0415

    if not TerminalWatch.wanted():
        return None
    loop = asyncio.get_running_loop()
    return TerminalWatch(lambda: stop_from_anywhere(app, loop, signal.SIGHUP)).start()
