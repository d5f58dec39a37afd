"""``spectui attach URL [URL...]``: watch serving engines' speculative decoding (TUI or ``--headless``).

The session (:class:`~spectui.attach.session.AttachSession`: the scraper's and the request's threads, events
in arrival order) hands every event to the statistics, the optional trace (``--record``) and the face: the
text or JSON lines (main thread), or the TUI (``spectui.tui.attach.app``, imported only then, which runs the
session in its worker thread). Here only the click wiring: the options checked, the session made, run and
its exit status. Ctrl+C or SIGTERM stop both producers; ``AttachEnded`` is always the last event written.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import click

from ..attach.session import AttachSession
from ..attach.urls import check_urls
from ..contract.draft_length import parse_k
from ..contract.errors import SpectuiError, echo_error
from ..contract.exitcodes import FAILED, OK, SignalStop
from ..contract.options import options_from
from ..contract.params import DURATION, N_PREDICT, SECONDS, whole
from ..recording.trace import TraceWriter
from ..text.attach import HeadlessFace
from ..tui.shared.ascii import ascii_option
from . import command
from .options import deprecated, draft_max_option


@dataclass(frozen=True)
class AttachOptions:
    """``spectui attach``'s options as the command line gave them (``contract.options.options_from``)."""

    urls: tuple[str, ...]
    interval: float = 1.0
    timeout: float | None = None
    headless: bool = False
    as_json: bool = False
    prompts: tuple[str, ...] = ()
    each: bool = False
    n_predict: int = 128
    n_max: int | None = None
    draft_max: str | None = None
    count: int = 0
    duration: float = 0.0
    record: str | None = None
    force: bool = False
    theme: str | None = None


@command("attach")
@click.argument("urls", nargs=-1, required=True)
@click.option("--interval", type=SECONDS, default=1.0, show_default=True,
              help="seconds between scrapes of /metrics")
@click.option("--timeout", type=SECONDS, default=None,
              help="seconds to wait for one scrape (default 0.8 x interval, 0.2-5 s)")
@click.option("--headless", is_flag=True, help="no TUI: one line per engine per interval")
@click.option("--json", "as_json", is_flag=True, help="one JSON object per line instead of text (implies --headless)")
@click.option("-p", "--prompt", "prompts", type=str, multiple=True,
              help="send this prompt as one streaming completion (again: several, one after another; each "
                   "request's acceptance, outliers flagged)")
@click.option("--each", is_flag=True, help="-p: send the prompts to every URL in turn, not only the first")
@click.option("-n", "--n-predict", "n_predict", type=N_PREDICT, default=128, show_default=True)
@click.option("--speculative-n-max", "--speculative.n_max", "n_max", type=whole(min=0), default=None,
              metavar="N", help="send the -p request's speculative.n_max (llama-server's per-request draft max; "
                                "default: not sent); the llama-server of llama.cpp as vendored in llama-cpp-python "
                                "0.3.36 ignores it (compiled out), vLLM has no such field")
@draft_max_option("deprecated: --speculative-n-max (attach does not draft; the server does)", default=None,
                  hidden=True)
@click.option("--count", type=whole(min=0), default=0,
              help="stop after this many intervals (0: until Ctrl+C); exit 1 if a URL never answered")
@click.option("--duration", type=DURATION, default=0.0,
              help="stop after this many seconds (0: no deadline); exit 1 if a URL never answered or the -p "
                   "request did not finish")
