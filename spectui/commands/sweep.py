"""``spectui sweep``: the command line. Model options are the live run's (``options.model_options``); the
grid's options take comma-separated lists. Prints the table, chart and report, or ``--json`` / ``--csv``."""

from __future__ import annotations

import json
import shutil
import signal
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..contract.draft_length import parse_ks
from ..contract.errors import SpectuiError, echo_error, fail
from ..contract.events import PassEvent, RunEnded
from ..contract.exitcodes import Interrupted, signal_name
from ..contract.options import options_from
from ..contract.outputs import TRACE, check_output, csv_report, json_report, record_folder
from ..contract.params import N_PREDICT, REPEAT, SEED
from ..contract.text import visible
from ..sweep.aggregate import SweepRun, aggregate
from ..sweep.export import CSV_FIELDS, to_csv, to_json
from ..sweep.plan import SWEEP_DRAFT_MAX, Plan, SweepOptions, make_plan, parse_temps
from ..sweep.report import report_lines, sweep_prediction
from ..sweep.runner import SweepInterrupted, SweepRunFailed, measure_missing_verify, run_sweep, trace_name
from ..text.sweep import render_chart, render_table
from . import command
from .common import ModelOptions, default_drafters, load_engine, loading_stop, plan_drafting, resolve_prompt
from .options import draft_max_option, drafter_option, json_option, model_options, record_dir_option


@command("sweep")
@model_options
@click.option("-p", "--prompt", type=str, default=None, help="prompt text")
@click.option("--prompt-file", "-f", type=click.Path(dir_okay=False), default=None)
@click.option("-n", "--n-predict", "n_predict", type=N_PREDICT, default=256, show_default=True)
@draft_max_option("comma-separated draft lengths", default=SWEEP_DRAFT_MAX)
@click.option("--temp", "--temperature", "temp", type=str, default="0,0.8", show_default=True,
              help="comma-separated temperatures")
@click.option("--seed", "-s", type=SEED, default=0, show_default=True)
@drafter_option("none is refused: the sweep runs the target alone anyway, the baseline of each temperature")
@click.option("--repeat", "-r", type=REPEAT, default=1, show_default=True, help="runs per combination (spread)")
@json_option("one object (every run and cell)", tui=False)
@click.option("--csv", "as_csv", is_flag=True, help="print CSV, one line per run")
@record_dir_option("keep each run's trace here")
@click.option("-o", "--output", "output", type=str, default=None,
              help="write the --json or --csv export to FILE (atomically) instead of stdout")
@click.option("--force", is_flag=True,
              help="let -o / --record-dir replace existing files that are not spectui's of the same kind")
def sweep_cmd(**kwargs):
    """The target alone is run too, at each temperature: the baseline of every speedup."""
    try:
        code = sweep_main(options_from(SweepOptions, kwargs))
    except SweepRunFailed as exc:  # the run failed: 1 (spectui.contract.exitcodes), not bad input
        echo_error(exc)
        sys.exit(exc.exit_code)
    except SpectuiError as exc:
        fail(str(exc))
    except Interrupted as exc:  # a signal while the models loaded: no run, nothing written
        click.echo(f"spectui: sweep stopped by {signal_name(exc.signum)} before the first run (while loading): "
                   "nothing written", err=True)
        sys.exit(exc.status)
    except KeyboardInterrupt:
        click.echo("spectui: sweep interrupted", err=True)
        sys.exit(130)
    sys.exit(code)


JSON_KIND = json_report("sweep")  # the --json object's first key: "schema": "spectui.sweep"
CSV_KIND = csv_report("sweep", CSV_FIELDS)


