"""What a bench runs: the speculative settings (drafter x k x temperature), the baseline of each temperature,
and the order of the runs.

--draft-max is parsed by the one k parser (``contract.draft_length.parse_ks``), --temp by the sweep's; the
baseline is the sweep's (drafter "none", k = 0, labelled "target only"). k = 0 in --draft-max is the baseline,
which always runs, so it is not a speculative setting.

Order (ABBA): for each repeat, for each prompt, the baseline(s) and the settings one after the other, the order
reversed on every other prompt (and shifted by the repeat), so that a slow drift of a shared machine hits the
baseline and each setting alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..contract.draft_length import DEFAULT_DRAFT_MAX
from ..contract.errors import SpectuiError
from ..contract.options import ModelOptions
from ..engine.drafters import canonical
from ..engine.drafters import names as drafter_names
from ..engine.drafters.chain import CHAIN_SEPARATOR, chain_names
from ..sweep.plan import BASELINE, TARGET_ONLY, parse_temps
from .datasets import BUILTIN

__all__ = [
    "BASELINE", "TARGET_ONLY", "BenchOptions", "Job", "Setting", "drafter_choices", "make_jobs", "make_settings",
    "parse_drafters", "parse_temps",
]


@dataclass(frozen=True)
class BenchOptions:
    """``spectui bench``'s options as the command line gave them (``contract.options.options_from``), handed
    whole from the command to the runs: the models (or ``urls``, deployments), the prompt set and what of it
    runs, the comma-separated settings (``draft_max``, ``temp``, ``drafter``, ``pipeline``: each beside the target
    alone), the exports (``json_out`` / ``csv_out`` / ``md_out``: "-" for stdout or a file each) and the server
    mode's ``baseline_url``, ``concurrency``, ``knee_probe`` and ``timeout_s``."""

    models: ModelOptions = ModelOptions()
    prompts: str = BUILTIN
    categories: str | None = None
    per_category: int | None = None
    limit: int | None = None
    turns: str | None = None  # None: "all" for a multi-turn set of its own (datasets.turns_for), else "first"
    chat: bool | None = None
    system: str | None = None
    n_predict: int = 256
    draft_max: str = str(DEFAULT_DRAFT_MAX)
    temp: str = "0"
    drafter: str | None = None
    seed: int = 0
    pipeline: str = "off"
    repeat: int = 1
    json_out: str | None = None
    csv_out: str | None = None
    md_out: str | None = None
    record_dir: str | None = None
    force: bool = False
    urls: tuple[str, ...] = ()
    baseline_url: str | None = None
    concurrency: str = "1"
    knee_probe: str | None = None
    timeout_s: float = 600.0

    @property
    def exports(self) -> tuple[str | None, str | None, str | None]:
        """(--json, --csv, --markdown): "-", a file, or None each."""
        return self.json_out, self.csv_out, self.md_out


@dataclass(frozen=True)
class Setting:
    """One way to generate: the baseline (drafter "none", k = 0) or a speculative setting."""

    drafter: str
    k: int
    temperature: float
    name: str = ""  # server mode: the deployment's URL (its drafter and k are the server's own)
    pipeline: bool = False  # --pipeline on: the draft drafts ahead on its own thread (the draft model only)

    @property
    def is_baseline(self) -> bool:
        return self.drafter == BASELINE

    @property
    def label(self) -> str:
        """"target only", "model k=2" / "ngram k=4" / "ngram-mod+model k=8" (a chain, as bench's --drafter writes
        it), or a server's URL (the temperature is shown apart)."""
        if self.is_baseline:
            return TARGET_ONLY
        return self.name or f"{chain_label(self.drafter)} k={self.k}" + (" pipelined" if self.pipeline else "")

    @property
    def full_label(self) -> str:
        return f"{self.label}, temp {self.temperature:g}"

    @property
    def tag(self) -> str:
        """File-name form: base-t0, model-k2-t0.8."""
        if self.is_baseline:
            return f"base-t{self.temperature:g}"
        return f"{chain_label(self.drafter)}-k{self.k}-t{self.temperature:g}" + ("-pipe" if self.pipeline else "")


