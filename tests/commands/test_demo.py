"""`spectui demo`: the bundled recording is a real Qwen run that shows acceptance changing; it is package
data (found after a plain wheel install); the app is labelled as a recording and loops."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
import zipfile

import pytest
from in_process import both_ways

from spectui.analysis.stats import compute
from spectui.commands.demo import ACTS, DEMO_TRACE, act_reason, demo_trace_path, make_demo_app, race_paths
from spectui.contract.events import PassEvent, RunEnded, RunStarted, SettingsChanged
from spectui.recording.player import load_for_tui
from spectui.recording.trace import read_trace
from spectui.text.replay import replay_headless

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def demo():
    return read_trace(demo_trace_path())


def test_bundled_trace_is_a_real_qwen_recording(demo):
    header, events, warnings = demo
    assert warnings == []
    assert "qwen2.5-coder-1.5b" in header["models"]["target"]["path"].lower()
    assert "qwen2.5-coder-0.5b" in header["models"]["draft"]["path"].lower()
    tgt, drf = header["models"]["target"], header["models"]["draft"]
    assert tgt["n_params"] > drf["n_params"] > 0 and tgt["n_vocab"] == drf["n_vocab"] > 100_000
    assert header["recording"]["script"] == "demos/record_demo.py"
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunEnded)
    passes = [e for e in events if isinstance(e, PassEvent)]
    assert 100 <= len(passes) <= 1000
    assert [p.index for p in passes] == list(range(len(passes)))
    end = events[-1]
    assert end.reason in ("n_predict", "eog")
    assert end.n_passes == len(passes) - 1  # decode passes (the prefill pass not counted)
    assert end.n_emitted == sum(len(p.emitted) for p in passes)


def test_bundled_trace_shows_acceptance_changing(demo):
    _, events, _ = demo
    changes = [e for e in events if isinstance(e, SettingsChanged)]
    k_changes = [c for c in changes if c.new.draft_max != c.old.draft_max]
    assert len({c.new.draft_max for c in k_changes}) >= 2  # draft length changed mid-run, twice ...
    assert any(c.new.temperature != c.old.temperature for c in changes)  # ... and the temperature
    # acceptance differs between the phases of the run
    rates = []
    bounds = [0] + [c.before_pass for c in changes] + [10**9]
    passes = [e for e in events if isinstance(e, PassEvent)]
    for lo, hi in zip(bounds, bounds[1:]):
        seg = [p for p in passes if lo <= p.index < hi and not p.prefill]
        snap = compute(seg)
        if snap.n_drafted:
            rates.append(snap.acceptance_rate)
    assert len(rates) >= 3 and max(rates) - min(rates) > 0.1, rates


def _spectui(*args) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": REPO}
    return subprocess.run([sys.executable, "-c", "from spectui.cli import main; main()", *args],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=120)


cli = both_ways(_spectui)  # the demo's output: in this process in the fast lane (tests/in_process.py)


def _demo_headless(*args, run=_spectui):
    r = run("demo", "--headless", *args)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _act_text(act):
    out = io.StringIO()
    replay_headless(demo_trace_path(act.number), out)
    return act_reason(act, load_for_tui(demo_trace_path(act.number))[1]) + "\n\n" + out.getvalue()


def test_demo_headless_prints_the_recording_summary(cli):
    """--act 1: the act's reason, then exactly what replaying its recording headless prints."""
    stdout = _demo_headless("--act", "1", run=cli)
    assert stdout == _act_text(ACTS[0]) + ""
    assert "def is_palindrome" in stdout and "n_accept  =" in stdout


def _race_act_text(act):
    from spectui.commands.demo import load_race_act, race_reason
    from spectui.text.race import print_outcome
    from spectui.views.race_outcome import outcome

    race = load_race_act(act)
    out = io.StringIO()
    print_outcome(race, outcome(race), out)
    return race_reason(act, race) + "\n\n" + out.getvalue()


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_demo_headless_plays_every_act_with_its_reason():
    stdout = _demo_headless()
    assert stdout == _act_text(ACTS[0]) + "\n" + _act_text(ACTS[1]) + "\n" + _race_act_text(ACTS[2])
    assert stdout.index("Act 1 - ") < stdout.index("Act 2 - ") < stdout.index("Act 3 - ")


