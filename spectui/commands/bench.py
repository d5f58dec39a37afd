"""``spectui bench``: the command line. Model options are every command's (``options.model_options``); with
``--url`` the same prompts go to a deployment instead (``bench.server``). Prints the table, the chart and the
report; ``--json`` / ``--csv`` / ``--markdown`` print an export on stdout, ``-o FILE`` writes it (the old
``--json FILE``, one file per export, still works), ``--record-dir`` keeps the traces, every file through
``contract.outputs.check_output``. Ctrl+C / SIGTERM / SIGHUP print and write the partial report (exit 130 /
143 / 129); a run or a server that fails keeps the rows done (exit 1)."""

from __future__ import annotations

import contextlib
import shutil
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from ..bench.aggregate import OVERALL, aggregate
from ..bench.datasets import BUILTIN, NAMED, load_prompts, parse_categories, select, turns_for
from ..bench.export import CSV_FIELDS, MARKDOWN_MARKER, to_csv, to_json, to_markdown
from ..bench.plan import (
    BenchOptions,
    drafter_choices,
    make_jobs,
    make_settings,
    parse_drafters,
    parse_pipelines,
    parse_temps,
)
from ..bench.report import report_lines
from ..bench.runner import TURNS, BenchResult, Templater, run_bench
from ..contract.draft_length import parse_k, parse_ks
from ..contract.errors import NeverAnswered, SpectuiError, echo_error, echo_line, fail
from ..contract.exitcodes import SIGINT_STATUS, signal_name
from ..contract.options import options_from
from ..contract.outputs import TRACE, check_distinct, check_output, csv_report, json_report, record_folder, text_report
from ..contract.params import AT_LEAST_ONE, N_PREDICT, REPEAT, SECONDS, SEED
from ..contract.text import json_text, visible
from ..text.bench import render_chart, render_table
from . import command
from .common import ModelOptions, default_drafters, load_engine, loading_stop, plan_drafting
from .options import deprecated, draft_max_option, drafter_help, model_options, record_dir_option

EXIT_FAILED = 1
INSPECT_TOP = 1  # the margin of each verified row (the lossless check), at the least cost
NOISE_MAX_BATCH = 9  # the kernels' noise is measured for verify batches of 2..9 tokens (k <= 8) at least


JSON_KIND = json_report("bench")  # the --json object's first key: "schema": "spectui.bench"
CSV_KIND = csv_report("bench", CSV_FIELDS)
MD_KIND = text_report("bench", MARKDOWN_MARKER)  # the --markdown file's first line


def write_text(path: str, text: str, kind, inputs=(), force: bool = False) -> None:
    """Write a report file atomically (the project's output rule: ``contract.outputs.check_output``), or print
    it for "-"."""
    if path == "-":
        sys.stdout.write(visible(text))  # stdout may be a terminal: a dataset's words, controls made visible
        sys.stdout.flush()
        return
    with check_output(path, kind, inputs, force).atomic_write() as fh:
        fh.write(text)


@command("bench")
@model_options
@click.option("--prompts", "prompts", type=str, default=BUILTIN, show_default=True,
              help="Spec-Bench JSONL, SPEED-Bench Parquet, a text file (one prompt per line), 'builtin' or "
                   "'agentic' (multi-turn coding-agent sessions)")
@click.option("--categories", type=str, default=None, help="comma-separated categories to run (default: all)")
@click.option("--per-category", type=AT_LEAST_ONE, default=None,
              help="the first N prompts of each category by question id")
@click.option("--limit", type=AT_LEAST_ONE, default=None, help="at most N prompts in all")
@click.option("--turns", type=click.Choice(TURNS), default=None,
              help="first: turns[0] only; all: every turn, each after the model's own answer (default: all for "
                   "--prompts agentic, else first)")
@click.option("--chat/--no-chat", "chat", default=None,
              help="use the target's chat template (default: on when the GGUF has one, as llama-cli)")
@click.option("--system", "-sys", "system", type=str, default=None, help="system message (default: none)")
@click.option("-n", "--n-predict", "n_predict", type=N_PREDICT, default=256, show_default=True,
              help="tokens per prompt")
@draft_max_option("comma-separated draft lengths (with --url: the deployment's one draft length, which the "
                  "--knee-probe prediction reads its curve at)")
@click.option("--temp", "--temperature", "temp", type=str, default="0", show_default=True,
              help="comma-separated temperatures")
@click.option("--drafter", type=str, default=None, metavar="|".join(drafter_choices()) + "[,...]",
              help=drafter_help() + "; comma-separated for several settings, + joining a chain: ngram-mod+model,model "
                   "(none is refused: the baseline always runs)")
