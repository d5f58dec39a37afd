"""N recorded runs on one race clock. No Textual.

A ``Lane`` is one trace: its header, its (replay-marked) events, a label made from the header (drafter, k,
temperature, models, machine) and ``t0``, the trace time that is race time 0: the first token (the prefill
pass's end) by default, or the run's start with ``from_start`` (so the time to first token is raced too).
An event's race time is its trace time (``Timing.t_end``, ``SettingsChanged.t``) minus ``t0``; an event
without a time (RunStarted, RunEnded) takes the time of the lane's event before it (RunStarted: 0).

``Race.merged`` is every lane's events in race-time order, and ``Race.player()`` plays it with the replay's
own clock (``spectui.recording.player.ReplayPlayer``: pause, step, speed, seek): it is handed copies whose times are
race times, led by a start gun at race time 0, and ``Race.locate(i)`` says which lane's which event the
player's position ``i`` is. ``Race.due(t)`` is the pure rule the player follows: how many of each lane's
events are due at race time ``t``.
"""

from __future__ import annotations

import bisect
import dataclasses
import os
import sys
from array import array
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ..analysis.stats import RunStats, StatsSnapshot
from ..contract.errors import SpectuiError
from ..contract.events import AttachStarted, Event, PassEvent, RunEnded, RunStarted, SettingsChanged
from ..contract.text import visible_line
from ..recording.player import ReplayPlayer
from ..recording.trace import iter_trace

LANE_NAMES = "ABC"
MAX_LANES = len(LANE_NAMES)


def _warn(message: str) -> None:
    print(f"spectui: warning: {visible_line(message)}", file=sys.stderr)


def event_time(ev: Event) -> float | None:
    """An event's own trace time (seconds since its run started), or None (start, end)."""
    if isinstance(ev, PassEvent):
        return ev.timing.t_end
    if isinstance(ev, SettingsChanged):
        return ev.t
    return None


def setting_text(start: RunStarted | None) -> str:
    """What a run was asked to do: "target alone", "draft model k=4 T=0.8", "draft model tree k=6 T=0.8" (--drafter
    tree), "prompt lookup k=3", "draft model k=3 T=0 pipelined 1+1" (--pipeline: the split's threads)."""
    if start is None:
        return "?"
    s = start.settings
    temp = f" T={s.temperature:g}"
    if s.auto:
        k = f"auto k ({s.auto})"
    else:
        k = f"k={s.draft_max}"
    if s.drafter == "none" or (s.draft_max == 0 and not s.auto):
        return "target alone" + temp
    drafter = {"model": "draft model", "tree": "draft model tree", "ngram": "prompt lookup"}.get(s.drafter, s.drafter)
    extra = f" p-min {s.draft_p_min:g}" if s.draft_p_min > 0 else ""
    if s.pipeline and s.drafter == "model":
        split = start.pipeline_threads
        extra += " pipelined" + (f" {split[0]}+{split[1]}" if len(split) == 2 else "")
    return f"{drafter} {k}{temp}{extra}"


DRAFT_MODEL = ("model", "tree")  # the drafters of the draft model: its chain, its tree (--drafter tree)


def _model(info) -> str:
    if info is None:
        return ""
    name = info.name or os.path.basename(info.path) or "?"
    return name.removesuffix(".gguf")


def models_text(start: RunStarted | None) -> str:
    if start is None:
        return ""
    target = _model(start.target)
    if start.settings.drafter in DRAFT_MODEL and start.draft is not None and start.settings.draft_max > 0:
        return f"{target} + {_model(start.draft)}"
    return target


def machine_text(header: dict[str, Any]) -> str:
    """ "2 threads, AMD EPYC 9B14" from the header's machine block ("" when it has none)."""
    m = header.get("machine") or {}
    if not isinstance(m, dict):
        return ""
    cpu = str(m.get("cpu") or "").replace("(R)", "").replace("(TM)", "").replace(" CPU", "")
    cpu = " ".join(cpu.split())
    threads = m.get("threads") or 0
    parts = [f"{threads} thread{'' if threads == 1 else 's'}" if threads else "", cpu]
    return ", ".join(p for p in parts if p)


@dataclass(frozen=True)
class Digest:
    """What the race's outcome needs of a lane (``race --headless``), read as a stream: a lane of a million passes
    then holds its statistics and its tokens, not a million events (``load_race(..., keep_events=False)``)."""

    stats: StatsSnapshot
    start: RunStarted | None
    end: RunEnded | None
    finish_t: float  # the last pass's trace time
    ids: array  # every emitted token's id, in order
    texts: list  # ... and its text (one shared string per distinct text)


