"""The options a command hands down whole, each built ONCE from the command line and checked there: where the
models come from (``ModelOptions``), what drafts (``Drafting``), how the engine loads them (``EngineOptions``: what
``Engine`` takes) and the live run as asked (``RunOptions``: from ``spectui --target T ...`` to the engine's
loader and the faces). Frozen: no layer below the command line changes or checks them again.

Here, the lowest layer, so that the engine and the views import them too. No click, no engine imports.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields

from .events import Settings

__all__ = ["INSPECT_TOP_DEFAULT", "Drafting", "EngineOptions", "ModelOptions", "RunOptions", "options_from"]

INSPECT_TOP_DEFAULT = 5  # --inspect-top: candidates recorded per verified position


# the click names of llama.cpp's n-gram types' options and of the tree drafter's (-np, --draft-p-split, SGLang's)
SPEC_OPTION_PREFIXES = ("spec_ngram_", "lookup_cache_", "spec_tree_", "spec_eagle_", "spec_num_")


def options_from(cls, values: dict, *, strict: bool = True):
    """An options dataclass ``cls`` from a command's values by name (click's ``**kwargs``): its fields are taken
    out of ``values`` (the rest stays for the caller), a ``models`` field from the model options among them
    (``ModelOptions``) unless given; with ``strict``, a name left over is a TypeError (a programming error: an
    option without a field)."""
    names = [f.name for f in fields(cls)]
    if "models" in names and "models" not in values:
        values["models"] = ModelOptions.pop_from(values)
    made = cls(**{n: values.pop(n) for n in names if n in values})
    if strict and values:
        raise TypeError(f"{cls.__name__}: unknown options {sorted(values)}")
    return made


@dataclass(frozen=True)
class ModelOptions:
    """Where the models come from (paths or Hugging Face repos) and where they run: the options of
    ``commands.options.model_options``, shared by every command that loads models (run, sweep, bench, probe,
    race)."""

    target: str | None = None
    draft: str | None = None
    hf_repo: str | None = None
    hf_repo_draft: str | None = None
    hf_file: str | None = None
    hf_file_draft: str | None = None
    n_gpu_layers: str | None = None
    n_gpu_layers_draft: str | None = None
    ctx_size: int = 4096
    threads: int | None = None
    threads_draft: int | None = None  # -td (llama.cpp's --threads-draft)
    no_repack: bool = False
    sampling: str = "auto"  # --sampling: auto | graph | cpu (engine/run/graph_path.py)
    head: str | None = None  # --head FILE: an EAGLE-3 head beside the separate draft model (--draft)
    # llama.cpp's --spec-ngram-* / --lookup-cache-* options the user gave, as (option name, value) pairs
    # (spectui.engine.drafters.llama_spec.params_from makes them each n-gram type's params)
    spec_options: tuple[tuple[str, object], ...] = ()

    @classmethod
    def pop_from(cls, kwargs: dict) -> "ModelOptions":
        """Take this class's fields out of a click kwargs dict (the rest stays for the caller); the n-gram types'
        options (``spec_ngram_*``, ``lookup_cache_*``) given go into ``spec_options``."""
        spec = tuple((k, kwargs.pop(k)) for k in sorted(kwargs) if k.startswith(SPEC_OPTION_PREFIXES))
        kwargs.setdefault("spec_options", tuple((k, v) for k, v in spec if v is not None))
        return options_from(cls, kwargs, strict=False)

    @property
    def has_draft(self) -> bool:
        return bool(self.draft or self.hf_repo_draft)


@dataclass(frozen=True)
class Drafting:
    """What an engine must hold for a command's drafters (``commands.common.plan_drafting``): the separate draft
    model, and one head (eagle3: an EAGLE-3 head's file; mtp: the target's own MTP layers) beside it or alone; and
    whether the target holds a token tree's sequences without a draft model (suffix-tree)."""

    draft_model: bool = False  # --draft loads as a separate draft model (the model drafter)
    head: str | None = None  # eagle3, mtp or None
    head_file: str | None = None  # eagle3: the head's file (--head, or --draft when that is the head)
    tree_seqs: bool = False  # a drafter proposes trees without a draft model (suffix-tree): the target holds them

    def head_is_draft(self, models: ModelOptions) -> bool:
        """The head's file is --draft itself (llama.cpp's -md): the engine loads it as the head."""
        return self.head_file is not None and self.head_file == models.draft


