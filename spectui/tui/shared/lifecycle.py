"""What both of spectui's apps (the local run's SpectuiApp and the attach screen's AttachApp) do the same
way at start and stop: register the themes, turn SIGTERM/SIGHUP (a dropped SSH session) into the app's
own quit, and cycle themes in one order."""

from __future__ import annotations

import asyncio
import signal

from ...contract.exitcodes import SignalStop
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
    (spectui.contract.exitcodes; the first signal counts)."""
    if getattr(app, "stop_signal", None) is None:
        app.stop_signal = int(signum)
    app.action_quit()


def exit_status(app, failed: bool = False) -> int:
    """The app's exit status: 128 + the signal that stopped it, else 1 when the run failed, else the
    app's own return code (0)."""
    from ...contract.exitcodes import FAILED, for_signal  # noqa: PLC0415

    sig = getattr(app, "stop_signal", None)
    if sig is not None:
        return for_signal(sig)
    code = int(app.return_code or 0)
    return code or (FAILED if failed else 0)


def install_quit_signals(app) -> list[int]:
    """SIGINT, SIGTERM and SIGHUP run ``app.action_quit`` (a clean stop that flushes a recording) and set
    ``app.stop_signal``; the signals installed are returned for ``remove_signals``. (Ctrl+C typed in the
    TUI is a key, bound to the same quit with status 130.) Over a command's SignalStop only when it hands
    over (``hand_over``: the live run's, installed before its models loaded), acting on a signal it noted."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # pragma: no cover
        return []
    installed = []
    noted = None  # a signal the command's SignalStop noted before the app started (hand_over)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        stop = getattr(signal.getsignal(sig), "__self__", None)
        if isinstance(stop, SignalStop):
            if not stop.hand_over:
                continue  # the command handles it (spectui cast renders the app under its own handler)
            noted = stop.signum if noted is None else noted
        try:
            loop.add_signal_handler(sig, quit_on_signal, app, sig)
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):  # pragma: no cover - not the main thread
            pass
    if noted is not None:  # it came while the app was starting: the same clean quit once the screen is up
        app.call_after_refresh(quit_on_signal, app, noted)
    return installed


def remove_signals(signals: list[int]) -> None:
    try:
        loop = asyncio.get_running_loop()
        for sig in signals:
            loop.remove_signal_handler(sig)
    except RuntimeError:  # pragma: no cover
        pass
