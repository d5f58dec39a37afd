"""Record a real run (llama.cpp on the tests' tiny models) and replay it: the statistics agree field by field."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from spectui.contract.events import PassEvent, RunEnded, RunStarted, SettingsChanged
from spectui.recording.trace import read_trace

pytestmark = pytest.mark.slow  # live runs on the engine and their replays, in subprocesses

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = "from spectui.cli import main; main()"


def spectui(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": REPO}
    return subprocess.run([sys.executable, "-c", RUN, *args], capture_output=True, text=True, cwd=REPO, env=env,
                          timeout=timeout)


@pytest.mark.parametrize("temp,k", [("0", "3"), ("0.8", "2")])
def test_live_headless_run_and_its_replay_agree(tmp_path, tiny_target, tiny_draft_noisy, temp, k):
    rec = tmp_path / "run.jsonl"
    common = ["--target", str(tiny_target), "--draft", str(tiny_draft_noisy), "-p", "the cat", "-n", "48",
              "--draft-max", k, "--temp", temp, "--seed", "3", "-t", "1"]
    live = spectui(*common, "--headless", "--json", "--record", str(rec))
    assert live.returncode == 0, live.stderr
    replay = spectui("replay", str(rec), "--headless", "--json")
    assert replay.returncode == 0, replay.stderr
    a, b = json.loads(live.stdout), json.loads(replay.stdout)
    assert a["n_drafted"] > 0 and 0 < a["n_predict"] <= 48
    assert sorted(a) == sorted(b)
    for key in a:  # field by field, so a difference names the field
        assert a[key] == b[key], key
    # the trace holds what the header promises
    tr = read_trace(rec)
    assert tr.warnings == []
    h = tr.header
    assert h["models"]["target"]["path"].endswith("target.gguf")
    assert h["models"]["draft"]["path"].endswith("draft-noisy.gguf")
    assert h["models"]["target"]["n_vocab"] > 0 and h["models"]["target"]["size_bytes"] > 0
    assert h["params"]["n_predict"] == 48 and h["params"]["settings"]["draft_max"] == int(k)
    assert h["params"]["settings"]["temperature"] == float(temp)
    assert h["prompt"] == "the cat" and h["machine"]["cpu"]
    assert isinstance(tr.events[0], RunStarted) and isinstance(tr.events[-1], RunEnded)
    assert sum(isinstance(e, PassEvent) for e in tr.events) == len(a["passes"])


def test_live_text_summary_and_replay_text_summary_are_identical(tmp_path, tiny_target, tiny_draft_noisy):
    rec = tmp_path / "run.jsonl.gz"
    live = spectui("--target", str(tiny_target), "--draft", str(tiny_draft_noisy), "-p", "the", "-n", "30",
                   "--draft-max", "4", "-t", "1", "--headless", "--record", str(rec))
    assert live.returncode == 0, live.stderr
    replay = spectui("replay", str(rec), "--headless")
    assert replay.returncode == 0, replay.stderr
    assert replay.stdout == live.stdout
    assert "n_drafted =" in replay.stdout


def test_sigkill_of_a_recording_run_leaves_a_replayable_trace(tmp_path, tiny_target, tiny_draft_noisy):
    rec = tmp_path / "killed.jsonl"
    env = {**os.environ, "PYTHONPATH": REPO}
    proc = subprocess.Popen(
        [sys.executable, "-c", RUN, "--target", str(tiny_target), "--draft", str(tiny_draft_noisy), "-p", "the",
         "-n", "3500", "-c", "4096", "--draft-max", "3", "-t", "1", "--headless", "--record", str(rec)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO, env=env,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # wait until some passes are on disk
            if rec.exists() and rec.read_bytes().count(b"\n") >= 14:  # header, start and 12 complete passes
                break
            assert proc.poll() is None, "the run ended before it could be killed"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    warned: list[str] = []
    tr = read_trace(rec, on_warning=warned.append)
    passes = [e for e in tr.events if isinstance(e, PassEvent)]
    assert len(passes) >= 10
    assert [p.index for p in passes] == list(range(len(passes)))  # every pass up to the last complete one
    assert not any(isinstance(e, RunEnded) for e in tr.events)
    assert len(warned) <= 1
    replay = spectui("replay", str(rec), "--headless", "--json")
    assert replay.returncode == 0, replay.stderr
    d = json.loads(replay.stdout)
    assert len(d["passes"]) == len(passes) and d["stop_reason"] == ""


def test_settings_changed_mid_run_are_recorded_and_replayed(
    make_engine, tmp_path, tiny_target, tiny_draft_noisy
):
    from spectui.contract.control import RunControl
    from spectui.contract.events import Settings
    from spectui.recording.trace import TraceWriter
    from spectui.text.replay import replay_headless

    rec = tmp_path / "changes.jsonl"
    engine = make_engine(tiny_target, tiny_draft_noisy)
    control = RunControl(Settings(draft_max=2))
    try:
        with TraceWriter(rec) as w:
            for ev in engine.run("the cat", control, 40):
                w.write(ev)
                if isinstance(ev, PassEvent) and ev.index == 5:
                    control.update(draft_max=5, temperature=0.7)
    finally:
        engine.close()
    tr = read_trace(rec)
    changes = [e for e in tr.events if isinstance(e, SettingsChanged)]
    assert len(changes) == 1 and changes[0].before_pass == 6
    assert changes[0].old.draft_max == 2 and changes[0].new.draft_max == 5 and changes[0].new.temperature == 0.7
    after = [e for e in tr.events if isinstance(e, PassEvent) and e.index >= 6]
    assert after and all(p.settings.draft_max == 5 for p in after)
    import io

    out = io.StringIO()
    stats = replay_headless(rec, out, as_json=True)
    assert json.loads(out.getvalue())["n_drafted"] == stats.n_drafted > 0
