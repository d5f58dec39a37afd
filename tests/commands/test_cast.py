"""`spectui cast`: asciicast v2 format, and the frames (played on a small terminal emulator) show the
replay screen: panel titles, the replay banner, the recorded tokens, the settings as they change."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from rich.cells import cell_len

from spectui.commands.cast import LEAD_IN_S, render_cast
from spectui.contract.events import PassEvent, SettingsChanged
from spectui.recording.player import mark_replay
from spectui.recording.trace import synthetic_run, write_trace

pytestmark = pytest.mark.slow  # real casts (the app through a capture driver), a real engine

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EVENTS = list(mark_replay(synthetic_run(24, seed=11)))

_SEQ = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]|([^\x1b])", re.S)


class Screen:
    """Just enough of a VT100 to replay Textual's output: cursor addressing, clear, text (wide chars)."""

    def __init__(self, cols: int, rows: int) -> None:
        self.cols, self.rows = cols, rows
        self.cells = [[" "] * cols for _ in range(rows)]
        self.x = self.y = 0

    def feed(self, data: str) -> None:
        for m in _SEQ.finditer(data):
            params, final, ch = m.group(1), m.group(2), m.group(3)
            if ch is None and final is None:  # OSC or charset selection: nothing on screen
                continue
            if ch is not None:
                if ch == "\n":
                    self.y = min(self.rows - 1, self.y + 1)
                elif ch == "\r":
                    self.x = 0
                else:
                    w = cell_len(ch)
                    if 0 <= self.y < self.rows and 0 <= self.x < self.cols:
                        self.cells[self.y][self.x] = ch
                        if w == 2 and self.x + 1 < self.cols:
                            self.cells[self.y][self.x + 1] = ""
                    self.x += w
            elif final == "H":
                parts = [int(p) if p else 1 for p in (params or "1;1").split(";")]
                self.y, self.x = parts[0] - 1, (parts[1] if len(parts) > 1 else 1) - 1
            elif final == "J" and params == "2":
                self.cells = [[" "] * self.cols for _ in range(self.rows)]
            elif final in "ABCD" and not params.startswith("?"):
                n = int(params or 1)
                self.y += {"A": -n, "B": n}.get(final, 0)
                self.x += {"C": n, "D": -n}.get(final, 0)

    def text(self) -> str:
        return "\n".join("".join(row) for row in self.cells)


def load_cast(path):
    lines = open(path, encoding="utf-8").read().splitlines()
    return json.loads(lines[0]), [json.loads(x) for x in lines[1:]]


def screen_at(header, events, t: float) -> str:
    s = Screen(header["width"], header["height"])
    for when, _kind, data in events:
        if when > t:
            break
        s.feed(data)
    return s.text()


@pytest.fixture(scope="module")
def cast_file(tmp_path_factory):
    out = tmp_path_factory.mktemp("cast") / "run.cast"
    info = render_cast(EVENTS, out, cols=120, rows=36, speed=2.0)
    return out, info


def test_asciicast_v2_format(cast_file):
    path, info = cast_file
    header, events = load_cast(path)
    assert header["version"] == 2 and header["width"] == 120 and header["height"] == 36
    assert isinstance(header["timestamp"], int) and "REPLAY of synthetic target / synthetic draft" in header["title"]
    assert len(events) == info.n_events > 3
    last = -1.0
    for ev in events:
        assert isinstance(ev, list) and len(ev) == 3
        t, kind, data = ev
        assert isinstance(t, (int, float)) and t >= last
        assert kind == "o" and isinstance(data, str) and data
        last = t
    # the timeline follows the recording at 2x, from the first pass on (as the TUI's replay does)
    passes = [e for e in EVENTS if isinstance(e, PassEvent)]
    span = (passes[-1].timing.t_end - passes[0].timing.t_end) / 2
    assert last >= LEAD_IN_S + span
    assert header["duration"] == pytest.approx(events[-1][0])
    assert LEAD_IN_S + span < header["duration"] < LEAD_IN_S + span + 5


