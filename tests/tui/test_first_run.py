"""The first live run is a screen, not a wait: with an empty probe cache the app's screen comes up as soon as
the models are loaded, and the machine probe runs inside it (a note says what it measures and why, the
status line its progress), not as lines on stderr before any screen. Tiny models (tests/tinymodels.py), a
real pty (tests/pty_term.py)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from pty_term import PtyProcess  # noqa: E402


def test_the_probe_runs_inside_the_first_screen(tiny_target, tiny_draft_noisy, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    t0 = time.monotonic()
    p = PtyProcess(["--target", tiny_target, "--draft", tiny_draft_noisy, "-p", "the cat", "-n", "32", "-t", "1"],
                   cols=120, rows=36, env={"XDG_CACHE_HOME": str(cache)})
    try:
        p.wait_for("first run of this pair", 120)  # the note inside the app
        p.wait_for("pass ", 120)
        assert time.monotonic() - t0 < 60
        raw = p.raw()
        alt = raw.index("\x1b[?1049h")
        assert "measuring this machine (once per model" not in raw[:alt]  # nothing measured before the screen
        assert alt < raw.index("first run")
        assert "measuring this machine" in p.text()  # what the note says it does (and why, wrapped)
        p.send("q")
        assert p.wait(60) == 0
    finally:
        p.close()
    cached = list((cache / "spectui" / "probe").glob("*.json"))
    assert cached  # measured and cached for the next run
    for f in cached:  # as if measured on a quiet machine: a result measured busy is measured again once the
        data = json.loads(f.read_text())  # machine is quiet (probe.cached_or_measure), and the suite's own
        data["result"]["others_cpu"] = 0.0  # processes make the first measurement busy or not by chance
        f.write_text(json.dumps(data))
    # the next run reads the cache: no note, the run starts at once
    p = PtyProcess(["--target", tiny_target, "--draft", tiny_draft_noisy, "-p", "the cat", "-n", "32", "-t", "1"],
                   cols=120, rows=36, env={"XDG_CACHE_HOME": str(cache)})
    try:
        p.wait_for("pass ", 120)
        time.sleep(0.5)
        assert "first run of this pair" not in p.text()
        p.send("q")
        assert p.wait(60) == 0
    finally:
        p.close()
