"""The live run behind ``spectui --target T --draft D``: load the engine, then hand its events to a face.

Models load before any full-screen UI starts (llama.cpp may write to the terminal while loading). The run
starts as soon as they are loaded: nothing is measured before its first token (its cost model and auto k
start from its own passes, and from this machine's probe when ``spectui probe`` cached one); the TUI
measures the probe in idle time, once a run has ended while the screen is up. A stop (q, SIGINT, SIGTERM,
SIGHUP) ends the llama_decode in progress (spectui.engine.abort), so the run ends within a second even
mid-pass, with its summary and a trace complete up to the last whole pass; in headless mode a second Ctrl+C
interrupts at once. Before the run starts (the models loading) a signal ends the command at once with
128 + N and nothing written. Once the TUI's app has ended the process ends within 2 s (ExitGuard).
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass

from ..contract.control import DRAFT_MAX_LIMIT, RunControl
from ..contract.draft_length import DEFAULT_DRAFT_MAX, k_setting, parse_k
from ..contract.errors import SpectuiError
from ..contract.events import Settings
from ..contract.exitcodes import OK, SignalStop, for_run_end
from .common import (
    Drafting,
    ModelOptions,
    cached_machine,
    detected_drafter,
    load_engine,
    loading_stop,
    measure_machine,
    offered_drafters,
    plan_drafting,
    resolve_pipeline,
    resolve_prompt,
)


def make_settings(draft_max, temp: float, seed: int, drafter: str | None, have_draft: bool,
                  draft_p_min: float = 0.0, draft_min: int = 0, pipeline: str = "off") -> Settings:
    k, auto = k_setting(parse_k(draft_max))
    if not 0.0 <= temp <= 2.0:
        raise SpectuiError(f"--temp must be between 0 and 2, not {temp}")
    if not 0.0 <= draft_p_min <= 1.0:
        raise SpectuiError(f"--draft-p-min must be between 0 and 1, not {draft_p_min}")
    if not 0 <= draft_min <= DRAFT_MAX_LIMIT:
        raise SpectuiError(f"--draft-min must be between 0 and {DRAFT_MAX_LIMIT}, not {draft_min}")
    if drafter is None:
        drafter = "model" if have_draft else "ngram"
    if drafter == "eagle3" and not have_draft:
        raise SpectuiError("--drafter eagle3 needs the EAGLE-3 head as --draft PATH")
    if drafter == "model" and not have_draft:
        raise SpectuiError("--drafter model needs --draft PATH (or use --drafter ngram / none)")
    if pipeline == "on" and not have_draft:
        raise SpectuiError("--pipeline on needs a draft model (--draft): it overlaps the draft model's drafting")
    return Settings(draft_max=k, temperature=temp, drafter=drafter, seed=seed, auto=auto,
                    draft_p_min=float(draft_p_min), draft_min=int(draft_min), pipeline=pipeline == "on")


class ChatEngine:
    """An engine whose runs take the user's text and run it on the target's chat template (one user turn,
    the system message only with --system), as llama-cli does in conversation mode; the template's label is
    recorded in RunStarted. It has ``run`` only: the faces get nothing else of an engine."""

    def __init__(self, engine, template, system: str | None = None) -> None:
        self.engine = engine
        self.template = template
        self.system = system

    def prompt_text(self, text: str) -> str:
        from ..engine.chat import chat_messages

        return self.template.render(chat_messages([text], system=self.system))

    def run(self, prompt, control=None, n_predict: int = 128, probe=None, overlap: bool = False):
        return self.engine.run(self.prompt_text(prompt), control, n_predict, probe, self.template.label,
                               overlap=overlap)


def chat_engine(engine, chat: bool | None, system: str | None = None):
    """``engine`` wrapped in a ChatEngine when the chat template applies: --chat (an error when the target has
    no template), or by default when the target has one (llama-cli's default); ``engine`` itself otherwise."""
    if chat is False:
        return engine
    tpl = engine.call(lambda: engine.engine.chat_template) if hasattr(engine, "call") else engine.chat_template
    if tpl is None:
        if chat:
            raise SpectuiError("--chat: the target model has no chat template (tokenizer.chat_template)")
        if system is not None:
            raise SpectuiError("--system: the target model has no chat template (tokenizer.chat_template)")
        return engine
    return ChatEngine(engine, tpl, system)


@dataclass(frozen=True)
class RunPlan:
    """A run as asked, checked before any model loads (``plan_run``)."""

    models: ModelOptions
    text: str
    settings: Settings
    drafting: Drafting
    inspect_top: int
    n_predict: int
    headless: bool
    as_json: bool


def plan_run(models: ModelOptions, prompt, prompt_file, n_predict, draft_max, temp, seed, drafter, headless, as_json,
             theme, draft_p_min, draft_min, inspect_top, chat, system, pipeline="off") -> RunPlan:
    """Every check that needs no model, in the order a user meets them (one line, exit 2, on the first)."""
    text = resolve_prompt(prompt, prompt_file)
    if drafter is None and models.head:  # --head FILE: the run starts drafting with the EAGLE-3 head
        drafter = "eagle3"
    drafter = detected_drafter(drafter, models)
    settings = make_settings(draft_max, temp, seed, drafter, have_draft=models.has_draft or bool(models.head),
                             draft_p_min=draft_p_min, draft_min=draft_min, pipeline=pipeline)
    # the engine holds the drafter asked for and what the files given draft with (the TUI's d switches to them)
    drafting = plan_drafting("run", offered_drafters(settings.drafter, models), models)
    from ..engine.loop import check_inspect_top  # noqa: PLC0415 - a bad value fails before any model loads

    inspect_top = check_inspect_top(inspect_top)
    if n_predict <= 0:
        raise SpectuiError(f"-n/--n-predict must be positive, not {n_predict}")
    headless = headless or as_json  # --json: JSON on stdout, no TUI (docs/conventions.md)
    if theme is not None:  # every face refuses an unknown theme, headless too; before loading models
        from ..tui.shared.themes import check_theme

        check_theme(theme)
    if system is not None and chat is False:
        raise SpectuiError("--system needs the chat template (drop --no-chat)")
    if not headless:  # before the models load (minutes for a 7B): a TUI needs a terminal to be worth it
        from ..tui.shared.terminal import require_terminal

        require_terminal("spectui")
    return RunPlan(models, text, settings, drafting, inspect_top, n_predict, headless, as_json)


def run_main(
    prompt=None, prompt_file=None, n_predict=128, draft_max=DEFAULT_DRAFT_MAX, temp=0.0, seed=0, drafter=None,
    headless=False, as_json=False, record=None, theme=None, no_probe=False, draft_p_min=0.0, draft_min=0,
    inspect_top=5, force=False, chat=None, system=None, pipeline="off", **model_kwargs,
) -> int:
    """The run; returns its exit status (spectui.contract.exitcodes): 0 done, 1 the run failed (RunEnded.error: the
    prompt does not fit, an empty prompt, the model failed), 128 + N after signal N (a clean stop)."""
    models = ModelOptions.pop_from(model_kwargs)
    if model_kwargs:
        raise TypeError(f"run_main: unknown options {sorted(model_kwargs)}")
    plan = plan_run(models, prompt, prompt_file, n_predict, draft_max, temp, seed, drafter, headless, as_json, theme,
                    draft_p_min, draft_min, inspect_top, chat, system, pipeline)
    control = RunControl(plan.settings)
    # Until the run starts there is nothing to flush: SIGINT/SIGTERM/SIGHUP while the models load (seconds
    # for a 7B) end the command with 128 + N and nothing written (Interrupted, which the command reports in
    # one line). Headless, the models load on this thread and the stop comes at the next Python instruction
    # (after the llama.cpp call in progress); the TUI's engine thread loads them, and the signal is noted and
    # acted on when that load returns (the thread is never left loading at exit); the TUI then takes the
    # signals over as it starts, and quits at once for one noted in between (hand_over).
    signals = loading_stop(None if plan.headless else _note_only)
    signals.hand_over = not plan.headless  # the TUI takes the signals over when it starts (and acts on one noted)
    recorder = engine = guard = None
    try:
        with signals:
            recorder = _run_recorder(record, models, prompt_file, force, anonymous=not plan.headless)
            engine = load_engine(models, quiet=as_json, own_thread=not plan.headless, inspect_top=plan.inspect_top,
                                 drafting=plan.drafting)
            if recorder is not None and recorder.background:
                recorder.gate = engine.decoding  # the trace is encoded while the models decode
            signals.raise_if_stopped()  # the TUI: a signal while its engine thread loaded (headless: raised)
            runner = chat_engine(engine, chat, system)
            # --pipeline auto: both ways measured on the loaded pair, the faster taken (and recorded)
            settings = resolve_pipeline(engine, pipeline, plan.settings, None if plan.as_json else _say)
            control.update(pipeline=settings.pipeline)
            # this machine's probe as cached (auto k and the prediction start from it); none: the run's own
            # passes feed them from the first, and the TUI measures it once the run has ended
            machine, measure_later = (None, False) if no_probe else cached_machine(engine, quiet=plan.as_json)
            if plan.headless:
                signals.on_stop = control.stop  # the run starts: a signal now stops it cleanly
                return _run_headless(runner, plan, control, machine, recorder, signals, engine)
            signals.raise_if_stopped()  # the TUI: a signal while the cache was read on the engine thread
            status = _run_tui(runner, engine, plan, control, machine, measure_later, recorder, theme)
            from ..tui.shared.terminal import ExitGuard  # the app has ended: the process ends within 2 s

            guard = ExitGuard(status).start()
    finally:
        with guard.hold() if guard is not None else contextlib.nullcontext():  # the trace's last bytes
            if recorder is not None:
                recorder.close()
        if engine is not None:
            engine.close()
    guard.exit_now()  # the TUI's app has ended and everything is closed: nothing is left to wait for


def _say(msg: str) -> None:
    print(f"spectui: {msg}", file=sys.stderr)


def _run_tui(runner, engine, plan: RunPlan, control: RunControl, machine, measure_later: bool, recorder,
             theme) -> int:
    """The TUI face of a started run: its exit status. The probe, when none is cached, is measured in idle
    time: once a run has ended by itself while the screen is up (``run_live``'s ``measure``)."""
    from ..tui.run.app import run_live  # installs its own quit over the command's signals (hand_over)

    measure = None
    if measure_later:
        def measure(say, progress, stop):
            return measure_machine(engine, say=say, progress=progress, stop=stop)
    return run_live(runner, control, plan.text, plan.n_predict, theme=theme, recorder=recorder, probe=machine,
                    measure=measure)


def _note_only() -> None:
    """A signal's ``on_stop`` while the TUI's engine thread loads: noted (SignalStop.signum), acted on after."""


def _run_recorder(record, models: ModelOptions, prompt_file, force: bool, anonymous: bool = False):
    """The --record TraceWriter, or None. Checked now (never a model or the prompt file; an existing file
    only if it is a trace, or --force); the file is created at the first event, so a run that fails or is
    stopped before it starts leaves none. With a spare core the trace is encoded and written on a thread of
    its own, off the engine's passes. ``anonymous`` (the TUI without --record): the trace goes to an
    anonymous temporary file that ``s`` copies, so the screen never holds the run's whole history in memory
    (a long run's memory stays flat: the screen keeps only its bounded tails)."""
    if not record and not anonymous:
        return None
    from ..engine.cpu import default_threads, spare_core
    from ..recording.trace import TraceWriter

    spare = spare_core(models.threads or default_threads().threads)
    if not record:
        return TraceWriter(None, background=spare)
    return TraceWriter(record, inputs=(models.target, models.draft, models.head, prompt_file), force=force,
                       background=spare)


def _run_headless(runner, plan: RunPlan, control: RunControl, machine, recorder, signals: SignalStop,
                  engine) -> int:
    """The headless face of a started run (``signals`` stops it cleanly, and a stop signal ends the decode in
    progress at once: ``engine.abort``): its exit status."""
    from ..engine.abort import aborting_on_signals
    from ..text.run import consume

    stats = None
    try:
        with aborting_on_signals(engine.abort):
            stats = consume(
                runner.run(plan.text, control, plan.n_predict, probe=machine, overlap=True),
                sys.stdout,
                as_json=plan.as_json,
                sink=recorder.write if recorder else None,
            )
    except BrokenPipeError:  # reader went away (| head, dropped SSH): stop quietly
        control.stop()
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return signals.status(OK)
    end = stats.end if stats is not None else None
    if end is not None and end.error and signals.signum is None:
        print(f"spectui: the run failed: {end.error}", file=sys.stderr)
    return signals.status(for_run_end(end))
