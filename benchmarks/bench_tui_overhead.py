"""TUI overhead: decode tokens/s with the TUI attached vs --headless, same settings, alternating.

Each run is its own process, set up as the CLI sets it up: ``headless`` runs the engine in the main
thread and feeds spectui.text.run.consume (what ``--headless`` does); ``tui`` builds the engine on an
EngineThread (loaded, run and closed on one thread, as ``spectui --target ...`` does) and runs the real
SpectuiApp under Textual's test driver (headless terminal, the full compositor, the app's own paint clock:
spectui.tui.shared.paced_app, at its decode pace while the engine runs).
Both get a 16-token warm-up run first. The order alternates round by round so machine noise hits both.
Prints every run, then the median TPS per mode and the ratio (issue target: at most 3% slower), and
the UI thread's CPU time during each TUI run (CPU-seconds per wall second: the figure machine load
does not move). ``--profile`` adds, per TUI run, what the UI thread spent its time on: each widget's
repaints (Textual's ``render_lines``, which runs the widget's own drawing), the app's refresh (snapshot,
view, fan-out) and the rest of Textual (compositor, driver, timers, messages).

    .venv/bin/python benchmarks/bench_tui_overhead.py --rounds 4 -n 128 -k 2 -t 2
    .venv/bin/python benchmarks/bench_tui_overhead.py --rounds 1 -t 2 --profile
    .venv/bin/python benchmarks/bench_tui_overhead.py --rounds 1 --screenshot docs/screenshot.svg
    .venv/bin/python benchmarks/bench_tui_overhead.py --paced spectui/data/demo-trace.jsonl.gz --speed 2

``--paced TRACE`` needs no model: the live screen is fed a recorded run's events at their recorded pace
(divided by ``--speed``), so the UI thread's cost at a real pass rate can be profiled on a loaded machine
where a live run's own pace would be meaningless. It always profiles. The source is a live one (no replay
player), so the app paints at its decode pace (``PacedFaceApp.decoding``) as over the engine. The UI figures
include the app's start (its first full paints, ~0.1 CPU-s): a short run's share is the larger for it.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spectui.contract.control import RunControl  # noqa: E402
from spectui.contract.events import Settings  # noqa: E402
from spectui.contract.prompt import DEFAULT_PROMPT  # noqa: E402
from spectui.text.run import consume  # noqa: E402

MODELS = Path.home() / ".cache" / "spectui" / "models"
UI_CPU: list[float] = []  # UI thread CPU seconds per wall second, per TUI run
PROFILES: list[dict] = []  # per TUI run with --profile: what the UI thread's CPU time went to


class UIProfile:
    """CPU time (time.thread_time) the UI thread spends in wrapped methods, by label.

    Wraps Textual's ``Widget.render_lines`` (one call = one repaint of a widget's changed region, the
    widget's own drawing included), the app's ``refresh_from_state`` and ``ScreenState.snapshot``.
    Calls from other threads and nested calls of the same wrapper are not counted twice."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self.cpu: dict[str, float] = {}
        self.ui_thread = threading.get_ident()
        self._inside: set[tuple[int, str]] = set()
        self._undo: list = []

    def wrap(self, cls, name: str, label) -> None:
        own = name in cls.__dict__  # else inherited (PacedFaceApp.refresh_from_state): wrapped on cls, removed after
        orig = getattr(cls, name)
        prof = self

        def wrapper(obj, *a, **kw):
            inner = (id(obj), name)  # an override calling the wrapped base method: counted once
            if threading.get_ident() != prof.ui_thread or inner in prof._inside:
                return orig(obj, *a, **kw)
            prof._inside.add(inner)
            t0 = time.thread_time()
            try:
                return orig(obj, *a, **kw)
            finally:
                prof._inside.discard(inner)
                key = label(obj) if callable(label) else label
                prof.calls[key] = prof.calls.get(key, 0) + 1
                prof.cpu[key] = prof.cpu.get(key, 0.0) + time.thread_time() - t0

        setattr(cls, name, wrapper)
        self._undo.append((cls, name, orig if own else None))

    def install(self, app_cls) -> None:
        from textual.widget import Widget

        from spectui.views.state import ScreenState

        self.wrap(Widget, "render_lines", lambda w: "repaint " + type(w).__name__)
        self.wrap(app_cls, "refresh_from_state", "app refresh (snapshot+view+fan-out)")
        self.wrap(ScreenState, "snapshot", "  of which ScreenState.snapshot")
        from spectui.tui.shared import panel

        if "_build_strips" in panel.Panel.__dict__:  # drawing (Rich text -> strips), wherever it runs
            for cls in {panel.Panel, *_subclasses(panel.Panel)}:
                if "_build_strips" in cls.__dict__:
                    self.wrap(cls, "_build_strips", lambda w: "  of which draw " + type(w).__name__)
        if "KeepLines" in panel.__dict__:  # a widget handing back its kept lines is still asked
            self.wrap(panel.KeepLines, "render_lines", lambda w: "repaint " + type(w).__name__)
        try:
            from spectui.views import view
        except ImportError:  # the code before the view existed computed the prediction inside a paint
            pass
        else:
            view.prediction_for = self._timed(view.prediction_for, "  of which cost-model prediction")
            from spectui.tui.run import app as app_mod

            app_mod.prediction_for = view.prediction_for

    def _timed(self, fn, label: str):
        prof = self

        def wrapper(*a, **kw):
            t0 = time.thread_time()
            try:
                return fn(*a, **kw)
            finally:
                prof.calls[label] = prof.calls.get(label, 0) + 1
                prof.cpu[label] = prof.cpu.get(label, 0.0) + time.thread_time() - t0

        return wrapper

    def uninstall(self) -> None:
        for cls, name, orig in reversed(self._undo):
            if orig is None:
                delattr(cls, name)
            else:
                setattr(cls, name, orig)
