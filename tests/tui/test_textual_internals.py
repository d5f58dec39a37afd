"""KeepLines (spectui/tui/shared/panel.py) reads two private attributes of Textual's line cache,
``Widget._styles_cache._cache`` and ``._dirty_lines``, to hand back a panel's last lines. pyproject pins
Textual to the major version this was written for (``textual>=8,<9``); this test fails loudly, naming
what moved, if a Textual release changes them, rather than letting KeepLines fall back in silence."""

from __future__ import annotations

import textual
from textual.app import App
from textual.strip import Strip

from spectui.tui.run.run_metrics import RunMetrics


class _OnePanel(App):
    def compose(self):
        yield RunMetrics()


async def test_the_private_line_cache_keeplines_reads_is_still_there():
    assert textual.__version__.split(".")[0] == "8", f"textual {textual.__version__}: pyproject pins >=8,<9"
    app = _OnePanel()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        panel = app.query_one(RunMetrics)
        cache = getattr(panel, "_styles_cache", None)
        assert cache is not None, "Widget._styles_cache is gone: KeepLines cannot keep lines"
        lines = getattr(cache, "_cache", None)
        dirty = getattr(cache, "_dirty_lines", None)
        assert isinstance(lines, dict), f"StylesCache._cache moved or changed type: {type(lines)}"
        assert isinstance(dirty, set), f"StylesCache._dirty_lines moved or changed type: {type(dirty)}"
        panel.render_lines(panel.region.reset_offset)  # the shortcut's bookkeeping runs on these
        assert panel._kept is not None, "KeepLines took its fallback: the private cache did not look right"
        assert all(isinstance(s, Strip) for s in lines.values())
