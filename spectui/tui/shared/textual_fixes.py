"""A fix for a leak in Textual 8 that a face running for hours meets (the demo makes an app per act and loop).

``textual._styles_cache.StylesCache.get_inner_outer`` is an instance method under ``functools.lru_cache(1024)``
(Textualize/textual issue 6665): its cache keys hold ``self``, the StylesCache of a widget, and with it every
line the widget last drew (Strips, each with its own small caches). A widget that is gone stays in memory
until 1024 later (widget, colour pair) calls push it out: the demo's three acts leave about 28 widgets' line
caches behind each, and its resident memory grew about 4.5 MiB a loop for a dozen loops before the cache was
full. The method's result depends on the two colours only, so ``fix_styles_cache_leak`` caches it on them
alone (the same 1024 entries of two Styles, none of them holding a widget). It changes nothing when Textual
no longer has that shape (tests/tui/test_textual_internals.py says so loudly).
"""

from __future__ import annotations

from functools import lru_cache

INNER_OUTER_CACHE = 1024  # entries, as Textual's own


def _self_keyed(method) -> bool:
    """Whether ``method`` is still an lru_cache over an instance method (``self`` in its keys)."""
    return callable(getattr(method, "cache_clear", None)) and callable(getattr(method, "__wrapped__", None))


def fix_styles_cache_leak() -> bool:
    """Cache ``StylesCache.get_inner_outer`` on its colours, not on the widget's StylesCache. True if the
    leaking method was found (and replaced, once: later calls find the fixed one and say True again)."""
    from textual._styles_cache import StylesCache  # noqa: PLC0415 - Textual loads only with a face

    current = StylesCache.__dict__.get("get_inner_outer")
    if getattr(current, "spectui_fixed", False):
        return True
    if not _self_keyed(current):
        return False
    original = current.__wrapped__  # (self, base_background, background): the body never reads self

    @lru_cache(INNER_OUTER_CACHE)
    def inner_outer(base_background, background):
        return original(None, base_background, background)

    def get_inner_outer(self, base_background, background):
        return inner_outer(base_background, background)

    get_inner_outer.spectui_fixed = True
    get_inner_outer.cache = inner_outer
    StylesCache.get_inner_outer = get_inner_outer
    current.cache_clear()  # the StylesCaches it held so far are free
    return True
