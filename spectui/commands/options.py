"""The click options the live run, the sweep and the probe share (llama.cpp's spellings work too)."""

from __future__ import annotations

import click

from ..contract.draft_length import DEFAULT_DRAFT_MAX
from ..contract.options import INSPECT_TOP_DEFAULT
from ..contract.params import (
    CTX_SIZE,
    DRAFT_MIN,
    GPU_LAYERS,
    INSPECT_TOP,
    N_PREDICT,
    PROBABILITY,
    SEED,
    TEMPERATURE,
    THREADS,
    OptionError,
    whole,
)


def model_options(f):
    """Where the models come from and where they run: shared by every command that loads models (run, sweep,
    bench, probe, race).

    The values reach ``spectui.contract.options.ModelOptions.pop_from(kwargs)``; llama.cpp's spellings work.
    """
    opts = [
        click.option("--target", "-m", "--model", "target", type=str, default=None, help="target model (GGUF)"),
        click.option("--draft", "-md", "--model-draft", "draft", type=str, default=None,
                     help="draft model (GGUF); or, as llama.cpp's -md, an EAGLE-3 head or the target itself (MTP), "
                          "told apart by its header"),
        click.option("--head", "head", type=str, default=None, metavar="GGUF",
                     help="an EAGLE-3 head (GGUF) for --drafter eagle3 beside a separate --draft model (the same "
                          "in every command; MTP layers need no file: --drafter mtp)"),
        click.option("-hf", "-hfr", "--hf-repo", "hf_repo", type=str, default=None,
                     help="target from Hugging Face: user/repo[:quant] (default quant Q4_K_M)"),
        click.option("-hfd", "-hfrd", "--hf-repo-draft", "hf_repo_draft", type=str, default=None,
                     help="draft from Hugging Face: user/repo[:quant]"),
        click.option("-hff", "--hf-file", "hf_file", type=str, default=None, help="exact file in the -hf repo"),
        click.option("--hf-file-draft", "hf_file_draft", type=str, default=None, help="exact file in the -hfd repo"),
        click.option("-ngl", "--n-gpu-layers", "--gpu-layers", "n_gpu_layers", type=GPU_LAYERS, default=None,
                     help="target layers on the GPU: N or 'all' (default: all when the build can offload, else 0)"),
        click.option("-ngld", "--n-gpu-layers-draft", "--gpu-layers-draft", "n_gpu_layers_draft", type=GPU_LAYERS,
                     default=None, help="draft layers on the GPU: N or 'all' (default as -ngl)"),
        click.option("-c", "--ctx-size", "ctx_size", type=CTX_SIZE, default=4096, show_default=True),
        click.option("-t", "--threads", type=THREADS, default=None,
                     help="default: physical performance cores this process may use (as llama.cpp)"),
        click.option("-td", "--threads-draft", "threads_draft", type=THREADS, default=None,
                     help="the draft model's threads (default: as -t; with --pipeline, the cores -t leaves)"),
        click.option("--sampling", "sampling", type=click.Choice(["auto", "graph", "cpu"]), default="auto",
                     show_default=True,
                     help="where the draft's q and the target's p are computed: graph = llama.cpp backend "
                          "sampler chains in the model's graph, cpu = numpy; auto = graph where the model runs "
                          "on a GPU device (docs/lossless.md)"),
        click.option("--no-repack", is_flag=True,
                     help="load weights without repacking (use_extra_bufts=False): a workaround for llama.cpp "
                          "builds whose AMX kernels crash"),
        *spec_type_options(),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def spec_type_options() -> list:
    """llama.cpp's options of its n-gram spec types, spelled as llama.cpp spells them (``--spec-ngram-mod-n-match``
    ...: ``spectui.engine.drafters.llama_spec.OPTIONS``), each with llama.cpp's default and bounds; what is given
    reaches the drafters through ``ModelOptions.spec_options``."""
    from ..engine.drafters.llama_spec import OPTIONS, option_name

    out = tree_options()
    for spec_type, opts in OPTIONS.items():
        for o in opts:
            kind = whole(o.low, o.high) if isinstance(o.default, int) else click.Path(dir_okay=False)
            out.append(click.option(o.flag, option_name(o), type=kind, default=None,
                                    help=f"{spec_type} (--drafter {spec_type}): {o.field.replace('_', '-')} "
                                         f"(llama.cpp's default: {o.default if o.default != '' else 'none'})"))
    return out


def tree_options() -> list:
    """The tree drafter's limits (--drafter tree, docs/trees.md), in llama-speculative's spelling (-np: parallel
    drafts, the leaves; --draft-p-split) and SGLang's (as long options); given, they make the tree the default
    drafter of a draft model and make an EAGLE-3 head draft trees (-np 1 alone: a chain, as llama-speculative)."""
    return [
        click.option("-np", "--parallel", "spec_tree_np", type=whole(1, 32), default=None,
                     help="tree: parallel drafts, the most leaves (llama-speculative's -np)"),
        click.option("--draft-p-split", "spec_tree_p_split", type=PROBABILITY, default=None,
                     help="tree: branch only into tokens whose draft probability is above P (llama.cpp's default "
                          "0.1 with -np)"),
        click.option("--spec-eagle-topk", "spec_eagle_topk", type=whole(1, 32), default=None,
                     help="tree: children per node (SGLang's speculative_eagle_topk; default 4)"),
        click.option("--spec-num-steps", "spec_num_steps", type=whole(1, 32), default=None,
                     help="tree: the depth (SGLang's speculative_num_steps; default k)"),
        click.option("--spec-num-draft-tokens", "spec_num_draft_tokens", type=whole(2, 33), default=None,
                     help="tree: tokens verified per pass, the root included (SGLang's speculative_num_draft_tokens; "
                          "default k + 1)"),
    ]


def run_options(f):
    """Options of the live and headless run besides the models' (llama.cpp's spellings work too)."""
    opts = [
        click.option("-p", "--prompt", type=str, default=None, help="prompt text"),
        click.option("--prompt-file", "-f", type=click.Path(dir_okay=False), default=None),
        click.option("-n", "--n-predict", "n_predict", type=N_PREDICT, default=128, show_default=True),
        draft_max_option("draft length k (0 = speculation off), 'auto' (cost model) or 'schedule'"),
        click.option("--temp", "--temperature", "temp", type=TEMPERATURE, default=0.0, show_default=True),
        click.option("--seed", "-s", type=SEED, default=0, show_default=True),
        drafter_option(),
        click.option("--draft-p-min", "--spec-draft-p-min", "draft_p_min", type=PROBABILITY, default=0.0,
                     show_default=True,
                     help="stop drafting in a pass once the draft's confidence (top-10 softmax, as llama.cpp) is "
                          "below P (0 = off)"),
        click.option("--draft-min", "--draft-n-min", "--spec-draft-n-min", "draft_min", type=DRAFT_MIN, default=0,
                     show_default=True, help="never stop drafting for --draft-p-min before N drafts"),
        click.option("--chat/--no-chat", "chat", default=None,
                     help="run the prompt on the target's chat template (default: on when the GGUF has one, as "
                          "llama-cli; --no-chat sends the raw text)"),
        click.option("--system", "-sys", "system", type=str, default=None,
                     help="system message for the chat template (default: none)"),
        pipeline_option(),
        click.option("--inspect-top", "inspect_top", type=INSPECT_TOP, default=INSPECT_TOP_DEFAULT, show_default=True,
                     help="record the target's and the draft's top-N candidates per position (the inspector; "
                          "0 = off)"),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


# One convention per flag, the same in every command (docs/conventions.md).

DRAFTER_DEFAULT_HELP = ("default: what the files given draft with (--draft by its header: model, eagle3 or mtp; "
                        "--head: eagle3), else ngram")


def drafter_help() -> str:
    """--drafter's help, from the drafters themselves (``spectui.engine.drafters.specs()``): each one's name and
    summary, then the default."""
    from ..engine.drafters import specs

    return "; ".join(f"{s.name}: {s.summary}" for s in specs()) + "; " + DRAFTER_DEFAULT_HELP


PIPELINE_HELP = ("on: the draft model drafts the next block on its own thread and cores while the target verifies "
                 "(threads split: -t / -td, default half each); auto: measure both ways on this machine and take "
                 "the faster (docs/pipeline.md)")


def pipeline_option():
    """``--pipeline on|off|auto``: the same in every command that runs the loop."""
    return click.option("--pipeline", "pipeline", type=click.Choice(["off", "on", "auto"]), default="off",
                        show_default=True, help=PIPELINE_HELP)


def drafter_option(note: str = ""):
    """``--drafter`` with the same choices in every command; ``note`` says what this command does with them."""
    return click.option("--drafter", "--spec-type", "drafter", type=DrafterType(), default=None,
                        help=drafter_help() + "; several, comma-separated, chain as llama.cpp's --spec-type does "
                        "(the first in llama.cpp's priority that drafts drafts the pass; llama.cpp's names work too)"
                        + (f"; {note}" if note else ""))


class DrafterType(click.ParamType):
    """A drafter or a chain of drafters, by spectui's names or llama.cpp's ``--spec-type`` names, comma-separated
    (``spectui.engine.drafters.canonical``); ``choices`` are the drafters' own names."""

    name = "drafter"

    @property
    def choices(self) -> tuple[str, ...]:
        from ..engine.drafters import names

        return names()

    def get_metavar(self, param, ctx=None) -> str:  # noqa: ARG002 (click's signature)
        return "NAME[,NAME...]"

    def convert(self, value, param, ctx):
        from ..engine.drafters import canonical

        try:
            return canonical(str(value))
        except ValueError as exc:
            raise OptionError(str(exc), ctx=ctx, param=param) from None


def draft_max_option(help: str, default: str | None = str(DEFAULT_DRAFT_MAX), hidden: bool = False):
    """``-k/--draft-max`` (llama.cpp's ``--draft-max``/``--draft-n-max``): the same spellings in every command
    that drafts; its value is parsed by ``spectui.contract.draft_length.parse_ks`` where it is used."""
    return click.option("--draft-max", "--draft-n-max", "-k", "draft_max", type=str, default=default,
                        show_default=default is not None, help=help, hidden=hidden)


def record_dir_option(help: str):
    """``--record-dir DIR``: the same type everywhere; the folder is checked (and made) by
    ``spectui.contract.outputs.record_folder``, with its one-line errors."""
    return click.option("--record-dir", type=click.Path(), metavar="DIR", default=None, help=help)


def json_option(what: str, tui: bool = True):
    """``--json``: ``what`` as JSON on stdout instead of the text; where the command has a TUI, none opens
    (it implies --headless)."""
    return click.option("--json", "as_json", is_flag=True,
                        help=f"print {what} as JSON on stdout" + (" (no TUI: implies --headless)" if tui else ""))


def deprecated(old: str, new: str) -> None:
    """The one-line note an old spelling prints on stderr (it keeps working)."""
    click.echo(f"spectui: note: {old} is deprecated; use {new}", err=True)
