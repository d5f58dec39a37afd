"""Command line: ``spectui --target T.gguf --draft D.gguf`` (live TUI or --headless) and subcommands.

Subcommands live in their own modules and are imported lazily, so ``spectui demo`` or
``spectui replay`` never load llama.cpp, and ``--help`` stays fast.
"""

from __future__ import annotations

import importlib
import sys

import click

from .commands import SUMMARIES
from .commands.options import json_option, model_options, run_options
from .contract.errors import SpectuiError, fail
from .contract.exitcodes import Interrupted, signal_name
from .contract.streams import CLOSED_STDOUT, StdoutClosed, guard_standard_streams, stdout_closed
from .contract.text import escape_unencodable
from .tui.shared.ascii import ascii_option

# A standard stream closed at start (`>&-`): its descriptor is opened on /dev/null (no file spectui opens
# takes its number), a write to a closed stdout is one line and exit status 2, a closed stderr says nothing.
guard_standard_streams()
# A stdout or stderr that cannot encode a character (LC_ALL=C with PYTHONUTF8=0, PYTHONIOENCODING=ascii or
# latin-1) writes it as an ASCII escape, never a UnicodeEncodeError: every command, --json and the demo too.
escape_unencodable(sys.__stdout__, sys.__stderr__)

# name -> "module:attribute" of a click.Command; each one's summary is written once, in SUMMARIES
SUBCOMMANDS = {name: f"spectui.commands.{name}:{name}_cmd" for name in SUMMARIES}
# the subcommands whose work writes nothing on standard output (a file, a server's log on stderr): they run
# with it closed; every other one is refused then, before any work (its output would go nowhere)
WITHOUT_STDOUT = frozenset({"cast", "serve"})


class LazyGroup(click.Group):
    def main(self, *args, **kwargs):
        try:
            return super().main(*args, **kwargs)
        except StdoutClosed as exc:  # a write to a closed stdout outside a command's own errors (--help)
            fail(str(exc))

    def list_commands(self, ctx):
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx, name):
        spec = SUBCOMMANDS.get(name)
        if spec is None:
            return None
        mod, attr = spec.split(":")
        return getattr(importlib.import_module(mod), attr)

    def format_commands(self, ctx, formatter):  # static: --help must not import the subcommands
        with formatter.section("Commands"):
            formatter.write_dl(sorted(SUMMARIES.items()))


@click.group(cls=LazyGroup, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@model_options
@run_options
@click.option("--headless", is_flag=True, help="no TUI: print the text as it is generated, then a summary")
@json_option("one object (the run's settings, text, passes' summary)")
@click.option("--record", type=click.Path(dir_okay=False), default=None, help="write the run's trace (JSON Lines)")
@click.option("--force", is_flag=True, help="let --record replace an existing file that is not a spectui trace")
@click.option("--theme", type=str, default=None, help="TUI theme (see themes/)")
@ascii_option
@click.option("--no-probe", is_flag=True,
              help="neither read this machine's cached verify cost (spectui probe) nor measure it after the run: "
                   "auto k and the prediction use the run's own passes only")
@click.version_option(package_name="spectui")
@click.pass_context
def main(ctx: click.Context, **kwargs) -> None:
    """Speculative decoding, made visible.

    \b
    spectui --target 7b.gguf --draft 0.5b.gguf            live TUI
    spectui --target T --draft D --headless -p "..." -n 128
    spectui demo | replay FILE | cast FILE -o OUT.cast | sweep ...
    """
    if stdout_closed() and ctx.invoked_subcommand not in WITHOUT_STDOUT:
        fail(CLOSED_STDOUT)  # before any work: what it would print goes nowhere (cat: "write error")
    if ctx.invoked_subcommand is not None:
        return
    from .engine.llama import omp  # noqa: PLC0415

    omp.mark_start()  # the machine's load, measured while the run's code and the models' headers load
    from .commands.run import plan_run, run_main  # the live/headless run (engine + faces)

    try:
        sys.exit(run_main(plan_run(kwargs)))
    except SpectuiError as exc:
        fail(str(exc))
    except Interrupted as exc:  # a signal before the run started (the models loading): nothing to flush
        click.echo(f"spectui: stopped by {signal_name(exc.signum)} before the run started (while loading): "
                   "nothing written", err=True)
        sys.exit(exc.status)
    except KeyboardInterrupt:  # a second Ctrl+C: at once, with SIGINT's status
        click.echo("spectui: interrupted", err=True)
        sys.exit(130)