def _subclasses(cls) -> list[type]:
    import spectui.tui.shared.pass_ribbon  # noqa: F401
    import spectui.tui.shared.token_stream  # noqa: F401 - the panels define their own _build_strips

    out = []
    for sub in cls.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out




def run_headless(engine, settings: Settings, n: int) -> float:
    stats = consume(engine.run(DEFAULT_PROMPT, RunControl(settings), n), out=io.StringIO())
    return stats.snapshot().tokens_per_second


def run_tui(engine, settings: Settings, n: int, size=(120, 40), screenshot: str | None = None,
            switch_s: float | None = None, profile: bool = False) -> float:
    import spectui.tui.shared.paced_app as tui_app  # the pace and the GIL switch interval of every paced face
    from spectui.tui.run.app import SpectuiApp

    default_switch = tui_app.GIL_SWITCH_INTERVAL_S
    if switch_s is not None:
        tui_app.GIL_SWITCH_INTERVAL_S = switch_s

    app = SpectuiApp(lambda c, p: engine.run(p, c, n), RunControl(settings), prompt=DEFAULT_PROMPT, n_predict=n)
    prof = UIProfile() if profile else None

    async def drive() -> float:
        shot_taken = screenshot is None
        if prof is not None:
            prof.install(SpectuiApp)
        cpu0, wall0 = time.thread_time(), time.perf_counter()  # the UI (event loop) thread's CPU time
        async with app.run_test(size=size) as pilot:
            while True:
                await asyncio.sleep(0.1)  # the bench's own polling: cheap, and nothing the app asked for
                snap = app.snap
                lp = snap.last_pass if snap is not None else None
                showing_rejection = (lp is not None and app._phase == "verdict"
                                     and any(v != "accepted" for _, v in lp.drafts))
                if not shot_taken and snap is not None and (
                        (snap.stats.n_emitted >= n * 0.6 and showing_rejection) or snap.stats.n_emitted >= n * 0.95):
                    app.save_screenshot(os.path.basename(screenshot), path=os.path.dirname(screenshot) or ".")
                    shot_taken = True
                if snap is not None and snap.end is not None and not app.running:
                    break
            app.refresh_from_state()
            tps = app.snap.stats.tokens_per_second
            cpu, wall = time.thread_time() - cpu0, time.perf_counter() - wall0
            UI_CPU.append(cpu / wall)
            if prof is not None:
                prof.uninstall()
                PROFILES.append({"wall_s": wall, "ui_cpu_s": cpu, "calls": prof.calls, "cpu": prof.cpu,
                                 "paints": getattr(app, "paints", None),
                                 "passes": app.snap.stats.n_passes + 1})
            await pilot.press("q")
        app.stop_engine(10)
        return tps

    try:
        return asyncio.run(drive())
    finally:
        tui_app.GIL_SWITCH_INTERVAL_S = default_switch


