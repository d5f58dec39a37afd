"""`spectui probe`: the command around spectui.analysis.measured.probe (kept apart so that the probe itself, which the
headless summary and the TUI read, imports no face: the command loads models through spectui.commands.common).

    spectui probe --target T [--draft D] [--json] [--max-batch 16] [--repeats 5] [--refresh]
    spectui probe --target T [--draft D] --head H | --drafter mtp    # also a head's cost per draft step
    python -m spectui.commands.probe ...
"""

from __future__ import annotations

import json
import os
import signal
import sys
from dataclasses import dataclass

import click

from ..analysis.measured.probe import DEFAULT_MAX_BATCH, DEFAULT_REPEATS, MAX_BATCH_LIMIT, cached_or_measure, render
from ..contract.draft_length import K_MAX, parse_ks
from ..contract.errors import SpectuiError, fail
from ..contract.exitcodes import Interrupted
from ..contract.options import ModelOptions, options_from
from ..contract.params import PROBABILITY, REPEAT, whole
from . import command
from .options import drafter_option, json_option, model_options


@command("probe")
@model_options
@json_option("one object (the measurements and what they mean)", tui=False)
@click.option("--max-batch", type=whole(2, MAX_BATCH_LIMIT), default=DEFAULT_MAX_BATCH, show_default=True,
              help="largest verify batch measured (tokens)")
@click.option("--repeats", type=REPEAT, default=DEFAULT_REPEATS, show_default=True,
              help="measured rounds over every batch size (median)")
@click.option("--refresh", is_flag=True, help="measure again even when a cached result exists")
@click.option("--batched", is_flag=True, help="also the batched cost curve and where speculation stops paying "
              "(docs/batch-knee.md)")
@click.option("--batch-seqs", type=whole(min=1), default=32, show_default=True,
              help="--batched: most sequences in one step")
@click.option("--batch-ks", type=str, default="1,2,4", show_default=True, help="--batched: draft lengths")
@click.option("--acceptance", type=PROBABILITY, default=None,
              help="--batched: per-draft acceptance to predict with")
@click.option("--acceptance-from", type=str, default=None,
              help="--batched: the acceptance measured in a trace or a `spectui bench --json` report")
@drafter_option("eagle3 or mtp: also the head's cost per draft step beside the target decode (and the --draft "
                "model's); with --batched: model (the default with --draft) or ngram (free drafts)")
@click.option("--emit", type=click.Choice(("vllm", "trtllm", "llama-server")), default=None,
              help="--batched: write the best k by batch size as that engine's config (vLLM's "
                   "num_speculative_tokens_per_batch_size, TensorRT-LLM's draft_len_schedule, llama-server flags "
                   "a -np)")
@click.option("-o", "--output", "output", type=str, default=None, metavar="FILE",
              help="--emit: write it to FILE (atomically; default: stdout)")
@click.option("--force", is_flag=True, help="-o: replace a file that is not one this --emit wrote")
def probe_cmd(**values) -> None:
    try:
        from .common import loading_stop  # noqa: PLC0415

        o = options_from(ProbeOptions, values)
        with loading_stop() as signals:  # SIGINT/TERM/HUP, loading or measuring: nothing cached, 128 + N
            code = probe_main(o, signals=signals)
    except SpectuiError as exc:
        fail(str(exc))
    except Interrupted as exc:
        click.echo(f"spectui: probe interrupted by {signal.Signals(exc.signum).name}: nothing cached", err=True)
        sys.exit(exc.status)
    except KeyboardInterrupt:
        click.echo("spectui: probe interrupted", err=True)
        sys.exit(130)
    sys.exit(code)


@dataclass(frozen=True)
class ProbeOptions:
    """``spectui probe``'s options as the command line gave them (``contract.options.options_from``), each
    number already checked by its click type."""

    models: ModelOptions = ModelOptions()
    as_json: bool = False
    max_batch: int = DEFAULT_MAX_BATCH
    repeats: int = DEFAULT_REPEATS
    refresh: bool = False
    batched: bool = False
    batch_seqs: int = 32
    batch_ks: str = "1,2,4"
    acceptance: float | None = None
    acceptance_from: str | None = None
    drafter: str | None = None
    emit: str | None = None
    output: str | None = None
    force: bool = False


