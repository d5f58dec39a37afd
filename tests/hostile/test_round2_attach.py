"""Hostile-input report of 2026-12-02, round 2, rows in attach's metrics reader: a server's ``position`` labels
that are no draft position are refused in one line (escaped), never squeezed into the next free slots.

- AT19118: positions 1000, 100000 and 1e9 beside 0, 1, 2 were drawn as positions 3, 4, 5
  ("by pos [1.20 0.80 0.10 0.10 0.10]");
- TUI_att19103: the labels "\\x1b[2J", "-3" and 10^20 were drawn as positions 0 and 1, 50% each.

Each page is served over real HTTP on 127.0.0.1 (the server's words as it would send them) and read by the
command, headless and in the TUI.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("prometheus_client")

from servers import StaticServer

from spectui.attach.scraper import Scraper

REPO = Path(__file__).resolve().parents[2]
NAME = "llamacpp:spec_decode_num_accepted_tokens_per_pos_total"


def llama_page(positions: dict[str, int]) -> str:
    counters = [("spec_decode_num_draft_tokens_total", 30), ("spec_decode_num_accepted_tokens_total", 21),
                ("spec_decode_num_drafts_total", 10), ("tokens_predicted_total", 50)]
    out = []
    for name, v in counters:
        out += [f"# TYPE llamacpp:{name} counter", f"llamacpp:{name} {v}"]
    out.append(f"# TYPE {NAME} counter")
    out += [f'{NAME}{{position="{p}"}} {c}' for p, c in positions.items()]
    return "\n".join(out) + "\n"


AT19118 = llama_page({"0": 12, "1": 8, "2": 1, "1000": 1, "100000": 1, "1e9": 1})
ATT19103 = llama_page({"\x1b[2J": 5, "-3": 5, str(10**20): 1})


def spectui(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "spectui", *args], stdin=subprocess.DEVNULL, capture_output=True,
                          env=env, timeout=120)


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
@pytest.mark.parametrize("page, label", [(AT19118, "1000"), (ATT19103, "\\x1b[2J")], ids=["AT19118", "TUI_att19103"])
def test_position_labels_that_are_no_draft_position_are_refused(page, label):
    srv = StaticServer(page, content_type="text/plain; version=0.0.4")
    try:
        (ev,) = Scraper([srv.url], timeout=3.0).scrape_all()
        assert "impossible draft position" in ev.error and ev.engines == ()
        r = spectui("attach", srv.url, "--headless", "--count", "2", "--interval", "0.5", "--timeout", "3")
        out = r.stdout.decode() + r.stderr.decode()
        assert r.returncode == 1, out  # the server's counters cannot be true: not a watch that went well
        assert "impossible draft position" in out and label in out  # named, its escape shown as text
        assert "\x1b" not in out and "by pos [" not in out  # never drawn, never squeezed
        j = spectui("attach", srv.url, "--json", "--count", "1", "--interval", "0.5", "--timeout", "3")
        assert b"impossible draft position" in j.stdout and b"\x1b" not in j.stdout
    finally:
        srv.stop()


def test_the_valid_positions_alone_are_shown_as_they_are():
    """The same page without the junk: positions 0, 1, 2 at their own index (12, 8, 1 of 10 drafts)."""
    srv = StaticServer(llama_page({"0": 12 - 2, "1": 8, "2": 1}), content_type="text/plain")
    try:
        (ev,) = Scraper([srv.url], timeout=3.0).scrape_all()
        assert not ev.error
        assert [(p.position, p.accepted) for p in ev.engines[0].accepted_per_pos] == [(0, 10), (1, 8), (2, 1)]
    finally:
        srv.stop()


async def test_tui_att19103_shows_the_refusal_not_positions():
    """The attach TUI on the TUI_att19103 page: the engine's row says why in one escaped line; the acceptance
    panel draws no position."""
    from spectui.commands.attach import AttachSession
    from spectui.tui.attach.acceptance import AttachAcceptance
    from spectui.tui.attach.app import AttachApp
    from spectui.tui.attach.engines import AttachEngines

    srv = StaticServer(ATT19103, content_type="text/plain")
    try:
        app = AttachApp(session=AttachSession([srv.url], interval=0.2, timeout=2.0))
        async with app.run_test(size=(100, 30)) as pilot:
            deadline = time.monotonic() + 30
            while len(app.state.stats.snapshot().interval) < 1 and time.monotonic() < deadline:
                await pilot.pause(0.1)
            await pilot.pause(0.5)
            app.paint()
            await pilot.pause()
            engines = app.screen.query_one(AttachEngines).render().plain
            acc = app.screen.query_one(AttachAcceptance).render().plain
            assert "impossible draft position" in engines and "\x1b" not in engines, engines
            assert "%" not in acc and " 0 " not in acc, acc
            await pilot.press("q")
    finally:
        srv.stop()
