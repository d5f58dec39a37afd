"""User-facing errors: one line, no traceback. ``fail`` prints ``spectui: error: <message>`` and exits 2."""

from __future__ import annotations

import sys
from typing import NoReturn

import click

from .text import visible_line


class SpectuiError(Exception):
    """Bad input the user can fix (missing/non-GGUF file, vocab mismatch, bad trace, unknown theme...)."""

    exit_code = 2

    def __str__(self) -> str:  # the message may quote outside text (a trace's, a server's): one safe line
        return visible_line(super().__str__())


def fail(message: str) -> NoReturn:
    click.echo(f"spectui: error: {visible_line(message)}", err=True)
    sys.exit(SpectuiError.exit_code)
