"""Fixes for leaks in Textual 8 that a face running for hours meets (the demo makes an app per act and loop).

Two of Textual's methods are under ``functools.lru_cache(1024)`` although they are instance methods
(Textualize/textual issue 6665): the cache keys hold ``self``, and whatever ``self`` holds stays in memory
until 1024 later calls push it out.

- ``textual._styles_cache.StylesCache.get_inner_outer``: ``self`` is a widget's StylesCache, and with it
  every line the widget last drew (Strips, each with its own small caches). The demo's three acts left
  about 28 widgets' line caches behind each, and its resident memory grew about 4.5 MiB a loop for a dozen
  loops, until the cache was full. The result depends on the two colours only.
- ``textual.filter.ANSIToTruecolor.truecolor_style``: ``self`` is the app's filter (one per app) or one made
  for a single render (``Tint``, ``TextOpacity``); the result depends on its terminal theme only.

``fix_textual_leaks`` caches each on what its result depends on (the same 1024 entries, none of them holding
a widget or an app). It changes nothing where Textual no longer has that shape (tests/tui/test_textual_fixes.py
says so loudly).

One more is not a leak but garbage for the cycle collector: ``textual.strip.Strip.divide`` caches its answer
on the strip, and the compositor divides every line it draws at the screen's width, where the answer is
``[self]``: each drawn line (a Strip, its seven small caches, its segments) is then a reference cycle that
only the garbage collector frees. A live run drew about 800 such objects a paint, so the collector ran several
times a second, and a full collection (every object of the app and the run, tens of milliseconds) holds the
GIL that the engine's thread needs between two decodes. ``uncycle_strip_divide`` answers that case without
storing it (the same list, ``[self]``); every other cut is Textual's own, cached as before.
"""

from __future__ import annotations

from functools import lru_cache
from types import SimpleNamespace


def _self_keyed(method) -> bool:
    """Whether ``method`` is still an lru_cache over an instance method (``self`` in its keys)."""
    return callable(getattr(method, "cache_clear", None)) and callable(getattr(method, "__wrapped__", None))


def recache(cls, name: str, key, stand_in) -> bool:
    """Replace ``cls.name``, an lru_cache over an instance method, by one cached on ``key(self)`` and the
    arguments: the original runs with ``stand_in(key(self))`` as its ``self`` (what it reads of ``self``,
    and nothing else). True if the leaking method was found (and replaced, once: a second call finds the
    fixed one and says True again)."""
    current = cls.__dict__.get(name)
    if getattr(current, "spectui_fixed", False):
        return True
    if not _self_keyed(current):
        return False
    original = current.__wrapped__

    @lru_cache(current.cache_parameters()["maxsize"])
    def on_key(k, *args, **kwargs):
        return original(stand_in(k), *args, **kwargs)

    def method(self, *args, **kwargs):
        return on_key(key(self), *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = original.__doc__
    method.spectui_fixed = True
    method.cache = on_key
    method.original = original  # Textual's body, uncached (the tests compare answers)
    setattr(cls, name, method)
    current.cache_clear()  # what it held so far is free
    return True


def uncycle_strip_divide() -> bool:
    """``Strip.divide`` no longer stores ``[self]`` in the strip's own cache (see the module's docstring). True
    if Textual's method still has that shape (it caches in ``_divide_cache``) and was wrapped (once)."""
    from textual.strip import Strip  # noqa: PLC0415

    current = Strip.__dict__.get("divide")
    if getattr(current, "spectui_fixed", False):
        return True
    if current is None or "_divide_cache" not in getattr(Strip, "__slots__", ()):
        return False
    original = current

    def divide(self, cuts):
        cuts = [cut for cut in cuts if cut <= self.cell_length]  # what Textual's body keeps of them
        if cuts == [self.cell_length]:
            return [self]  # Textual's answer, not stored on self (a cycle)
        return original(self, cuts)

    divide.__doc__ = original.__doc__
    divide.spectui_fixed = True
    divide.original = original
    Strip.divide = divide
    return True


def fix_textual_leaks() -> dict[str, bool]:
    """The fixes; for each method, whether it was found (False: Textual changed, nothing was replaced)."""
    from textual._styles_cache import StylesCache  # noqa: PLC0415 - Textual loads only with a face
    from textual.filter import ANSIToTruecolor  # noqa: PLC0415

    return {
        "StylesCache.get_inner_outer": recache(StylesCache, "get_inner_outer", key=lambda self: None,
                                               stand_in=lambda _k: None),  # its body never reads self
        "ANSIToTruecolor.truecolor_style": recache(
            ANSIToTruecolor, "truecolor_style", key=lambda self: self._terminal_theme,
            stand_in=lambda theme: SimpleNamespace(_terminal_theme=theme)),  # all it reads of self
        "Strip.divide": uncycle_strip_divide(),
    }
