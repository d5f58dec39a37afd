"""The TUI driving the real engine with an MTP head (benchmarks/make_spec_models.py's tiny target): the status
line names the kind, and `d` cycles through the head the run was loaded with, ngram and none."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from test_tui_engine import ListRecorder, wait_until

from spectui.analysis.stats import RunStats
from spectui.contract.control import RunControl
from spectui.contract.events import Settings
from spectui.text.run import summary_text
from spectui.tui.run.app import SpectuiApp
from spectui.tui.run.live_screen import LiveScreen
from spectui.tui.run.run_metrics import RunMetrics
from spectui.tui.run.status_line import StatusLine

ROOT = Path(__file__).resolve().parents[2]


def _paused_app(engine, drafter: str, n: int):
    """A run app on ``engine`` at k = 3, T = 0, starting paused (the test presses space when ready)."""
    control = RunControl(Settings(draft_max=3, temperature=0.0, drafter=drafter))
    control.pause()
    app = SpectuiApp(lambda c, p: engine.run(p, c, n), control, recorder=ListRecorder(), n_predict=n,
                     prompt="the hash map")
    return control, app


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
async def test_tui_runs_an_mtp_head_and_names_it(tmp_path):
    from spectui.engine.loop import Engine

    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "make_spec_models.py"), str(tmp_path),
                        "--mtp-agree", "0.5"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    engine = Engine(str(tmp_path / "mtp-agree-target.gguf"), n_ctx=256, threads=1, head="mtp")
    try:
        control, app = _paused_app(engine, "mtp", 40)
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: app.snap is not None and app.snap.start is not None)
            assert "drafter mtp" in app.query_one(StatusLine).text.plain
            screen = app.screen
            assert isinstance(screen, LiveScreen)
            model_free = ("ngram", "ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache",
                          "suffix")
            assert screen.drafter_choices() == ("mtp", *model_free, "none")  # the drafters' own order
            for want in (*model_free, "none", "mtp"):
                await pilot.press("d")
                assert control.settings.drafter == want
            await pilot.press("space")
            await wait_until(pilot, lambda: app.snap.end is not None and not app.running)
            assert app.snap.stats.n_accepted > 0 and app.snap.end.error == ""
    finally:
        engine.close()


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
async def test_d_cycles_model_head_ngram_none_when_a_head_drafts_beside_a_draft_model(tmp_path):
    """--drafter model with --head H: d goes model -> eagle3 -> ngram -> none -> model, the status line names the
    head's kind while it is the drafter; a run with the model names the draft model's step and, in the summary,
    both the draft model (RunStarted.draft) and the head (RunStarted.head)."""
    import tinymodels

    from spectui.engine.loop import Engine

    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "make_spec_models.py"), str(tmp_path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    draft = tinymodels.build_model(tmp_path / "draft.gguf", seed=0, noise=0.1)
    engine = Engine(str(tmp_path / "eagle3-target.gguf"), str(draft), n_ctx=256, threads=1, head="eagle3",
                    head_file=str(tmp_path / "eagle3-draft.gguf"), warn=lambda m: None)
    try:
        control, app = _paused_app(engine, "model", 24)
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: app.snap is not None and app.snap.start is not None)
            start = app.snap.start
            assert start.draft is not None and start.head is not None and start.head.kind == "eagle3"
            screen = app.screen
            assert isinstance(screen, LiveScreen)
            model_free = ("ngram", "ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache",
                          "suffix")
            assert screen.drafter_choices() == ("model", "eagle3", *model_free, "ngram-mod,model", "none")
            for want in ("eagle3", *model_free, "ngram-mod,model", "none", "model", "eagle3"):
                await pilot.press("d")
                assert control.settings.drafter == want
            assert "drafter eagle3 (layers 1,2,3)" in app.query_one(StatusLine).text.plain
            for want in (*model_free, "ngram-mod,model", "none", "model"):  # the model drafts, the head beside it
                await pilot.press("d")
                assert control.settings.drafter == want
            await pilot.press("space")
            await wait_until(pilot, lambda: app.snap.end is not None and not app.running)
            assert app.snap.end.error == "" and app.snap.stats.n_drafted > 0
            # the step's cost is the draft model's, named so (not the head's, loaded beside it)
            panel = app.screen.query_one(RunMetrics).draw(100, 12).plain
            assert "step draft model" in panel and "EAGLE-3 head" not in panel
        stats = RunStats()
        for ev in app.recorder.events:
            stats.update(ev)
        # the summary names both: the draft model (RunStarted.draft) and the head (RunStarted.head)
        text = summary_text(stats)
        assert "draft model            tiny" in text and "(draft.gguf)" in text
        assert "head                   eagle3 (EAGLE-3 head, features from target layers 1, 2, 3)" in text
        assert "eagle3-draft.gguf" in text
    finally:
        engine.close()
