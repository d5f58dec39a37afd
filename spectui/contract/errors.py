"""User-facing errors: one line, no traceback. ``fail`` prints ``spectui: error: <message>`` and exits 2."""

from __future__ import annotations

import sys
from typing import NoReturn

import click


class SpectuiError(Exception):
    """Bad input the user can fix (missing/non-GGUF file, vocab mismatch, bad trace, unknown theme...)."""

    exit_code = 2


def fail(message: str) -> NoReturn:
    click.echo(f"spectui: error: {message}", err=True)
    sys.exit(SpectuiError.exit_code)
