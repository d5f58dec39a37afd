"""``spectui serve [COMMAND ...]``: a spectui screen in a web browser, through ``textual-serve``.

For rooms where the projector hangs off a laptop that has no SSH: ``spectui serve race A.jsonl B.jsonl``
(or ``serve demo``, the default) starts a small web server; each browser that opens the page gets its own
``spectui COMMAND ...`` process whose screen is drawn in the page (xterm.js). Bound to 127.0.0.1 unless
``--host`` says otherwise (``--public-url`` then names the address browsers use). Ctrl+C or SIGTERM stop it.

It imports ``textual_serve`` only when it serves; importing it loads no Textual (the command's ``--help``
and its errors need none).
"""

from __future__ import annotations

import shlex
import sys

import click

from ..contract.errors import SpectuiError
from . import command

DEFAULT_PORT = 8000


def served_command(args: tuple[str, ...]) -> str:
    """The shell command each browser session runs: this Python's ``-m spectui ARGS`` (quoted)."""
    args = tuple(args) or ("demo",)
    if args[0] == "serve":
        raise SpectuiError("spectui serve serves another spectui command (e.g. `spectui serve race A B`), not itself")
    return shlex.join([sys.executable, "-m", "spectui", *args])


@command("serve", ignore_unknown_options=True, allow_interspersed_args=False)
@click.option("--host", default="127.0.0.1", show_default=True,
              help="address to listen on (0.0.0.0: every interface; then give --public-url)")
@click.option("--port", type=click.IntRange(1, 65535), default=DEFAULT_PORT, show_default=True)
@click.option("--public-url", default=None, help="the URL browsers use (default http://HOST:PORT)")
@click.option("--title", default=None, help="the page's title (default: the command)")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def serve_cmd(host: str, port: int, public_url: str | None, title: str | None, command: tuple[str, ...]) -> None:
    """e.g. `spectui serve race A.jsonl B.jsonl`."""
    from ..contract.errors import fail

    try:
        cmd = served_command(command)
        try:
            from textual_serve.server import Server
        except ImportError:
            raise SpectuiError("spectui serve needs textual-serve (pip install textual-serve)") from None
        shown = "spectui " + " ".join(command or ("demo",))
        server = Server(cmd, host=host, port=port, title=title or shown, public_url=public_url)
        print(f"spectui: serving `{shown}` on {server.public_url} (Ctrl+C stops)", file=sys.stderr, flush=True)
        try:
            server.serve()
        except OSError as exc:  # the port is taken, the address is not this machine's
            raise SpectuiError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
    except SpectuiError as exc:
        fail(str(exc))
