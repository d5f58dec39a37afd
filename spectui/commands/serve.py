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


OWN_OPTIONS = ("--host", "--port", "--public-url", "--title")


def own_options(command: tuple[str, ...]) -> tuple[dict[str, str], tuple[str, ...]]:
    """serve's own options found after COMMAND (``spectui serve demo --port 8001``: the port is serve's, no
    served command has one), and the command without them. ``--title`` stays with ``cast``, whose option it
    also is. A value is the next word or follows ``=``; a missing value is a one-line error."""
    found: dict[str, str] = {}
    rest: list[str] = []
    words = list(command)
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":  # everything after is the served command's
            rest += words[i:]
            break
        name, eq, value = word.partition("=")
        if name in OWN_OPTIONS and i > 0 and not (name == "--title" and words[0] == "cast"):
            if not eq:
                if i + 1 >= len(words):
                    raise SpectuiError(f"{name} needs a value: spectui serve {name} VALUE COMMAND ...")
                value = words[i + 1]
                i += 1
            if name in found:
                raise SpectuiError(f"{name} is given twice: give it once, before the command "
                                   f"(spectui serve {name} VALUE COMMAND ...)")
            found[name] = value
        else:
            rest.append(word)
        i += 1
    return found, tuple(rest)


def served_command(args: tuple[str, ...]) -> str:
    """The shell command each browser session runs: this Python's ``-m spectui ARGS`` (quoted)."""
    args = tuple(args) or ("demo",)
    if args[0] == "serve":
        raise SpectuiError("spectui serve serves another spectui command (e.g. `spectui serve race A B`), not itself")
    ctx = click.get_current_context(silent=True)
    group = ctx.parent if ctx is not None else None  # spectui's command group, when serve runs under it
    if group is not None and isinstance(group.command, click.Group) and not args[0].startswith("-"):
        known = [c for c in group.command.list_commands(group) if c != "serve"]
        if args[0] not in known:  # an unknown name would be served (and fail in every browser) until killed
            raise SpectuiError(f"spectui serve: no such command {args[0]!r} (one of: {', '.join(known)}); "
                               "serve's own options (--host, --port) go before the command")
    return shlex.join([sys.executable, "-m", "spectui", *args])


def _port(value) -> int:
    try:
        port = int(value)
    except (TypeError, ValueError):
        port = 0
    if not 1 <= port <= 65535:
        raise SpectuiError(f"--port takes a number from 1 to 65535, not {value!r}")
    return port


@command("serve", ignore_unknown_options=True, allow_interspersed_args=False)
@click.option("--host", default="127.0.0.1", show_default=True,
              help="address to listen on (0.0.0.0: every interface; then give --public-url)")
@click.option("--port", type=click.IntRange(1, 65535), default=DEFAULT_PORT, show_default=True)
@click.option("--public-url", default=None, help="the URL browsers use (default http://HOST:PORT)")
@click.option("--title", default=None, help="the page's title (default: the command)")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def serve_cmd(host: str, port: int, public_url: str | None, title: str | None, command: tuple[str, ...]) -> None:
    """e.g. `spectui serve race A.jsonl B.jsonl`; serve's own options may stand before or after COMMAND
    (`spectui serve demo --port 8001`)."""
    from ..contract.errors import fail

    try:
        if not host.strip():  # "" would listen on every interface, IPv4 and IPv6, and say http://:PORT
            raise SpectuiError("--host is empty: give an address (127.0.0.1; 0.0.0.0 for every interface, "
                               "then --public-url)")
        after, command = own_options(command)
        ctx = click.get_current_context()
        given = {"--host": host, "--port": port, "--public-url": public_url, "--title": title}
        for name, value in after.items():  # serve's options after the command: serve's, unless given twice
            param = name.lstrip("-").replace("-", "_")
            if ctx.get_parameter_source(param) is not click.core.ParameterSource.DEFAULT:
                raise SpectuiError(f"{name} is given twice: give it once, before the command "
                                   f"(spectui serve {name} VALUE COMMAND ...)")
            given[name] = value
        host, public_url, title = given["--host"], given["--public-url"], given["--title"]
        port = _port(given["--port"])
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