@click.option("--seed", "-s", type=SEED, default=0, show_default=True)
@click.option("--pipeline", "pipeline", type=str, default="off", show_default=True, metavar="off|on|off,on",
              help="the draft model's settings sequential, pipelined (drafting the next block on its own thread "
                   "while the target verifies), or both side by side (docs/pipeline.md)")
@click.option("--repeat", "-r", type=REPEAT, default=1, show_default=True, help="runs per prompt and setting")
@click.option("--json", "json_out", is_flag=False, flag_value="-", default=None, metavar="",
              help="print the results as JSON on stdout (-o FILE writes them)")
@click.option("--csv", "csv_out", is_flag=False, flag_value="-", default=None, metavar="",
              help="print one CSV line per run on stdout (-o FILE writes them)")
@click.option("--markdown", "md_out", is_flag=False, flag_value="-", default=None, metavar="",
              help="print Spec-Bench's table as Markdown on stdout (-o FILE writes it)")
@click.option("-o", "--output", "output", type=str, default=None, metavar="FILE",
              help="write the --json, --csv or --markdown export to FILE (atomically) instead of stdout")
@record_dir_option("keep every run's trace in DIR (replayable)")
@click.option("--force", is_flag=True, help="replace existing output files that are not spectui's own")
@click.option("--url", "urls", type=str, multiple=True,
              help="benchmark a llama-server / vLLM at URL instead of local models (repeatable)")
@click.option("--baseline-url", type=str, default=None, help="the same target without speculation (server mode)")
@click.option("--concurrency", type=str, default="1", show_default=True,
              help="server mode: requests in flight; several (1,2,4,8,16): the knee sweep (docs/batch-knee.md)")
@click.option("--knee-probe", type=str, default=None,
              help="concurrency sweep: `spectui probe --batched --json` output, for the predicted knee beside it")
@click.option("--timeout", "timeout_s", type=SECONDS, default=600.0, show_default=True,
              help="server mode: seconds one request may take")
def bench_cmd(**kwargs):
    sig = loading_stop()  # SIGINT / SIGTERM / SIGHUP end the bench like Ctrl+C (the engine ends its run "stopped")
    try:
        _exports_to_files(kwargs)
        o = options_from(BenchOptions, kwargs)
        with sig:
            code = bench_main(o, signals=sig)
    except NeverAnswered as exc:  # a server down or not trusted: failed as attach says it (1), not bad usage
        echo_error(exc, topic="bench")
        sys.exit(exc.exit_code)
    except SpectuiError as exc:
        fail(str(exc))
    except KeyboardInterrupt:  # before any run started (loading): nothing measured, nothing written
        click.echo(f"spectui: bench stopped by {signal_name(sig.signum or signal.SIGINT)} before any run (while "
                   "loading): nothing written", err=True)
        sys.exit(sig.status(SIGINT_STATUS))
    sys.exit(code)


def _exports_to_files(kwargs: dict) -> None:
    """``--json`` / ``--csv`` / ``--markdown`` print on stdout, ``-o FILE`` writes the one given (the convention
    of every command); the old ``--json FILE`` (one file per export) still works, with a one-line note."""
    output = kwargs.pop("output")
    given = [(flag, key) for flag, key in (("--json", "json_out"), ("--csv", "csv_out"), ("--markdown", "md_out"))
             if kwargs[key] is not None]
    for flag, key in given:
        if kwargs[key] != "-":
            deprecated(f"`{flag} FILE`", f"`{flag} -o FILE`")
    if output is None:
        return
    to_stdout = [(flag, key) for flag, key in given if kwargs[key] == "-"]
    if len(to_stdout) != 1:
        raise SpectuiError("-o/--output writes one export: give one of --json, --csv or --markdown with it"
                           if not to_stdout else "-o/--output writes one export; " + " and ".join(
                               f for f, _ in to_stdout) + " were given")
    kwargs[to_stdout[0][1]] = output


