"""The speculative engine: model loading and checks, drafters, acceptance rules and the draft/verify loop.

Import ``Engine`` from here (or from ``spectui.engine.loop``). Nothing in this package imports textual.

Its parts, top to bottom (each imports only from the ones below it; pyproject.toml's import-linter contract):
``loop.Engine`` (load, check, close, measure, chat) and ``probes/`` (measurements on the loaded models);
``run/`` (one run, pass by pass: ``run.passes.PassLoop`` decides the passes, ``run.eventmaker`` makes a decided
pass into its ``PassEvent``, ``run.finisher`` finishes them in order, inline or overlapped); ``drafters/`` (who
proposes: one module per drafter); ``files/`` (what a model file says); ``llama/`` (llama.cpp itself); and the
row math at the bottom (``verify``, ``rowmath``, ``topn``, ``cpu``, ``thread``).
"""

from .loop import Engine

__all__ = ["Engine"]
