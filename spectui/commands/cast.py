"""``spectui cast FILE -o OUT.cast``: the replay TUI rendered to an asciicast v2 file, no terminal needed.

The real app (``spectui.tui.run.app.SpectuiApp``, the same widgets as live and replay) runs under Textual's
test harness with a capture driver: a driver that is not "headless" (so the app renders ANSI exactly
as it would to a terminal) but writes into a list instead of a tty. A simulated clock steps over the
trace: each pass arrives at its recorded time (``Timing.t_end``, counted from the first pass as the
TUI's replay does) divided by ``--speed``; its drafts
show as pending, then their verdicts, then settle, as on a live screen. Every write is stamped with
the simulated time, so a 5-minute recording renders in seconds and plays at the recorded pace.

``--inspect PASS[:TOKEN]`` opens the token inspector (the TUI's InspectorScreen) on that token once the
pass has settled and holds it ``HOLD_INSPECT_S`` seconds before the replay goes on (``inspect_plan``).

This module never needs Textual, also when its functions run: it checks the arguments, plans the
frames (``frames``, from the phases in ``spectui.views.animation``) and writes the file (``write_asciicast``);
only ``spectui.tui.run.cast_render.capture`` runs the app, and it imports nothing from here.

File format (https://docs.asciinema.org/manual/asciicast/v2/): a header line
``{"version": 2, "width": W, "height": H, "timestamp": ..., "title": ..., "env": {...}}`` then one
``[time, "o", data]`` line per terminal write.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

import click

from ..contract.errors import SpectuiError, echo_line
from ..contract.events import AttachStarted, Event, PassEvent, RunStarted
from ..contract.exitcodes import Interrupted, SignalStop
from ..contract.options import options_from
from ..contract.outputs import CAST, OutputPath, check_output
from ..contract.params import SPEED, TERMINAL_CELLS
from ..contract.text import json_text, visible_line
from ..race.spec import RaceClock
from ..views.animation import PENDING_S, SETTLED, VERDICT_S, phase_steps
from . import command

DEFAULT_COLS, DEFAULT_ROWS = 120, 36
HOLD_END_S = 3.0  # the final screen stays this long before the cast ends
LEAD_IN_S = 0.5  # the start screen (banner, empty panels) shows this long before the first pass
HOLD_INSPECT_S = 4.0  # --inspect: the inspector stays on screen this long


@dataclass
class CastInfo:
    path: str
    width: int
    height: int
    n_events: int  # "o" events written
    duration_s: float
    n_passes: int


def frames(events: list[Event], speed: float) -> list[tuple[int, float, str]]:
    """(event position, time, phase) steps: when each event is shown and in which animation phase.

    As in the TUI's replay (spectui.recording.player), the clock starts at the first pass: the recording's
    time to first token is shown in the TTFT panel, not waited for; after a short lead-in on the
    start screen, pass i arrives at (t_end_i - t_end_0) / speed. Its phases come from
    ``spectui.views.animation.phase_steps``, squeezed into the gap before the next pass."""
    return plan_frames([_outline(ev) for ev in events], speed)


def _outline(ev: Event) -> tuple[bool, float, bool]:
    """What the frames' plan reads of an event: (a pass, its end time, it has drafts)."""
    if isinstance(ev, PassEvent):
        return True, ev.timing.t_end, bool(ev.drafts)
    return False, 0.0, False


def plan_frames(outline: list[tuple[bool, float, bool]], speed: float) -> list[tuple[int, float, str]]:
    """``frames`` from each event's ``_outline`` (a long trace's plan without holding its events)."""
    t0 = next(t for is_pass, t, _ in outline if is_pass)

    def arrival(t_end: float) -> float:
        return LEAD_IN_S + max(0.0, t_end - t0) / speed

    pass_times = [(i, arrival(t)) for i, (is_pass, t, _) in enumerate(outline) if is_pass]
    next_time = {i: nxt[1] for (i, _), nxt in zip(pass_times, pass_times[1:] + [(None, None)])}
    del pass_times
    steps: list[tuple[int, float, str]] = []
    last = 0.0  # latest step (time never goes back)
    for i, (is_pass, t, drafted) in enumerate(outline):
        if is_pass:
            now = max(last, arrival(t))
            gap = None if next_time.get(i) is None else next_time[i] - now
            steps.extend((i, now + offset, phase) for offset, phase in phase_steps(drafted, gap))
        else:
            steps.append((i, last, SETTLED))
        last = steps[-1][1]
    return steps


