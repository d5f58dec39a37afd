"""The speculative engine: model loading and checks, drafters, acceptance rules and the draft/verify loop.

Import ``Engine`` from here (or from ``spectui.engine.loop``). Nothing in this package imports textual.

The run, by concern: ``loop.Engine`` (load, check, close, measure, chat; ``run()`` makes a ``passes.PassLoop``,
which decides the passes), ``eventmaker.PassEventMaker`` (a decided pass made into its ``PassEvent``) and
``finisher.Finisher`` (the decided passes finished in order, inline or overlapped on the
``finisher.FinishingThread``).
"""

from .loop import Engine

__all__ = ["Engine"]
