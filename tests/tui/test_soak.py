"""The short version of benchmarks/soak_demo.py (the endurance soak, 20 minutes and more, is that script): the
demo's full loop, every act in turn, five times over at max speed in a real pty: it never stops by
itself, q exits 0, no traceback, and the resident memory stays within 10% of its value after the first loop
(it grew about 4.5 MiB a loop for a dozen loops while Textual 8 kept every gone widget's line cache:
spectui/tui/shared/textual_fixes.py, tests/tui/test_textual_fixes.py); and a live run of a few hundred passes
on the tiny models, its memory flat from the first quarter to the last."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "benchmarks"))
from soak_demo import RSS_TOLERANCE, soak_demo, soak_live  # noqa: E402


def test_the_demo_memory_stays_flat_over_five_loops():
    r = soak_demo(minutes=0.0, speed="max", cols=120, rows=36, sample_s=1.0, min_loops=5, say=lambda *a, **k: None)
    assert r["loops"] >= 5 and r["status"] == 0 and not r["traceback"]
    assert r["rss_end"] <= (1 + RSS_TOLERANCE) * r["rss_first_loop"], r
    assert r["rss_max"] <= (1 + RSS_TOLERANCE) * r["rss_first_loop"], r


def test_a_long_live_run_keeps_memory_flat(tiny_target, tiny_draft_noisy):
    r = soak_live(str(tiny_target), str(tiny_draft_noisy), n=1500, threads=1, sample_s=0.5,
                  say=lambda *a, **k: None)
    assert r["status"] == 0 and not r["traceback"] and r["passes"] > 200, r
    assert r["rss_last_quarter"] <= (1 + RSS_TOLERANCE) * r["rss_first_quarter"], r