def parse_inspect(value: str) -> tuple[int, int | None]:
    """``PASS`` or ``PASS:TOKEN`` -> (pass index, 0-based token slot or None). TOKEN is 1-based."""
    head, sep, tail = value.strip().partition(":")
    try:
        index, token = int(head), (int(tail) if sep else None)
    except ValueError:
        raise SpectuiError(f"--inspect takes PASS or PASS:TOKEN (integers, e.g. 12 or 12:3), not {value!r}") from None
    if index < 0 or (token is not None and token < 1):
        raise SpectuiError(f"--inspect {value}: passes count from 0 (the prefill pass), tokens from 1")
    return index, (token - 1 if token is not None else None)


def inspect_plan(events: list[Event], steps: list[tuple[int, float, str]], index: int, token: int | None,
                 hold: float = HOLD_INSPECT_S) -> tuple[list[tuple[int, float, str]], tuple[int, int, int, float]]:
    """Make room for the inspector after pass ``index`` has settled: the steps after it move ``hold``
    seconds later. Returns (steps, (step, pass index, token slot, hold)); the capture opens the inspector
    after painting that step. Without ``token``: the pass's first rejected draft, else its last token."""
    from ..contract.events import REJECTED

    pos = next((i for i, ev in enumerate(events) if isinstance(ev, PassEvent) and ev.index == index), None)
    ev = events[pos] if pos is not None else None
    if not isinstance(ev, PassEvent):
        n = sum(isinstance(ev, PassEvent) for ev in events)
        raise SpectuiError(f"--inspect: no pass {index}; the trace has {n} passes (0 = prefill .. {n - 1})")
    n_slots = len(ev.drafts) + (ev.target is not None)
    if token is None:
        token = next((i for i, d in enumerate(ev.drafts) if d.verdict == REJECTED), n_slots - 1)
    if not 0 <= token < n_slots:
        raise SpectuiError(f"--inspect {index}:{token + 1}: pass {index} has {n_slots} token"
                           f"{'' if n_slots == 1 else 's'} (its drafts, then the target's token)")
    at = max(j for j, (i, _, _) in enumerate(steps) if i == pos)
    moved = [(i, t + hold if j > at else t, phase) for j, (i, t, phase) in enumerate(steps)]
    return moved, (at, index, token, hold)


def check_cast_args(cols: int, rows: int, speed: float, events: list[Event], need_passes: bool = True) -> None:
    if not (1 <= cols <= 1000 and 1 <= rows <= 1000):
        raise SpectuiError(f"terminal size {cols}x{rows} is out of range (1..1000 each)")
    if not (0 < speed < float("inf")):
        raise SpectuiError("cast speed must be a number between 0.25 and 8")
    if need_passes and not any(isinstance(e, PassEvent) for e in events):
        raise SpectuiError("the trace holds no passes to render")


def cast_title(start: RunStarted | None) -> str:
    from ..views.view import banner_text  # no Textual: the replay banner's text

    return "spectui " + banner_text(start)


def write_asciicast(out: str | os.PathLike | OutputPath, cols: int, rows: int, chunks: Iterable[tuple[float, str]],
                    end_t: float, start: RunStarted | None, title: str | None = None) -> tuple[int, float]:
    """Write terminal output as asciicast v2, atomically (through spectui.contract.outputs: a path not checked
    yet is checked now).

    Args:
        out: the .cast file; cols, rows: the terminal's size in the header.
        chunks: (time, data) in time order; end_t: the run's end (the last frame is held ``HOLD_END_S`` past it).
        start: the run's start (the header's environment); title: the header's title.

    Returns:
        ("o" events written, duration).
    """
    target = out if isinstance(out, OutputPath) else check_output(out, CAST)
    ends_at = end_t + HOLD_END_S
    header: dict[str, Any] = {
        "version": 2,
        "width": cols,
        "height": rows,
        "timestamp": int(start.started_at) if start is not None and start.started_at > 0 else 0,
        "duration": round(ends_at, 6),
        "title": visible_line(title or cast_title(start)),  # a player may show it
        "env": {"TERM": "xterm-256color", "SHELL": "/bin/sh"},
    }
    n = 0
    _WRITING.append(True)
    try:
        with target.atomic_write("w") as fh:
            fh.write(json_text(header) + "\n")  # the title holds a trace's words
            fh.write(json.dumps([0.0, "o", "\x1b[?25l\x1b[2J\x1b[H"]) + "\n")  # hide cursor, clear
            for t, data in _merged(chunks):
                fh.write(json.dumps([round(t, 6), "o", data], ensure_ascii=False) + "\n")
                n += 1
            fh.write(json.dumps([round(ends_at, 6), "o", "\x1b[?25h"]) + "\n")  # cursor back, hold the frame
    except OSError as exc:
        raise SpectuiError(f"cannot write {target.path}: {exc.strerror or exc}") from None
    finally:
        _WRITING.clear()
    return n + 2, ends_at