@click.option("--record", type=click.Path(dir_okay=False), default=None, help="write what attach saw as a trace")
@click.option("--force", is_flag=True, help="let --record replace an existing file that is not a spectui trace")
@click.option("--theme", type=str, default=None, help="TUI theme (see themes/)")
@ascii_option
def attach_cmd(**values) -> None:
    """\b
    spectui attach http://127.0.0.1:8080                         the TUI (q quits, ? help)
    spectui attach http://127.0.0.1:8080 --headless              every second, per engine
    spectui attach URL1 URL2 --json                               one JSON object per line
    spectui attach URL -p "Write a haiku" -n 64 --headless        one streamed request, timed
    spectui attach A B C -p "..." -p "..." --each                 each prompt to each engine, side by side
    """
    o = options_from(AttachOptions, values)
    headless = o.headless or o.as_json  # JSON lines are for a program reading stdout, not a screen
    writer = None
    try:
        checked = check_urls(o.urls)  # one line, exit 2, before the first scrape
        if o.each and not o.prompts:
            raise SpectuiError("attach: --each sends the -p prompts to every URL: give -p")
        n_max = _request_n_max(o.n_max, o.draft_max)
        from ..tui.shared.themes import check_theme  # noqa: PLC0415 - no Textual: the theme files only

        check_theme(o.theme)  # every face refuses an unknown theme (headless too)
        if not headless:
            from ..tui.shared.terminal import require_terminal  # noqa: PLC0415 - no Textual

            require_terminal("spectui attach")  # one line, exit 2: not a TUI drawn into a pipe
        if o.record:
            writer = TraceWriter(o.record, force=o.force)  # checked now, opened at AttachStarted
    except SpectuiError as exc:
        echo_error(exc)
        sys.exit(exc.exit_code)
    session = AttachSession(checked, interval=o.interval, timeout=o.timeout, prompt=list(o.prompts) or None,
                            each=o.each, n_predict=o.n_predict,
                            draft_max=-1 if n_max is None else n_max, count=o.count, duration=o.duration)
    if not headless:
        sys.exit(_run_tui(session, writer, o.theme))
    sys.exit(_run_headless(session, writer, o.as_json))


def _run_headless(session: AttachSession, writer: TraceWriter | None, as_json: bool) -> int:
    """The session printed as lines (or JSON objects), its trace written as it goes; returns the exit status
    (128 + N after a signal)."""
    face = HeadlessFace(sys.stdout, as_json)
    write_error: list[str] = []  # --record on a full disk or /dev/full: one line, the session ends

    def sink(ev: Any) -> None:
        nonlocal writer
        if writer is not None:
            try:
                writer.write(ev)
            except SpectuiError as exc:
                write_error.append(str(exc))
                writer = None
                session.stop.set()
        face(ev)

    with SignalStop(session.stop.set, second_sigint_raises=False) as signals:
        try:
            session.run(sink)
        finally:
            if writer is not None:
                try:
                    writer.close()
                except SpectuiError as exc:
                    write_error.append(str(exc))
    if write_error:  # a signal that stopped a write nobody read (a FIFO) still ends with 128 + N
        echo_error(write_error[0])
        return signals.status(SpectuiError.exit_code)
    why = session.failure()
    if why and not signals.signum:
        echo_error(why, topic="attach")
    return signals.status(FAILED if why else OK)


def _request_n_max(n_max: int | None, draft_max: str | None) -> int | None:
    """--speculative-n-max, or the old ``-k/--draft-max N`` for it: one draft length through the one k parser
    (its one-line errors, as in every command), then a one-line note."""
    if draft_max is None:
        return n_max
    if n_max is not None:
        raise SpectuiError("give --speculative-n-max or its old spelling -k/--draft-max, not both")
    k = parse_k(draft_max, modes=False)
    deprecated("attach -k/--draft-max N", "--speculative-n-max N")
    return k


def _run_tui(session: AttachSession, writer: TraceWriter | None, theme: str | None) -> int:
    """The attach TUI (Textual, imported only here); the trace is closed readable on every way out."""
    from ..tui.attach.app import run_attach_live
    from ..tui.shared.themes import check_theme

    try:
        check_theme(theme)
        return run_attach_live(session, recorder=writer, theme=theme)
    except SpectuiError as exc:
        echo_error(exc)
        return exc.exit_code
    finally:
        if writer is not None:
            writer.close()


__all__ = ["attach_cmd"]