CHAIN_JOIN = "+"  # bench's --drafter is a list of settings: "+" joins the members of one chain


def chain_label(drafter: str) -> str:
    """A chain as bench writes it: "ngram-mod,model" -> "ngram-mod+model" (one drafter stays as it is)."""
    return drafter.replace(CHAIN_SEPARATOR, CHAIN_JOIN)


def drafter_choices() -> tuple[str, ...]:
    """A setting's drafters: every drafter (``spectui.engine.drafters``) but "none", the target alone, which is
    the baseline."""
    return tuple(n for n in drafter_names() if n != BASELINE)


def parse_drafters(value: str | None, have_draft: bool) -> list[str]:
    """"model,ngram,mtp" -> ["model", "ngram", "mtp"]; "+" joins a chain: "ngram-mod+model,model" ->
    ["ngram-mod,model", "model"] (``engine.drafters.canonical``: spectui's names in the chain's priority order,
    llama.cpp's names too); None -> model with a draft model, else ngram."""
    if value is None:
        return ["model" if have_draft else "ngram"]
    out: list[str] = []
    for part in str(value).split(","):
        d = part.strip().lower()
        if not d:
            continue
        try:
            d = canonical(d.replace(CHAIN_JOIN, CHAIN_SEPARATOR))
        except ValueError as exc:
            raise SpectuiError(f"--drafter {part.strip()!r}: {exc} (comma-separated settings, \"+\" joins a "
                               "chain: ngram-mod+model)") from None
        if d == BASELINE:
            raise SpectuiError("--drafter none: the bench runs the target alone anyway (the baseline of every "
                               f"setting); give {_choices_text()}")
        if d not in out:
            out.append(d)
    if not out:
        raise SpectuiError(f"--drafter needs {_choices_text()}")
    if any("model" in chain_names(d) for d in out) and not have_draft:
        raise SpectuiError("--drafter model needs --draft PATH (or use --drafter ngram)")
    return out


def make_settings(ks: Sequence[int], temps: Sequence[float], drafters: Sequence[str],
                  pipelines: Sequence[bool] = (False,)) -> list[Setting]:
    """The baseline of each temperature, then every drafter x k (x --pipeline off / on, the draft model's) at it."""
    spec_ks = [k for k in ks if k > 0]
    if not spec_ks:
        raise SpectuiError("--draft-max needs at least one draft length above 0 (the baseline always runs)")
    out = []
    for t in temps:
        out.append(Setting(BASELINE, 0, t))
        for d in drafters:
            for k in spec_ks:
                for pipe in pipelines if d == "model" else (False,):
                    out.append(Setting(d, k, t, pipeline=pipe))
    return out


def parse_pipelines(value: str | None, have_draft: bool) -> list[bool]:
    """--pipeline "off", "on" or "off,on" -> [False], [True], [False, True] (both side by side)."""
    out: list[bool] = []
    for part in str(value or "off").split(","):
        p = part.strip().lower()
        if p not in ("on", "off"):
            raise SpectuiError(f"--pipeline takes off, on or off,on (both side by side), not {part.strip()!r}")
        if (p == "on") not in out:
            out.append(p == "on")
    if True in out and not have_draft:
        raise SpectuiError("--pipeline on needs a draft model (--draft): it overlaps the draft model's drafting")
    return out


@dataclass(frozen=True)
class Job:
    """One prompt (all its turns asked) under one setting, one repeat."""

    prompt_index: int
    setting: Setting
    repeat: int


def make_jobs(n_prompts: int, settings: Sequence[Setting], repeats: int) -> list[Job]:
    """Every prompt x setting x repeat, in ABBA order (see the module docstring)."""
    jobs = []
    for r in range(repeats):
        for i in range(n_prompts):
            order = list(settings) if (i + r) % 2 == 0 else list(reversed(settings))
            jobs.extend(Job(i, s, r) for s in order)
    return jobs


def _choices_text() -> str:
    """"model, ngram, eagle3 and/or mtp": the choices in words."""
    c = drafter_choices()
    return ", ".join(c[:-1]) + " and/or " + c[-1]