def test_frames_show_panels_banner_and_the_recorded_text(cast_file):
    path, _ = cast_file
    header, events = load_cast(path)
    final = screen_at(header, events, float("inf"))
    assert "REPLAY of synthetic target / synthetic draft, recorded 2023-11-14 22:13 UTC" in final
    assert "acceptance by draft position" in final
    assert "tokens/s" in final
    # the token stream holds the run's text (its last line at least, as the screen wraps it)
    text = "".join(t.text for e in EVENTS if isinstance(e, PassEvent) for t in e.emitted)
    last_words = [w for w in re.split(r"\s+", text.strip().splitlines()[-1]) if len(w) > 3][-3:]
    assert last_words and all(w in final for w in last_words), (last_words, final)


def test_frames_change_over_time(cast_file):
    path, _ = cast_file
    header, events = load_cast(path)
    passes = [e for e in EVENTS if isinstance(e, PassEvent)]
    def at(p):  # when pass p reaches the screen: recorded time since the first pass / speed
        return LEAD_IN_S + (p.timing.t_end - passes[0].timing.t_end) / 2

    arrive = at(passes[2])
    early = screen_at(header, events, arrive + 0.01)
    settled = screen_at(header, events, at(passes[3]) - 0.001)  # just before pass 3
    late = screen_at(header, events, float("inf"))
    assert early != late
    assert "#2 " in early and "prefill" in early and "#3 " not in early
    assert "?1:" in early  # drafts first show as pending ...
    assert "?1:" not in settled and "#2 " in settled  # ... then take their verdict glyphs
    # the text so far is on screen, and what comes later is not yet
    so_far = "".join(t.text for p in passes[:3] for t in p.emitted).split()
    assert so_far and all(w in settled for w in so_far)
    # the settings change half-way is on screen after it happened (k shown on the status line)
    change = next(e for e in EVENTS if isinstance(e, SettingsChanged))
    assert re.search(rf"k\D{{0,3}}{change.new.draft_max}\b", late), late


