"""What every command that loads models shares: where the models come from (``ModelOptions``, in
contract.options: the values of ``options.model_options``), the stop a signal makes while they load
(``loading_stop``), loading them (``load_engine``: paths or Hugging Face repos, checked, then the Engine), this
machine's verify cost as cached (``cached_machine``) or measured in idle time (``measure_machine``), and the
prompt (``resolve_prompt``). Used by run, sweep, bench, probe and race.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..contract.errors import SpectuiError
from ..contract.events import MachineProbe
from ..contract.exitcodes import SignalStop
from ..contract.options import Drafting, EngineOptions, ModelOptions
from ..contract.prompt import DEFAULT_PROMPT
from ..contract.text import visible_line


def resolve_prompt(prompt: str | None, prompt_file: str | None, needed_by: str | None = None) -> str:
    """The prompt a command decodes.

    Args:
        prompt: -p TEXT; prompt_file: -f FILE (its text).
        needed_by: e.g. "a recorded race": no default, and a prompt that is empty or only spaces is a
            one-line error.

    Returns:
        -p's text, or -f's, or DEFAULT_PROMPT.
    """
    if prompt is not None and prompt_file is not None:
        raise SpectuiError("give either -p/--prompt or --prompt-file, not both")
    if prompt_file is not None:
        p = Path(prompt_file)
        try:
            prompt = p.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise SpectuiError(f"prompt file not found: {prompt_file}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise SpectuiError(f"cannot read prompt file {prompt_file}: {exc}") from None
    if needed_by is None:
        return prompt if prompt is not None else DEFAULT_PROMPT
    if not prompt or not prompt.strip():
        raise SpectuiError(f"{needed_by} needs a prompt (-p TEXT or -f FILE)")
    return prompt


def check_local_files(models: ModelOptions) -> None:
    """The local model files' one-line errors (missing, a folder, not a GGUF) before a face's own checks
    (a terminal): a bad path is the first thing to say. -hf repos are resolved when the models load."""
    from ..engine.llama.preload import check_gguf_file

    for path, role in ((models.target, "target"), (models.draft, "draft"), (models.head, "head")):
        if path:
            check_gguf_file(path, role)


def detected_drafter(drafter: str | None, models: ModelOptions) -> str | None:
    """--drafter as given, or, when it is not and a local draft file is, the kind its metadata says (as llama.cpp
    picks --spec-type: spectui.engine.files.spec_kinds.detect_drafter): eagle3, mtp, dflash, dspark or model. None
    stays None (the command's own default)."""
    if drafter is not None or not models.draft or not models.target or not Path(models.draft).is_file():
        return drafter
    from ..engine.files import spec_kinds

    kind = spec_kinds.detect_drafter(models.target, models.draft)
    return "tree" if kind == "model" and wants_tree(models) else kind


def wants_tree(models: ModelOptions) -> bool:
    """The tree drafter's options were given (-np above 1, --draft-p-split, SGLang's): a draft model drafts trees
    (and an EAGLE-3 head: the engine reads the same rule, ``draft_tree.drafts_tree``)."""
    from ..engine.drafters.draft_tree import drafts_tree

    return drafts_tree(models.spec_options)


def draft_kind(models: ModelOptions) -> str | None:
    """What --draft is, from its header (spectui.engine.files.spec_kinds: eagle3, mtp, dflash, dspark or model;
    None without one; model for a Hugging Face draft, which is resolved later)."""
    if not models.draft or not models.target or not Path(models.draft).is_file():
        return "model" if models.has_draft else None
    kind = detected_drafter(None, models)
    return "model" if kind == "tree" else kind


def default_drafters(models: ModelOptions) -> list[str]:
    """The drafters a command runs when --drafter is not given: the draft model (or the head --draft is, as
    llama.cpp's -md) and the --head; prompt lookup (ngram) when no file drafts."""
    kind = draft_kind(models)
    out = [("tree" if kind == "model" and wants_tree(models) else kind)] if kind else []
    if models.head and "eagle3" not in out:
        out.append("eagle3")
    return out or ["ngram"]


def plan_drafting(command: str, drafters, models: ModelOptions) -> Drafting:
    """The one convention of every command (docs/conventions.md): ``--draft FILE`` is the separate draft model,
    or, when its header says so, the EAGLE-3 head or the target itself (MTP), as llama.cpp's -md; ``--head FILE``
    is an EAGLE-3 head beside a separate draft model; ``--drafter mtp`` drafts with the target's own MTP layers
    (no file). One head per command. Every refusal is one line (exit 2), before any weights load.

    Args:
        command: the command's name, for the messages.
        drafters: the drafters the command will run (``--drafter``, or ``default_drafters``).
        models: the model options.

    Returns:
        The Drafting: whether the draft model loads, and which head, from which file; whether the target holds a
        token tree's sequences without a draft model (a drafter that needs none proposes trees: suffix-tree).
    """
    import dataclasses

    from ..engine.drafters import by_name
    from ..engine.drafters.base import TREE_TARGET
    from ..engine.drafters.chain import chain_names

    names = [n for d in ([drafters] if isinstance(drafters, str) else drafters) for n in chain_names(d)]
    trees = any((s := by_name(n)) is not None and s.needs == TREE_TARGET for n in names)
    return dataclasses.replace(_files_for(command, names, models), tree_seqs=trees)


def _files_for(command: str, names: list[str], models: ModelOptions) -> Drafting:
    """``plan_drafting``'s files: the draft model and the head for the drafters ``names`` (a chain's members)."""
    from ..engine.drafters import block_names, head_names

    heads_known = head_names()
    kind = draft_kind(models)
    heads = [d for d in dict.fromkeys(names) if d in heads_known]
    if len(heads) > 1:
        raise SpectuiError(f"spectui {command} drafts with one head at a time: give eagle3 or mtp, not both")
    if models.head and kind in heads_known:
        raise SpectuiError(f"--head {models.head} goes beside a separate draft model, but --draft {models.draft} "
                           f"is itself a head ({kind}): give the head once")
    if models.head and "eagle3" not in heads:
        raise SpectuiError(f"--head {models.head} is the EAGLE-3 head for --drafter eagle3, which spectui {command} "
                           "is not given")
    on_model = [n for n in names if n in ("model", "tree")]  # the drafters of the draft model (its chain, its tree)
    want_model = bool(on_model)
    if want_model and kind != "model":
        why = {None: "or use --drafter ngram",
               "eagle3": f"--draft {models.draft} is an EAGLE-3 head: give it as --head",
               "mtp": f"--draft {models.draft} is the target with its MTP layers: use --drafter mtp",
               **{b: f"--draft {models.draft} is a {b} block drafter: use --drafter {b}" for b in block_names()}}
        raise SpectuiError(f"--drafter {on_model[0]} needs a separate draft model as --draft PATH "
                           f"({why.get(kind, '')})")
    head = heads[0] if heads else None
    if head == "eagle3":  # --head, or --draft as the head (llama.cpp's -md: the engine checks its header)
        head_file = models.head or (models.draft if not want_model else None)
        if head_file is None:
            raise SpectuiError("--drafter eagle3 needs the EAGLE-3 head: --head FILE (or --draft FILE)")
        return Drafting(draft_model=want_model, head=head, head_file=head_file)
    if head in block_names():  # a block drafter's draft is --draft (llama.cpp's -md)
        if kind != head:
            raise SpectuiError(f"--drafter {head} needs the {head} draft as --draft FILE" + (
                f" (--draft {models.draft} is a {kind} model)" if kind else ""))
        return Drafting(draft_model=False, head=head, head_file=models.draft)
    if head == "mtp" and kind == "eagle3":
        raise SpectuiError(f"--drafter mtp drafts with the target's own MTP layers; --draft {models.draft} is an "
                           "EAGLE-3 head (drop it, or use --drafter eagle3)")
    # mtp: --draft as the target itself (llama.cpp's way; the engine refuses a sidecar) or a separate draft model
    return Drafting(draft_model=want_model, head=head,
                    head_file=models.draft if head == "mtp" and kind == "mtp" else None)


def offered_drafters(drafter: str | None, models: ModelOptions) -> list[str]:
    """The drafters an engine loads for a command that starts with ``drafter`` (a chain: its members) and may
    switch (a run's TUI, d), or measures them (probe): the one asked for, plus what the files given draft with: the
    separate draft model (beside a head too), the --head, a head given as --draft."""
    from ..engine.drafters import by_name, head_names
    from ..engine.drafters.base import TREE_TARGET
    from ..engine.drafters.chain import chain_names

    heads_known = head_names()
    kind = draft_kind(models)
    members = chain_names(drafter) if drafter else []  # a chain's members load as each would alone

    def loads(d: str) -> bool:  # a head, the draft model, or a drafter that needs the target's tree sequences
        return d in heads_known or d == "model" or ((s := by_name(d)) is not None and s.needs == TREE_TARGET)

    out = [d for d in members if loads(d)]
    if kind == "model" and not ("eagle3" in members and not models.head):  # else --draft is the head (-md)
        out.append("model")
    elif kind in heads_known and not any(d in heads_known for d in members):
        out.append(kind)
    if models.head:
        out.append("eagle3")
    return list(dict.fromkeys(out))


def loading_stop(on_stop=None) -> SignalStop:
    """The SignalStop a command installs before its models load (install it with ``with``): SIGINT, SIGTERM
    and SIGHUP then raise Interrupted at the next Python instruction (after the llama.cpp call in progress; a
    7B loads for seconds), and the command ends with 128 + N, writing nothing. Inside llama.cpp's log callback
    the signal is only noted: call ``raise_if_stopped()`` after loading. Give it the run's clean stop
    (``.on_stop = ...``) when the run starts, so no signal meets the default disposition in between.
    ``on_stop`` given here: the signal is noted only (the TUI, whose models load on the engine thread)."""
    from ..engine.llama.llama_lib import CALLBACK_CODES

    return SignalStop(on_stop, quiet_in=CALLBACK_CODES)


def load_engine(models: ModelOptions, drafting: Drafting, *, quiet: bool = False, own_thread: bool = False,
                **engine_options):
    """Resolve the model files (paths, or Hugging Face repos through its cache), check them, build the Engine.

    Args:
        models: the model options; drafting: what drafts (``plan_drafting``: whether the draft model loads, which
            head, from which file); quiet: no loading notes; own_thread: on its own EngineThread (the TUI).
        engine_options: more of the Engine's options (``EngineOptions``: inspect_top, head_in_every_run).

    Returns:
        The loaded Engine (or EngineThread); bad input (a missing or foreign file, mismatched vocabularies) is
        a SpectuiError of one line.
    """
    use_draft = drafting.draft_model or drafting.head_is_draft(models)
    head = drafting.head
    head_file = None if drafting.head_is_draft(models) else drafting.head_file
    from ..engine.files.hub import resolve_models
    from ..engine.llama.preload import check_gguf_file

    target, draft = resolve_models(models, use_draft=use_draft, quiet=quiet)
    if not target:
        raise SpectuiError(
            "--target PATH (or -hf user/repo) is required; try `spectui demo` for a replay without models"
        )
    check_gguf_file(target, "target")  # one-line errors before any progress output
    if draft:
        check_gguf_file(draft, "draft")
    if head_file is not None and not draft:  # the head alone: it is the engine's draft file (llama.cpp's -md)
        check_gguf_file(head_file, "head")
        draft, head_file = head_file, None
    elif head == "mtp" and draft and drafting.draft_model:  # a draft model beside MTP
        head_file = target

    def warn(msg: str) -> None:
        msg = msg.removeprefix("warning: ")
        print(f"spectui: warning: {visible_line(msg)}", file=sys.stderr)

    if not quiet and sys.stderr.isatty():  # progress for people watching; pipes get only errors/warnings
        print(visible_line(f"spectui: loading target {target}" + (f" and draft {draft}" if draft else "")),
              file=sys.stderr)

    def build():
        from ..analysis.cost.draft_policy import PolicyByMode
        from ..engine.loop import Engine

        options = EngineOptions.of_models(models, head=head, head_file=head_file, tree_seqs=drafting.tree_seqs,
                                          **engine_options)
        return Engine(target, draft, options,
                      warn=warn, draft_policy=PolicyByMode)

    if own_thread:  # the TUI: load, run and close on one thread (one OpenMP team; see engine/thread.py)
        from ..engine.thread import EngineThread

        return EngineThread(build)
    return build()


def resolve_pipeline(engine, mode: str, settings, say=None):
    """``--pipeline off|on|auto`` -> the run's Settings (``pipeline`` on or off). auto measures both ways on the
    loaded pair (engine.pipeline_probe, a few seconds) and takes the faster at its best k (analysis.pipeline_cost);
    the choice and why go to ``say`` and into the run's RunStarted (``engine.pipeline_choice``). on without a
    draft model is an error (exit 2); auto is then off."""
    import dataclasses

    inner = getattr(engine, "engine", engine)
    if mode == "off":
        return settings
    if inner.draft is None:
        if mode == "on":
            raise SpectuiError("--pipeline on needs a draft model (--draft): it overlaps the draft model's drafting")
        inner.pipeline_choice = "auto: sequential (no draft model to run beside the target)"
        return settings
    if mode == "on":
        return dataclasses.replace(settings, pipeline=True)
    from ..analysis.cost.pipeline_cost import choose
    from ..engine.probes.pipeline_probe import measure_split

    costs = engine.call(lambda: measure_split(inner)) if hasattr(engine, "call") else measure_split(inner)
    choice = choose(costs)
    inner.pipeline_choice = "auto: " + choice.reason
    if say is not None:
        say(f"--pipeline {inner.pipeline_choice}")
    return dataclasses.replace(settings, pipeline=choice.pipeline)


def cached_machine(engine, quiet: bool = False, say=None) -> tuple[MachineProbe | None, bool]:
    """This machine's verify cost for the loaded pair as ``spectui probe`` cached it, measuring nothing (a run
    never waits for the probe: its cost model and auto k start from the run's own passes, and from this
    when it is there): (what the run hands the engine for ``RunStarted.probe``, or None; whether measuring
    it is worth it once the machine is idle: none cached, or it was measured busy and the machine is quiet
    now). Read on the engine's own thread when it has one. ``say`` takes the one-line messages (a corrupt
    cache file, a probe measured under load; default: stderr)."""
    from ..analysis.measured.probe import cached_only

    say = say or _say_stderr
    inner = getattr(engine, "engine", engine)
    res, again = engine.call(lambda: cached_only(inner, warn=say)) if hasattr(engine, "call") else cached_only(
        inner, warn=say)
    if res is None:
        return None, again
    if not res.quiet and not quiet:
        say(res.warning())
    return res.machine_probe(), again


def measure_machine(engine, say=None, progress=None, stop=None) -> MachineProbe | None:
    """Measure this machine's verify cost by batch size for the loaded pair now and cache it (``spectui
    probe``; once per model pair and machine): the TUI calls it in idle time, once a run has ended and
    before the next one starts, never while a run decodes (it would measure the run's own contention).
    Runs on the engine's own thread when it has one. ``stop`` (a RunControl): its ``stop()`` ends the
    measurement mid-decode (q, a signal, a restart): None then, nothing cached. ``say`` / ``progress``
    take its messages."""
    from ..analysis.measured.probe import cached_or_measure
    from ..engine.llama.abort import DecodeAborted

    say = say or _say_stderr
    inner = getattr(engine, "engine", engine)

    def measure():
        try:
            return cached_or_measure(inner, warn=say, progress=progress, stop=stop)
        except DecodeAborted:
            return None

    res = engine.call(measure) if hasattr(engine, "call") else measure()
    if res is None:
        return None
    if not res.quiet:
        say(res.warning())
    return res.machine_probe()


def _say_stderr(msg: str) -> None:
    print(f"spectui: {msg}", file=sys.stderr)
