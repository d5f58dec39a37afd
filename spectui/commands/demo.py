"""``spectui demo``: the bundled recordings replayed in the TUI, act after act, looping until quit. No
model needed.

Three acts, each real runs recorded on a 2-core CPU, each with its reason on screen:

1. ``spectui/data/demo-trace.jsonl.gz`` (``demos/record_demo.py``): the Qwen2.5-Coder 1.5B target with
   its 0.5B draft, acceptance changing with k and temperature; here speculation loses, and the act
   says why (the probe's explanation: small verify batches cost about half a decode per extra token).
2. ``spectui/data/demo-act2.jsonl.gz`` (``demos/record_act2.py``): the best regime this CPU allows
   (``benchmarks/bench_regimes.py``): the target alone, then prompt lookup at k = 3 on an editing task,
   where drafts cost nothing; the act says what it bought, from the recording's own numbers.
3. ``spectui/data/race-*.jsonl.gz`` (``demos/record_race.py``): the race of the target alone, prompt
   lookup and the draft model on one clock (``spectui.views.race_timeline``).

They are package data, so a plain ``pip install .`` finds them. The screen says it is a recording (the
replay banner names the models and the recording date); at the end of an act the final screen holds for
a few seconds, then the next act starts (``--act N``: that act alone, looping), for a conference booth.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from importlib import resources

import click

from ..analysis.cost.wording import LOSES, TIES, WINS, outcome
from ..analysis.stats import RunStats
from ..contract.errors import SpectuiError
from ..contract.events import PassEvent, RunStarted
from ..contract.params import SPEED, whole
from ..tui.shared.ascii import ascii_option
from ..tui.shared.looping import LOOP_HOLD_S, looping
from . import command

SPEEDUP_TIE = 0.02  # within 2% of the target alone: a tie (run-to-run noise is larger)

DEMO_TRACE = "demo-trace.jsonl.gz"


@dataclass(frozen=True)
class Act:
    number: int
    trace: str  # file name in spectui/data ("" for a race act)
    title: str
    race: tuple[str, ...] = ()  # a race act: its traces in spectui/data, raced on one clock (spectui race)


# the race act's recordings (demos/record_race.py): one editing prompt, the target alone, prompt lookup and
# the 0.5B draft model, one after the other on this project's 2-core CPU
RACE_TRACES = ("race-alone.jsonl.gz", "race-lookup.jsonl.gz", "race-draft.jsonl.gz")

ACTS = (
    Act(1, DEMO_TRACE, "a 0.5B draft model for a 1.5B target, on 2 CPU cores"),
    Act(2, "demo-act2.jsonl.gz", "prompt lookup on an editing task, on the same CPU"),
    Act(3, "", "the race: the target alone, prompt lookup and the draft model on one clock", RACE_TRACES),
)


def demo_trace_path(act: int = 1) -> str:
    """Path of an act's bundled trace (found in the installed package, not the source tree)."""
    return data_path(ACTS[act - 1].trace)


def race_paths(act: Act) -> list[str]:
    return [data_path(name) for name in act.race]


def load_race_act(act: Act):
    from ..views.race_timeline import load_race

    return load_race(race_paths(act))


def race_reason(act: Act, race) -> str:
    """The race act's reason, from its recordings' numbers: who won, by how much, and why (tokens per pass
    against what a pass costs, per lane against the target alone)."""
    from ..views.race_outcome import outcome

    out = outcome(race)
    lines = [f"Act {act.number} - {act.title}, recorded one after the other on 2 CPU cores. "
             f"{out.verdict()}; {out.divergence.text(tuple(r.name for r in out.lanes))}."]
    lines += out.why()
    others = [ev.others_cpu for lane in race.lanes for ev in lane.passes if ev.others_cpu >= 0]
    if others and sum(others) / len(others) >= 0.5:  # say when the recording's own cores were shared
        lines.append(f"Other processes kept {sum(others) / len(others):.1f} of the cores busy while these were "
                     "recorded, so every pass is slower than on a quiet machine; the race shows each run's own.")
    return "\n".join(lines)


RACE_ACT_S = 40.0  # the race act plays at the first speed that makes it this short (unless --speed is given)


