"""A first live run decodes first: with an empty probe cache the run starts as soon as the models are loaded,
and nothing is measured before its first pass (its cost model and auto k start from the run's own passes,
each a timed verify and decode, and the screen says so). The machine probe is measured in idle time, once
the run has ended while the screen is up (the status line says MEASURING THIS MACHINE for the next run), and
cached; the next run starts from it (``RunStarted.probe``) and measures nothing. A headless run never
measures: it reads the cache when there is one. Tiny models (tests/tinymodels.py), a real pty
(tests/pty_term.py), real llama.cpp."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from in_process import both_ways  # noqa: E402
from pty_term import PtyProcess  # noqa: E402
from waits import wait_until  # noqa: E402

from spectui.contract.events import RunEnded, RunStarted  # noqa: E402
from spectui.recording.trace import read_trace  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def _probe_files(cache: Path) -> list[Path]:
    return sorted((cache / "spectui" / "probe").glob("*.json"))


def _as_quiet(cache: Path) -> None:
    """Mark the cached probe as measured on a quiet machine: one measured busy is measured again once the
    machine is quiet (probe.cached_only), and the suite's own processes make the machine busy or not by
    chance."""
    for f in _probe_files(cache):
        data = json.loads(f.read_text())
        data["result"]["others_cpu"] = 0.0
        f.write_text(json.dumps(data))


def test_the_first_run_decodes_first_and_measures_once_it_has_ended(tiny_target, tiny_draft_noisy, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    rec = tmp_path / "first.jsonl"
    args = ["--target", tiny_target, "--draft", tiny_draft_noisy, "-p", "the cat", "-n", "32", "-t", "1"]
    p = PtyProcess([*args, "--record", rec], cols=120, rows=36, env={"XDG_CACHE_HOME": str(cache)})
    try:
        p.wait_for("pass ", 120)
        p.wait_for("measuring from this run", 120)  # the prediction panel, honest before it has numbers
        # the run has ended: idle time (the note, up for 20 s; the status line's MEASURING state lasts as long as
        # the probe, a fraction of a second on these models: tests/tui/test_stop_mid_pass.py sees it on a slow one)
        p.wait_for("the run has ended: measuring", 120)
        wait_until(lambda: _probe_files(cache), 120, "the probe cached")
        p.wait_for("cached for the next run", 60)  # the note with this machine's figures
        p.send("q")
        assert p.wait(60) == 0
    finally:
        p.close()
    text = p.text()
    assert text.index("pass ") < text.index("the run has ended: measuring")
    trace = read_trace(str(rec))
    start, end = trace.events[0], trace.events[-1]
    assert isinstance(start, RunStarted) and start.probe is None  # nothing cached, nothing measured before
    assert isinstance(end, RunEnded) and end.reason == "n_predict"
    (cached,) = _probe_files(cache)
    result = json.loads(cached.read_text())["result"]
    # the probe began after the run had ended (its start: measured_at minus its own wall time)
    assert result["measured_at"] - result["wall_s"] >= start.started_at + end.wall_s - 0.05
    _as_quiet(cache)
    before = cached.stat().st_mtime_ns
    # the next run starts from the cached probe and measures nothing
    rec2 = tmp_path / "second.jsonl"
    p = PtyProcess([*args, "--record", rec2], cols=120, rows=36, env={"XDG_CACHE_HOME": str(cache)})
    try:
        wait_until(lambda: rec2.exists() and b'"type":"end"' in rec2.read_bytes(), 120, "the second run's end")
        p.wait_for("ENDED", 60)
        p.send("q")
        assert p.wait(60) == 0
    finally:
        p.close()
    assert "MEASURING THIS MACHINE" not in p.text()
    assert read_trace(str(rec2)).events[0].probe is not None
    assert cached.stat().st_mtime_ns == before


def spectui(*args, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spectui", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=300, env={**os.environ, **(env or {})})


cli = both_ways(spectui)  # a headless run and the probe: in this process in the fast lane (tests/in_process.py)


def _headless_json(cli, args, cache: Path) -> dict:
    r = cli(*args, "--headless", "--json", env={"XDG_CACHE_HOME": str(cache)})
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_a_headless_run_never_measures_and_reads_the_cache(tiny_target, tiny_draft_noisy, tmp_path, cli):
    cache = tmp_path / "cache"
    cache.mkdir()
    args = ["--target", tiny_target, "--draft", tiny_draft_noisy, "-p", "the cat", "-n", "8", "-t", "1", "-k", "auto"]
    out = _headless_json(cli, args, cache)
    assert out["start"]["probe"] is None and out["n_passes"] > 0  # auto k from the run's own passes
    assert not _probe_files(cache)  # nothing measured, before or after
    r = cli("probe", "--target", tiny_target, "--draft", tiny_draft_noisy, "-t", "1",
            env={"XDG_CACHE_HOME": str(cache)})
    assert r.returncode == 0, r.stderr
    _as_quiet(cache)
    out = _headless_json(cli, args, cache)
    assert out["start"]["probe"] is not None  # spectui probe's figures feed auto k from the first pass


def test_the_status_line_says_what_the_idle_probe_is_for():
    from spectui.contract.control import RunControl  # noqa: PLC0415
    from spectui.tui.run.app import SpectuiApp  # noqa: PLC0415

    app = SpectuiApp(lambda c, p: iter(()), RunControl())
    assert app.run_state() == ("IDLE", "blue")
    app.measuring = "round 2 of 5"
    assert app.run_state() == ("MEASURING THIS MACHINE for the next run: round 2 of 5", "blue")
    app.control.stop()  # q during the probe: it is being stopped, not measuring
    assert app.run_state()[0] == "STOPPING"
