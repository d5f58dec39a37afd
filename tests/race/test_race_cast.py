"""`spectui cast --race A B -o race.cast`: the race in asciicast v2, played on test_cast's small terminal
emulator: the panes fill at their own pace on the cast's clock, the finish line at the end; inputs are
never overwritten."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from commands.test_cast import load_cast, screen_at
from race_traces import write_run

from spectui.commands.cast import LEAD_IN_S, race_paint_times, render_race_cast
from spectui.views.race_timeline import load_race

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def pair(tmp_path):
    a = write_run(tmp_path / "a.jsonl", per_pass=1, pass_ms=50.0)  # 2.00 s
    b = write_run(tmp_path / "b.jsonl.gz", per_pass=3, pass_ms=80.0)  # 1.12 s
    return a, b


def test_plan_follows_the_race_clock(pair):
    race = load_race(list(pair))
    plan = race_paint_times(race, speed=2.0)
    times = [t for t, _ in plan]
    assert times == sorted(times) and plan[0] == (0.0, 0)
    last_arrival = LEAD_IN_S + race.end_s / 2.0
    assert max(t for t, n in plan if n <= len(race.merged)) < last_arrival + 1e-6
    assert plan[-1][1] == len(race.merged) + 1  # every event and the start gun delivered by the end


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_race_cast_shows_both_panes_and_the_finish(tmp_path, pair):
    out = tmp_path / "race.cast"
    info = render_race_cast(load_race(list(pair)), out, cols=100, rows=30, speed=1.0)
    header, events = load_cast(out)
    assert header["version"] == 2 and (header["width"], header["height"]) == (100, 30)
    assert header["title"] == "spectui race: target alone T=0 vs draft model k=2 T=0"
    assert info.n_passes == 41 + 15
    # half-way through B's run: B has more text than A (3 tokens a pass against 1, in 80 ms against 50)
    mid = screen_at(header, events, LEAD_IN_S + 0.6)
    assert "RACING" in mid and "FINISH " not in mid
    b_words = max(int(w[1:]) for w in mid.split() if w.startswith("w") and w[1:].isdigit())
    assert b_words >= 18
    # B finished at 1.12 s, A not yet
    after_b = screen_at(header, events, LEAD_IN_S + 1.5)
    assert "FINISHED 1st 1.12 s" in after_b and "FINISHED 2nd" not in after_b
    end = screen_at(header, events, header["duration"])
    assert "FINISH  B finished first, 0.88 s sooner (1.79x) · same 41 tokens" in end
    assert "FINISHED 2nd 2.00 s" in end


@pytest.mark.slow  # four casts rendered
def test_race_cast_cli_never_overwrites_an_input(tmp_path, pair):
    env = {**os.environ, "PYTHONPATH": REPO}
    before = open(pair[0], "rb").read()
    cmd = [sys.executable, "-c", "from spectui.cli import main; main()", "cast", "--race", *pair]
    r = subprocess.run([*cmd, "-o", pair[0]], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2 and "one of this run's inputs" in r.stderr
    assert open(pair[0], "rb").read() == before
    r = subprocess.run([*cmd, "-o", str(tmp_path / "r.cast"), "--cols", "80", "--rows", "24"], capture_output=True,
                       text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stderr and (tmp_path / "r.cast").stat().st_size > 0
    r = subprocess.run([sys.executable, "-c", "from spectui.cli import main; main()", "cast", *pair, "-o",
                        str(tmp_path / "x.cast")], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2 and "--race" in r.stderr