def _merged(chunks: Iterable[tuple[float, str]]) -> Iterator[tuple[float, str]]:
    """Writes at the same simulated instant as one event, streamed (a long cast's output stays on disk)."""
    at, parts = 0.0, []
    for t, data in chunks:
        if parts and abs(at - t) < 1e-9:
            parts.append(data)
            continue
        if parts:
            yield at, "".join(parts)
        at, parts = t, [data]
    if parts:
        yield at, "".join(parts)


def render_cast(
    events: Iterable[Event],
    out_path: str | os.PathLike | OutputPath,
    *,
    cols: int = DEFAULT_COLS,
    rows: int = DEFAULT_ROWS,
    speed: float = 1.0,
    theme: str | None = None,
    title: str | None = None,
    inspect: str | None = None,
) -> CastInfo:
    """Render a recorded run to an asciicast v2 file, the screen as the replay TUI draws it.

    Args:
        events: the run's events (a trace's).
        out_path: the .cast file (checked through spectui.contract.outputs, written atomically).
        cols, rows: the terminal's size; speed: 0.25..8 (1: as recorded); theme, title: the look, the header.
        inspect: "PASS[:TOKEN]": the token inspector held on that token after its pass.

    Returns:
        The CastInfo: what was written (frames, duration, size).
    """
    evs = list(events)
    if evs and isinstance(evs[0], AttachStarted):  # an attach trace: the attach face (spectui attach)
        from ..tui.attach.cast_render import capture_attach

        check_cast_args(cols, rows, speed, evs, need_passes=False)
        chunks, end_t = asyncio.run(capture_attach(evs, cols, rows, speed, theme))
        urls = " ".join(t.url for t in evs[0].targets)
        n, duration = write_asciicast(out_path, cols, rows, chunks, end_t, None, title or f"spectui attach {urls}")
        return CastInfo(_name(out_path), cols, rows, n, duration, 0)
    check_cast_args(cols, rows, speed, evs)
    steps = frames(evs, speed)
    held = None
    if inspect is not None:
        steps, held = inspect_plan(evs, steps, *parse_inspect(inspect))
    from ..tui.run.cast_render import capture  # the Textual half: the real app through a capture driver

    chunks, end_t = asyncio.run(capture(evs, steps, cols, rows, speed, theme, inspect=held))
    start = next((e for e in evs if isinstance(e, RunStarted)), None)
    n, duration = write_asciicast(out_path, cols, rows, chunks, end_t, start, title)
    return CastInfo(_name(out_path), cols, rows, n, duration, sum(isinstance(e, PassEvent) for e in evs))