@dataclass(frozen=True)
class EngineOptions:
    """How ``Engine`` loads its models and runs (everything but the files and the callables it is handed).

    n_ctx: the context of each model (-c), at least 8. threads / threads_draft: decode threads (-t / -td; None:
    llama.cpp's choice, the physical performance cores). no_repack: the weights as they are in the file.
    n_batch, n_ubatch: llama.cpp's logical and physical batch sizes. n_gpu_layers, n_gpu_layers_draft: -ngl /
    -ngld ("all", a number, None: every layer where a GPU is). use_mmap: map the files (None: unless the weights
    are repacked). inspect_top: candidates recorded per verified position (0: off). spare_core: a core is free for
    the overlapped finishing (None: found out). head: "eagle3" or "mtp" (docs/eagle3-mtp.md); head_file: its own
    file beside a separate draft model; head_in_every_run: the head reads the target's decodes in every run
    (False: only in runs that start with it). sampling: "cpu", "graph" or "auto" (docs/lossless.md).
    pin_pipeline, pipeline_threads: the pipelined passes' placement and thread split (engine/run/pipeline.py).
    grow_kv: KV caches of ``n_batch`` cells that each run grows to what it can use, up to ``n_ctx`` (the limit
    recorded and enforced); no head, numpy sampling only. Headless runs ask for it. tree_seqs: the target's context
    holds a token tree's sequences without a draft model (a draft model's engine always does), for suffix-tree.
    """

    n_ctx: int = 4096
    threads: int | None = None
    threads_draft: int | None = None
    no_repack: bool = False
    n_batch: int = 512
    n_ubatch: int | None = None
    n_gpu_layers: int | str | None = None
    n_gpu_layers_draft: int | str | None = None
    use_mmap: bool | None = None
    inspect_top: int = INSPECT_TOP_DEFAULT
    spare_core: bool | None = None
    head: str | None = None
    head_file: str | None = None
    head_in_every_run: bool = True
    sampling: str = "cpu"
    pin_pipeline: bool = False
    pipeline_threads: tuple[int, int] | None = None
    spec_options: tuple[tuple[str, object], ...] = ()  # llama.cpp's n-gram types' options (ModelOptions')
    grow_kv: bool = False  # KV caches of n_batch cells each run grows to what it can use, up to n_ctx (headless)
    tree_seqs: bool = False  # the target holds a token tree's sequences without a draft model (suffix-tree)

    def but(self, **changes) -> "EngineOptions":
        """These options with ``changes`` (field names; an unknown one is a TypeError)."""
        return dataclasses.replace(self, **changes) if changes else self

    @classmethod
    def of_models(cls, models: ModelOptions, **more) -> "EngineOptions":
        """The engine's options for the command line's ``models`` (-c, -t, -td, -ngl, -ngld, --no-repack,
        --sampling), with ``more`` (inspect_top, head, ...)."""
        return cls(n_ctx=models.ctx_size, threads=models.threads, threads_draft=models.threads_draft,
                   no_repack=models.no_repack, n_gpu_layers=models.n_gpu_layers,
                   n_gpu_layers_draft=models.n_gpu_layers_draft, sampling=models.sampling,
                   spec_options=models.spec_options, **more)


@dataclass(frozen=True)
class RunOptions:
    """The live run as the command line asked for it (``spectui --target T [--draft D] ...``), built and checked
    once (``commands.run.plan_run``), then handed whole to the loader, the engine's runs and the face.

    ``settings`` holds the run's knobs as it starts: the draft length (``draft_max``, and ``auto`` for a mode),
    the temperature, seed, drafter, --draft-p-min, --draft-min. ``pipeline`` is --pipeline as given (off, on or
    auto: ``settings.pipeline`` is decided once the models are loaded). ``prompt`` is the text to run (-p, or
    -f's text, or the default prompt); ``prompt_file`` the file it came from, if any."""

    models: ModelOptions = ModelOptions()
    settings: Settings = Settings()
    drafting: Drafting = Drafting()
    prompt: str = ""
    prompt_file: str | None = None
    n_predict: int = 128
    pipeline: str = "off"
    inspect_top: int = INSPECT_TOP_DEFAULT
    chat: bool | None = None
    system: str | None = None
    headless: bool = False
    as_json: bool = False
    record: str | None = None
    force: bool = False
    theme: str | None = None
    no_probe: bool = False
