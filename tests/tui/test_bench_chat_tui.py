"""The live TUI on a model with a chat template (spectui.commands.run.ChatEngine, the run command's default): every run
the screen starts, the restart included, goes through the template, and the trace records it. Real llama.cpp on
the tiny GGUF written with tests/tinymodels.py's CHAT_TEMPLATE."""

from __future__ import annotations

from test_tui_engine import ListRecorder, wait_until

from spectui.commands.run import ChatEngine
from spectui.contract.control import RunControl
from spectui.contract.events import RunStarted, Settings
from spectui.tui.run.app import SpectuiApp


async def test_tui_runs_on_the_chat_template(tiny_chat_target):
    from spectui.engine.loop import Engine

    engine = Engine(str(tiny_chat_target), None, n_ctx=512, threads=1)
    try:
        chat = ChatEngine(engine, engine.chat_template)
        rec = ListRecorder()
        app = SpectuiApp(lambda c, p: chat.run(p, c, 12), RunControl(Settings(draft_max=2, drafter="ngram")),
                         recorder=rec, n_predict=12, prompt="the cat")
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_until(pilot, lambda: app.snap is not None and app.snap.end is not None and not app.running)
            await pilot.press("r")
            await wait_until(pilot, lambda: sum(isinstance(e, RunStarted) for e in rec.events) == 2
                             and app.snap.end is not None and not app.running)
            await pilot.press("q")
        assert app.stop_engine(10)
        starts = [e for e in rec.events if isinstance(e, RunStarted)]
        assert len(starts) == 2
        for s in starts:
            assert s.prompt == "the user: the cat\nthe answer:" and s.chat_template == engine.chat_template.label
    finally:
        engine.close()