def bench_main(o: BenchOptions, signals=None, out=None) -> int:
    """The whole bench: check everything, load the models once (or probe the deployments), run, report.

    Args:
        o: the command's options (``BenchOptions``): local models, or ``urls`` (and ``baseline_url``):
            deployments, one request at a time or ``concurrency`` (several levels: the knee sweep,
            ``bench.concurrency``); the prompt set; the comma-separated settings, each beside the target alone;
            the exports ("-" for stdout, or a file each: written atomically, never over an input).
        signals: the command's signal handler (a stop while loading: nothing written).
        out: where the table and the report go (default: stdout).

    Returns:
        The exit status: 0 done, 1 a run or request failed, 128 + N stopped by signal N (what ran is kept).

    Raises:
        SpectuiError: bad input, before any model loads or any request is sent.
    """
    out = out or sys.stdout
    if list(o.exports).count("-") > 1:
        raise SpectuiError("only one of --json / --csv / --markdown can go to stdout ('-')")
    ps = select(load_prompts(o.prompts), parse_categories(o.categories), o.per_category, o.limit)
    o = replace(o, turns=turns_for(o.turns, ps.source))
    models = o.models
    inputs = [o.prompts if o.prompts not in NAMED else None, models.target, models.draft, models.head]
    check_distinct(zip(("--json", "--csv", "--markdown"), o.exports))  # one file each
    for p, kind in zip(o.exports, (JSON_KIND, CSV_KIND, MD_KIND)):
        if p and p != "-":
            check_output(p, kind, inputs, o.force)  # before any work: a bad path costs nothing
    if o.urls or o.baseline_url:
        return _server_main(o, ps, inputs, out, signals)
    if str(o.concurrency) != "1" or o.knee_probe:
        raise SpectuiError("--concurrency and --knee-probe are for --url (a deployment); local runs go one at a time")
    return _engine_main(o, ps, inputs, out, signals)


def _engine_main(o: BenchOptions, ps, inputs, out, signals) -> int:
    """Local models: every setting beside the baseline on one loaded engine, the kernels' noise first."""
    models = o.models
    ks = parse_ks(o.draft_max, modes=False)
    temps = parse_temps(o.temp)
    drafters = parse_drafters(o.drafter if o.drafter is not None else ",".join(default_drafters(models)),
                              models.has_draft)
    drafting = plan_drafting("bench", drafters, models)  # one engine: the draft model and one head beside it
    settings = make_settings(ks, temps, drafters, parse_pipelines(o.pipeline, models.has_draft))
    made_dir = o.record_dir is not None and not Path(o.record_dir).exists()
    rec = Path(record_folder(o.record_dir)) if o.record_dir is not None else None
    engine, noise, timing = _load(models, drafting, settings, rec if made_dir else None, signals)
    try:
        templater = _templater(engine, o.chat, o.system)
        jobs = make_jobs(len(ps.prompts), settings, o.repeat)

        def open_trace(name: str, extra: dict):
            from ..recording.trace import TraceWriter  # noqa: PLC0415

            return TraceWriter(check_output(rec / name, TRACE, inputs, o.force, own_name=True).path, extra,
                               inputs=inputs, force=o.force)

        t0 = time.perf_counter()
        res = _run_with_progress(engine, ps.prompts, jobs, o, templater, open_trace if rec is not None else None,
                                 (lambda s: noise.threshold(s.k)) if noise is not None else None)
        bench_s = time.perf_counter() - t0
    finally:
        engine.close()
    params = {
        "mode": "engine", "target": models.target, "draft": models.draft, "head": drafting.head_file,
        "prompts": ps.source,
        "format": ps.format, "n_prompts": len(ps.prompts), "categories": ps.categories, "turns": o.turns,
        "chat_template": templater.label, "system": o.system, "n_predict": o.n_predict, "draft_max": ks,
        "temperatures": temps, "drafters": drafters, "seed": o.seed, "repeat": o.repeat, "threads": models.threads,
        "ctx_size": models.ctx_size, "record_dir": str(rec) if rec is not None else None,
        "timing": {"load_s": timing["load_s"], "bench_s": bench_s, "inside_runs_s": res.run_wall_s,
                   "outside_runs_s": bench_s - res.run_wall_s, "noise_s": timing["noise_s"]},
        "noise": noise.report() if noise is not None else None,
    }
    if noise is not None:
        params["notes"] = [noise_note(noise)]
    return _finish(res, params, True, o, inputs, out, signals)


