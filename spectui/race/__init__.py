"""``spectui race``: recording a race. No Textual in this package.

``spec`` parses the ``--a`` / ``--b`` settings; ``record`` runs two settings one after the other on one
loaded engine and records them. Loading traces into lanes on one race clock is ``spectui.views.race_timeline``,
who won and by how much ``spectui.views.race_outcome``; the headless face is ``spectui.text.race``, the
Textual face ``spectui.tui.race``, the command ``spectui.commands.race``.
"""
