"""`spectui probe`: the command around spectui.analysis.probe (kept apart so that the probe itself, which the
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

from ..analysis.probe import DEFAULT_MAX_BATCH, DEFAULT_REPEATS, MAX_BATCH_LIMIT, cached_or_measure, render
from ..contract.draft_length import parse_ks
from ..contract.errors import SpectuiError, fail
from ..contract.exitcodes import Interrupted
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
def probe_cmd(as_json: bool, max_batch: int, repeats: int, refresh: bool, **kwargs) -> None:
    try:
        from .common import loading_stop  # noqa: PLC0415

        with loading_stop() as signals:  # SIGINT/TERM/HUP, loading or measuring: nothing cached, 128 + N
            code = probe_main(as_json=as_json, max_batch=max_batch, repeats=repeats, refresh=refresh,
                              signals=signals, **kwargs)
    except SpectuiError as exc:
        fail(str(exc))
    except Interrupted as exc:
        click.echo(f"spectui: probe interrupted by {signal.Signals(exc.signum).name}: nothing cached", err=True)
        sys.exit(exc.status)
    except KeyboardInterrupt:
        click.echo("spectui: probe interrupted", err=True)
        sys.exit(130)
    sys.exit(code)


def probe_main(as_json: bool = False, max_batch: int = DEFAULT_MAX_BATCH, repeats: int = DEFAULT_REPEATS,
               refresh: bool = False, out=None, signals=None, batched: bool = False, batch_seqs: int = 32,
               batch_ks: str = "1,2,4", acceptance: float | None = None, acceptance_from: str | None = None,
               drafter: str | None = None, emit: str | None = None, output: str | None = None, force: bool = False,
               **model_kwargs) -> int:
    from .common import ModelOptions, load_engine  # noqa: PLC0415

    out = out or sys.stdout
    knee = _knee_args(batched or emit is not None, batch_seqs, batch_ks, acceptance, acceptance_from, drafter)
    models = ModelOptions.pop_from(model_kwargs)
    emit_to = _emit_args(emit, output, force, knee, models, acceptance_from, as_json)  # before any model loads
    if model_kwargs:
        raise TypeError(f"probe_main: unknown options {sorted(model_kwargs)}")
    if not 2 <= max_batch <= MAX_BATCH_LIMIT:
        raise SpectuiError(f"--max-batch must be between 2 and {MAX_BATCH_LIMIT}, not {max_batch}")
    if repeats < 1:
        raise SpectuiError(f"--repeats must be at least 1, not {repeats}")
    drafting = _drafting(drafter, models)
    engine = load_engine(models, quiet=as_json, drafting=drafting, head_in_every_run=False)
    try:
        if signals is not None:
            signals.raise_if_stopped()  # a signal noted inside llama.cpp's log callback while loading
        found = _measured(engine, knee, drafting, max_batch, repeats, refresh, as_json)
    finally:
        engine.close()
    if emit is not None and emit_to is None:  # the config alone on stdout (`> spec.json`); the figures elsewhere
        _write_emitted(emit, found.pred, models, None, out)
        return 0
    _print_found(found, as_json, out)
    if emit is not None:
        _write_emitted(emit, found.pred, models, emit_to, out)
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
        from ..analysis import batch_knee as bk  # noqa: PLC0415
        from ..analysis import step_costs  # noqa: PLC0415

        found.curve = bk.cached_or_measure(engine, max_seqs=knee["seqs"], ks=knee["ks"], repeats=repeats,
                                           refresh=refresh)
        found.steps = step_costs.cached_or_measure(engine, repeats=repeats, refresh=refresh)
        if knee["a"] is not None:
            found.pred = bk.predict(found.curve, knee["a"], knee["drafter"], knee["src"])
    if drafting.head is not None:  # the head's cost per draft step, beside the draft model's and a decode
        from ..analysis import head_cost  # noqa: PLC0415

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
            from ..analysis import knee_text as kt  # noqa: PLC0415
            from ..analysis import step_costs  # noqa: PLC0415

            out.write("\n" + kt.render(found.curve, found.pred) + "\n")
            out.write("\n" + "\n".join(step_costs.table(found.steps)) + "\n")
        if found.head is not None:
            from ..analysis import head_cost  # noqa: PLC0415

            out.write("\n" + head_cost.render(found.head) + "\n")
    w = res.warning()
    if w and as_json:
        print(f"spectui: {w}", file=sys.stderr)


def _emit_args(emit, output, force, knee, models, acceptance_from, as_json):
    """--emit's checks before any model loads: an acceptance to predict with, and -o a file the output gate lets
    this command write (never one of its inputs). Returns the checked output (None: stdout)."""
    if emit is None:
        if output or force:
            raise SpectuiError("-o/--output and --force are for --emit")
        return None
    if knee is None or knee["a"] is None:
        raise SpectuiError(f"--emit {emit} needs an acceptance to predict with: give --acceptance A or "
                           "--acceptance-from FILE")
    if not output:
        if as_json:
            raise SpectuiError(f"--emit {emit} without -o writes the config on stdout: give -o FILE with --json")
        return None
    from ..analysis.engine_configs import LLAMA_KIND, TRTLLM_KIND, VLLM_KIND  # noqa: PLC0415
    from ..contract.outputs import check_output  # noqa: PLC0415

    kind = {"vllm": VLLM_KIND, "trtllm": TRTLLM_KIND, "llama-server": LLAMA_KIND}[emit]
    return check_output(output, kind, [models.target, models.draft, acceptance_from], force)


def _write_emitted(emit, pred, models, emit_to, out) -> None:
    from ..analysis.engine_configs import emit as make  # noqa: PLC0415
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
    """The draft length a head's step is measured at (spectui.engine.head_probe.DEFAULT_HEAD_K)."""
    from ..engine.head_probe import DEFAULT_HEAD_K  # noqa: PLC0415

    return DEFAULT_HEAD_K


