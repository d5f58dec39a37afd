"""User-facing errors: one line, no traceback. ``echo_error`` prints ``spectui: error: <message>`` (the message
through the one escaping rule, ``contract.text.visible_line``); ``fail`` prints it and exits 2; ``echo_line``
prints any other notice line (``wrote PATH``) through the same rule."""

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


class NeverAnswered(SpectuiError):
    """A server that did not answer (refused, timed out, a certificate not trusted, an HTTP error): the run
    failed, it was not bad usage (exit status 1; the line names the URL, as ``spectui attach`` says it)."""

    exit_code = 1


def echo_error(message: object, topic: str = "error") -> None:
    """Print ``spectui: <topic>: <message>`` on stderr, the message made one visible line.

    Args:
        message: the message, or the exception (a ``SpectuiError``) whose text it is.
        topic: what the line is: ``error`` (bad input, exit 2), or a command's name for a failure it reports
            (``spectui: attach: ...``, exit 1).
    """
    click.echo(f"spectui: {topic}: {visible_line(message)}", err=True)


def echo_line(message: object) -> None:
    """Print ``message`` on stderr as one visible line (:func:`~spectui.contract.text.visible_line`): a notice
    that names a path or quotes outside text (``wrote PATH: ...``), so an ESC, a BEL or a newline in a file
    name reaches the terminal as ``\\x1b``, ``\\x07``, ``\\n``."""
    click.echo(visible_line(message), err=True)


def fail(message: object) -> NoReturn:
    """Print ``spectui: error: <message>`` (:func:`echo_error`) and exit with ``SpectuiError.exit_code`` (2)."""
    echo_error(message)
    sys.exit(SpectuiError.exit_code)
