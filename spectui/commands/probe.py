"""`spectui probe`: the command around spectui.analysis.probe (kept apart so that the probe itself, which the
headless summary and the TUI read, imports no face: the command loads models through spectui.commands.common).

    spectui probe --target T [--draft D] [--json] [--max-batch 16] [--repeats 5] [--refresh]
    python -m spectui.commands.probe ...
"""

from __future__ import annotations

import json
import signal
import sys

import click

from ..contract.errors import SpectuiError, fail
from ..contract.exitcodes import Interrupted
from .options import json_option, model_options
from ..analysis.probe import DEFAULT_MAX_BATCH, DEFAULT_REPEATS, MAX_BATCH_LIMIT, cached_or_measure, render
from . import command


@command("probe")
@model_options
@json_option("one object (the measurements and what they mean)", tui=False)
@click.option("--max-batch", type=int, default=DEFAULT_MAX_BATCH, show_default=True,
              help="largest verify batch measured (tokens)")
@click.option("--repeats", type=int, default=DEFAULT_REPEATS, show_default=True,
              help="measured rounds over every batch size (median)")
@click.option("--refresh", is_flag=True, help="measure again even when a cached result exists")
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
               refresh: bool = False, out=None, signals=None, **model_kwargs) -> int:
    from .common import ModelOptions, load_engine  # noqa: PLC0415

    out = out or sys.stdout
    models = ModelOptions.pop_from(model_kwargs)
    if model_kwargs:
        raise TypeError(f"probe_main: unknown options {sorted(model_kwargs)}")
    if not 2 <= max_batch <= MAX_BATCH_LIMIT:
        raise SpectuiError(f"--max-batch must be between 2 and {MAX_BATCH_LIMIT}, not {max_batch}")
    if repeats < 1:
        raise SpectuiError(f"--repeats must be at least 1, not {repeats}")
    engine = load_engine(models, quiet=as_json)
    try:
        if signals is not None:
            signals.raise_if_stopped()  # a signal noted inside llama.cpp's log callback while loading
        tty = sys.stderr.isatty() and not as_json
        res = cached_or_measure(engine, max_batch=max_batch, repeats=repeats, refresh=refresh,
                                progress=(lambda m: print(f"spectui: probe: {m}", file=sys.stderr)) if tty else None)
    finally:
        engine.close()
    if as_json:
        out.write(json.dumps(res.report()) + "\n")
    else:
        out.write(render(res) + "\n")
    w = res.warning()
    if w and as_json:
        print(f"spectui: {w}", file=sys.stderr)
    return 0


if __name__ == "__main__":  # python -m spectui.commands.probe ...
    probe_cmd()  # pylint: disable=no-value-for-parameter