def _server_main(o: BenchOptions, ps, inputs, out, signals) -> int:
    """``--url`` (and ``--baseline-url``): the deployments, one request at a time or ``--concurrency`` in flight;
    several levels or ``--knee-probe``: the knee sweep (spectui/bench/concurrency.py)."""
    from ..bench.server import server_bench  # noqa: PLC0415 - the HTTP side only when asked

    models = o.models
    if not o.urls:
        raise SpectuiError("--baseline-url needs --url (the deployment with speculation)")
    if models.target or models.draft or models.hf_repo or models.hf_repo_draft:
        raise SpectuiError("give either --url (a deployment) or --target/--draft (local models), not both")
    if o.record_dir is not None:
        raise SpectuiError("--record-dir records local runs; a deployment's runs have no trace")
    from ..bench.concurrency import parse_concurrency, sweep_main  # noqa: PLC0415

    draft_max = parse_k(o.draft_max, modes=False)  # the deployment drafts: one fixed length, as it was started
    levels = parse_concurrency(o.concurrency)
    if len(levels) > 1 or o.knee_probe:
        return sweep_main(ps, o, levels, draft_max,
                          write_json=lambda p, t: write_text(p, t, JSON_KIND, inputs, o.force), out=out)
    with _progress() as (progress, task):
        def on_job(i, job, n_jobs, prompts) -> None:
            progress.update(task, total=n_jobs, completed=i, description=_job_text(job, prompts))

        res, params, has_base = server_bench(ps, o, concurrency=levels[0], on_job=on_job)
    return _finish(res, params, has_base, o, inputs, out, signals)


def _load(models: ModelOptions, drafting, settings, made_dir: Path | None, signals):
    """Load the engine once and measure the kernels' noise before any run: (engine, noise, timing). Stopped
    or failed here, nothing is measured or written, and the --record-dir this bench made (``made_dir``) goes
    again."""
    t_load = time.perf_counter()
    engine = None
    try:
        engine = load_engine(models, drafting, quiet=True, inspect_top=INSPECT_TOP, head_in_every_run=False)
        if signals is not None:
            signals.raise_if_stopped()  # a signal noted while the models loaded: no run, nothing measured
        load_s = time.perf_counter() - t_load
        t_noise = time.perf_counter()
        noise = _noise(engine, settings)  # before any run; stopped or failed here, nothing is written either
        noise_s = time.perf_counter() - t_noise
    except BaseException:  # stopped while loading: the --record-dir this bench made goes again
        if engine is not None:
            engine.close()
        if made_dir is not None:
            with contextlib.suppress(OSError):
                made_dir.rmdir()  # only an empty folder goes
        raise
    return engine, noise, {"load_s": load_s, "noise_s": noise_s}


def _noise(engine, settings):
    """The kernels' noise for the target (``analysis.noise``, cached per target and machine), measured before the
    runs when a speculative setting runs at temperature 0 (its equal-output check needs it); else None."""
    ks = [s.k for s in settings if not s.is_baseline and s.temperature == 0]
    if not ks:
        return None
    from ..analysis.lossless import UNMEASURED_MARGIN  # noqa: PLC0415
    from ..analysis.measured.noise import cached_or_measure  # noqa: PLC0415

    max_batch = min(max(NOISE_MAX_BATCH, max(ks) + 1), engine.target.n_batch)

    def say(m: str) -> None:
        echo_line(f"spectui: {m}")

    progress = (lambda m: say(f"measuring the kernels' noise (once per target and machine, cached): {m}")
                ) if sys.stderr.isatty() else None
    try:
        return cached_or_measure(engine, max_batch=max_batch, warn=say, progress=progress)
    except SpectuiError as exc:  # a context too small to measure in: judged against the unmeasured threshold
        say(f"warning: the kernels' noise could not be measured ({exc}); equal outputs are "
            f"judged against {UNMEASURED_MARGIN:g}")
        return None


def noise_note(noise) -> str:
    """The report's line on the noise the equal-output check was judged against."""
    src = "cached" if noise.cached else f"measured now in {noise.wall_s:.1f} s"
    return f"Noise (the near-tie threshold): {noise.summary_line()} ({src}; by k in --json: params.noise)."


def _templater(engine, chat, system) -> Templater:
    tpl = engine.chat_template
    if chat and tpl is None:
        raise SpectuiError("--chat: the target model has no chat template (tokenizer.chat_template)")
    use = tpl is not None if chat is None else bool(chat)
    if system is not None and not use:
        raise SpectuiError("--system needs the chat template (the target has none, or --no-chat was given)")
    return Templater(engine, use, system)