def render_cast_file(path: str, out_path: str | os.PathLike | OutputPath, *, cols: int = DEFAULT_COLS,
                     rows: int = DEFAULT_ROWS, speed: float = 1.0, theme: str | None = None,
                     title: str | None = None) -> CastInfo:
    """``render_cast`` of a run trace read twice as a stream (its plan, then its frames), never held whole: a
    100,000-pass cast stays in the memory of its plan (its output is spooled on disk). An attach trace, or one
    with no pass, goes to ``render_cast`` whole (it says why it cannot be cast)."""
    from ..recording.player import load_for_tui, mark_replay, warn_stderr
    from ..recording.trace import iter_trace

    _header, reader = iter_trace(path, on_warning=warn_stderr)
    outline: list[tuple[bool, float, bool]] = []
    start = first = None
    try:
        for ev in reader:
            first = ev if first is None else first
            if start is None and isinstance(ev, RunStarted):
                start = dataclasses.replace(ev, replay=True)
            outline.append(_outline(ev))
    finally:
        reader.close()
    quiet = lambda message: None  # noqa: E731 - the first read said every warning
    if isinstance(first, AttachStarted) or not any(is_pass for is_pass, _, _ in outline):
        return render_cast(load_for_tui(path, on_warning=quiet)[1], out_path, cols=cols, rows=rows, speed=speed,
                           theme=theme, title=title)
    check_cast_args(cols, rows, speed, [], need_passes=False)
    n_passes = sum(is_pass for is_pass, _, _ in outline)
    steps = plan_frames(outline, speed)
    player_events_n = len(outline)
    del outline
    from ..tui.run.cast_render import capture, stand_ins  # the Textual half

    _header, reader = iter_trace(path, on_warning=quiet)
    try:
        chunks, end_t = asyncio.run(capture(mark_replay(reader), steps, cols, rows, speed, theme,
                                            player_events=stand_ins(player_events_n, start)))
    finally:
        reader.close()
    n, duration = write_asciicast(out_path, cols, rows, chunks, end_t, start, title)
    return CastInfo(_name(out_path), cols, rows, n, duration, n_passes)


def _name(out: str | os.PathLike | OutputPath) -> str:
    return out.path if isinstance(out, OutputPath) else os.fspath(out)


def _stop_rendering(signals: SignalStop, output: str) -> None:
    """A signal while the cast renders: nothing is on disk yet (the file is written, atomically, only once
    the render is complete), so the process ends at once with 128 + N; during that write the signal
    raises instead, and the temporary file is removed."""
    if _WRITING:
        raise Interrupted(signals.signum)
    line = visible_line(f"spectui: cast interrupted: {output} not written") + "\n"  # a path: the one rule
    os.write(2, line.encode(sys.__stderr__.encoding or "utf-8", "spectui-escape"))  # fd 2: Textual holds sys.stderr
    os._exit(signals.status())


_WRITING: list[bool] = []  # non-empty while write_asciicast writes the file


# ------------------------------------------------------------------ spectui cast --race A B [C]
# The race's plan (views.race_timeline's merged events; the paints of every pass's animation phases) and its
# file; tui.race.race_cast paints the real RaceApp at those simulated times through the same capture.


def race_paint_times(race, speed: float) -> list[tuple[float, int]]:
    """(simulated time, player events delivered by then) per paint, in time order."""
    if not 0 < speed < float("inf"):
        raise SpectuiError("a cast needs a finite --speed (0.25..8)")
    times: dict[float, None] = {0.0: None}
    for t, li, j in race.merged:
        at = LEAD_IN_S + t / speed
        times[at] = None
        ev = race.lanes[li].events[j]
        if isinstance(ev, PassEvent) and ev.drafts:  # its phase changes (the app's PassClock decides which show)
            times[at + PENDING_S + 1e-4] = None
            times[at + VERDICT_S + 1e-4] = None
    arrivals = [LEAD_IN_S + t / speed for t, _, _ in race.merged]
    out = []
    n = 0
    for at in sorted(times):
        while n < len(arrivals) and arrivals[n] <= at + 1e-9:
            n += 1
        out.append((at, n + 1 if at >= LEAD_IN_S else 0))  # + the start gun once the race has begun
    return out


def render_race_cast(race, out_path: str | os.PathLike | OutputPath, *, cols: int = 120, rows: int = 36,
                     speed: float = 1.0, theme: str | None = None, title: str | None = None,
                     force: bool = False) -> CastInfo:
    """The race to asciicast v2; the output is checked against every lane's trace (spectui.contract.outputs)."""
    target = out_path if isinstance(out_path, OutputPath) else check_output(
        out_path, CAST, inputs=[lane.path for lane in race.lanes], force=force)
    check_cast_args(cols, rows, speed, [ev for lane in race.lanes for ev in lane.events])
    plan = race_paint_times(race, speed)
    from ..tui.race.race_cast import capture_race  # the Textual half

    chunks, end_t = asyncio.run(capture_race(race, plan, cols, rows, speed, theme))
    names = " vs ".join(lane.setting for lane in race.lanes)
    n, duration = write_asciicast(target, cols, rows, chunks, end_t, race.lanes[0].start,
                                  title or f"spectui race: {names}")
    return CastInfo(_name(target), cols, rows, n, duration, sum(len(lane.passes) for lane in race.lanes))