def test_act2_is_the_recorded_win_and_says_what_it_bought():
    """Act 2 (demos/record_act2.py): the target alone, then prompt lookup at k = 3 on an editing task; its
    reason quotes tokens/s of both segments and their ratio, computed from the recording's own passes."""
    header, events, warnings = read_trace(demo_trace_path(2))
    assert warnings == [] and header["recording"]["script"] == "demos/record_act2.py"
    assert "qwen2.5-coder-1.5b" in header["models"]["target"]["path"].lower() and header["models"]["draft"] is None
    passes = [e for e in events if isinstance(e, PassEvent) and not e.prefill]
    alone = [p for p in passes if p.settings.drafter == "none"]
    lookup = [p for p in passes if p.settings.drafter == "ngram"]
    assert len(alone) >= 20 and len(lookup) >= 20 and all(p.settings.draft_max == 3 for p in lookup)
    a, b = compute(alone), compute(lookup)
    assert b.acceptance_rate > 0.5 and b.tokens_per_second > a.tokens_per_second  # it beat the target alone
    reason = act_reason(ACTS[1], events)
    assert f"{a.tokens_per_second:.1f} tokens/s" in reason and f"{b.tokens_per_second:.1f} tokens/s" in reason
    assert f"{b.tokens_per_second / a.tokens_per_second:.2f}x the target alone" in reason


async def test_demo_acts_follow_each_other():
    """With more than one act, the end of an act (after its hold) exits the app with "next"."""
    _, events = load_for_tui(demo_trace_path(2))
    app = make_demo_app(events, speed="max", loop_hold_s=0.2, reason=act_reason(ACTS[1], events), next_act=True)
    async with app.run_test(size=(120, 36)) as pilot:
        for _ in range(600):
            await pilot.pause(0.1)
            if app.return_value is not None:
                break
        assert app.return_value == "next" and app.loops == 1


async def test_demo_app_is_labelled_a_recording_and_loops():
    _, events = load_for_tui(demo_trace_path())
    app = make_demo_app(events, speed="max", loop_hold_s=0.3)
    from spectui.tui.run.replay_banner import ReplayBanner
    from spectui.views.view import banner_text

    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(0.3)
        banner = app.query_one(ReplayBanner)
        assert banner.display
        text = banner_text(banner.start).lower()
        assert text.startswith("replay of ") and "1.5b" in text and "0.5b" in text and "recorded 20" in text
        assert "recording" in app.title
        for _ in range(600):  # at most ~60 s: reach the end, hold, start over, play to the end again
            await pilot.pause(0.1)
            if app.loops >= 2:
                break
        # A second jump to the start needs the player to have reached the end again after the first one,
        # so it looped and played the recording through again (at speed max the cursor is back at the end
        # within one poll, so polling for "cursor < end" would be a race).
        assert app.loops >= 2
        await pilot.press("q")


