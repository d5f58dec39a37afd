"""Command line: ``spectui --target T.gguf --draft D.gguf`` (live TUI or --headless) and subcommands.

Subcommands live in their own modules and are imported lazily, so ``spectui demo`` or
``spectui replay`` never load llama.cpp, and ``--help`` stays fast.
"""

from __future__ import annotations

import importlib
import sys
import click

from .contract.errors import SpectuiError, fail
from .contract.exitcodes import Interrupted, signal_name
from .commands.options import model_options, run_options

# name -> "module:attribute" of a click.Command
SUBCOMMANDS = {name: f"spectui.commands.{name}:{name}_cmd" for name in (
    "replay", "cast", "demo", "sweep", "attach", "probe", "bench", "race", "serve")}
SUBCOMMAND_HELP = {
    "replay": "Replay a recorded trace in the TUI, or --headless.",
    "cast": "Render a trace to an asciicast v2 file (no terminal needed).",
    "demo": "Replay the bundled demo trace (no model needed).",
    "sweep": "Run every draft length x temperature and report when speculation pays.",
    "attach": "Watch a llama-server / vLLM / SGLang deployment's speculative decoding (/metrics, requests).",
    "probe": "Measure this machine: decode, verify cost by batch size, draft cost, and what they mean.",
    "bench": "Benchmark a pair (or a deployment) per workload category: Spec-Bench's table on your machine.",
    "race": "Race recorded runs side by side on one clock (or record two settings, then race them).",
    "serve": "Serve a spectui screen (default: the demo) to a web browser (textual-serve).",
}


class LazyGroup(click.Group):
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
            formatter.write_dl(sorted(SUBCOMMAND_HELP.items()))


@click.group(cls=LazyGroup, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@model_options
@run_options
@click.option("--headless", is_flag=True, help="no TUI: print the text as it is generated, then a summary")
@click.option("--json", "as_json", is_flag=True, help="with --headless: print one JSON object instead")
@click.option("--record", type=click.Path(dir_okay=False), default=None, help="write the run's trace (JSON Lines)")
@click.option("--force", is_flag=True, help="let --record replace an existing file that is not a spectui trace")
@click.option("--theme", type=str, default=None, help="TUI theme (see themes/)")
@click.option("--no-probe", is_flag=True,
              help="skip measuring this machine's verify cost at load (used by auto k and the TUI's prediction)")
@click.version_option(package_name="spectui")
@click.pass_context
def main(ctx: click.Context, **kwargs) -> None:
    """Speculative decoding, made visible.

    \b
    spectui --target 7b.gguf --draft 0.5b.gguf            live TUI
    spectui --target T --draft D --headless -p "..." -n 128
    spectui demo | replay FILE | cast FILE -o OUT.cast | sweep ...
    """
    if ctx.invoked_subcommand is not None:
        return
    from .commands.run import run_main  # the live/headless run (engine + faces)

    try:
        sys.exit(run_main(**kwargs))
    except SpectuiError as exc:
        fail(str(exc))
    except Interrupted as exc:  # a signal before the run started (the models loading): nothing to flush
        click.echo(f"spectui: stopped by {signal_name(exc.signum)} before the run started (while loading): "
                   "nothing written", err=True)
        sys.exit(exc.status)
    except KeyboardInterrupt:  # a second Ctrl+C: at once, with SIGINT's status
        click.echo("spectui: interrupted", err=True)
        sys.exit(130)
