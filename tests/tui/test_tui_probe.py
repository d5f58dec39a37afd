"""The TUI's prediction panel shows this machine's own numbers (``spectui probe``) when the run carries a
probe result (``RunStarted.probe``), and the prediction then follows the probe's verify curve."""

from __future__ import annotations

from dataclasses import replace

from spectui.analysis.cost.costmodel import predict
from spectui.analysis.measured import probe
from spectui.contract.control import RunControl
from spectui.contract.events import ModelInfo, Settings
from spectui.recording.synthetic import sample_events
from spectui.tui.run.app import SpectuiApp
from spectui.tui.run.prediction_panel import PredictionPanel
from spectui.views.animation import VERDICT

RATIOS = (1.0, 1.57, 2.01, 1.78, 2.30, 2.94, 3.86, 3.70, 4.22, 4.48, 4.87, 4.53, 4.93, 5.40, 5.68, 4.20)


def probe_for(start):
    t = start.target
    res = probe.ProbeResult(
        target=ModelInfo(path=t.path, name=t.name, size_bytes=t.size_bytes, n_gpu_layers=t.n_gpu_layers),
        threads=start.threads, machine={"cpu": "x"}, decode_ms=84.2,
        verify_ms_by_batch=tuple(84.2 * r for r in RATIOS), draft_decode_ms=36.0, repeats=5,
        loadavg=(0.1, 0.1, 0.1), others_cpu=0.0,
        draft=ModelInfo(path="/m/d.gguf"),
    )
    return res


async def test_prediction_panel_shows_the_machine_and_uses_its_curve():
    events = sample_events(38)
    res = probe_for(events[0])
    events[0] = replace(events[0], probe=res.machine_probe())  # what the engine records when handed it
    app = SpectuiApp(lambda c, p: iter(events), RunControl(Settings(draft_max=2)), freeze_phase=VERDICT)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        app.refresh_from_state()
        await pilot.pause()
        panel = app.screen.query_one(PredictionPanel)
        text = "\n".join(strip.text for strip in panel.render_lines(panel.content_region.reset_offset))
        assert res.summary_line()[:100] in text
        view = panel.view
        expected = predict(view.snap.stats, k_max=16, current_k=2, curve=res.curve)
        assert view.prediction.tps_by_k == expected.tps_by_k
        await pilot.press("q")
