"""The Textual face of spectui: ``run_live`` for a live engine run, ``run_replay`` for a trace.

Imported lazily by spectui.run / spectui.replay; nothing in the core imports this package.
"""

from __future__ import annotations


def run_live(*args, **kwargs) -> int:
    from .run.app import run_live as _run_live

    return _run_live(*args, **kwargs)


def run_replay(*args, **kwargs) -> int:
    from .run.app import run_replay as _run_replay

    return _run_replay(*args, **kwargs)
