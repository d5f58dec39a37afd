"""``spectui race A.jsonl B.jsonl [C.jsonl]``: recorded runs on one clock (TUI, ``--headless [--json]``), or
``spectui race --target T [--draft D] -p PROMPT [--a SPEC --b SPEC]``: two settings run one after the other,
recorded, then raced; the models load as in every command that loads them (``-hf``/``-hfd``, ``-ngl``, ``-c``,
``-t``, ...: ``options.model_options``). Exit statuses as everywhere: 0 done, 1 a run failed, 2 bad usage or input."""

from __future__ import annotations

import os
import sys

import click

from ..contract.draft_length import parse_k
from ..contract.errors import SpectuiError, echo_error
from ..contract.exitcodes import Interrupted, signal_name
from ..contract.options import options_from
from ..contract.params import N_PREDICT, SEED, SPEED, TEMPERATURE
from ..tui.shared.ascii import ascii_option
from . import command
from .common import (
    ModelOptions,
    check_local_files,
    default_drafters,
    load_engine,
    loading_stop,
    plan_drafting,
    resolve_prompt,
)
from .options import draft_max_option, drafter_option, json_option, model_options, record_dir_option


@command("race")
@click.argument("traces", nargs=-1, type=str)
@click.option("--headless", is_flag=True, help="no TUI: print each run's figures, the winner and the margin")
@json_option("one object (each lane's figures, the winner, the margin)")
@click.option("--from-start", is_flag=True,
              help="start the clock at each run's start, so the time to first token is raced too "
                   "(default: at each run's first token)")
@click.option("--any-prompt", is_flag=True, help="race traces of different prompts (labelled so)")
@click.option("--speed", type=SPEED, default="1", show_default=True, help="0.25..8 or 'max'")
@click.option("--theme", type=str, default=None, help="TUI theme (see themes/)")
@ascii_option
@model_options
@click.option("-p", "--prompt", type=str, default=None, help="prompt text (with --target)")
@click.option("--prompt-file", "-f", type=click.Path(dir_okay=False), default=None)
@click.option("-n", "--n-predict", "n_predict", type=N_PREDICT, default=128, show_default=True)
@draft_max_option("the speculative run's k: 0..32, auto or schedule (default 4; --b overrides)", default=None)
@drafter_option("for the speculative run B (--b overrides)")
@click.option("--temp", "--temperature", "temp", type=TEMPERATURE, default=0.0, show_default=True)
@click.option("--seed", "-s", type=SEED, default=0, show_default=True)
@click.option("--a", "spec_a", type=str, default=None, metavar="SPEC",
              help='setting A, e.g. "k=0" (default: the target alone); keys k, temp, drafter, seed, p-min')
@click.option("--b", "spec_b", type=str, default=None, metavar="SPEC",
              help='setting B, e.g. "k=4 temp=0.8 drafter=ngram" (default: --draft-max/--drafter/--temp)')
@record_dir_option("where the recorded traces go (default: a new temporary folder, named on stderr)")
def race_cmd(**values) -> None:
    """2 or 3 traces; a recorded race runs its two settings one after the other, never at once."""
    from ..contract.errors import fail
    from ..race.spec import RaceOptions

    try:
        race_main(options_from(RaceOptions, values))
    except SpectuiError as exc:
        fail(str(exc))


def race_main(o) -> None:
    """The race ``o`` asks for (``race.spec.RaceOptions``): recorded first with --target, then raced in the TUI
    or printed (--headless, --json). SpectuiError: bad input (one line, exit 2)."""
    from ..recording.player import parse_speed

    models, traces = o.models, o.traces
    recording = models.target is not None or models.hf_repo is not None
    headless = o.headless or o.as_json  # --json: JSON on stdout, no TUI (docs/conventions.md)
    sp = parse_speed(o.speed)
    if not headless:
        from ..tui.shared.themes import check_theme

        check_theme(o.theme)
    note = ""
    if recording:
        if traces:
            raise SpectuiError("give traces to race, or --target to record a race, not both")
        specs, drafting = _lane_specs(o)
        traces, note = _record(o, specs, drafting, headless)
    elif any(x is not None for x in (o.spec_a, o.spec_b, o.prompt, o.prompt_file, o.record_dir, o.draft_max,
                                     o.drafter)) or models != ModelOptions():
        raise SpectuiError("--a, --b, -k, --drafter, the model options (--draft, -hfd, -ngl, ...), -p and "
                           "--record-dir record a race: they need --target (or -hf)")
    if not traces:
        raise SpectuiError("give 2 or 3 traces to race (spectui race A.jsonl B.jsonl), or --target to record")
    _need_terminal(headless)
    # headless: each lane's figures read as a stream, in flat memory; the TUI plays (and seeks in) the events
    race = o.load(traces, keep_events=not headless)
    race.note = note
    if headless:
        _print_outcome(race, o.as_json)
        return
    from ..tui.race.app import run_race

    sys.exit(run_race(race, theme=o.theme, speed=sp) or 0)