def probe_main(o: ProbeOptions, signals=None, out=None) -> int:
    """The probe ``o`` asks for: every option checked before any model loads, the models loaded, each
    measurement from its cache or measured now, printed (and --emit's config written): the exit status."""
    from .common import load_engine  # noqa: PLC0415

    out = out or sys.stdout
    models = o.models
    knee = _knee_args(o)
    emit_to = _emit_args(o, knee)  # before any model loads
    drafting = _drafting(o.drafter, models)
    engine = load_engine(models, drafting, quiet=o.as_json, head_in_every_run=False)
    try:
        if signals is not None:
            signals.raise_if_stopped()  # a signal noted inside llama.cpp's log callback while loading
        found = _measured(engine, knee, drafting, o.max_batch, o.repeats, o.refresh, o.as_json)
    finally:
        engine.close()
    if o.emit is not None and emit_to is None:  # the config alone on stdout (`> spec.json`); the figures elsewhere
        _write_emitted(o.emit, found.pred, models, None, out)
        return 0
    _print_found(found, o.as_json, out)
    if o.emit is not None:
        _write_emitted(o.emit, found.pred, models, emit_to, out)
    return 0


@dataclass
class _Found:
    """What one probe measured (or read from its caches): the curve, and with --batched / --emit the batched
    curve, the server's step costs and the prediction; the head's cost when the draft is a head."""

    res: object
    curve: object = None
    steps: object = None
    pred: object = None
    head: object = None


def _measured(engine, knee, drafting, max_batch: int, repeats: int, refresh: bool, as_json: bool) -> _Found:
    """Every measurement the options ask for, each from its cache or measured now."""
    tty = sys.stderr.isatty() and not as_json
    found = _Found(cached_or_measure(engine, max_batch=max_batch, repeats=repeats, refresh=refresh,
                                    progress=(lambda m: print(f"spectui: probe: {m}", file=sys.stderr)) if tty
                                    else None))
    if knee is not None:
        from ..analysis.measured import batch_knee as bk  # noqa: PLC0415
        from ..analysis.measured import step_costs  # noqa: PLC0415

        found.curve = bk.cached_or_measure(engine, max_seqs=knee["seqs"], ks=knee["ks"], repeats=repeats,
                                           refresh=refresh)
        found.steps = step_costs.cached_or_measure(engine, repeats=repeats, refresh=refresh)
        if knee["a"] is not None:
            found.pred = bk.predict(found.curve, knee["a"], knee["drafter"], knee["src"])
    if drafting.head is not None:  # the head's cost per draft step, beside the draft model's and a decode
        from ..analysis.measured import head_cost  # noqa: PLC0415

        found.head = head_cost.cached_or_measure(engine, k=head_cost_k(), repeats=repeats, refresh=refresh)
    return found


def _print_found(found: _Found, as_json: bool, out) -> None:
    """The figures: one JSON object (--json), or the probe's text, the knee's and the head's."""
    res = found.res
    if as_json:
        rep = res.report()
        if found.curve is not None:
            rep["batched"] = {"curve": found.curve.to_dict(), "prediction": found.pred.to_dict() if found.pred
                              else None, "steps": found.steps.to_dict()}
        if found.head is not None:
            rep["head"] = found.head.to_dict()
        out.write(json.dumps(rep) + "\n")
    else:
        out.write(render(res) + "\n")
        if found.curve is not None:
            from ..analysis.knee import knee_text as kt  # noqa: PLC0415
            from ..analysis.measured import step_costs  # noqa: PLC0415

            out.write("\n" + kt.render(found.curve, found.pred) + "\n")
            out.write("\n" + "\n".join(step_costs.table(found.steps)) + "\n")
        if found.head is not None:
            from ..analysis.measured import head_cost  # noqa: PLC0415

            out.write("\n" + head_cost.render(found.head) + "\n")
    w = res.warning()
    if w and as_json:
        print(f"spectui: {w}", file=sys.stderr)