@dataclass(frozen=True)
class Lane:
    name: str  # "A", "B", "C"
    path: str
    header: dict
    events: tuple[Event, ...]
    t0: float  # trace time at race time 0
    times: tuple[float, ...]  # each event's race time
    setting: str  # setting_text
    models: str
    machine: str
    changed_settings: bool  # the run changed settings mid-way (a key in the live TUI)
    truncated: bool  # no RunEnded: the trace was cut off (killed run, partial file)
    digest: Digest | None = None  # a lane read for its outcome only: no events (``events`` and ``times`` empty)

    @property
    def start(self) -> RunStarted | None:
        if self.digest is not None:
            return self.digest.start
        return next((ev for ev in self.events if isinstance(ev, RunStarted)), None)

    @property
    def end(self) -> RunEnded | None:
        if self.digest is not None:
            return self.digest.end
        return next((ev for ev in reversed(self.events) if isinstance(ev, RunEnded)), None)

    @property
    def passes(self) -> list[PassEvent]:
        return [ev for ev in self.events if isinstance(ev, PassEvent)]

    @property
    def finish_s(self) -> float:
        """Race time of the lane's last pass: its decode time (from the first token), or with
        ``from_start`` its time from the run's start to the last token."""
        if self.digest is not None:
            return self.digest.finish_t - self.t0
        last = next(ev for ev in reversed(self.events) if isinstance(ev, PassEvent))
        return last.timing.t_end - self.t0

    @property
    def label(self) -> str:
        parts = [f"{self.name}: {self.setting}"]
        if self.changed_settings:
            parts[0] += " (settings changed mid-run)"
        parts += [p for p in (self.models, self.machine) if p]
        return " · ".join(parts)

    @property
    def prompt(self) -> str:
        start = self.start
        if start is not None:
            return start.prompt
        return str(self.header.get("prompt") or "")

    def token_ids(self) -> list[int] | array:
        if self.digest is not None:
            return self.digest.ids
        return [t.id for ev in self.events if isinstance(ev, PassEvent) for t in ev.emitted]

    def token_texts(self) -> list[str]:
        if self.digest is not None:
            return self.digest.texts
        return [t.text for ev in self.events if isinstance(ev, PassEvent) for t in ev.emitted]

    def due(self, t: float) -> int:
        """How many of this lane's events are due at race time ``t``."""
        return bisect.bisect_right(self.times, t + 1e-12)


def make_lane(name: str, path: str, header: dict, events: list[Event], from_start: bool = False) -> Lane:
    passes = [ev for ev in events if isinstance(ev, PassEvent)]
    if not passes:
        raise SpectuiError(f"{path}: the trace holds no passes to race")
    first = passes[0]
    t0 = 0.0 if from_start else first.timing.t_end
    times: list[float] = []
    last = 0.0
    for ev in events:
        t = event_time(ev)
        if t is not None:
            last = max(last, t - t0)  # a trace's times never go back; keep the race clock monotonic too
        times.append(last)
    start = next((ev for ev in events if isinstance(ev, RunStarted)), None)
    return Lane(
        name=name, path=path, header=header, events=tuple(events), t0=t0, times=tuple(times),
        # the labels are made of the trace's words (model names, the machine): shown with controls visible
        setting=visible_line(setting_text(start)), models=visible_line(models_text(start)),
        machine=visible_line(machine_text(header)),
        changed_settings=any(isinstance(ev, SettingsChanged) for ev in events),
        truncated=not any(isinstance(ev, RunEnded) for ev in events),
    )


def digest_lane(name: str, path: str, header: dict, events: Iterable[Event], from_start: bool = False) -> Lane:
    """A lane for the race's outcome only, its events read as a stream and let go (see ``Digest``)."""
    stats, ids, texts = RunStats(keep_tokens=False), array("q"), []
    start = end = None
    first_t = finish_t = None
    changed = False
    for ev in events:
        stats.update(ev)
        if isinstance(ev, PassEvent):
            first_t = ev.timing.t_end if first_t is None else first_t
            finish_t = ev.timing.t_end
            for t in ev.emitted:
                ids.append(t.id)
                texts.append(t.text)
        elif isinstance(ev, RunStarted):
            start = start or dataclasses.replace(ev, replay=True)
        elif isinstance(ev, RunEnded):
            end = ev
        changed = changed or isinstance(ev, SettingsChanged)
    if first_t is None or finish_t is None:
        raise SpectuiError(f"{path}: the trace holds no passes to race")
    return Lane(name=name, path=path, header=header, events=(), t0=0.0 if from_start else first_t, times=(),
                setting=visible_line(setting_text(start)), models=visible_line(models_text(start)),
                machine=visible_line(machine_text(header)), changed_settings=changed, truncated=end is None,
                digest=Digest(stats.snapshot(), start, end, finish_t, ids, texts))


def _not_attach(path: str, events: Iterable[Event]) -> Iterable[Event]:
    for i, ev in enumerate(events):
        if i == 0 and isinstance(ev, AttachStarted):
            raise SpectuiError(f"{path}: an attach trace (spectui attach --record) has no passes to race; "
                               "race run traces (spectui --record, spectui bench --record-dir)")
        yield ev