def sweep_main(o: SweepOptions, out=None) -> int:
    """The whole sweep: check the options, load one engine, run the plan, print.

    Args:
        o: the command's options (``SweepOptions``): the models; the grid's draft lengths and temperatures,
            comma-separated (the target alone runs at each temperature too: the baseline); the export, on
            stdout or atomically to ``o.output`` (else table, chart, report); ``o.record_dir``, where each run's
            trace is kept (every name checked before the first run).
        out: where the results go (default: stdout).

    Returns:
        The exit code: 0, or 128 + N when signal N stopped it (the runs completed by then are still reported
        and written).

    Raises:
        SpectuiError: bad input, before any model loads (one line, exit 2).
    """
    out = out or sys.stdout
    models = o.models
    ks = parse_ks(o.draft_max, modes=False)
    temps = parse_temps(o.temp)
    if o.as_json and o.as_csv:
        raise SpectuiError("give either --json or --csv, not both")
    drafter = _one_drafter(o.drafter, models)
    drafting = plan_drafting("sweep", [drafter], models)
    text = resolve_prompt(o.prompt, o.prompt_file)
    inputs = (models.target, models.draft, models.head, o.prompt_file)
    export = None
    if o.output is not None:
        if not (o.as_json or o.as_csv):
            raise SpectuiError("-o/--output writes the --json or --csv export; give one of them")
        export = check_output(o.output, JSON_KIND if o.as_json else CSV_KIND, inputs, o.force)
    rec = Path(o.record_dir) if o.record_dir is not None else None
    made_dir = rec is not None and not rec.exists()  # made here: removed again when a signal stops the loading
    if rec is not None:
        record_folder(rec)
    plan = make_plan(ks, temps, o.repeat, drafter)
    if rec is not None:  # every trace name the plan will write, checked before the first run
        for i, p in enumerate(plan):
            check_output(rec / trace_name(i, p), TRACE, inputs, o.force, own_name=True)  # never through a link
    runs, stopped_by, on_demand, signals = _run_plan(o, drafting, text, plan, rec if made_dir else None, inputs)
    if not runs:
        return signals.status()
    cells = aggregate(runs)
    pred = _prediction(runs, on_demand)
    report = report_lines(cells, runs, pred, sorted(on_demand))
    params = {
        "target": models.target, "draft": models.draft, "head": drafting.head_file, "drafter": drafter,
        "prompt": text,
        "n_predict": o.n_predict, "draft_max": ks, "temperatures": temps, "seed": o.seed, "repeat": o.repeat,
        "threads": models.threads, "ctx_size": models.ctx_size,
        "verify_measured_on_demand": {str(k): v for k, v in sorted(on_demand.items())},
    }
    if stopped_by is not None:
        params.update(stopped_by=signal.Signals(stopped_by).name, runs_planned=len(plan))
    _write(out, export, o, runs, (cells, report, params, pred))
    out.flush()
    return signals.status()


def _prediction(runs, on_demand):
    """The cost model over the sweep's runs, or None: advice must never break the sweep's results."""
    try:
        return sweep_prediction(runs, on_demand)
    except Exception:  # noqa: BLE001 - advice must never break the sweep's results
        return None


def _one_drafter(drafter: str | None, models: ModelOptions) -> str:
    """The sweep's one drafter: --drafter, or what the files given draft with (one kind only); never none."""
    if drafter is None:
        found = default_drafters(models)
        if len(found) > 1:
            raise SpectuiError(f"the sweep runs one drafter and the files given draft with {' and '.join(found)}: "
                               "give --drafter")
        drafter = found[0]
    if drafter == "none":
        raise SpectuiError("--drafter none: the sweep runs the target alone anyway (the baseline of each "
                           "temperature); give model, ngram, eagle3 or mtp")
    if drafter == "model" and not models.has_draft:
        raise SpectuiError("--drafter model needs --draft PATH (or use --drafter ngram)")
    return drafter


