"""`spectui replay FILE --headless [--json]`: the same output as the headless face on the same events."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest
from in_process import both_ways, spectui_in_process

from spectui.contract.events import RunStarted
from spectui.recording.player import mark_replay, paced
from spectui.recording.trace import TraceWriter, synthetic_run, write_trace
from spectui.text.replay import replay_headless
from spectui.text.run import consume

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EVENTS = list(synthetic_run(40, seed=7))


def spectui(*args: str, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": REPO}
    return subprocess.run([sys.executable, "-c", "from spectui.cli import main; main()", *args],
                          capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=120, **kw)


def in_process(*args: str) -> subprocess.CompletedProcess:
    """``spectui`` above in this process (tests/in_process.py)."""
    return spectui_in_process(*args)


cli = both_ways(spectui, in_process)  # exit status and lines only: in this process in the fast lane


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


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
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


def test_replay_of_a_killed_recording_warns_and_summarises_what_is_there(tmp_path, cli):
    p = tmp_path / "killed.jsonl"
    w = TraceWriter(p)
    for ev in EVENTS[:20]:
        w.write(ev)
    w.flush()
    with open(p, "ab") as fh:  # half a line, as SIGKILL mid-write leaves it
        fh.write(b'{"type": "pass", "index": 19, "prefill": fal')
    r = cli("replay", str(p), "--headless", "--json")
    assert r.returncode == 0, r.stderr
    assert "spectui: warning:" in r.stderr and "truncated line" in r.stderr
    d = json.loads(r.stdout)
    assert d == json.loads(_live_output(EVENTS[:20], True))
    assert d["stop_reason"] == ""  # no end event: the run never ended


@pytest.mark.parametrize(
    "content,message",
    [
        (b"not a trace\n", "not JSON, not a spectui trace (this spectui reads trace version 1, 2, 3)"),
        (b'{"schema": "spectui.trace", "version": 9}\n',
         "trace version 9 (written by a newer spectui); this spectui reads trace version 1"),
        (b'{"schema": "other"}\n', "schema 'other' is not a spectui trace"),
    ],
)
@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_bad_trace_is_one_line_exit_2(tmp_path, content, message):
    p = tmp_path / "bad.jsonl"
    p.write_bytes(content)
    for extra in (["--headless"], []):
        r = spectui("replay", str(p), *extra)
        assert r.returncode == 2
        assert r.stdout == ""
        assert r.stderr.startswith("spectui: error: ") and message in r.stderr
        assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_missing_file_and_bad_options(tmp_path):
    r = spectui("replay", str(tmp_path / "nope.jsonl"), "--headless")
    assert r.returncode == 2 and "no such file" in r.stderr and r.stderr.count("\n") == 1
    p = tmp_path / "t.jsonl"
    write_trace(p, EVENTS)
    r = spectui("replay", str(p), "--json")  # --json is JSON on stdout, no TUI, in every command
    assert r.returncode == 0 and r.stdout == spectui("replay", str(p), "--headless", "--json").stdout != ""
    r = spectui("replay", str(p), "--headless", "--speed", "fast")
    assert r.returncode == 2 and "Invalid value for '--speed': 'fast' is not a speed" in r.stderr  # at the option


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


# ------------------------------------------------------------------ any readable trace replays cleanly

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from spectui.contract.events import (  # noqa: E402
    ACCEPTED,
    AUTO_MODES,
    BONUS,
    CORRECTION,
    DISCARDED,
    PLAIN,
    REJECTED,
    DraftToken,
    ModelInfo,
    PassEvent,
    RunEnded,
    Settings,
    SettingsChanged,
    TargetToken,
    Timing,
    Token,
)
from spectui.engine.drafters import names as drafter_names  # noqa: E402

_num = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6)
_int = st.integers(-5, 10**6)
_settings = st.builds(Settings, draft_max=st.integers(-2, 40), temperature=_num,
                      drafter=st.sampled_from(drafter_names()), seed=_int, auto=st.none() | st.sampled_from(AUTO_MODES))
_tok = st.builds(Token, id=_int, text=st.text(max_size=4), prob=_num)
_draft = st.builds(DraftToken, id=_int, text=st.text(max_size=4), prob=_num,
                   verdict=st.sampled_from([ACCEPTED, REJECTED, DISCARDED]), target_prob=_num)
_target = st.builds(TargetToken, id=_int, text=st.text(max_size=4), prob=_num,
                    kind=st.sampled_from([CORRECTION, BONUS, PLAIN]))
_pass = st.builds(PassEvent, index=_int, prefill=st.booleans(), settings=_settings, k=_int,
                  drafts=st.lists(_draft, max_size=6).map(tuple), target=st.none() | _target, n_accepted=_int,
                  emitted=st.lists(_tok, max_size=6).map(tuple),
                  timing=st.builds(Timing, draft_ms=_num, verify_ms=_num, other_ms=_num, wall_ms=_num, t_end=_num),
                  n_ctx_used=_int)
_start = st.builds(RunStarted, run_id=st.text(max_size=5), started_at=st.floats(0, 4e9),
                   target=st.builds(ModelInfo, path=st.text(max_size=8), n_params=_int, n_vocab=_int),
                   draft=st.none() | st.builds(ModelInfo, path=st.text(max_size=8)), prompt=st.text(max_size=10),
                   n_predict=_int, n_ctx=_int, threads=_int, settings=_settings, target_decode_ms=_num,
                   draft_decode_ms=_num)
_other = st.builds(SettingsChanged, before_pass=_int, old=_settings, new=_settings, t=_num) | st.builds(
    RunEnded, reason=st.text(max_size=8), error=st.text(max_size=8), n_passes=_int, wall_s=_num)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=st.lists(_pass | _other, max_size=12), start=st.none() | _start, as_json=st.booleans())
def test_any_well_typed_trace_replays_without_crashing(tmp_path, events, start, as_json):
    """Whatever the reader accepts (well-typed, however odd the values), the headless face summarises it."""
    p = tmp_path / "odd.jsonl"
    write_trace(p, ([start] if start else []) + events)
    out = io.StringIO()
    replay_headless(p, out, as_json=as_json)
    if as_json:
        assert len(json.loads(out.getvalue())["passes"]) == _passes_read(events)


def _passes_read(events) -> int:
    """The passes a run's trace holds by docs/untrusted-input.md: those before its `end`, none with drafts in the
    prefill pass or more than 32 drafts (skipped, with a warning)."""
    n = 0
    for e in events:
        if isinstance(e, RunEnded):
            break
        if isinstance(e, PassEvent) and len(e.drafts) <= 32 and not (e.prefill and e.drafts):
            n += 1
    return n
