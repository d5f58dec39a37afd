"""spectui/tui/shared/textual_fixes.py: Textual 8's ``StylesCache.get_inner_outer`` keeps every widget it was
called for (an lru_cache over an instance method, Textualize/textual issue 6665), and with it the widget's
last drawn lines; the demo, an app per act and loop, grew by those for a dozen loops. ``ANSIToTruecolor
.truecolor_style`` does the same with every app's filter. Tested on real apps: widgets mounted, drawn,
removed, and their line caches gone; apps run and gone, and their filters gone; the fixed methods give
Textual's own answers."""

from __future__ import annotations

import gc
import weakref

import textual
from rich.color import Color as RichColor
from rich.style import Style
from rich.terminal_theme import MONOKAI
from textual._styles_cache import StylesCache
from textual.app import App
from textual.color import Color
from textual.containers import Vertical
from textual.filter import ANSIToTruecolor
from textual.widgets import Static

import spectui.tui.shared.app  # noqa: F401 - importing the faces' base applies the fix
from spectui.tui.shared.textual_fixes import fix_textual_leaks


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


async def test_a_gone_apps_colour_filter_is_freed():
    pairs = []  # (the app, its colour filter), weakly
    for turn in range(4):
        app = _Cards()
        async with app.run_test(size=(80, 24)) as pilot:
            await app.query_one("#cards").mount(Static(f"[red on blue]app {turn}[/]"))  # ANSI colours to convert
            await pilot.pause()
            truecolor = [f for f in app._filters if isinstance(f, ANSIToTruecolor)]
            assert truecolor, "the app has no ANSIToTruecolor filter: the test would prove nothing"
            pairs += [(weakref.ref(app), weakref.ref(f)) for f in truecolor]
        del app, pilot, truecolor
    gc.collect()
    gone = [f for a, f in pairs if a() is None]
    assert len(gone) >= 3, "the apps stayed in memory: the test would prove nothing"
    alive = sum(f() is not None for f in gone)
    assert alive == 0, f"{alive} of {len(gone)} gone apps' colour filters are still in memory"


def test_the_fixes_found_textuals_leaking_methods_and_keep_their_answers():
    assert textual.__version__.split(".")[0] == "8", f"textual {textual.__version__}: pyproject pins >=8,<9"
    found = fix_textual_leaks()
    assert all(found.values()), (f"no longer an lru_cache over an instance method: {found}; see whether "
                                 "Textual fixed issue 6665, then drop that fix from textual_fixes.py")
    assert StylesCache.__dict__["get_inner_outer"].spectui_fixed
    base, bg = Color(10, 20, 30), Color(200, 100, 50, 0.5)
    inner, outer = StylesCache().get_inner_outer(base, bg)
    assert inner.background == base + bg and outer.background == base
    assert (inner, outer) == StylesCache.get_inner_outer.original(StylesCache(), base, bg)  # Textual's own body
    assert StylesCache().get_inner_outer(base, bg) is StylesCache().get_inner_outer(base, bg)  # still cached

    assert ANSIToTruecolor.__dict__["truecolor_style"].spectui_fixed
    style, back = Style(color="red", bgcolor="blue", dim=True), RichColor.from_rgb(0, 0, 0)
    got = ANSIToTruecolor(MONOKAI).truecolor_style(style, back)
    assert got.color.triplet is not None and got.bgcolor.triplet is not None and not got.dim  # truecolour now
    assert got == ANSIToTruecolor.truecolor_style.original(ANSIToTruecolor(MONOKAI), style, back)  # Textual's
    assert ANSIToTruecolor(MONOKAI).truecolor_style(style, back) is got  # cached across filters of one theme


def test_a_strip_divided_whole_is_not_a_cycle_and_other_cuts_keep_textuals_answer():
    from rich.segment import Segment
    from textual.strip import Strip

    assert fix_textual_leaks()["Strip.divide"], "Strip.divide changed shape: see textual_fixes.uncycle_strip_divide"
    strip = Strip([Segment("hello "), Segment("world", Style(bold=True))])
    whole = strip.divide([strip.cell_length, strip.cell_length + 4])  # a cut past the end counts for nothing
    assert whole == [strip] and whole[0] is strip
    assert not strip._divide_cache, "[self] stored on the strip: a reference cycle again"
    parts = strip.divide([3, 8, 11])
    textuals = Strip.divide.original(strip, [3, 8, 11])
    assert [p.text for p in parts] == [p.text for p in textuals] == ["hel", "lo wo", "rld"]
    assert strip.divide([3, 8, 11]) is parts  # other cuts: cached on the strip as Textual caches them


async def test_repainting_a_live_app_leaves_no_cyclic_garbage():
    app = _Cards()
    async with app.run_test(size=(80, 24)) as pilot:
        card = Static("card 0")
        await app.query_one("#cards").mount(card)
        await pilot.pause()
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            for turn in range(1, 21):  # each update repaints the card's lines through the compositor
                card.update(f"card {turn}")
                await pilot.pause()
            gc.collect()
            strips = sum(type(o).__name__ == "Strip" for o in gc.garbage)
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
    assert strips == 0, f"{strips} drawn lines were freed only by the cycle collector"