@pytest.mark.slow
def test_wheel_contains_the_demo_trace(tmp_path):
    pytest.importorskip("hatchling")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", REPO, "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    (wheel,) = tmp_path.glob("spectui-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert f"spectui/data/{DEMO_TRACE}" in names
    # installed from the wheel (not the source tree), the demo still finds its trace
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = "import spectui.commands.demo as d, sys; p = d.demo_trace_path(); print(p); assert p.startswith(sys.argv[1])"
    r = subprocess.run([sys.executable, "-c", code, str(site)], capture_output=True, text=True, cwd=str(tmp_path),
                       env={**os.environ, "PYTHONPATH": str(site)}, timeout=60)
    assert r.returncode == 0, r.stderr


# ------------------------------------------------------------------ in a real terminal (a pty)
def _demo_in_a_pty(*args, cols=120, rows=36):
    sys.path.insert(0, os.path.join(REPO, "tests"))
    from pty_term import PtyProcess

    return PtyProcess(["demo", *args], cols=cols, rows=rows)


@pytest.mark.slow
def test_demo_act_3_alone_loops_and_q_exits_0():
    """The race act alone (its looping app through the command's run_app) quits with 0 on q, after looping."""
    p = _demo_in_a_pty("--act", "3", "--speed", "max")
    try:
        p.wait_for("spectui demo: recordings", 60)  # the race act's welcome note
        p.wait_for("Act 3 - ", 60)  # the act's short reason
        p.wait_for("FINISH", 60)  # every lane finished: the verdict
        time.sleep(8)  # the hold (6 s), then the race starts over
        assert p.proc.poll() is None, p.text()[-2000:]
        p.send("q")
        assert p.wait(20) == 0, p.text()[-2000:]
    finally:
        p.close()


@pytest.mark.slow
def test_demo_plays_every_act_in_turn_and_starts_over():
    """Act 1, 2, 3 (the race), then act 1 again: the demo never stops by itself; q then exits 0."""
    p = _demo_in_a_pty("--speed", "max")
    try:
        p.wait_for("Act 1 - ", 60)
        p.wait_for("Act 2 - ", 60)
        p.wait_for("spectui demo: recordings", 60)
        seen = len(p.text())
        deadline = time.monotonic() + 60
        while "Act 1 - " not in p.text()[seen:] and time.monotonic() < deadline and p.proc.poll() is None:
            time.sleep(0.2)
        assert "Act 1 - " in p.text()[seen:], p.text()[-3000:]
        assert p.proc.poll() is None
        p.send("q")
        assert p.wait(20) == 0
    finally:
        p.close()


def test_models_are_named_by_metadata_and_file_type():
    """general.name without a format word the file does not have, then the file's own quantization: the demo's
    draft is a Q4_K_M GGUF whose general.name says "AWQ" (from the repository it was converted from)."""
    from spectui.views.view import banner_text

    _, events = load_for_tui(demo_trace_path())
    text = banner_text(events[0])
    assert "Qwen2.5 Coder 1.5B Instruct Q4_K_M / Qwen2.5 Coder 0.5B Instruct Q4_K_M" in text, text
    assert "AWQ" not in text and "GGUF" not in text


@pytest.mark.slow
def test_paths_name_the_installed_recordings_for_cast(tmp_path):
    """`spectui demo --paths [--act N]`: the bundled recordings where this installation keeps them, so the
    fallback casts (demos/conference.md) work from an installed package, run from any folder."""
    env = {**os.environ, "PYTHONPATH": REPO}
    r = subprocess.run([sys.executable, "-m", "spectui", "demo", "--paths"], capture_output=True, text=True,
                       cwd=str(tmp_path), env=env, timeout=60)
    assert r.returncode == 0 and r.stdout.split() == [demo_trace_path(1), demo_trace_path(2), *race_paths(ACTS[2])]
    r = subprocess.run([sys.executable, "-m", "spectui", "demo", "--paths", "--act", "3"], capture_output=True,
                       text=True, cwd=str(tmp_path), env=env, timeout=60)
    races = r.stdout.split()
    assert races == race_paths(ACTS[2])
    out = tmp_path / "race.cast"
    r = subprocess.run([sys.executable, "-m", "spectui", "cast", "--race", *races, "-o", out, "--cols", "120",
                        "--rows", "36", "--speed", "8"], capture_output=True, text=True, cwd=str(tmp_path), env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert out.read_text().startswith('{"version": 2')


async def test_the_why_note_fits_a_small_screen_and_w_shows_it_whole():
    """The act's note is its first sentence (a few rows of an 80x24 screen), w shows the whole reason."""
    from textual.widgets._toast import Toast

    _, events = load_for_tui(demo_trace_path())
    reason = act_reason(ACTS[0], events)
    app = make_demo_app(events, speed="0.25", reason=reason)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await pilot.pause(0.5)
        toasts = list(app.screen.query(Toast))
        heights = [t.region.height for t in toasts]
        assert heights and sum(heights) <= 12, heights  # was about half the screen (the whole reason)
        await pilot.press("w")
        await pilot.pause(0.3)
        assert len(list(app.screen.query(Toast))) > len(toasts)
