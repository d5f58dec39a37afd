"""One fact, one function: the TUI and the headless summary say the same layer count for the same run
(llama.cpp's count, n_layer + 1: the repeating layers and the output layer)."""

from __future__ import annotations

import dataclasses
import re

from spectui.analysis.stats import RunStats
from spectui.contract.control import RunControl
from spectui.contract.events import ModelInfo, Settings
from spectui.recording.synthetic import sample_events
from spectui.text.run import summary_text
from spectui.tui.run.app import SpectuiApp
from spectui.tui.run.run_metrics import RunMetrics
from spectui.views.animation import VERDICT
from spectui.views.placement import models_where, placement_text, where

LAYERS = re.compile(r"(\d+)/(\d+)")


def _start():
    start = sample_events()[0]
    # a 28-layer target wholly offloaded (llama.cpp: "offloaded 29/29 layers to GPU"), a 24-layer draft
    # with 10 of its 25 units on the GPU
    target = ModelInfo(path="t.gguf", name="t", backend="CUDA", device="NVIDIA H200", n_layer=28, n_gpu_layers=29)
    draft = ModelInfo(path="d.gguf", name="d", backend="CUDA", device="NVIDIA H200", n_layer=24, n_gpu_layers=10)
    return dataclasses.replace(start, target=target, draft=draft, threads=2)


def test_the_tui_and_the_headless_summary_count_layers_alike():
    start = _start()
    stats = RunStats()
    for ev in [start, *sample_events()[1:]]:
        stats.update(ev)
    summary = summary_text(stats)
    headless = [LAYERS.findall(line) for line in summary.splitlines() if line.startswith(("target t", "draft  d"))]
    tui = [LAYERS.findall(where(start.target)), LAYERS.findall(where(start.draft))]
    assert headless == tui == [[("29", "29")], [("10", "25")]]
    assert "rest on CPU -t 2" in placement_text(start.draft, start.threads)
    assert models_where(start) == "target CUDA 29/29 layers · draft CUDA 10/25 layers"


async def test_the_run_screen_says_what_the_summary_says():
    events = [_start(), *sample_events()[1:]]
    stats = RunStats()
    for ev in events:
        stats.update(ev)
    summary_counts = [LAYERS.findall(line) for line in summary_text(stats).splitlines()
                      if line.startswith(("target t", "draft  d"))]
    app = SpectuiApp(lambda c, p: iter(events), RunControl(Settings(draft_max=2)), freeze_phase=VERDICT)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        app.refresh_from_state()
        await pilot.pause()
        panel = app.screen.query_one(RunMetrics)
        text = panel.draw(100, 12).plain  # the panel's own drawing of the app's view, with room for every line
        await pilot.press("q")
    runs_on = [line for line in text.splitlines() if "runs on" in line]
    assert runs_on and LAYERS.findall(runs_on[0]) == [c for counts in summary_counts for c in counts]
