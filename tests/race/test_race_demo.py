"""The demo's race act (act 3): bundled recordings of the real Qwen pair on this project's 2-core CPU
(demos/record_race.py), one prompt, the target alone against prompt lookup (wins) and the 0.5B draft model
(loses); the screen says why from the numbers; --act 3 plays it alone (headless: its reason then the race's
outcome), and it loops like the replay acts."""

from __future__ import annotations

import io
import os
import subprocess
import sys

from in_process import both_ways

from spectui.commands.demo import ACTS, RACE_TRACES, load_race_act, make_race_demo_app, race_paths, race_reason
from spectui.recording.trace import read_trace
from spectui.text.race import print_outcome
from spectui.views.race_outcome import outcome

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ACT = ACTS[2]


def test_race_act_recordings_are_small_real_runs_of_one_prompt():
    assert ACT.race == RACE_TRACES
    traces = [read_trace(p) for p in race_paths(ACT)]
    assert len({t.header["prompt"] for t in traces}) == 1
    for t in traces:
        assert "1.5b" in t.header["models"]["target"]["path"].lower()  # the real Qwen2.5-Coder target
        assert t.header["race"]["sequential"] is True
        assert t.events[-1].type == "end"
    for p in race_paths(ACT):
        assert p.endswith(".gz") and os.path.getsize(p) < 200_000
    s = [t.header["params"]["settings"] for t in traces]
    assert (s[0]["draft_max"], s[1]["drafter"], s[2]["drafter"]) == (0, "ngram", "model")


def test_race_act_lookup_wins_draft_model_loses_and_says_why():
    race = load_race_act(ACT)
    out = outcome(race)
    a, b, c = out.lanes
    assert out.winner == 1  # prompt lookup finishes first
    assert b.seconds < a.seconds < c.seconds  # and the draft model after the target alone
    assert out.divergence.same or out.divergence.at > 30  # greedy: the same text (up to a near tie)
    why = out.why()
    assert why[0].startswith("B wins, ") and why[1].startswith("C loses, ")
    reason = race_reason(ACT, race)
    assert reason.startswith("Act 3 - the race") and "B finished first" in reason and "C loses" in reason


def spectui(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": REPO}
    return subprocess.run([sys.executable, "-m", "spectui", *args], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=120)


cli = both_ways(spectui)  # the act's output: in this process in the fast lane (tests/in_process.py)


def test_demo_act_3_headless(cli):
    r = cli("demo", "--headless", "--act", "3")
    assert r.returncode == 0, r.stderr
    race = load_race_act(ACT)
    buf = io.StringIO()
    print_outcome(race, outcome(race), buf)
    assert r.stdout == race_reason(ACT, race) + "\n\n" + buf.getvalue()


async def test_race_act_loops_and_hands_on_to_the_next_act():
    race = load_race_act(ACT)
    app = make_race_demo_app(race, speed="max", loop_hold_s=0.2, next_act=True)
    async with app.run_test(size=(120, 36)) as pilot:
        for _ in range(300):
            await pilot.pause(0.1)
            if app.return_value is not None:
                break
        assert app.return_value == "next" and app.loops == 1
    app = make_race_demo_app(race, speed="max", loop_hold_s=0.2)
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(300):
            await pilot.pause(0.1)
            if app.loops >= 2:
                break
        assert app.loops >= 2 and "recordings" in app.title


def test_race_act_plays_in_under_a_minute_at_its_default_speed():
    from spectui.commands.demo import RACE_ACT_S, race_act_speed

    race = load_race_act(ACT)
    sp = race_act_speed(race)
    assert sp in (1.0, 2.0, 4.0, 8.0)
    assert race.end_s / sp <= RACE_ACT_S or sp == 8.0
    assert sp == 1.0 or race.end_s / (sp / 2) > RACE_ACT_S  # the slowest speed that does
