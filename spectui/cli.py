"""Command line: ``spectui --target T.gguf --draft D.gguf`` (live TUI or --headless) and subcommands.

Subcommands live in their own modules and are imported lazily, so ``spectui demo`` or
``spectui replay`` never load llama.cpp, and ``--help`` stays fast.
"""

from __future__ import annotations

import importlib
import sys
from typing import NoReturn

import click

from .errors import SpectuiError

# name -> "module:attribute" of a click.Command
SUBCOMMANDS = {
    "replay": "spectui.replay:replay_cmd",
    "cast": "spectui.cast:cast_cmd",
    "demo": "spectui.demo:demo_cmd",
    "sweep": "spectui.sweep:sweep_cmd",
    "attach": "spectui.attach.cli:attach_cmd",
    "probe": "spectui.probe_cli:probe_cmd",
    "race": "spectui.race.cli:race_cmd",
    "serve": "spectui.serve:serve_cmd",
}
SUBCOMMAND_HELP = {
    "replay": "Replay a recorded trace in the TUI, or --headless.",
    "cast": "Render a trace to an asciicast v2 file (no terminal needed).",
    "demo": "Replay the bundled demo trace (no model needed).",
    "sweep": "Run every draft length x temperature and report when speculation pays.",
    "attach": "Watch a llama-server / vLLM / SGLang deployment's speculative decoding (/metrics, requests).",
    "probe": "Measure this machine: decode, verify cost by batch size, draft cost, and what they mean.",
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


def fail(message: str) -> NoReturn:
    click.echo(f"spectui: error: {message}", err=True)
    sys.exit(SpectuiError.exit_code)


def model_options(f):
    """Where the models come from and where they run: shared by the live run and the sweep.

    The values reach ``spectui.run.ModelOptions.pop_from(kwargs)``; llama.cpp's spellings work.
    """
    opts = [
        click.option("--target", "-m", "--model", "target", type=str, default=None, help="target model (GGUF)"),
        click.option("--draft", "-md", "--model-draft", "draft", type=str, default=None, help="draft model (GGUF)"),
        click.option("-hf", "-hfr", "--hf-repo", "hf_repo", type=str, default=None,
                     help="target from Hugging Face: user/repo[:quant] (default quant Q4_K_M)"),
        click.option("-hfd", "-hfrd", "--hf-repo-draft", "hf_repo_draft", type=str, default=None,
                     help="draft from Hugging Face: user/repo[:quant]"),
        click.option("-hff", "--hf-file", "hf_file", type=str, default=None, help="exact file in the -hf repo"),
        click.option("--hf-file-draft", "hf_file_draft", type=str, default=None, help="exact file in the -hfd repo"),
        click.option("-ngl", "--n-gpu-layers", "--gpu-layers", "n_gpu_layers", type=str, default=None,
                     help="target layers on the GPU: N or 'all' (default: all when the build can offload, else 0)"),
        click.option("-ngld", "--n-gpu-layers-draft", "--gpu-layers-draft", "n_gpu_layers_draft", type=str,
                     default=None, help="draft layers on the GPU: N or 'all' (default as -ngl)"),
        click.option("-c", "--ctx-size", "ctx_size", type=int, default=4096, show_default=True),
        click.option("-t", "--threads", type=int, default=None,
                     help="default: physical performance cores this process may use (as llama.cpp)"),
        click.option("--no-repack", is_flag=True,
                     help="load weights without repacking (use_extra_bufts=False): a workaround for llama.cpp "
                          "builds whose AMX kernels crash"),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def run_options(f):
    """Options of the live and headless run besides the models' (llama.cpp's spellings work too)."""
    opts = [
        click.option("-p", "--prompt", type=str, default=None, help="prompt text"),
        click.option("--prompt-file", "-f", type=click.Path(dir_okay=False), default=None),
        click.option("-n", "--n-predict", "n_predict", type=int, default=128, show_default=True),
        click.option("--draft-max", "--draft-n-max", "-k", "draft_max", type=str, default="2", show_default=True,
                     help="draft length k (0 = speculation off), 'auto' (cost model) or 'schedule'"),
        click.option("--temp", "--temperature", "temp", type=float, default=0.0, show_default=True),
        click.option("--seed", "-s", type=int, default=0, show_default=True),
        click.option("--drafter", type=click.Choice(["model", "ngram", "none"]), default=None,
                     help="default: model when --draft is given, else ngram"),
        click.option("--draft-p-min", "--spec-draft-p-min", "draft_p_min", type=float, default=0.0,
                     show_default=True,
                     help="stop drafting in a pass once the draft's confidence (top-10 softmax, as llama.cpp) is "
                          "below P (0 = off)"),
        click.option("--draft-min", "--draft-n-min", "--spec-draft-n-min", "draft_min", type=int, default=0,
                     show_default=True, help="never stop drafting for --draft-p-min before N drafts"),
        click.option("--inspect-top", "inspect_top", type=int, default=5, show_default=True,
                     help="record the target's and the draft's top-N candidates per position (the inspector; "
                          "0 = off)"),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


@click.group(cls=LazyGroup, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@model_options
@run_options
@click.option("--headless", is_flag=True, help="no TUI: print the text as it is generated, then a summary")
@click.option("--json", "as_json", is_flag=True, help="with --headless: print one JSON object instead")
@click.option("--record", type=click.Path(dir_okay=False), default=None, help="write the run's trace (JSON Lines)")
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
    from .run import run_main  # the live/headless run (engine + faces)

    try:
        sys.exit(run_main(**kwargs))
    except SpectuiError as exc:
        fail(str(exc))