def race_act_speed(race) -> float:
    """1x, or the slowest of the replay's speeds at which the race lasts at most ``RACE_ACT_S``: a booth's
    act should not take minutes (the banner shows the speed; the panes keep their recorded proportions)."""
    from ..recording.player import SPEEDS

    return next((sp for sp in SPEEDS if 1.0 <= sp < float("inf") and race.end_s / sp <= RACE_ACT_S), 8.0)


def data_path(name: str) -> str:
    ref = resources.files("spectui").joinpath("data", name)
    path = os.fspath(ref) if isinstance(ref, os.PathLike) else str(ref)
    if not os.path.isfile(path):
        raise SpectuiError(f"the bundled demo trace is missing ({path}): reinstall spectui")
    return path


def act_reason(act: Act, events) -> str:
    """The act's reason, from its own recorded numbers (one paragraph)."""
    segments: dict[str, RunStats] = {}
    for ev in events:
        if isinstance(ev, PassEvent) and not ev.prefill:
            segments.setdefault(ev.settings.drafter, RunStats(keep_tokens=False)).update(ev)
    snaps = {k: st.snapshot() for k, st in segments.items()}
    start = next((ev for ev in events if isinstance(ev, RunStarted)), None)
    if act.number == 2 and "none" in snaps and "ngram" in snaps:
        alone, lookup = snaps["none"], snaps["ngram"]
        ratio = lookup.tokens_per_second / alone.tokens_per_second if alone.tokens_per_second else 0.0
        word = outcome(ratio, 1.0, SPEEDUP_TIE)
        why = {WINS: "so free drafts that are mostly right pay; a draft model's do not",
               LOSES: "and even free drafts did not pay in this recording",
               TIES: "so free drafts about break even here"}[word]
        return (f"Act 2 - {act.title}: the target alone decodes {alone.tokens_per_second:.1f} tokens/s; then "
                f"prompt lookup drafts k = 3 tokens copied from the prompt, which cost nothing, and "
                f"{100 * lookup.acceptance_rate:.0f}% of them are accepted (mean acceptance length "
                f"{lookup.mean_acceptance_length:.2f}): {lookup.tokens_per_second:.1f} tokens/s, "
                f"{ratio:.2f}x the target alone. A verify of 4 tokens costs about 2 decodes here, {why}.")
    model = snaps.get("model")
    acc = f" ({100 * model.acceptance_rate:.0f}% of drafts accepted)" if model is not None else ""
    # the target alone: its own segment if recorded, else its measured single-token decode
    alone_tps = snaps["none"].tokens_per_second if "none" in snaps else (
        1000.0 / start.target_decode_ms if start is not None and start.target_decode_ms else 0.0)
    if model is not None and alone_tps:
        ratio = model.tokens_per_second / alone_tps
        verdict = {WINS: "speculation pays here", LOSES: "speculation loses here",
                   TIES: "speculation about breaks even here"}[outcome(ratio, 1.0, SPEEDUP_TIE)]
        verdict += f" ({model.tokens_per_second:.1f} vs {alone_tps:.1f} tokens/s for the target alone)"
    else:
        verdict = "this recording has no target-alone figure to compare with"
    return (f"Act 1 - {act.title}{acc}: {verdict}. On these cores a verify of 3 tokens costs "
            "about 2 decodes and each draft token about half of one, so a pass must yield more tokens than "
            "the pair can (`spectui probe` measures why: the small-batch kernels, not a lack of idle "
            "compute). Watch acceptance by position as the draft length and the temperature change.")


def make_demo_app(events, theme: str | None = None, speed: float = 1.0, loop_hold_s: float = LOOP_HOLD_S,
                  reason: str = "", next_act: bool = False, **kw):
    """The replay app, looping: at the end it holds for ``loop_hold_s`` seconds, then jumps to the start
    (``next_act``: exits with "next" instead, for the next act). ``reason`` is shown when it starts."""
    from ..contract.control import RunControl
    from ..recording.player import ReplayPlayer
    from ..tui.run.app import SpectuiApp

    cls = looping(SpectuiApp, "action_jump_start")
    player = ReplayPlayer(events, speed=speed)
    app = cls(None, RunControl(), theme=theme, replay=player, title="spectui demo (recording)", **kw)
    return app.demo_setup("spectui demo: a recording of a real run, no model needed (q quits)", reason,
                          loop_hold_s, next_act)


