"""``spectui race``: recorded runs raced on one clock. No Textual in this package.

``timeline`` loads the traces into lanes (labels from their headers, the prompt check) and puts them on one
race clock played by the replay's own ``ReplayPlayer``; ``outcome`` says who finished first, by how much,
and whether the tokens are the same; ``spec`` parses the ``--a`` / ``--b`` settings; ``record`` runs two
settings one after the other and records them; ``text`` is the headless face; ``cli`` the command. The
Textual face is ``spectui.tui.race``.
"""
