"""`spectui replay FILE --headless [--json]`: the same output as the headless face on the same events."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from spectui.events import RunStarted
from spectui.headless import consume
from spectui.replay import mark_replay, paced, replay_headless
from spectui.trace import TraceWriter, read_trace, synthetic_run, write_trace

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EVENTS = list(synthetic_run(40, seed=7))


def spectui(*args: str, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": REPO}
    return subprocess.run([sys.executable, "-c", "from spectui.cli import main; main()", *args], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=120, **kw)


def _live_output(events, as_json):
    out = io.StringIO()
    consume(iter(events), out, as_json=as_json)
    return out.getvalue()


@pytest.mark.parametrize("as_json", [False, True])
def test_headless_replay_prints_what_the_live_face_printed(tmp_path, as_json):
    p = tmp_path / "t.jsonl"
    write_trace(p, EVENTS)
    out = io.StringIO()
    replay_headless(p, out, as_json=as_json)
    assert out.getvalue() == _live_output(EVENTS, as_json)
    if as_json:
        d = json.loads(out.getvalue())
        assert d["n_drafted"] > 0 and len(d["passes"]) == 41


def test_replay_cli_headless_and_json(tmp_path):
    p = tmp_path / "t.jsonl.gz"
    write_trace(p, EVENTS)
    r = spectui("replay", str(p), "--headless")
    assert r.returncode == 0, r.stderr
    assert r.stdout == _live_output(EVENTS, False)
    assert "n_accept  =" in r.stdout and "acceptance by position" in r.stdout
    r = spectui("replay", str(p), "--headless", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == json.loads(_live_output(EVENTS, True))


def test_replay_of_a_killed_recording_warns_and_summarises_what_is_there(tmp_path):
    p = tmp_path / "killed.jsonl"
    w = TraceWriter(p)
    for ev in EVENTS[:20]:
        w.write(ev)
    w.flush()
    with open(p, "ab") as fh:  # half a line, as SIGKILL mid-write leaves it
        fh.write(b'{"type": "pass", "index": 19, "prefill": fal')
    r = spectui("replay", str(p), "--headless", "--json")
    assert r.returncode == 0, r.stderr
    assert "spectui: warning:" in r.stderr and "truncated line" in r.stderr
    d = json.loads(r.stdout)
    assert d == json.loads(_live_output(EVENTS[:20], True))
    assert d["stop_reason"] == ""  # no end event: the run never ended


@pytest.mark.parametrize(
    "content,message",
    [
        (b"not a trace\n", "not JSON, not a spectui trace (this spectui reads trace version 1)"),
        (b'{"schema": "spectui.trace", "version": 9}\n',
         "trace version 9 (written by a newer spectui); this spectui reads trace version 1"),
        (b'{"schema": "other"}\n', "schema 'other' is not a spectui trace"),
    ],
)
def test_bad_trace_is_one_line_exit_2(tmp_path, content, message):
    p = tmp_path / "bad.jsonl"
    p.write_bytes(content)
    for extra in (["--headless"], []):
        r = spectui("replay", str(p), *extra)
        assert r.returncode == 2
        assert r.stdout == ""
        assert r.stderr.startswith("spectui: error: ") and message in r.stderr
        assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def test_missing_file_and_bad_options(tmp_path):
    r = spectui("replay", str(tmp_path / "nope.jsonl"), "--headless")
    assert r.returncode == 2 and "no such file" in r.stderr and r.stderr.count("\n") == 1
    p = tmp_path / "t.jsonl"
    write_trace(p, EVENTS)
    r = spectui("replay", str(p), "--json")
    assert r.returncode == 2 and "--json needs --headless" in r.stderr
    r = spectui("replay", str(p), "--headless", "--speed", "fast")
    assert r.returncode == 2 and "bad replay speed 'fast'" in r.stderr


def test_paced_replay_sleeps_the_recorded_gaps_divided_by_speed():
    slept: list[float] = []
    out = list(paced(iter(EVENTS), 4.0, sleep=slept.append))
    assert out == EVENTS
    total = sum(slept)
    recorded = EVENTS[-2].timing.t_end - EVENTS[1].timing.t_end  # first pass to last pass
    assert total == pytest.approx(recorded / 4.0, rel=1e-9)
    assert list(paced(iter(EVENTS), float("inf"), sleep=slept.append)) == EVENTS


def test_mark_replay_only_touches_the_start_event():
    marked = list(mark_replay(EVENTS))
    assert isinstance(marked[0], RunStarted) and marked[0].replay and not EVENTS[0].replay
    assert marked[1:] == EVENTS[1:]
