"""The live run behind ``spectui --target T --draft D``: load the engine, then hand its events to a face.

Models load before any full-screen UI starts (llama.cpp may write to the terminal while loading). The run
starts as soon as they are loaded: nothing is measured before its first token (its cost model and auto k
start from its own passes, and from this machine's probe when ``spectui probe`` cached one); the TUI
measures the probe in idle time, once a run has ended while the screen is up. A stop (q, SIGINT, SIGTERM,
SIGHUP) ends the llama_decode in progress (spectui.engine.llama.abort), so the run ends within a second even
mid-pass, with its summary and a trace complete up to the last whole pass; in headless mode a second Ctrl+C
interrupts at once. Before the run starts (the models loading) a signal ends the command at once with
128 + N and nothing written. Once the TUI's app has ended the process ends within 2 s (ExitGuard).
"""

from __future__ import annotations

import contextlib
import os
import sys

from ..contract.control import RunControl
from ..contract.draft_length import k_setting, parse_k
from ..contract.errors import SpectuiError
from ..contract.events import Settings
from ..contract.exitcodes import OK, SignalStop, for_run_end
from ..contract.options import ModelOptions, RunOptions, options_from
from .common import (
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


def make_settings(values: dict, have_draft: bool) -> Settings:
    """The run's Settings as it starts, from the command line's -k, --temp, --seed, --drafter, --draft-p-min,
    --draft-min and --pipeline (taken out of ``values``; each number already checked by its click type)."""
    draft_max, auto = k_setting(parse_k(values.pop("draft_max")))
    drafter, pipeline = values.pop("drafter"), values["pipeline"]
    if drafter is None:
        drafter = "model" if have_draft else "ngram"
    if drafter == "eagle3" and not have_draft:
        raise SpectuiError("--drafter eagle3 needs the EAGLE-3 head as --draft PATH")
    if drafter == "model" and not have_draft:
        raise SpectuiError("--drafter model needs --draft PATH (or use --drafter ngram / none)")
    if pipeline == "on" and not have_draft:
        raise SpectuiError("--pipeline on needs a draft model (--draft): it overlaps the draft model's drafting")
    return Settings(draft_max=draft_max, temperature=values.pop("temp"), drafter=drafter, seed=values.pop("seed"),
                    auto=auto, draft_p_min=float(values.pop("draft_p_min")), draft_min=int(values.pop("draft_min")),
                    pipeline=pipeline == "on")


class ChatEngine:
    """An engine whose runs take the user's text and run it on the target's chat template (one user turn,
    the system message only with --system), as llama-cli does in conversation mode; the template's label is
    recorded in RunStarted. It has ``run`` only: the faces get nothing else of an engine."""

    def __init__(self, engine, template, system: str | None = None) -> None:
        self.engine = engine
        self.template = template
        self.system = system
        self._rendered: tuple[str, str] | None = None  # (the user's text, its prompt): the last one rendered

    def prompt_text(self, text: str) -> str:
        """The prompt for the user's ``text``: the template rendered over it (bounded: ``engine.files.chat``), the
        last one kept, so the render a command does before the run starts is the one the run uses."""
        from ..engine.files.chat import chat_messages

        if self._rendered is None or self._rendered[0] != text:
            self._rendered = (text, self.template.render(chat_messages([text], system=self.system)))
        return self._rendered[1]

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


def plan_run(values: dict) -> RunOptions:
    """The run's options from the command line's values (click's, by name): built once, with every check that
    needs no model, in the order a user meets them (one line, exit 2, on the first).

    Args:
        values: the command's options by name (``spectui --help``); taken, not kept.

    Returns:
        The RunOptions every later step reads (the loader, the engine's runs, the face).
    """
    values = dict(values)
    models = ModelOptions.pop_from(values)
    values["prompt"] = resolve_prompt(values["prompt"], values["prompt_file"])
    drafter = values["drafter"]
    if drafter is None and models.head:  # --head FILE: the run starts drafting with the EAGLE-3 head
        drafter = "eagle3"
    values["drafter"] = detected_drafter(drafter, models)
    settings = make_settings(values, have_draft=models.has_draft or bool(models.head))
    # the engine holds the drafter asked for and what the files given draft with (the TUI's d switches to them)
    drafting = plan_drafting("run", offered_drafters(settings.drafter, models), models)
    values["headless"] = values["headless"] or values["as_json"]  # --json: JSON on stdout, no TUI
    opts = options_from(RunOptions, {**values, "models": models, "settings": settings, "drafting": drafting})
    if opts.theme is not None:  # every face refuses an unknown theme, headless too; before loading models
        from ..tui.shared.themes import check_theme

        check_theme(opts.theme)
    if opts.system is not None and opts.chat is False:
        raise SpectuiError("--system needs the chat template (drop --no-chat)")
    if not opts.headless:  # before the models load (minutes for a 7B): a TUI needs a terminal to be worth it
        from ..tui.shared.terminal import require_terminal

        require_terminal("spectui")
    return opts


def run_main(opts: RunOptions) -> int:
    """The run; returns its exit status (spectui.contract.exitcodes): 0 done, 1 the run failed (RunEnded.error: the
    prompt does not fit, an empty prompt, the model failed), 128 + N after signal N (a clean stop)."""
    control = RunControl(opts.settings)
    # Until the run starts there is nothing to flush: SIGINT/SIGTERM/SIGHUP while the models load (seconds
    # for a 7B) end the command with 128 + N and nothing written (Interrupted, which the command reports in
    # one line). Headless, the models load on this thread and the stop comes at the next Python instruction
    # (after the llama.cpp call in progress); the TUI's engine thread loads them, and the signal is noted and
    # acted on when that load returns (the thread is never left loading at exit); the TUI then takes the
    # signals over as it starts, and quits at once for one noted in between (hand_over).
    signals = loading_stop(None if opts.headless else _note_only)
    signals.hand_over = not opts.headless  # the TUI takes the signals over when it starts (and acts on one noted)
    recorder = engine = guard = None
    try:
        with signals:
            recorder = _run_recorder(opts, anonymous=not opts.headless)
            # headless: one run, on this thread, so its KV caches are sized to it (EngineOptions.grow_kv)
            engine = load_engine(opts.models, opts.drafting, quiet=opts.as_json, own_thread=not opts.headless,
                                 inspect_top=opts.inspect_top, grow_kv=opts.headless)
            if recorder is not None and recorder.background:
                recorder.gate = engine.decoding  # the trace is encoded while the models decode
            signals.raise_if_stopped()  # the TUI: a signal while its engine thread loaded (headless: raised)
            runner = chat_engine(engine, opts.chat, opts.system)
            if isinstance(runner, ChatEngine):  # before any decode: a hostile template is one line, exit 2, and a
                runner.prompt_text(opts.prompt)  # signal meanwhile ends the command as while loading
            # --pipeline auto: both ways measured on the loaded pair, the faster taken (and recorded)
            settings = resolve_pipeline(engine, opts.pipeline, opts.settings, None if opts.as_json else _say)
            control.update(pipeline=settings.pipeline)
            # this machine's probe as cached (auto k and the prediction start from it); none: the run's own
            # passes feed them from the first, and the TUI measures it once the run has ended
            machine, measure_later = (None, False) if opts.no_probe else cached_machine(engine, quiet=opts.as_json)
            if opts.headless:
                signals.on_stop = control.stop  # the run starts: a signal now stops it cleanly
                return _run_headless(runner, opts, control, machine, recorder, signals, engine)
            signals.raise_if_stopped()  # the TUI: a signal while the cache was read on the engine thread
            status = _run_tui(runner, engine, opts, control, machine, measure_later, recorder)
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


def _run_tui(runner, engine, opts: RunOptions, control: RunControl, machine, measure_later: bool, recorder) -> int:
    """The TUI face of a started run: its exit status. The probe, when none is cached, is measured in idle
    time: once a run has ended by itself while the screen is up (``run_live``'s ``measure``)."""
    from ..tui.run.app import run_live  # installs its own quit over the command's signals (hand_over)

    measure = None
    if measure_later:
        def measure(say, progress, stop):
            return measure_machine(engine, say=say, progress=progress, stop=stop)
    return run_live(runner, control, opts, recorder=recorder, probe=machine, measure=measure)


def _note_only() -> None:
    """A signal's ``on_stop`` while the TUI's engine thread loads: noted (SignalStop.signum), acted on after."""


def _run_recorder(opts: RunOptions, anonymous: bool = False):
    """The --record TraceWriter, or None. Checked now (never a model or the prompt file; an existing file
    only if it is a trace, or --force); the file is created at the first event, so a run that fails or is
    stopped before it starts leaves none. With a spare core the trace is encoded and written on a thread of
    its own, off the engine's passes. ``anonymous`` (the TUI without --record): the trace goes to an
    anonymous temporary file that ``s`` copies, so the screen never holds the run's whole history in memory
    (a long run's memory stays flat: the screen keeps only its bounded tails)."""
    if not opts.record and not anonymous:
        return None
    from ..engine.cpu import default_threads, spare_core
    from ..recording.trace import TraceWriter

    models = opts.models
    spare = spare_core(models.threads or default_threads().threads)
    if not opts.record:
        return TraceWriter(None, background=spare)
    return TraceWriter(opts.record, inputs=(models.target, models.draft, models.head, opts.prompt_file),
                       force=opts.force, background=spare)


def _run_headless(runner, opts: RunOptions, control: RunControl, machine, recorder, signals: SignalStop,
                  engine) -> int:
    """The headless face of a started run (``signals`` stops it cleanly, and a stop signal ends the decode in
    progress at once: ``engine.abort``): its exit status."""
    from ..engine.llama.abort import aborting_on_signals
    from ..text.run import consume

    stats = None
    try:
        with aborting_on_signals(engine.abort):
            stats = consume(
                runner.run(opts.prompt, control, opts.n_predict, probe=machine, overlap=True),
                sys.stdout,
                as_json=opts.as_json,
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
