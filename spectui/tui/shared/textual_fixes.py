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


def fix_textual_leaks() -> dict[str, bool]:
    """Both fixes; for each method, whether it was found (False: Textual changed, nothing was replaced)."""
    from textual._styles_cache import StylesCache  # noqa: PLC0415 - Textual loads only with a face
    from textual.filter import ANSIToTruecolor  # noqa: PLC0415

    return {
        "StylesCache.get_inner_outer": recache(StylesCache, "get_inner_outer", key=lambda self: None,
                                               stand_in=lambda _k: None),  # its body never reads self
        "ANSIToTruecolor.truecolor_style": recache(
            ANSIToTruecolor, "truecolor_style", key=lambda self: self._terminal_theme,
            stand_in=lambda theme: SimpleNamespace(_terminal_theme=theme)),  # all it reads of self
    }
