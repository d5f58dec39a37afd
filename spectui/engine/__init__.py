"""The speculative engine: model loading and checks, drafters, acceptance rules and the draft/verify loop.

Import ``Engine`` from here (or from ``spectui.engine.loop``). Nothing in this package imports textual.
"""

from .loop import Engine

__all__ = ["Engine"]
