"""``spectui serve [COMMAND ...]``: a spectui screen in a web browser, through ``textual-serve``.

For rooms where the projector hangs off a laptop that has no SSH: ``spectui serve race A.jsonl B.jsonl``
(or ``serve demo``, the default) starts a small web server; each browser tab that opens the URL it prints
gets its own ``spectui COMMAND ...`` process whose screen is drawn in the page (xterm.js). Bound to
127.0.0.1 unless ``--host`` says otherwise (``--public-url`` then names the address browsers use); the URL
carries a per-run token, and only the page itself may open a session (``spectui.serve``). Ctrl+C, SIGTERM
or SIGHUP stop it, every session with it, with 128 + N.

The command is checked before anything listens: serve's own options (before the command or after it, each
once) and then ``spectui COMMAND ...`` parsed by spectui's own click commands, as if it were run, without
running it, so whatever the command would refuse (an unknown option, a bad value, a repeated option of
serve's) is refused here, in one line, exit 2.

It imports ``textual_serve`` only when it serves; importing it loads no Textual (the command's ``--help``
and its errors need none).
"""

from __future__ import annotations

import os
import shlex
import sys

import click

from ..contract.errors import SpectuiError
from ..serve.guard import MAX_SESSIONS  # the rules only: no textual-serve, no aiohttp
from . import command

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
OWN_OPTIONS = ("--host", "--port", "--public-url", "--title", "--max-sessions")
NOT_ITSELF = "spectui serve serves another spectui command (e.g. `spectui serve race A B`), not itself"


def own_options(command: tuple[str, ...]) -> tuple[dict[str, str], tuple[str, ...]]:
    """serve's own options found after COMMAND (``spectui serve demo --port 8001``: the port is serve's, no
    served command has one), and the command without them. ``--title`` stays with ``cast``, whose option it
    also is. A value is the next word or follows ``=``; a missing value is a one-line error. What is left
    is then parsed by the command's own click parser (``check_served``)."""
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
                raise twice(name)
            found[name] = value
        else:
            rest.append(word)
        i += 1
    return found, tuple(rest)


def twice(name: str) -> SpectuiError:
    return SpectuiError(f"{name} is given twice: give it once, before the command "
                        f"(spectui serve {name} VALUE COMMAND ...)")


def check_served(group: click.Group, args: tuple[str, ...]) -> None:
    """Parse ``spectui ARGS`` with spectui's own click commands (the group, then the subcommand it names),
    as ``spectui ARGS`` would, without running it. A usage error is one SpectuiError line; ``--help`` prints
    the command's help and exits 0, as it would."""
    try:
        ctx = group.make_context("spectui", list(args))
        pending = getattr(ctx, "_protected_args", None)
        if pending is None:  # click < 8.2
            pending = ctx.protected_args
        rest = [*pending, *ctx.args]
        if rest:
            name, sub, sub_args = group.resolve_command(ctx, rest)
            if name == "serve":
                raise SpectuiError(NOT_ITSELF)
            sub.make_context(name, sub_args, parent=ctx)
    except click.UsageError as exc:
        if isinstance(exc, click.NoSuchOption) and exc.ctx is not None and exc.ctx.parent is None:
            raise SpectuiError(f"cannot serve `{shown(args)}`: {exc.option_name} is an option of neither serve nor "
                               "spectui itself; a command's options go after its name (spectui serve demo "
                               "--act 2)") from None
        where = exc.ctx.command_path if exc.ctx is not None and exc.ctx.parent is not None else ""
        why = exc.format_message().rstrip(".")
        why = why[:1].lower() + why[1:]  # a clause of serve's sentence: "no such command 'x'"
        raise SpectuiError(f"cannot serve `{shown(args)}`: {where + ': ' if where else ''}{why}") from None


def shown(args: tuple[str, ...]) -> str:
    return shlex.join(["spectui", *args])


def _whole(name: str, value, most: int) -> int:
    """``value`` (an option's word) as a whole number from 1 to ``most``, else the one-line error."""
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = 0
    if not 1 <= n <= most:
        raise SpectuiError(f"{name} takes a number from 1 to {most}, not {value!r}")
    return n


