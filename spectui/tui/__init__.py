"""The Textual faces of spectui: ``run/`` (a live engine run or a replayed trace), ``attach/`` (a watched
serving engine), ``race/`` (recorded runs on one clock), what they share, ``shared/`` (see
docs/ARCHITECTURE.md, "Where a new face goes"); ``spectui serve`` (spectui/commands/serve.py) shows any of them
in a web browser.

Imported lazily by the commands (spectui.commands: run, replay, demo, attach...); nothing
in the layers below imports this package.
"""