def _finish(res: BenchResult, params: dict, has_base: bool, o: BenchOptions, inputs, out, signals) -> int:
    """The table, the chart, the report and the exports (one that fails loses neither the others nor the table)."""
    json_out, csv_out, md_out = o.exports
    summaries = aggregate(res.rows)
    skipped = []
    seen = set()
    for r in res.rows:
        if r.skipped and (r.category, r.prompt.question_id, r.turn) not in seen:
            seen.add((r.category, r.prompt.question_id, r.turn))
            skipped.append((f"{r.category} q{r.prompt.question_id} turn {r.turn + 1}", r.skipped))
    notes = []
    timing = params.get("timing")
    if timing and timing.get("bench_s"):
        notes.append(
            f"Time: models loaded once in {timing['load_s']:.1f} s; the runs took {timing['inside_runs_s']:.1f} s "
            f"of the bench's {timing['bench_s']:.1f} s ({timing['outside_runs_s']:.2f} s, "
            f"{100 * timing['outside_runs_s'] / timing['bench_s']:.2f}% outside the runs)."
        )
    notes.extend(params.get("notes", []))
    report = report_lines(summaries, has_baseline=has_base, status=res.status, stopped_at=res.stopped_at,
                          skipped=skipped, repeats=o.repeat, notes=notes)
    status = {"status": res.status, "stopped_at": res.stopped_at, "jobs_done": res.jobs_done,
              "jobs_total": res.jobs_total}
    failed_exports: list[str] = []  # one export that fails (a full disk) loses neither the others nor the table
    def json_doc() -> str:  # strict JSON: a NaN from a server is null
        doc = {"schema": "spectui.bench", **to_json(res.rows, summaries, report, params, status, has_base)}
        return json_text(doc, ensure_ascii=True) + "\n"

    for path, make, kind in (
        (json_out, json_doc, JSON_KIND),
        (csv_out, lambda: to_csv(res.rows), CSV_KIND),
        (md_out, lambda: to_markdown(summaries, has_base), MD_KIND),
    ):
        if path:
            try:
                write_text(path, make(), kind, inputs, o.force)
            except SpectuiError as exc:
                failed_exports.append(str(exc))
    to_stdout = "-" in (json_out, csv_out, md_out)
    console = Console(file=sys.stderr if to_stdout else out,
                      width=_term_width() if (not to_stdout and getattr(out, "isatty", lambda: False)()) else 160)
    if any(s.runs for s in summaries):
        console.print(render_table(summaries, has_base, title=_title(params)))
        console.print(render_chart(summaries, has_base))
    elif not any(s.skipped for s in summaries):
        console.print("no runs finished", markup=False)
    for line in report:
        console.print(visible(line), markup=False, highlight=False)  # a server's errors, a dataset's names
    out.flush()
    for message in failed_exports:
        echo_error(message)
    if failed_exports:
        return 2
    if res.status == "interrupted":
        return signals.status(SIGINT_STATUS) if signals is not None else SIGINT_STATUS
    if res.status.startswith("failed"):
        return EXIT_FAILED
    if not any(s.runs for s in summaries if s.category == OVERALL):
        return EXIT_FAILED  # nothing could run (every prompt skipped)
    return 0


def _title(params: dict) -> str:
    if params.get("mode") == "server":
        return f"spectui bench: {', '.join(params.get('urls', []))} on {params['prompts']}"
    tgt = Path(params["target"]).name if params.get("target") else "?"
    drf = f" + {Path(params['draft']).name}" if params.get("draft") else ""
    if params.get("head") and params.get("head") != params.get("draft"):
        drf += f" + {Path(params['head']).name}"
    chat = "chat template" if params.get("chat_template") else "raw prompts"
    return f"spectui bench: {tgt}{drf} on {params['prompts']} ({chat}, -n {params['n_predict']})"


def _term_width() -> int:
    return shutil.get_terminal_size((120, 24)).columns


@contextlib.contextmanager
def _progress():
    """A live progress line on stderr (a terminal only; gone when done): (progress, task)."""
    console = Console(file=sys.stderr)
    with Progress(
        TextColumn("[bold]bench[/] {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    ) as progress:
        yield progress, progress.add_task("", total=None)


def _job_text(job, prompts) -> str:
    p = prompts[job.prompt_index]
    return (f"prompt {job.prompt_index + 1} of {len(prompts)} ({p.category}), {job.setting.full_label}, "
            f"repeat {job.repeat + 1}")


def _run_with_progress(engine, prompts, jobs, o: BenchOptions, templater, open_trace, near_tie=None) -> BenchResult:
    """run_bench with the progress line: prompt i of N, the setting, elapsed and ETA."""
    with _progress() as (progress, task):
        progress.update(task, total=len(jobs))

        def on_job(i, job) -> None:
            progress.update(task, completed=i, description=_job_text(job, prompts))

        res = run_bench(engine, prompts, jobs, o, templater=templater, open_trace=open_trace, on_job=on_job,
                        near_tie=near_tie)
        progress.update(task, completed=res.jobs_done)
    return res