def make_race_demo_app(race, theme: str | None = None, speed: float = 1.0, loop_hold_s: float = LOOP_HOLD_S,
                       reason: str = "", next_act: bool = False):
    """The race app, looping as the replay acts do: once every lane has finished the screen holds for
    ``loop_hold_s`` seconds, then the race starts over (``next_act``: exits with "next")."""
    from ..tui.race.app import RaceApp

    cls = looping(RaceApp, "action_restart")
    app = cls(race, theme=theme, speed=speed, title="spectui demo (race of recordings)")
    return app.demo_setup("spectui demo: recordings of real runs, raced on one clock (q quits)", reason,
                          loop_hold_s, next_act)


@command("demo")
@click.option("--theme", type=str, default=None, help="TUI theme (see themes/)")
@ascii_option
@click.option("--speed", type=SPEED, default="1", show_default=True, help="0.25..8 or 'max'")
@click.option("--headless", is_flag=True, help="no TUI: print each act's reason, text and summary once")
@click.option("--act", type=whole(1, len(ACTS)), default=None,
              help="play one act (1: a draft model on 2 cores, 2: prompt lookup, 3: the race); default: every "
                   "act in turn")
@click.option("--paths", is_flag=True, help="print the bundled recordings' paths (one a line; with --act N, that "
                                            "act's), e.g. for spectui cast, and exit")
def demo_cmd(theme: str | None, speed: str, headless: bool, act: int | None, paths: bool) -> None:
    """Real runs on 2 CPU cores; q quits."""
    import threading

    from ..contract.errors import fail
    from ..contract.exitcodes import SignalStop
    from ..recording.player import load_for_tui, parse_speed
    from ..text.replay import replay_headless
    from ..tui.shared.themes import check_theme  # no Textual: the theme files only

    try:
        if paths:  # where an installed package keeps them: `spectui cast "$(spectui demo --paths --act 1)"`
            for a in ([ACTS[act - 1]] if act else ACTS):
                print("\n".join(race_paths(a) if a.race else [demo_trace_path(a.number)]))
            return
        sp = parse_speed(speed)
        check_theme(theme)  # every face refuses an unknown theme, --headless too
        acts = [ACTS[act - 1]] if act else list(ACTS)
        if headless:
            stop = threading.Event()
            with SignalStop(stop.set) as signals:  # SIGINT/TERM/HUP: the summary so far, then 128 + N
                for i, a in enumerate(acts):
                    if stop.is_set():
                        break
                    if a.race:
                        from ..text.race import print_outcome
                        from ..views.race_outcome import outcome

                        race = load_race_act(a)
                        print(("\n" if i else "") + race_reason(a, race) + "\n", flush=True)
                        print_outcome(race, outcome(race), sys.stdout)
                        continue
                    _header, events = load_for_tui(demo_trace_path(a.number))
                    print(("\n" if i else "") + act_reason(a, events) + "\n", flush=True)
                    replay_headless(demo_trace_path(a.number), sys.stdout,
                                    speed=sp if speed != "1" else float("inf"), stop=stop)
            sys.exit(signals.status())
        from ..tui.shared.terminal import require_terminal

        require_terminal("spectui demo")  # one line, exit 2: not a TUI drawn into a pipe, waiting for q
        from ..tui.run.app import run_app
        loaded = [(a, load_race_act(a) if a.race else load_for_tui(demo_trace_path(a.number))[1]) for a in acts]
        while True:  # act after act until q (one act: it loops inside its app)
            for a, events in loaded:
                if a.race:
                    race_sp = sp if speed.strip() not in ("1", "1x", "1.0") else race_act_speed(events)
                    app = make_race_demo_app(events, theme=theme, speed=race_sp, reason=race_reason(a, events),
                                             next_act=len(loaded) > 1)
                else:
                    app = make_demo_app(events, theme=theme, speed=sp, reason=act_reason(a, events),
                                        next_act=len(loaded) > 1)
                code = run_app(app)
                if app.return_value != "next" or code:  # q: 0; a signal or Ctrl+C: 128 + N
                    sys.exit(code or 0)
    except SpectuiError as exc:
        fail(str(exc))
