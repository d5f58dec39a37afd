"""Snapshot tests (pytest-textual-snapshot) at 80x24 and 120x40, fed the fixed sample events.

Every token state is on screen (accepted, rejected and discarded drafts struck through, correction
and bonus target tokens, plain k = 0 tokens, pending drafts in the pending snapshot), in every theme.
The animation phase is frozen so the pictures are stable. Update with ``--snapshot-update``.
"""

from __future__ import annotations

import pytest

from spectui.contract.control import RunControl
from spectui.contract.events import Settings
from spectui.recording.player import ReplayPlayer
from spectui.recording.synthetic import sample_events
from spectui.tui.run.app import SpectuiApp
from spectui.views.animation import PENDING, VERDICT

THEMES = ["dark", "light", "high-contrast", "okabe-ito"]


def make_app(theme="dark", phase=VERDICT, replay=False) -> SpectuiApp:
    events = sample_events(38)  # its last pass has accepted, rejected and discarded drafts
    control = RunControl(Settings(draft_max=2, temperature=0.3, drafter="ngram"))
    if replay:
        return SpectuiApp(None, control, replay=ReplayPlayer(events, speed="max"), theme=theme, freeze_phase=phase)
    return SpectuiApp(lambda c, p: iter(events), control, theme=theme, freeze_phase=phase)


async def settle(pilot) -> None:
    app = pilot.app
    await app.workers.wait_for_complete()
    app.refresh_from_state()
    await pilot.pause()
    app.refresh_from_state()
    await pilot.pause()


@pytest.mark.parametrize("theme", THEMES)
def test_snapshot_80x24(snap_compare, theme):
    assert snap_compare(make_app(theme), terminal_size=(80, 24), run_before=settle)


@pytest.mark.parametrize("theme", THEMES)
def test_snapshot_120x40(snap_compare, theme):
    assert snap_compare(make_app(theme), terminal_size=(120, 40), run_before=settle)


def test_snapshot_pending_drafts(snap_compare):
    assert snap_compare(make_app(phase=PENDING), terminal_size=(80, 24), run_before=settle)


def test_snapshot_replay_banner(snap_compare):
    assert snap_compare(make_app(replay=True), terminal_size=(120, 40), run_before=settle)


def test_snapshot_too_small(snap_compare):
    assert snap_compare(make_app(), terminal_size=(50, 15), run_before=settle)


def test_snapshot_help(snap_compare):
    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=run_before)
