"""The smaller things of issue 17: a swapped pair named as such, the same file twice named, an unknown
theme refused in every face (exit 2, one line listing the themes), the help screen at 80x24 scrolls and
gives the keys back, damaged trace tails handled one way (the intact events replay, the damage reported)."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest
from in_process import both_ways, spectui_in_process
from waits import settled

from spectui.engine.files.pair import same_file_warning, size_warning
from spectui.recording.trace import TraceError, read_trace, synthetic_run, write_trace

REPO = Path(__file__).resolve().parents[2]


def spectui(*args, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spectui", *[str(a) for a in args]], capture_output=True, text=True,
                          cwd=REPO, timeout=timeout)


def in_process(*args, timeout: float = 120) -> subprocess.CompletedProcess:
    """``spectui`` above in this process (tests/in_process.py)."""
    return spectui_in_process(*args)


cli = both_ways(spectui, in_process)  # exit status and lines only: in this process in the fast lane


# ------------------------------------------------------------------ the pair


def test_size_warning_names_a_swapped_pair():
    w = size_warning(1_540_000_000, 550_000_000)
    assert w == ("warning: the draft is 2.8x larger than the target (1,540,000,000 vs 550,000,000 parameters): "
                 "are --target and --draft swapped?")
    assert "not much smaller" in size_warning(400, 500)
    assert size_warning(100, 500) == ""
    assert size_warning(0, 500) == ""


def test_same_file_warning_by_path_and_by_link(tmp_path):
    m = tmp_path / "m.gguf"
    m.write_bytes(b"x")
    link = tmp_path / "l.gguf"
    link.symlink_to(m)
    hard = tmp_path / "h.gguf"
    os.link(m, hard)
    for d in (m, link, hard):
        assert "the target and the draft are the same file" in same_file_warning(m, d)
    other = tmp_path / "o.gguf"
    other.write_bytes(b"x")
    assert same_file_warning(m, other) == ""


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_a_real_swapped_pair_and_the_same_file_twice_are_named(tiny_target, tiny_model):
    bigger = tiny_model("bigger.gguf", seed=0, pad=128, name="tiny-padded")
    r = spectui("-m", tiny_target, "-md", bigger, "--headless", "-p", "the cat", "-n", 4, "-t", 1, "--no-probe")
    assert r.returncode == 0, r.stderr
    assert "larger than the target" in r.stderr and "are --target and --draft swapped?" in r.stderr
    assert "not much smaller" not in r.stderr
    r = spectui("-m", tiny_target, "-md", tiny_target, "--headless", "-p", "the cat", "-n", 4, "-t", 1, "--no-probe")
    assert r.returncode == 0, r.stderr
    assert "the target and the draft are the same file" in r.stderr
    assert "not much smaller" not in r.stderr  # one warning that names it, not a size warning on top


# ------------------------------------------------------------------ unknown themes, every face


@pytest.fixture
def trace(tmp_path) -> Path:
    p = tmp_path / "t.jsonl"
    write_trace(p, list(synthetic_run(4)))
    return p


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
@pytest.mark.parametrize("face", ["run-headless", "run-tui", "replay-headless", "replay-explain", "replay-tui",
                                  "cast", "demo-headless", "demo-tui", "attach-headless", "attach-tui"])
def test_unknown_theme_is_refused_in_every_face(face, tiny_target, trace, tmp_path):
    run = ["-m", tiny_target, "--drafter", "ngram", "-p", "x", "-n", 2, "-t", 1, "--no-probe"]
    args = {
        "run-headless": [*run, "--headless"],
        "run-tui": run,
        "replay-headless": ["replay", trace, "--headless"],
        "replay-explain": ["replay", trace, "--explain", "1"],
        "replay-tui": ["replay", trace],
        "cast": ["cast", trace, "-o", tmp_path / "x.cast"],
        "demo-headless": ["demo", "--headless"],
        "demo-tui": ["demo"],
        "attach-headless": ["attach", "http://127.0.0.1:1", "--headless", "--count", 1],
        "attach-tui": ["attach", "http://127.0.0.1:1"],
    }[face]
    r = spectui(*args, "--theme", "nonexistent")
    assert r.returncode == 2, r.stdout + r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert lines == [lines[0]] and lines[0].startswith("spectui: error: unknown theme 'nonexistent'; available "
                                                       "themes: ")
    assert "okabe-ito" in lines[0] and r.stdout == ""
    assert not (tmp_path / "x.cast").exists()


# ------------------------------------------------------------------ the help screen at 80x24


@pytest.mark.slow
async def test_help_at_80x24_scrolls_to_its_end_and_gives_the_keys_back():
    from textual.containers import VerticalScroll

    from spectui.recording.player import ReplayPlayer
    from spectui.recording.synthetic import sample_events
    from spectui.tui.run.app import SpectuiApp
    from spectui.tui.run.help_screen import HelpScreen

    app = SpectuiApp(None, replay=ReplayPlayer(sample_events(), speed=float("inf")))
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot, lambda: app.player.at_end and not app.running, what="the replay played")
        await pilot.press("question_mark")
        await settled(pilot, lambda: isinstance(app.screen, HelpScreen))
        assert isinstance(app.screen, HelpScreen)
        scroll = app.screen.query_one(VerticalScroll)
        assert scroll.max_scroll_y > 0  # more text than fits at 80x24
        assert app.screen.focused is scroll  # the keys scroll it at once
        await pilot.press("end")
        await settled(pilot, lambda: scroll.scroll_y == scroll.max_scroll_y)
        assert scroll.scroll_y == scroll.max_scroll_y
        await pilot.press("home")
        await settled(pilot, lambda: scroll.scroll_y == 0)
        assert scroll.scroll_y == 0
        for _ in range(3):
            await pilot.press("down")
        await settled(pilot, lambda: scroll.scroll_y > 0)
        assert scroll.scroll_y > 0
        await pilot.press("pagedown")
        await pilot.pause()
        text = str(app.screen.query_one("#help-text").render())
        assert "escape / q / ? closes this screen" in text  # the whole text is there to scroll to
        await pilot.press("escape")
        await settled(pilot, lambda: not isinstance(app.screen, HelpScreen))
        assert not isinstance(app.screen, HelpScreen)
        theme = app.theme
        await pilot.press("c")  # a key of the run screen works again
        await settled(pilot, lambda: app.theme != theme)
        assert app.theme != theme
        await pilot.press("question_mark")
        await settled(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.press("q")  # q closes the help, it does not quit the app
        await pilot.pause(0.2)
        assert not isinstance(app.screen, HelpScreen) and app.is_running


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_help_at_80x24_shows_its_scroll_position(tmp_path):
    """At 80x24 the help says there is more below (the screen is cut no longer without a word)."""
    import asyncio

    from spectui.recording.player import ReplayPlayer
    from spectui.recording.synthetic import sample_events
    from spectui.tui.run.app import SpectuiApp

    async def go():
        app = SpectuiApp(None, replay=ReplayPlayer(sample_events(), speed=float("inf")))
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause(0.3)
            await pilot.press("question_mark")
            await pilot.pause(0.3)
            return app.screen.query_one("#help-hint").render()

    assert "↓" in str(asyncio.run(go()))


# ------------------------------------------------------------------ damaged tails, one way


def _lines(p: Path) -> list[bytes]:
    return p.read_bytes().splitlines(keepends=True)


@pytest.mark.parametrize("gz, bad", [(False, 1), pytest.param(False, 2, marks=pytest.mark.slow),
                                     pytest.param(False, 5, marks=pytest.mark.slow),
                                     pytest.param(True, 1, marks=pytest.mark.slow),
                                     pytest.param(True, 2, marks=pytest.mark.slow), (True, 5)])  # fast: 2 of 6
@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_a_damaged_tail_of_any_length_replays_the_intact_events_with_one_warning(tmp_path, bad, gz):
    evs = list(synthetic_run(10))
    plain = tmp_path / "t.jsonl"
    write_trace(plain, evs)
    lines = _lines(plain)
    keep = len(lines) - 4
    tail = [b'{"type": "pass", "ind'] + [b"\x00\xffgarbage\n"] * (bad - 1)
    body = b"".join(lines[:keep]) + b"\n".join(t.rstrip(b"\n") for t in tail)
    p = tmp_path / ("t.jsonl.gz" if gz else "d.jsonl")
    p.write_bytes(gzip.compress(body) if gz else body)
    tr = read_trace(p)
    assert tr.events == evs[: keep - 1]
    assert len(tr.warnings) == 1 and "the trace ends there" in tr.warnings[0]
    if bad > 1:
        assert f"{bad - 1} more damaged line" in tr.warnings[0]
    # the commands: replay exits 0 with the warning on stderr, the TUI loads it, cast renders it
    r = spectui("replay", p, "--headless")
    assert r.returncode == 0, r.stderr
    assert "spectui: warning:" in r.stderr and "the trace ends there" in r.stderr
    out = tmp_path / "x.cast"
    r = spectui("cast", p, "-o", out, "--cols", 80, "--rows", 24, "--speed", 8)
    assert r.returncode == 0 and out.exists() and "the trace ends there" in r.stderr


def test_damage_followed_by_intact_events_is_still_an_error(tmp_path, cli):
    evs = list(synthetic_run(10))
    p = tmp_path / "t.jsonl"
    write_trace(p, evs)
    lines = _lines(p)
    lines[5] = b"garbage\n"
    lines[6] = b"more garbage\n"
    p.write_bytes(b"".join(lines))
    with pytest.raises(TraceError, match="line 6: not JSON .*intact events follow it"):
        read_trace(p)
    r = cli("replay", p, "--headless")
    assert r.returncode == 2 and "intact events follow" in r.stderr