@command("serve", ignore_unknown_options=True, allow_interspersed_args=False)
@click.option("--host", multiple=True, metavar="ADDRESS",
              help=f"address to listen on (default {DEFAULT_HOST}; 0.0.0.0: every interface, then give --public-url)")
@click.option("--port", multiple=True, metavar="PORT", help=f"port to listen on, 1-65535 (default {DEFAULT_PORT})")
@click.option("--public-url", multiple=True, metavar="URL", help="the URL browsers use (default http://HOST:PORT)")
@click.option("--title", multiple=True, help="the page's title (default: the command)")
@click.option("--max-sessions", multiple=True, metavar="N",
              help=f"browser tabs served at once, each a process, 1-64 (default {MAX_SESSIONS})")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def serve_cmd(command: tuple[str, ...], **given: tuple[str, ...]) -> None:
    """e.g. `spectui serve race A.jsonl B.jsonl`; serve's own options may stand before or after COMMAND
    (`spectui serve demo --port 8001`), each once. It prints the URL to open: it carries a token, and the
    page refuses a browser without it."""
    from ..contract.errors import fail

    try:
        after, command = own_options(command)
        values: dict[str, str] = {}
        for name in OWN_OPTIONS:
            key = name.lstrip("-").replace("-", "_")
            said = [*given.get(key, ()), *([after[name]] if name in after else [])]
            if len(said) > 1:
                raise twice(name)
            if said:
                values[name] = str(said[0])
        host = values.get("--host", DEFAULT_HOST)
        if not host.strip():  # "" would listen on every interface, IPv4 and IPv6, and say http://:PORT
            raise SpectuiError("--host is empty: give an address (127.0.0.1; 0.0.0.0 for every interface, "
                               "then --public-url)")
        port = _whole("--port", values.get("--port", DEFAULT_PORT), 65535)
        sessions = _whole("--max-sessions", values.get("--max-sessions", MAX_SESSIONS), 64)
        command = tuple(command) or ("demo",)
        if command[0] == "serve":
            raise SpectuiError(NOT_ITSELF)
        group = click.get_current_context().find_root().command
        if isinstance(group, click.Group):  # spectui's group (serve run on its own has none to check with)
            check_served(group, command)
        status = _serve([sys.executable, "-m", "spectui", *command], shown(command), host=host, port=port,
                        max_sessions=sessions, title=values.get("--title"),
                        public_url=values.get("--public-url"))
    except SpectuiError as exc:
        fail(str(exc))
    sys.stdout.flush()
    sys.stderr.flush()
    # Everything serve started has ended and every socket is closed: what is left is the interpreter's
    # teardown of the modules it loaded (aiohttp, jinja2, click...), up to a second on a loaded machine, on
    # a signal that asked to stop now.
    os._exit(status)


def _serve(argv: list[str], what: str, *, host: str, port: int, max_sessions: int, title: str | None,
           public_url: str | None) -> int:
    try:
        from ..serve.guard import new_token
        from ..serve.server import PageServer
    except ImportError as exc:
        raise SpectuiError(f"spectui serve needs textual-serve (pip install textual-serve): {exc}") from None
    server = PageServer(argv, what, host=host, port=port, token=new_token(), max_sessions=max_sessions,
                        title=title, public_url=public_url)

    def ready() -> None:
        print(f"spectui: serving `{what}` on {server.url} (open it in a browser; Ctrl+C stops)",
              file=sys.stderr, flush=True)

    try:
        status = server.serve(ready=ready)
    except OSError as exc:  # the port is taken, the address is not this machine's
        raise SpectuiError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
    from ..contract.exitcodes import signal_name

    ended = f"; {server.ended} session{'s' if server.ended != 1 else ''} ended" if server.ended else ""
    print(f"spectui: serve stopped by {signal_name(status - 128)}{ended}", file=sys.stderr, flush=True)
    return status
