"""The Textual faces of spectui: ``run/`` (a live engine run or a replayed trace), ``attach/`` (a watched
serving engine) and what they share, ``shared/`` (see docs/ARCHITECTURE.md, "Where a new face goes").

Imported lazily by the commands (spectui.run, spectui.replay, spectui.demo, spectui.attach.cli); nothing
in the layers below imports this package.
"""