def _run_plan(o: SweepOptions, drafting, text: str, plan, made_dir: Path | None, inputs):
    """Load one engine and run the plan: (runs, the signal that stopped them or None, verify ms measured on
    demand, the SignalStop). A signal while the models load ends the sweep at once with nothing written
    (Interrupted, 128 + N; the --record-dir it made, ``made_dir``, goes again); from the first run on it stops
    the current run, and the runs done are reported (SweepInterrupted below)."""
    current: list = []
    stopped_by = None
    with loading_stop() as signals:
        engine = None
        try:
            engine = load_engine(o.models, drafting, quiet=o.as_json or o.as_csv, head_in_every_run=False)
            signals.raise_if_stopped()
            signals.on_stop = lambda: current and current[-1].stop()
            try:
                runs = _run_with_progress(engine, text, plan, o, current.append, inputs)
            except SweepInterrupted as exc:
                if signals.signum is None:
                    raise
                runs, stopped_by = exc.runs, signals.signum
                click.echo(f"spectui: sweep stopped by {signal.Signals(stopped_by).name} after {len(runs)} of "
                           f"{len(plan)} runs; reporting those", err=True)
            on_demand = measure_missing_verify(engine, runs) if stopped_by is None else {}
        except Interrupted:  # while loading (the runs' signals stop the run instead): leave nothing made
            if made_dir is not None:
                _remove_if_empty(made_dir)
            raise
        finally:
            if engine is not None:
                engine.close()
    return runs, stopped_by, on_demand, signals


def _write(out, export, o: SweepOptions, runs, results) -> None:
    """The results (``(cells, report, params, prediction)``): the --json or --csv export (to -o's file,
    atomically, or stdout), else the table, the chart and the report."""
    cells, report, params, pred = results
    as_json, as_csv = o.as_json, o.as_csv
    if export is not None:
        with export.atomic_write() as fh:
            fh.write(json.dumps({"schema": "spectui.sweep", **to_json(runs, cells, report, params, pred)}) + "\n"
                     if as_json else to_csv(runs))
    elif as_json:
        out.write(json.dumps({"schema": "spectui.sweep", **to_json(runs, cells, report, params, pred)}) + "\n")
    elif as_csv:
        out.write(to_csv(runs))
    else:
        width = _term_width() if getattr(out, "isatty", lambda: False)() else 160
        console = Console(file=out, width=width)
        console.print(render_table(cells, o.repeat))
        console.print(render_chart(cells), markup=False, highlight=False)
        console.print()
        for line in report:
            console.print(visible(line), markup=False, highlight=False)  # model names from GGUF metadata


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()  # only an empty folder goes
    except OSError:
        pass


def _term_width() -> int:
    return shutil.get_terminal_size((100, 24)).columns


def _run_with_progress(engine, text, plan, o: SweepOptions, on_control=None, inputs=()) -> list[SweepRun]:
    """run_sweep with a progress bar on stderr (gone when done); each run's trace kept in --record-dir."""
    from ..recording.trace import TraceWriter

    n_predict = o.n_predict
    rec = Path(o.record_dir) if o.record_dir is not None else None

    def open_trace(i: int, p: Plan, extra: dict) -> TraceWriter:
        return TraceWriter(str(rec / trace_name(i, p)), extra, inputs=inputs, force=o.force)

    console = Console(file=sys.stderr)
    total = len(plan) * n_predict
    with Progress(
        TextColumn("[bold]sweep[/] {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task("", total=total)
        state = {"i": -1, "plan": None, "done": 0}

        def on_event(p: Plan, ev) -> None:
            if state["plan"] is not p:
                state["plan"] = p
                state["i"] += 1
                state["done"] = state["i"] * n_predict
                progress.update(
                    task, completed=state["done"],
                    description=f"run {state['i'] + 1}/{len(plan)}: {p.label}, temp {p.temperature:g}, "
                                f"repeat {p.repeat + 1}",
                )
            if isinstance(ev, PassEvent):
                progress.advance(task, len(ev.emitted))
            elif isinstance(ev, RunEnded):
                progress.update(task, completed=(state["i"] + 1) * n_predict)

        return run_sweep(engine, text, plan, n_predict, o.seed, on_event=on_event, on_control=on_control,
                         open_trace=open_trace if rec is not None else None)
