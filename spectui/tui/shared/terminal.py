"""The TUI needs a terminal: without one (stdin /dev/null, output to files: a cron job, ``nohup``, CI) it
would draw into a file and wait for a key that never comes. Every face's run function checks first and
refuses with one line (exit 2) that points at ``--headless``."""

from __future__ import annotations

import os
import sys

from ...contract.errors import SpectuiError


def require_terminal() -> None:
    """Raise SpectuiError unless stdin and stderr (what Textual reads and draws on) are a terminal; a driver
    named in TEXTUAL_DRIVER (textual-serve's web driver) brings its own."""
    if os.environ.get("TEXTUAL_DRIVER"):
        return
    streams = (sys.__stdin__, sys.__stderr__)
    if all(s is not None and s.isatty() for s in streams):
        return
    which = [n for n, s in zip(("stdin", "stderr"), streams) if s is None or not s.isatty()]
    verb = "are" if len(which) > 1 else "is"
    raise SpectuiError(f"the TUI needs a terminal ({' and '.join(which)} {verb} not one): add --headless, "
                       "or run it in a terminal")
