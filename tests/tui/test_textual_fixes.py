"""spectui/tui/shared/textual_fixes.py: Textual 8's ``StylesCache.get_inner_outer`` keeps every widget it was
called for (an lru_cache over an instance method, Textualize/textual issue 6665), and with it the widget's
last drawn lines; the demo, an app per act and loop, grew by those for a dozen loops. Tested on a real app:
widgets mounted, drawn, removed, and their line caches gone; the fixed method gives Textual's own answer."""

from __future__ import annotations

import gc
import weakref

import textual
from textual._styles_cache import StylesCache
from textual.app import App
from textual.color import Color
from textual.containers import Vertical
from textual.widgets import Static

import spectui.tui.shared.app  # noqa: F401 - importing the faces' base applies the fix
from spectui.tui.shared.textual_fixes import fix_styles_cache_leak


class _Cards(App):
    CSS = "Static { background: $panel; border: round $accent; }"

    def compose(self):
        yield Vertical(id="cards")


async def test_a_removed_widgets_line_cache_is_freed():
    app = _Cards()
    async with app.run_test(size=(80, 24)) as pilot:
        box = app.query_one("#cards")
        caches = []
        for turn in range(3):
            cards = [Static(f"card {turn}.{i}") for i in range(8)]
            await box.mount(*cards)
            await pilot.pause()
            for card in cards:  # each drew its lines through get_inner_outer
                assert card._styles_cache._cache, "the card drew nothing: the test would prove nothing"
                caches.append(weakref.ref(card._styles_cache))
            await box.remove_children()
            await pilot.pause()
            del cards, card
        await box.mount(Static("the last card"))  # a new frame: the screen no longer maps the removed ones
        await pilot.pause()
        gc.collect()
        alive = sum(ref() is not None for ref in caches)
        assert alive == 0, f"{alive} of {len(caches)} removed widgets' line caches are still in memory"


def test_the_fix_found_textuals_leaking_method_and_keeps_its_answer():
    assert textual.__version__.split(".")[0] == "8", f"textual {textual.__version__}: pyproject pins >=8,<9"
    assert fix_styles_cache_leak(), ("StylesCache.get_inner_outer is no longer an lru_cache over an instance "
                                     "method: see whether Textual fixed issue 6665, then drop textual_fixes.py")
    fixed = StylesCache.__dict__["get_inner_outer"]
    assert fixed.spectui_fixed
    base, bg = Color(10, 20, 30), Color(200, 100, 50, 0.5)
    inner, outer = StylesCache().get_inner_outer(base, bg)
    assert inner.background == base + bg and outer.background == base  # Textual's own body, unchanged
    assert StylesCache().get_inner_outer(base, bg) is StylesCache().get_inner_outer(base, bg)  # still cached
