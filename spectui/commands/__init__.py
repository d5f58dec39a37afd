"""The subcommands: one module per ``spectui`` subcommand, each exporting its click command ``<name>_cmd``.

``run`` is the live/headless run (``spectui --target T --draft D``, its options on the group in
``spectui.cli``); ``options`` holds the click options several commands share. ``spectui.cli`` imports
these modules lazily (``SUBCOMMANDS``), so ``spectui --help`` loads none of them.
"""