def _emit_args(o: ProbeOptions, knee):
    """--emit's checks before any model loads: an acceptance to predict with, and -o a file the output gate lets
    this command write (never one of its inputs). Returns the checked output (None: stdout)."""
    emit, output, force = o.emit, o.output, o.force
    if emit is None:
        if output or force:
            raise SpectuiError("-o/--output and --force are for --emit")
        return None
    if knee is None or knee["a"] is None:
        raise SpectuiError(f"--emit {emit} needs an acceptance to predict with: give --acceptance A or "
                           "--acceptance-from FILE")
    if not output:
        if o.as_json:
            raise SpectuiError(f"--emit {emit} without -o writes the config on stdout: give -o FILE with --json")
        return None
    from ..analysis.knee.engine_configs import LLAMA_KIND, TRTLLM_KIND, VLLM_KIND  # noqa: PLC0415
    from ..contract.outputs import check_output  # noqa: PLC0415

    kind = {"vllm": VLLM_KIND, "trtllm": TRTLLM_KIND, "llama-server": LLAMA_KIND}[emit]
    return check_output(output, kind, [o.models.target, o.models.draft, o.acceptance_from], force)


def _write_emitted(emit, pred, models, emit_to, out) -> None:
    from ..analysis.knee.engine_configs import emit as make  # noqa: PLC0415
    from ..contract.text import visible_line  # noqa: PLC0415

    made = make(emit, pred, os.path.abspath(models.draft) if models.draft else "")
    if made.note:
        print(f"spectui: note: {made.note}", file=sys.stderr)
    if emit_to is None:
        out.write(made.text)
        out.flush()
        return
    with emit_to.atomic_write() as fh:
        fh.write(made.text)
    print(f"spectui: wrote {visible_line(emit_to.path)} ({emit})", file=sys.stderr)


def head_cost_k() -> int:
    """The draft length a head's step is measured at (spectui.engine.probes.head_probe.DEFAULT_HEAD_K)."""
    from ..engine.probes.head_probe import DEFAULT_HEAD_K  # noqa: PLC0415

    return DEFAULT_HEAD_K


def _drafting(drafter: str | None, models):
    """What the probe loads: the --draft model (its decode beside the target's), and the head it measures:
    --drafter eagle3 / mtp, --head FILE, or a head given as --draft (its header says so)."""
    from ..engine.drafters import head_names  # noqa: PLC0415
    from .common import offered_drafters, plan_drafting  # noqa: PLC0415

    wanted = offered_drafters(drafter if drafter in head_names() else None, models)
    return plan_drafting("probe", wanted, models)


def _knee_args(o: ProbeOptions) -> dict | None:
    """--batched's options (--emit implies it), checked before any model loads (docs/batch-knee.md)."""
    acceptance, acceptance_from, drafter = o.acceptance, o.acceptance_from, o.drafter
    if not (o.batched or o.emit is not None):
        if acceptance is not None or acceptance_from or drafter in ("model", "ngram", "none"):
            raise SpectuiError("--acceptance / --acceptance-from / --drafter model|ngram are for --batched "
                               "(--drafter eagle3|mtp measures a head)")
        return None
    if drafter not in (None, "model", "ngram"):
        raise SpectuiError(f"--drafter {drafter}: the batched probe predicts for a draft model or prompt lookup "
                           "(model or ngram)")
    from ..analysis.measured.batch_knee import acceptance_from_events, acceptance_from_json  # noqa: PLC0415
    from ..engine.probes.batch_probe import check_ks  # noqa: PLC0415

    k_list = check_ks(parse_ks(o.batch_ks, "--batch-ks", modes=False, low=1, high=K_MAX))  # the one k parser
    if acceptance is not None and acceptance_from:
        raise SpectuiError("give --acceptance or --acceptance-from, not both")
    src = "given" if acceptance is not None else ""
    if acceptance_from:
        if acceptance_from.endswith(".json"):
            acceptance, src = acceptance_from_json(acceptance_from)
        else:
            from ..recording.player import warn_stderr  # noqa: PLC0415
            from ..recording.trace import read_trace  # noqa: PLC0415

            tr = read_trace(acceptance_from, on_warning=warn_stderr)  # a damaged tail, a lie: said as in replay
            acceptance, src = acceptance_from_events(tr.events, f"trace {acceptance_from}")
    return {"seqs": o.batch_seqs, "ks": k_list, "a": acceptance, "src": src, "drafter": drafter}


if __name__ == "__main__":  # python -m spectui.commands.probe ...
    probe_cmd()  # pylint: disable=no-value-for-parameter
