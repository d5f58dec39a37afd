"""The race's model (spectui/race, no Textual) and its headless face: lanes on one clock, finish times from
the traces, the winner and margin, same tokens / where they part, prompts checked, bad traces; the
`spectui race --headless [--json]` command in a subprocess (its exit statuses)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pytest
from in_process import both_ways, spectui_in_process
from race_traces import WORDS, run_events, write_run

from spectui.contract.errors import SpectuiError
from spectui.contract.events import PassEvent, RunStarted, SettingsChanged
from spectui.recording.trace import write_trace
from spectui.views.race_outcome import outcome
from spectui.views.race_timeline import Race, load_race, make_lane

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def spectui(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": REPO, "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-c", "from spectui.cli import main; main()", *args],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=120)


def in_process(*args: str) -> subprocess.CompletedProcess:
    """``spectui`` above in this process (tests/in_process.py)."""
    return spectui_in_process(*args, env={"NO_COLOR": "1"})


cli = both_ways(spectui, in_process)  # exit status and lines only: in this process in the fast lane


@pytest.fixture
def pair(tmp_path):
    """A: 40 k = 0 passes of 50 ms (2.00 s of decode); B: 3 tokens a pass, 80 ms each (14 passes, 1.12 s)."""
    a = write_run(tmp_path / "a.jsonl", per_pass=1, pass_ms=50.0, ttft_ms=80.0)
    b = write_run(tmp_path / "b.jsonl.gz", per_pass=3, pass_ms=80.0, ttft_ms=300.0)
    return a, b


def test_finish_times_are_each_traces_decode_time(pair):
    race = load_race(list(pair))
    a, b = race.lanes
    assert a.finish_s == pytest.approx(40 * 0.050)
    assert b.finish_s == pytest.approx(14 * 0.080)
    # from the start: the time to first token is raced too
    race = load_race(list(pair), from_start=True)
    assert race.lanes[0].finish_s == pytest.approx(0.080 + 2.0)
    assert race.lanes[1].finish_s == pytest.approx(0.300 + 1.12)


def test_winner_margin_and_the_same_tokens(pair):
    race = load_race(list(pair))
    out = outcome(race)
    assert out.winner == 1
    assert out.margin_s == pytest.approx(2.0 - 1.12)
    assert out.ratio == pytest.approx(2.0 / 1.12)
    assert out.verdict() == "B finished first, 0.88 s sooner (1.79x)"
    assert out.divergence.same and out.divergence.common == 41
    a, b = out.lanes
    assert (a.tokens, b.tokens) == (41, 41)
    assert a.tokens_per_second == pytest.approx(20.0) and b.tokens_per_second == pytest.approx(40 / 1.12)
    assert a.ttft_ms == pytest.approx(80.0) and b.ttft_ms == pytest.approx(300.0)
    assert a.drafted == 0 and b.acceptance_rate == 1.0
    # why, from the numbers: tokens per pass over what a pass costs in target-alone passes
    (why,) = out.why()
    assert why == "B wins, 1.79x A's tokens/s: 2.86 tokens a pass / 1.00, each pass 1.60x A's (80 vs 50 ms)"


def test_a_trace_raced_against_itself_is_a_tie(pair):
    race = load_race([pair[0], pair[0]])
    out = outcome(race)
    assert out.winner == -1 and out.margin_s == 0.0 and out.ratio == 1.0
    assert out.verdict().startswith("a tie")
    assert out.divergence.same


def test_from_start_can_change_the_winner(tmp_path):
    # A decodes faster but starts 2 s later: from the first token A wins, from the start B does
    a = write_run(tmp_path / "a.jsonl", per_pass=1, pass_ms=20.0, ttft_ms=2000.0)
    b = write_run(tmp_path / "b.jsonl", per_pass=1, pass_ms=40.0, ttft_ms=10.0)
    assert outcome(load_race([a, b])).winner == 0
    assert outcome(load_race([a, b], from_start=True)).winner == 1


def test_where_the_tokens_part(tmp_path):
    words = WORDS[:21]
    other = list(words)
    other[7] = " elsewhere"
    a = write_run(tmp_path / "a.jsonl", words=words)
    b = write_run(tmp_path / "b.jsonl", words=other, per_pass=2)
    d = outcome(load_race([a, b])).divergence
    assert not d.same and d.at == 7 and d.common == 7
    assert d.texts == (" w7", " elsewhere")
    assert d.text(("A", "B")) == "the tokens part at token 8 (A ' w7' vs B ' elsewhere') after 7 alike"
    c = write_run(tmp_path / "c.jsonl", words=words[:15])
    d = outcome(load_race([a, c])).divergence
    assert not d.same and d.at == -1 and d.common == 15


def test_due_follows_each_lanes_own_times(pair):
    race = load_race(list(pair))
    a, b = race.lanes
    # race time 0: both start events and both prefills (the clock starts at the first token)
    assert race.due(0.0) == [2, 2]
    assert race.due(0.26) == [2 + 5, 2 + 3]  # A: 5 passes of 50 ms; B: 3 of 80 ms
    assert race.due(10.0) == [len(a.events), len(b.events)]
    # the player's events are in race order, led by the start gun, with race times
    evs = race.player_events()
    assert isinstance(evs[0], SettingsChanged) and evs[0].t == 0.0
    times = [e.timing.t_end for e in evs if isinstance(e, PassEvent)]
    assert times == sorted(times) and times[-1] == pytest.approx(2.0)
    # positions map back to the lanes' own events (their own times untouched)
    li, j = race.locate(len(evs) - 1)
    assert race.lanes[li].events[j] is not evs[-1] or not isinstance(evs[-1], PassEvent)
    split = race.split(len(evs))
    assert [len(x) for x in split] == [len(a.events), len(b.events)]
    assert race.time_at(len(evs)) == pytest.approx(2.0)


def test_labels_come_from_the_headers(pair):
    a, b = load_race(list(pair)).lanes
    assert a.label.startswith("A: target alone T=0 · target-1.5b")
    assert b.label.startswith("B: draft model k=2 T=0 · target-1.5b + draft-0.5b")
    assert "2 threads" in b.label  # the machine, from the header


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_different_prompts_are_refused_unless_asked(tmp_path, pair):
    c = write_run(tmp_path / "c.jsonl", prompt="another prompt")
    with pytest.raises(SpectuiError, match="different prompts"):
        load_race([pair[0], c])
    race = load_race([pair[0], c], any_prompt=True)
    assert race.any_prompt
    r = spectui("race", pair[0], c, "--headless")
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and "--any-prompt" in r.stderr
    r = spectui("race", pair[0], c, "--headless", "--any-prompt")
    assert r.returncode == 0 and "different prompts (--any-prompt)" in r.stdout


def test_a_cut_off_trace_races_as_far_as_it_goes(tmp_path, pair, cli):
    events = run_events(per_pass=1, pass_ms=50.0, end=False)
    p = tmp_path / "cut.jsonl"
    write_trace(p, events)
    with open(p, "ab") as fh:
        fh.write(b'{"type": "pass", "index": 9')  # a half-written last line (a killed run)
    r = cli("race", pair[1], str(p), "--headless")
    assert r.returncode == 0, r.stderr
    assert "(trace cut off)" in r.stdout
    assert "warning" in r.stderr


@pytest.mark.parametrize("bad, message", [
    ("missing.jsonl", "missing.jsonl"),
    ("empty.jsonl", "empty.jsonl"),
    ("nopasses.jsonl", "no passes"),
])
def test_bad_traces_are_one_line_errors(tmp_path, pair, bad, message, cli):
    (tmp_path / "empty.jsonl").write_bytes(b"")
    write_trace(tmp_path / "nopasses.jsonl", [e for e in run_events() if not isinstance(e, PassEvent)])
    r = cli("race", pair[0], str(tmp_path / bad), "--headless")
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and message in r.stderr, r.stderr


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_usage_errors_exit_2(pair):
    for args in (["race", pair[0], "--headless"], ["race", *pair, pair[0], pair[1], "--headless"],
                 ["race", *pair, "--speed", "11"]):
        r = spectui(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_headless_text_and_json(pair):
    r = spectui("race", *pair, "--headless")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "race of 2 recordings, clock from each run's first token (TTFT shown, not raced)"
    row_a = next(x for x in lines if x.startswith("A "))
    assert row_a.split() == ["A", "41", "2.00", "20.00", "80", "-", "1.00"]
    assert "B finished first, 0.88 s sooner (1.79x)" in lines
    assert "same 41 tokens" in lines
    r = spectui("race", *pair, "--headless", "--json", "--from-start")
    d = json.loads(r.stdout)
    assert d["winner"] == "B" and d["from_start"] and d["same_tokens"] and d["diverge_at"] is None
    assert d["lanes"][0]["seconds"] == pytest.approx(2.08)
    assert d["lanes"][1]["seconds"] == pytest.approx(1.42)
    assert d["margin_s"] == pytest.approx(0.66)
    assert d["lanes"][1]["ttft_ms"] == pytest.approx(300.0)
    # --json is JSON on stdout, no TUI, in every command: the same object without --headless
    assert spectui("race", *pair, "--json", "--from-start").stdout == r.stdout


def test_three_lanes(tmp_path, pair):
    c = write_run(tmp_path / "c.jsonl", per_pass=2, pass_ms=60.0)
    out = outcome(load_race([*pair, c]))
    assert [r.name for r in out.lanes] == ["A", "B", "C"]
    assert out.winner == 1  # C: 20 passes of 60 ms = 1.2 s; B 1.12 s
    assert out.margin_s == pytest.approx(1.2 - 1.12)


def test_gzip_traces_race_and_an_attach_trace_is_refused(tmp_path, pair):
    raw = open(pair[0], "rb").read()
    gz = tmp_path / "a2.jsonl.gz"
    gz.write_bytes(gzip.compress(raw))
    assert outcome(load_race([str(gz), pair[0]])).winner == -1
    from spectui.contract.events import AttachStarted, Target

    att = tmp_path / "att.jsonl"
    write_trace(att, [AttachStarted(targets=(Target(url="http://127.0.0.1:1"),))])
    with pytest.raises(SpectuiError, match="attach trace"):
        load_race([str(att), pair[0]])


def test_make_lane_needs_passes():
    with pytest.raises(SpectuiError, match="no passes"):
        make_lane("A", "x.jsonl", {}, [RunStarted()])
    with pytest.raises(SpectuiError):
        Race([])