def _need_terminal(headless: bool) -> None:
    """After the options are checked, before anything is recorded or read: a TUI drawn into a pipe helps nobody."""
    if not headless:
        from ..tui.shared.terminal import require_terminal

        require_terminal("spectui race")


def _lane_specs(o):
    """The two lanes' specs (``--a``/``--b``, or the defaults from -k, --drafter, --temp and the files given)
    and what drafts in them, every setting checked before any model loads."""
    from ..race.spec import RACE_DRAFT_MAX, parse_spec, spec_settings

    models, draft_max, drafter, temp, spec_a, spec_b = o.models, o.draft_max, o.drafter, o.temp, o.spec_a, o.spec_b

    files = default_drafters(models)  # what the files given draft with: model, eagle3 (--head), mtp, ngram
    b_default = {"k": parse_k(draft_max) if draft_max is not None else RACE_DRAFT_MAX, "temp": temp}
    # a draft model and an EAGLE-3 head given (--draft and --head): the head's lane against the model's
    a_default = {**b_default, "drafter": files[0]} if len(files) > 1 and not drafter else {"k": 0}
    a = parse_spec(spec_a, "--a") if spec_a is not None else a_default
    b = parse_spec(spec_b, "--b") if spec_b is not None else {**b_default, "drafter": drafter or files[-1]}
    lanes = []
    for spec, dflt in ((a, files[0]), (b, drafter or files[-1])):  # a bad setting fails before any load
        spec.setdefault("drafter", dflt)
        lanes.append(spec_settings(spec, temp=temp, seed=o.seed, have_draft=models.has_draft).drafter)
    return [a, b], plan_drafting("race", [d for d in lanes if d != "none"], models)


def _record(o, specs: list[dict], drafting, headless: bool) -> tuple[tuple[str, ...], str]:
    """Record the race's lanes one after the other (``race.record.record_race``): (trace paths, the note).
    A failed run exits 1; a signal exits 128 + N with the traces recorded so far kept."""
    from ..race.record import RaceRecording, RunFailed, record_race

    models, record_dir = o.models, o.record_dir
    text = resolve_prompt(o.prompt, o.prompt_file, needed_by="a recorded race")
    if record_dir is not None and os.path.exists(record_dir) and not os.path.isdir(record_dir):
        from ..contract.outputs import record_folder

        record_folder(record_dir)  # a file in the way: its one-line error first
    check_local_files(models)
    _need_terminal(headless)

    def load(use_draft: bool):  # the models as every command loads them (paths or -hf/-hfd, checked)
        del use_draft  # the lanes' drafters say what loads (plan_drafting): the draft model, a head
        return load_engine(models, drafting, quiet=o.as_json, head_in_every_run=False)

    try:
        with loading_stop() as signals:  # SIGINT/TERM/HUP: loading stops at once, a recording cleanly
            rec = RaceRecording(text, tuple(specs), have_draft=models.has_draft,
                                inputs=tuple(p for p in (models.target, models.draft, models.head) if p),
                                n_predict=o.n_predict, temp=o.temp, seed=o.seed, record_dir=record_dir)
            paths, note = record_race(load, rec, signals=signals)
    except RunFailed as exc:
        echo_error(exc)
        sys.exit(1)
    except Interrupted as exc:
        click.echo(f"spectui: race stopped by {signal_name(exc.signum)} "
                   + ("while loading: nothing recorded" if signals.on_stop is None
                      else "while recording: the traces recorded so far are kept"), err=True)
        sys.exit(exc.status)
    except KeyboardInterrupt:
        click.echo("spectui: interrupted; the traces recorded so far are kept", err=True)
        sys.exit(130)
    return tuple(paths), note


def _print_outcome(race, as_json: bool) -> None:
    """--headless: each lane's figures, the winner and the margin (or --json); a closed pipe stops quietly."""
    from ..text.race import print_outcome
    from ..views.race_outcome import outcome

    try:
        print_outcome(race, outcome(race), sys.stdout, as_json=as_json)
    except BrokenPipeError:
        try:
            sys.stdout = open(os.devnull, "w")  # | head: stop quietly
        except OSError:
            pass

