"""The ASCII face: when the terminal's encoding is not UTF-8 (the locale's LC_ALL / LC_CTYPE / LANG names
another, e.g. ``LANG=C`` or ``en_US.ISO-8859-1``) or when asked (``--ascii``, ``SPECTUI_ASCII=1``), every
character a face writes outside ASCII is written as an ASCII one of the same width: box drawing as
``+ - |``, the sparklines' and bars' blocks as ``_ . - = + * % #``, and the token glyphs as ASCII marks that
still differ by shape, not only by colour (accepted ``+``, rejected ``x``, discarded ``.``, the target's
correction ``@``, bonus ``*``, a plain pass ``o``, pending ``?``). Anything else (a token's text in
another script) becomes ``?`` for each cell it takes. No Textual here: the translation is applied by the
faces' driver (``tui.shared.app``) to what it writes, escape sequences untouched (they are ASCII). Keys
named by an arrow glyph (the footer, the help pages, the replay banner) are named by words instead
(``key_names``: "right", "left"), never by ``>`` / ``<``, which are keys of their own (faster / slower).
"""

from __future__ import annotations

import os

from rich.cells import cell_len

ASCII_ENV = "SPECTUI_ASCII"

_TABLE = {
    # the token glyphs (tui.shared.panel.GLYPH) and the marks of the faces
    "✓": "+", "✔": "+", "✗": "x", "✘": "x", "·": ".", "●": "@", "★": "*", "○": "o", "•": "*", "⏎": "~",
    "→": ">", "←": "<", "↑": "^", "↓": "v", "▶": ">", "◀": "<", "▸": ">", "▲": "^", "▼": "v", "…": "~",
    "‖": "|", "⚠": "!", "∅": "0", "×": "x", "≈": "~", "≤": "<", "≥": ">", "—": "-", "–": "-", "“": '"',
    "”": '"', "‘": "'", "’": "'", "±": "+", "µ": "u", "°": "o",
    "⇉": "=", "✂": "/",  # --pipeline: drafts drafted ahead (views.pipeline.OVERLAPPED), tokens thrown (THROWN)
    "⑂": "Y",  # a tree pass's pruned branches (views.tree.TREE)
    # box drawing (Textual's borders) and blocks (sparklines, bars, scrollbars)
    "─": "-", "━": "-", "═": "=", "╍": "-", "┄": "-", "┈": "-", "│": "|", "┃": "|", "║": "|", "╏": "|",
    "┆": "|", "┊": "|", "▔": "-", "▕": "|", "▏": "|", "▎": "|", "▍": "|", "▌": "|", "▐": "|", "▋": "|",
    "▊": "|", "▉": "#", "░": ":", "▒": "%", "▓": "#", "▀": "-", "▖": ".", "▗": ".", "▘": "'", "▝": "'",
    "▙": "#", "▛": "#", "▜": "#", "▟": "#",
    "▁": "_", "▂": ".", "▃": "-", "▄": "=", "▅": "+", "▆": "*", "▇": "%", "█": "#",
}
for _c in "┌┏┐┓└┗┘┛├┝┣┤┥┫┬┯┳┴┷┻┼┿╋╔╗╚╝╠╣╦╩╬╭╮╯╰╒╓╕╖╘╙╛╜╞╟╡╢╤╥╧╨╪╫":
    _TABLE[_c] = "+"


# Keys named by a glyph (Textual's footer draws the arrow keys as arrows): in the ASCII face an arrow would
# become ">" / "<", the very characters of the faster / slower keys, so the key is named by its word instead
# (the text is made so before it is laid out: ``key_names``). Pairs first.
KEY_WORDS = (("←→", "left/right"), ("←/→", "left/right"), ("→/←", "right/left"), ("↑↓", "up/down"),
             ("↑/↓", "up/down"), ("→", "right"), ("←", "left"), ("↑", "up"), ("↓", "down"), ("⏎", "enter"),
             ("⌫", "backspace"))


def key_names(text: str, env=None) -> str:
    """``text`` (a key, or a line that names keys) with its arrow glyphs as words when the ASCII face is
    wanted; as it is otherwise."""
    if text.isascii() or not ascii_wanted(env):
        return text
    for glyph, word in KEY_WORDS:
        text = text.replace(glyph, word)
    return text


class _Map(dict):
    """str.translate's table: ASCII stays, the table's characters map, the rest become ``?`` per cell."""

    def __missing__(self, code: int):
        if code < 128:
            out: int | str = code
        else:
            out = "?" * max(1, cell_len(chr(code)))
        self[code] = out
        return out


TRANSLATION = _Map({ord(k): v for k, v in _TABLE.items()})


def to_ascii(text: str) -> str:
    """``text`` with every character outside ASCII replaced by ASCII of the same width."""
    return text if text.isascii() else text.translate(TRANSLATION)


def encoding_is_utf8(env=None) -> bool:
    """Whether the locale names UTF-8 (the first of LC_ALL, LC_CTYPE, LANG that is set; none set: UTF-8,
    the terminals' default and Python's own since PEP 538, whose coercion of a C locale is seen through)."""
    env = os.environ if env is None else env

    def utf8(value: str) -> bool:
        return "utf8" in value.lower().replace("-", "")

    lc_all, lc_ctype, lang = (env.get(n, "") for n in ("LC_ALL", "LC_CTYPE", "LANG"))
    if lc_all:
        return utf8(lc_all)
    # Python coerces a C locale to C.UTF-8 for itself and says so in LC_CTYPE (PEP 538): the terminal's own
    # is then LANG's, when that names another
    coerced = lc_ctype.lower().replace("-", "") == "c.utf8" and bool(lang) and not utf8(lang)
    if lc_ctype and not coerced:
        return utf8(lc_ctype)
    if lang:
        return utf8(lang)
    return True


def ascii_wanted(env=None) -> bool:
    """The ASCII face: asked (``SPECTUI_ASCII=1``, which ``--ascii`` sets), or the locale is not UTF-8."""
    env = os.environ if env is None else env
    asked = env.get(ASCII_ENV, "").strip().lower()
    if asked in ("1", "yes", "true", "on"):
        return True
    if asked in ("0", "no", "false", "off"):
        return False
    return not encoding_is_utf8(env)


def ascii_option(f):
    """``--ascii`` for a face's command: sets ``SPECTUI_ASCII=1`` (the faces read it; ``spectui serve``'s
    sessions inherit it)."""
    import click  # noqa: PLC0415

    def turn_on(ctx, param, value):
        if value:
            os.environ[ASCII_ENV] = "1"
        return value

    return click.option("--ascii", is_flag=True, expose_value=False, callback=turn_on, is_eager=True,
                        help="ASCII only: box drawing and glyphs as ASCII (also when the locale is not UTF-8)")(f)