def load_lane(name: str, path: str | os.PathLike, from_start: bool = False,
              on_warning: Callable[[str], None] | None = _warn, keep_events: bool = True) -> Lane:
    """One trace as a lane; a damaged or cut-off trace is read as far as it goes (the replay's reader
    warns), a file that is not a run trace is a one-line error. ``keep_events`` False: a ``digest_lane``
    (the outcome's figures in flat memory, for ``race --headless``)."""
    p = os.fspath(path)
    header, reader = iter_trace(p, on_warning=on_warning)  # the replay's reader: damage is a warning
    try:
        if not keep_events:
            return digest_lane(name, p, header, _not_attach(p, reader), from_start)
        events = [dataclasses.replace(ev, replay=True) if isinstance(ev, RunStarted) else ev
                  for ev in _not_attach(p, reader)]
    finally:
        reader.close()
    return make_lane(name, p, header, events, from_start)


@dataclass
class Race:
    lanes: list[Lane]
    from_start: bool = False
    any_prompt: bool = False  # the prompts differ and the race was asked for anyway
    note: str = ""  # a line the face shows (e.g. how the runs were recorded)
    merged: list[tuple[float, int, int]] = field(init=False)  # (race time, lane, position in the lane)

    def __post_init__(self) -> None:
        if not 1 <= len(self.lanes) <= MAX_LANES:
            raise SpectuiError(f"a race takes 1 to {MAX_LANES} traces, not {len(self.lanes)}")
        # by race time; at one instant lane A first; a lane's own order kept (its times never go back)
        self.merged = sorted((lane.times[j], li, j) for li, lane in enumerate(self.lanes)
                             for j in range(len(lane.events)))

    # --------------------------------------------------------------- the clock
    @property
    def end_s(self) -> float:
        return max(lane.finish_s for lane in self.lanes)

    def due(self, t: float) -> list[int]:
        """Per lane: how many of its events are due at race time ``t`` (the player's rule)."""
        return [lane.due(t) for lane in self.lanes]

    def player_events(self) -> list[Event]:
        """What the ReplayPlayer plays: a start gun at race time 0 (so the first event waits for its own
        race time), then every lane's events in race order, as copies whose times are race times."""
        out: list[Event] = [SettingsChanged(t=0.0)]
        for t, li, j in self.merged:
            ev = self.lanes[li].events[j]
            if isinstance(ev, PassEvent):
                ev = dataclasses.replace(ev, timing=dataclasses.replace(ev.timing, t_end=t))
            elif isinstance(ev, SettingsChanged):
                ev = dataclasses.replace(ev, t=t)
            out.append(ev)
        return out

    def player(self, speed: float | str = 1.0):
        return ReplayPlayer(self.player_events(), speed=speed)

    def locate(self, i: int) -> tuple[int, int] | None:
        """The player's position ``i`` -> (lane, position in the lane); None for the start gun."""
        if i <= 0:
            return None
        _t, li, j = self.merged[i - 1]
        return li, j

    def time_at(self, i: int) -> float:
        """The race clock once the player has delivered ``i`` events (its cursor): the race time of the
        last one delivered (0 before the start gun's successors)."""
        return self.merged[min(i, len(self.merged) + 1) - 2][0] if i > 1 else 0.0

    def split(self, n: int) -> list[list[Event]]:
        """The first ``n`` player events, per lane (the original events): rebuild each lane's state."""
        out: list[list[Event]] = [[] for _ in self.lanes]
        for _t, li, j in self.merged[: max(0, n - 1)]:
            out[li].append(self.lanes[li].events[j])
        return out


def check_prompts(lanes: list[Lane]) -> bool:
    """True when the prompts differ (the caller refuses unless --any-prompt)."""
    return len({lane.prompt for lane in lanes}) > 1


def load_race(paths: list[str], *, from_start: bool = False, any_prompt: bool = False,
              on_warning: Callable[[str], None] | None = _warn, keep_events: bool = True) -> Race:
    """The traces as lanes on one clock (``keep_events`` False: for the outcome only, in flat memory)."""
    if not 2 <= len(paths) <= MAX_LANES:
        raise SpectuiError(f"a race takes 2 or {MAX_LANES} traces, not {len(paths)}")
    lanes = [load_lane(LANE_NAMES[i], p, from_start, on_warning, keep_events) for i, p in enumerate(paths)]
    differ = check_prompts(lanes)
    if differ and not any_prompt:
        which = ", ".join(f"{lane.name} {lane.prompt[:24]!r}" for lane in lanes)
        raise SpectuiError(f"the traces answer different prompts ({which}); a race compares one prompt "
                           "(--any-prompt races them anyway, labelled so)")
    return Race(lanes, from_start=from_start, any_prompt=differ)
