"""A recorded race: two (or three) settings run on one loaded engine, one after the other, each recorded to
its own trace, then raced. Never at the same time: on shared cores or one GPU a concurrent race measures
contention, not speculation (the face says so). No Textual.

Before the first recording the engine runs a few unrecorded tokens, so the first run does not pay for
cold caches (weights paged in, buffers allocated) that the second would not. The traces go to
``--record-dir`` (or a new temporary folder, named on stderr), never over an existing file nor an input
(the TraceWriter checks through ``spectui.contract.outputs``).
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from typing import Callable

from ..contract.control import RunControl
from ..contract.errors import echo_line
from ..contract.events import RunEnded, Settings
from ..contract.exitcodes import SignalStop
from ..contract.outputs import record_folder
from ..recording.trace import TraceWriter
from ..views.race_timeline import LANE_NAMES
from .spec import slug, spec_settings

WARMUP_TOKENS = 8
SEQUENTIAL_NOTE = ("recorded one after the other on the same loaded models (never at once: a concurrent race "
                   "measures contention, not speculation)")


class RunFailed(Exception):
    """A recording run ended with an error (exit status 1)."""


def free_name(folder: str, stem: str) -> str:
    """A trace path in ``folder`` that names no existing file: nothing already recorded is written over (the
    TraceWriter checks it again through spectui.contract.outputs, against the inputs)."""
    path = os.path.join(folder, f"{stem}.jsonl.gz")
    n = 1
    while os.path.lexists(path):  # a link to nothing names no file, but is never written through
        path = os.path.join(folder, f"{stem}~{n}.jsonl.gz")
        n += 1
    return path


@dataclass(frozen=True)
class RaceRecording:
    """What a recorded race runs: the ``prompt``, the lanes' ``specs`` (``race.spec.parse_spec``; unset keys from
    ``temp`` and ``seed``), whether a draft model was given (``have_draft``), the model files no trace writes
    over (``inputs``), -n, where the traces go (``record_dir``; None: a new temporary folder) and what more
    each trace's header holds (``header_extra``)."""

    prompt: str
    specs: tuple[dict, ...]
    have_draft: bool = False
    inputs: tuple[str, ...] = ()
    n_predict: int = 128
    temp: float = 0.0
    seed: int = 0
    record_dir: str | None = None
    header_extra: dict | None = None


def record_race(load: Callable[[bool], object], rec: RaceRecording, say=lambda m: echo_line(f"spectui: {m}"),
                signals: SignalStop | None = None) -> tuple[list[str], str]:
    """Run each spec in turn on one engine, record each; returns (trace paths, the note for the face).

    ``load(use_draft)`` loads the models (``spectui.commands.common.load_engine``: paths or -hf/-hfd, checked,
    the draft only when a spec drafts with it) once the settings and the folder are checked.
    ``signals``, a SignalStop installed by the command with no ``on_stop``: a signal while the models load
    raises Interrupted there (nothing recorded, no folder made); from the warm-up on it stops the run in
    progress cleanly (its trace flushed), and Interrupted is raised once that run has ended."""
    prompt, n_predict, record_dir = rec.prompt, rec.n_predict, rec.record_dir
    settings = [spec_settings(s, temp=rec.temp, seed=rec.seed, have_draft=rec.have_draft) for s in rec.specs]
    if record_dir is not None and os.path.exists(record_dir) and not os.path.isdir(record_dir):
        record_folder(record_dir)  # a file in the way: its one-line error before any model loads
    engine = load(any(s.drafter in ("model", "tree") for s in settings))  # the draft model: its chain or tree
    if signals is not None:
        try:
            signals.raise_if_stopped()  # a signal noted inside llama.cpp's log callback while loading
        except BaseException:
            engine.close()
            raise
    paths: list[str] = []
    current: list[RunControl] = []  # the run in progress, for a signal to stop

    def started(control: RunControl) -> RunControl:
        current[:] = [control]
        return control

    try:
        if signals is not None:
            signals.on_stop = lambda: current and current[0].stop()
        if record_dir is not None:  # made once the models are loaded (bad input or a stop while loading: none)
            folder = record_folder(record_dir)
        else:
            folder = tempfile.mkdtemp(prefix="spectui-race-")
            say(f"recording the race's traces in {folder} (--record-dir chooses)")
        for _ in engine.run(prompt, started(RunControl(settings[0])), min(WARMUP_TOKENS, n_predict)):
            pass  # warm-up, not recorded
        for name, s in zip(LANE_NAMES, settings):
            if signals is not None:
                signals.raise_if_stopped()
            path = free_name(folder, f"race-{name}-{slug(s)}")
            paths.append(path)
            _record_lane(engine, rec, (s, name, path), started, say, signals)
    finally:
        engine.close()
    return paths, SEQUENTIAL_NOTE


def _record_lane(engine, rec: RaceRecording, lane: tuple[Settings, str, str],
                 started: Callable[[RunControl], RunControl], say, signals: SignalStop | None) -> None:
    """One lane's run (``lane``: its settings, name and trace path), recorded (the trace closed readable on every
    way out); ``started`` is told its RunControl (for a signal to stop). RunFailed when the run ended with an
    error."""
    s, name, path = lane
    say(f"recording {name} ({slug(s)}) to {path}")
    t0 = time.monotonic()
    end = None
    control = started(RunControl(s))
    extra = {"race": {"lane": name, "order": list(LANE_NAMES[:len(rec.specs)]), "sequential": True,
                      "load_start": os.getloadavg()[0]}, **(rec.header_extra or {})}
    writer = TraceWriter(path, extra, inputs=list(rec.inputs))
    try:
        for ev in engine.run(rec.prompt, control, rec.n_predict, overlap=True):
            writer.write(ev)
            if isinstance(ev, RunEnded):
                end = ev
    except KeyboardInterrupt:
        control.stop()
        raise
    finally:
        writer.close()
    if signals is not None:
        signals.raise_if_stopped()  # stopped by a signal: the trace is complete, the race ends here
    if end is None or end.reason == "error" or end.error:  # an engine error, a prompt that does not fit
        raise RunFailed(f"run {name} ({slug(s)}) failed: {end.error if end else 'no end event'}; "
                        f"its trace is {path}")
    say(f"recorded {name}: {end.n_emitted if end else 0} tokens in {time.monotonic() - t0:.1f} s")