def child_tui(args) -> None:
    """One TUI run in this process, built exactly as `spectui --target T --draft D` builds it."""
    from spectui.analysis.cost.draft_policy import PolicyByMode
    from spectui.engine.loop import Engine
    from spectui.engine.thread import EngineThread

    engine = EngineThread(lambda: Engine(args.target, args.draft, n_ctx=2048, threads=args.threads,
                                         draft_policy=PolicyByMode))
    try:
        settings = Settings(draft_max=args.k, temperature=0.0, drafter="model")
        run_tui(engine, settings, 16)  # warm-up, as the headless child gets
        tps = run_tui(engine, settings, args.n, screenshot=args.screenshot, profile=args.profile)
    finally:
        engine.close()
    print(f"TPS {tps:.4f} UICPU {UI_CPU[-1]:.4f}", flush=True)
    if PROFILES:
        print("PROFILE " + json.dumps(PROFILES[-1]), flush=True)


def profile_table(p: dict) -> str:
    """The UI thread's time by what it was spent on (one TUI run)."""
    wall, total = p["wall_s"], p["ui_cpu_s"]
    rows = []
    accounted = 0.0
    for key in sorted(p["cpu"], key=lambda k: -p["cpu"][k]):
        cpu, n = p["cpu"][key], p["calls"][key]
        if not key.startswith("  "):
            accounted += cpu
        rows.append(f"| {key:<42} | {n / wall:8.1f} | {1000 * cpu / max(1, n):8.2f} | {100 * cpu / total:6.1f}% |")
    rows.append(f"| {'rest of Textual (compositor, driver, timers)':<42} | {'':8} | {'':8} | "
                f"{100 * max(0.0, total - accounted) / total:6.1f}% |")
    head = (f"UI thread: {total:.2f} CPU-s over {wall:.1f} s wall = {100 * total / wall:.1f}% of one core; "
            f"{p['passes']} passes ({p['passes'] / wall:.1f}/s)"
            + (f", {p['paints']} paints ({p['paints'] / wall:.1f}/s)" if p.get("paints") is not None else "") + "\n\n"
            f"| {'what':<42} | {'calls/s':>8} | {'ms/call':>8} | {'share':>7} |\n"
            f"|{'-' * 44}|{'-' * 10}|{'-' * 10}|{'-' * 9}|\n")
    return head + "\n".join(rows)


def paced_tui(path: str, speed: float, size=(120, 40)) -> None:
    """The live TUI fed a recorded run at its recorded pace; prints the UI thread's profile."""
    from spectui.recording.player import paced
    from spectui.recording.trace import read_trace
    from spectui.tui.run.app import SpectuiApp

    events = read_trace(path).events
    app = SpectuiApp(lambda c, p: paced(iter(events), speed), RunControl(events[0].settings), prompt=DEFAULT_PROMPT)
    prof = UIProfile()

    async def drive() -> None:
        prof.install(SpectuiApp)
        cpu0, wall0 = time.thread_time(), time.perf_counter()
        async with app.run_test(size=size) as pilot:
            while app.snap is None or app.snap.end is None or app.running:
                await asyncio.sleep(0.1)
            cpu, wall = time.thread_time() - cpu0, time.perf_counter() - wall0
            prof.uninstall()
            p = {"wall_s": wall, "ui_cpu_s": cpu, "calls": prof.calls, "cpu": prof.cpu,
                 "paints": getattr(app, "paints", None), "passes": app.snap.stats.n_passes + 1}
            await pilot.press("q")
        app.stop_engine(10)
        print(f"{Path(path).name} at {speed:g}x, {size[0]}x{size[1]}, live screen fed at the recorded pace\n")
        print(profile_table(p))
        print(f"\nload average: {open('/proc/loadavg').read().strip()}")

    asyncio.run(drive())


