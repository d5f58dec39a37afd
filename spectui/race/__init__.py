"""``spectui race``: recorded runs raced on one clock. No Textual in this package.

``spectui.views.race_timeline`` loads the traces into lanes (labels from their headers, the prompt check)
and puts them on one race clock played by the replay's own ``ReplayPlayer``; ``spectui.views.race_outcome``
says who finished first, by how much, and whether the tokens are the same; ``spec`` parses the ``--a`` /
``--b`` settings; ``record`` runs two settings one after the other and records them;
``spectui.views.race_text`` is the headless face; ``cli`` the command. The Textual face is
``spectui.tui.race``.
"""
