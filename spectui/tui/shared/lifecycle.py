"""What both of spectui's apps (the local run's SpectuiApp and the attach screen's AttachApp) do the same
way at start and stop: register the themes, turn SIGTERM/SIGHUP (a dropped SSH session) into the app's
own quit, and cycle themes in one order."""

from __future__ import annotations

import asyncio
import signal

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


def install_quit_signals(app) -> list[int]:
    """SIGTERM and SIGHUP run ``app.action_quit`` (a clean stop that flushes a recording); the signals
    installed are returned for ``remove_signals``."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # pragma: no cover
        return []
    installed = []
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            loop.add_signal_handler(sig, app.action_quit)
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):  # pragma: no cover - not the main thread
            pass
    return installed


def remove_signals(signals: list[int]) -> None:
    try:
        loop = asyncio.get_running_loop()
        for sig in signals:
            loop.remove_signal_handler(sig)
    except RuntimeError:  # pragma: no cover
        pass