@dataclass(frozen=True)
class CastOptions(RaceClock):
    """``spectui cast``'s options as the command line gave them (``contract.options.options_from``); with
    ``race``, the traces race on the clock as in ``spectui race``."""

    files: tuple[str, ...]
    output: str
    race: bool = False
    cols: int = DEFAULT_COLS
    rows: int = DEFAULT_ROWS
    title: str | None = None
    inspect: str | None = None
    force: bool = False


@command("cast")
@click.argument("files", nargs=-1, type=str, metavar="FILE")
@click.option("-o", "--output", "output", type=str, required=True, help="the .cast file to write")
@click.option("--race", "race", is_flag=True, help="race the 2 or 3 trace FILEs on one clock (spectui race)")
@click.option("--from-start", is_flag=True, help="with --race: the clock starts at each run's start")
@click.option("--any-prompt", is_flag=True, help="with --race: race traces of different prompts")
@click.option("--cols", type=TERMINAL_CELLS, default=DEFAULT_COLS, show_default=True, help="terminal width")
@click.option("--rows", type=TERMINAL_CELLS, default=DEFAULT_ROWS, show_default=True, help="terminal height")
@click.option("--speed", type=SPEED, default="1", show_default=True, help="0.25..8 (1 = recorded speed)")
@click.option("--theme", type=str, default=None, help="TUI theme (see themes/)")
@click.option("--title", type=str, default=None, help="title in the cast header")
@click.option("--inspect", "inspect", type=str, default=None, metavar="PASS[:TOKEN]",
              help=f"after pass PASS, show the token inspector on its TOKEN-th token (1-based; default: the first "
                   f"rejected draft, else the target's token) for {HOLD_INSPECT_S:g} s")
@click.option("--force", is_flag=True, help="let -o replace an existing file that is not an asciicast")
def cast_cmd(**values) -> None:
    """Play it with `asciinema play`. With --race, 2 or 3 FILEs raced on one clock (spectui race)."""
    from ..contract.errors import fail
    from ..recording.player import load_for_tui, parse_speed

    o = options_from(CastOptions, values)
    files, output, cols, rows, theme, title, inspect = o.files, o.output, o.cols, o.rows, o.theme, o.title, o.inspect
    try:
        sp = parse_speed(o.speed)
        if sp == float("inf"):
            raise SpectuiError("a cast needs a finite --speed (0.25..8)")
        from ..tui.shared.themes import check_theme

        check_theme(theme)
        if o.race:
            if inspect is not None:
                raise SpectuiError("--inspect is for one trace, not --race")
            out = check_output(output, CAST, inputs=list(files), force=o.force)  # never a trace raced; before any work
            with SignalStop(lambda: _stop_rendering(signals, output)) as signals:
                info = render_race_cast(o.load(files), out, cols=cols, rows=rows, speed=sp, theme=theme, title=title)
            echo_line(f"wrote {info.path}: {info.width}x{info.height}, {info.n_passes} passes, "
                      f"{info.duration_s:.1f} s, {info.n_events} output events")
            return
        if len(files) != 1:
            raise SpectuiError(f"cast takes one trace FILE (or --race A B [C]), not {len(files)}")
        file = files[0]
        if inspect is not None:
            parse_inspect(inspect)  # a bad value fails before reading the trace
        out = check_output(output, CAST, inputs=[file], force=o.force)  # never the trace itself; before any work
        with SignalStop(lambda: _stop_rendering(signals, output)) as signals:  # SIGINT/TERM/HUP: 128 + N
            if inspect is None:  # streamed: a long trace is never held whole
                info = render_cast_file(file, out, cols=cols, rows=rows, speed=sp, theme=theme, title=title)
            else:  # the inspector's pass is found in the events first
                _header, events = load_for_tui(file)
                info = render_cast(events, out, cols=cols, rows=rows, speed=sp, theme=theme, title=title,
                                   inspect=inspect)
    except SpectuiError as exc:
        fail(str(exc))
    except Interrupted as exc:
        echo_line(f"spectui: cast interrupted: {output} not written")
        sys.exit(exc.status)
    echo_line(f"wrote {info.path}: {info.width}x{info.height}, {info.n_passes} passes, "
              f"{info.duration_s:.1f} s, {info.n_events} output events")