def test_cast_cli(tmp_path):
    trace = tmp_path / "t.jsonl"
    write_trace(trace, synthetic_run(8, seed=1))
    out = tmp_path / "o.cast"
    env = {**os.environ, "PYTHONPATH": REPO}
    r = subprocess.run([sys.executable, "-c", "from spectui.cli import main; main()", "cast", str(trace), "-o",
                        str(out), "--cols", "80", "--rows", "24", "--speed", "4"],
                       capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    header, events = load_cast(out)
    assert (header["width"], header["height"]) == (80, 24)
    assert "acceptance" in screen_at(header, events, float("inf"))
    for args, msg in [(["--speed", "max"], "finite --speed"), (["--theme", "nope"], "nope"),
                      (["--cols", "0"], "'--cols': 0 is not in the range")]:
        r = subprocess.run([sys.executable, "-c", "from spectui.cli import main; main()", "cast", str(trace), "-o",
                            str(out), *args], capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
        assert r.returncode == 2 and r.stderr.startswith("spectui: error:") and msg in r.stderr, r.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text("nope\n")
    r = subprocess.run([sys.executable, "-c", "from spectui.cli import main; main()", "cast", str(bad), "-o",
                        str(out)], capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
    assert r.returncode == 2 and "not a spectui trace" in r.stderr


def test_cast_functions_run_without_textual(tmp_path):
    """spectui.commands.cast plans the frames, checks its arguments and writes the file without ever loading
    Textual (only spectui.tui.run.cast_render, which renders, does): run them, then look at sys.modules."""
    code = r"""
import json, sys
from spectui.commands.cast import check_cast_args, frames, render_cast, write_asciicast
from spectui.contract.errors import SpectuiError
from spectui.recording.trace import synthetic_run
evs = list(synthetic_run(6, seed=2))
steps = frames(evs, 2.0)
assert len(steps) >= len(evs) and {p for _, _, p in steps} == {"pending", "verdict", "settled"}, steps
assert [t for _, t, _ in steps] == sorted(t for _, t, _ in steps)
for bad in [(0, 24, 1.0, evs), (80, 24, float("inf"), evs), (80, 24, 1.0, evs[:1])]:
    try:
        check_cast_args(*bad)
    except SpectuiError:
        pass
    else:
        raise AssertionError(bad)
try:
    render_cast(evs, sys.argv[1], cols=2000)
except SpectuiError:
    pass
else:
    raise AssertionError("cols 2000 accepted")
n, duration = write_asciicast(sys.argv[1], 80, 24, [(0.5, "a"), (0.5, "b"), (1.0, "c")], 1.0, evs[0])
lines = open(sys.argv[1]).read().splitlines()
header = json.loads(lines[0])
assert n == 4 == len(lines) - 1 and duration == header["duration"] == 4.0
assert header["title"].startswith("spectui REPLAY of synthetic target") and json.loads(lines[2]) == [0.5, "o", "ab"]
print(sorted(m for m in sys.modules if m.split(".")[0] == "textual"))
"""
    env = {**os.environ, "PYTHONPATH": REPO}
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "t.cast")], capture_output=True, text=True,
                       cwd=REPO, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_cast_inspect_holds_the_token_inspector_after_its_pass(tmp_path, make_engine, tiny_target, tiny_draft_noisy):
    """``--inspect PASS[:TOKEN]``: once the pass has settled, the TUI's inspector shows that token (the same
    text as ``spectui.views.inspector_model.render_view``) for HOLD_INSPECT_S seconds, then the replay goes on."""
    from spectui.commands.cast import HOLD_INSPECT_S, frames, inspect_plan, parse_inspect
    from spectui.contract.control import RunControl
    from spectui.contract.errors import SpectuiError
    from spectui.contract.events import Settings
    from spectui.views.inspector_model import explain

    engine = make_engine(tiny_target, tiny_draft_noisy)
    evs = list(mark_replay(engine.run("the cat sat on", RunControl(Settings(draft_max=3, temperature=0.8, seed=3)),
                                      24)))
    ev = next(e for e in evs if isinstance(e, PassEvent) and e.index == 3)
    assert ev.inspect
    plain = render_cast(evs, tmp_path / "plain.cast", cols=100, rows=30, speed=4.0)
    info = render_cast(evs, tmp_path / "insp.cast", cols=100, rows=30, speed=4.0, inspect="3:1")
    assert info.duration_s == pytest.approx(plain.duration_s + HOLD_INSPECT_S)
    steps, (at, index, slot, hold) = inspect_plan(evs, frames(evs, 4.0), *parse_inspect("3:1"))
    assert (index, slot, hold) == (3, 0, HOLD_INSPECT_S)
    t_open = steps[at][1]
    header, events = load_cast(tmp_path / "insp.cast")
    during = screen_at(header, events, t_open + hold / 2)
    assert "token inspector" in during and "pass 3 · draft 1" in during
    view = explain(ev, 0)
    assert f"draft q(x) {view.q:.3f}" in during and "rule:" in during
    after = screen_at(header, events, t_open + hold + 0.01)
    assert "token inspector" not in after
    # no TOKEN: the first rejected draft, else the target's token
    _, (_, _, slot, _) = inspect_plan(evs, frames(evs, 4.0), 3, None)
    rejected = [i for i, d in enumerate(ev.drafts) if d.verdict == "rejected"]
    assert slot == (rejected[0] if rejected else len(ev.drafts) - (ev.target is None))
    for bad, msg in [("x", "PASS or PASS:TOKEN"), ("3:0", "tokens from 1"), ("999", "no pass 999"),
                     ("3:99", "pass 3 has")]:
        with pytest.raises(SpectuiError, match=msg):
            inspect_plan(evs, frames(evs, 4.0), *parse_inspect(bad))