def child_headless(args) -> None:
    """One headless run in this process: main thread, as `spectui --headless` runs it."""
    from spectui.analysis.cost.draft_policy import PolicyByMode
    from spectui.engine.loop import Engine

    engine = Engine(args.target, args.draft, n_ctx=2048, threads=args.threads, draft_policy=PolicyByMode)
    try:
        settings = Settings(draft_max=args.k, temperature=0.0, drafter="model")
        run_headless(engine, settings, 16)  # warm-up
        tps = run_headless(engine, settings, args.n)
    finally:
        engine.close()
    print(f"TPS {tps:.4f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--target", default=str(MODELS / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"))
    ap.add_argument("--draft", default=str(MODELS / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("-k", type=int, default=2)
    ap.add_argument("-t", "--threads", type=int, default=None)
    ap.add_argument("--screenshot", default=None,
                    help="save an SVG of a TUI run (past 60%% of the tokens, showing a rejected draft)")
    ap.add_argument("--profile", action="store_true", help="per TUI run: what the UI thread's CPU time went to")
    ap.add_argument("--paced", default=None, metavar="TRACE", help="no models: profile the TUI fed TRACE at its pace")
    ap.add_argument("--speed", type=float, default=1.0, help="with --paced: the recorded pace times this")
    ap.add_argument("--size", default="120x40", help="terminal size for the TUI runs (COLSxROWS)")
    ap.add_argument("--child", choices=["tui", "headless"], default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.paced:
        cols, rows = (int(v) for v in args.size.split("x"))
        return paced_tui(args.paced, args.speed, (cols, rows))
    if args.child == "tui":
        return child_tui(args)
    if args.child == "headless":
        return child_headless(args)

    import subprocess

    base = [sys.executable, __file__, "--target", args.target, "--draft", args.draft, "-n", str(args.n),
            "-k", str(args.k)] + (["-t", str(args.threads)] if args.threads else [])
    print(f"{Path(args.target).name} + {Path(args.draft).name}; k={args.k} n={args.n} temp=0 rounds={args.rounds}; "
          "each run in its own process (models loaded as the CLI loads them)", flush=True)
    modes = ["headless", "tui"]
    res: dict[str, list[float]] = {m: [] for m in modes}
    ui_cpu: list[float] = []
    for r in range(args.rounds):
        order = modes if r % 2 == 0 else modes[::-1]  # alternate which goes first
        for mode in order:
            extra = ["--screenshot", args.screenshot] if (mode == "tui" and r == 0 and args.screenshot) else []
            if mode == "tui" and args.profile:
                extra.append("--profile")
            out = subprocess.run(base + ["--child", mode] + extra, capture_output=True, text=True, check=True).stdout
            line = [ln for ln in out.splitlines() if ln.startswith("TPS ")][-1].split()
            res[mode].append(float(line[1]))
            if mode == "tui":
                ui_cpu.append(float(line[3]))
            print(f"round {r + 1} {mode:8s} {res[mode][-1]:6.2f} tok/s"
                  + (f"   UI thread {100 * ui_cpu[-1]:.1f}% of a core" if mode == "tui" else ""), flush=True)
            for ln in out.splitlines():
                if ln.startswith("PROFILE "):
                    print("\n" + profile_table(json.loads(ln[len("PROFILE "):])) + "\n", flush=True)
    h, t = statistics.median(res["headless"]), statistics.median(res["tui"])
    print(f"\nmedian decode tok/s   headless {h:.2f}   tui {t:.2f}")
    print(f"tui/headless {t / h:.3f} ({100 * (1 - t / h):+.1f}% slower; target: at most 3%)")
    print("UI thread CPU while the TUI ran: " + ", ".join(f"{100 * c:.1f}%" for c in ui_cpu) + " of one core"
          f" (median {100 * statistics.median(ui_cpu):.1f}%; target: under 4%)")
    if os.path.exists("/proc/loadavg"):
        print(f"load average after the runs: {open('/proc/loadavg').read().strip()}")
    else:
        print("")


if __name__ == "__main__":
    main()