def _drafting(drafter: str | None, models):
    """What the probe loads: the --draft model (its decode beside the target's), and the head it measures:
    --drafter eagle3 / mtp, --head FILE, or a head given as --draft (its header says so)."""
    from ..contract.events import HEAD_DRAFTERS  # noqa: PLC0415
    from .common import offered_drafters, plan_drafting  # noqa: PLC0415

    wanted = offered_drafters(drafter if drafter in HEAD_DRAFTERS else None, models)
    return plan_drafting("probe", wanted, models)


def _knee_args(batched, seqs, ks, acceptance, acceptance_from, drafter) -> dict | None:
    """--batched's options, checked before any model loads (docs/batch-knee.md)."""
    if not batched:
        if acceptance is not None or acceptance_from or drafter in ("model", "ngram", "none"):
            raise SpectuiError("--acceptance / --acceptance-from / --drafter model|ngram are for --batched "
                               "(--drafter eagle3|mtp measures a head)")
        return None
    if drafter not in (None, "model", "ngram"):
        raise SpectuiError(f"--drafter {drafter}: the batched probe predicts for a draft model or prompt lookup "
                           "(model or ngram)")
    from ..analysis.batch_knee import acceptance_from_events, acceptance_from_json  # noqa: PLC0415
    from ..engine.batch_probe import MAX_K, check_ks  # noqa: PLC0415

    k_list = check_ks(parse_ks(ks, "--batch-ks", modes=False, low=1, high=MAX_K))  # the one k parser
    if seqs < 1:
        raise SpectuiError(f"--batch-seqs must be at least 1, not {seqs}")
    if acceptance is not None and acceptance_from:
        raise SpectuiError("give --acceptance or --acceptance-from, not both")
    src = "given" if acceptance is not None else ""
    if acceptance is not None and not 0.0 <= acceptance <= 1.0:
        raise SpectuiError(f"--acceptance must be between 0 and 1, not {acceptance}")
    if acceptance_from:
        if acceptance_from.endswith(".json"):
            acceptance, src = acceptance_from_json(acceptance_from)
        else:
            from ..recording.player import warn_stderr  # noqa: PLC0415
            from ..recording.trace import read_trace  # noqa: PLC0415

            tr = read_trace(acceptance_from, on_warning=warn_stderr)  # a damaged tail, a lie: said as in replay
            acceptance, src = acceptance_from_events(tr.events, f"trace {acceptance_from}")
    return {"seqs": seqs, "ks": k_list, "a": acceptance, "src": src, "drafter": drafter}


if __name__ == "__main__":  # python -m spectui.commands.probe ...
    probe_cmd()  # pylint: disable=no-value-for-parameter
