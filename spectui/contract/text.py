"""One rule for text that came from outside (a trace, a server, a GGUF's metadata, a dataset).

Such text may carry terminal control sequences: OSC 0 retitles the window, OSC 52 writes the clipboard,
CSI 6n makes the terminal type its answer into the shell, U+202E reverses what follows. Every face and
every output that shows outside text passes it through :func:`visible` (or :func:`visible_line` for a
one-line place: a label, a name, an error message), which writes each forbidden code point as a visible
escape (``\\x1b``, ``\\u202e``, ``\\ud800``, ``\\U000e0041``). Forbidden: C0 controls except tab and newline,
DEL, C1 controls, the bidi embeddings / overrides U+202A-U+202E and isolates U+2066-U+2069, the bidi marks
(LRM U+200E, RLM U+200F, ALM U+061C), the invisible format characters (zero-width space U+200B, word joiner
and invisible operators U+2060-U+2064, the deprecated format controls U+206A-U+206F, U+FEFF, U+180E, the
interlinear annotations U+FFF9-U+FFFB, the Hangul fillers, the tag characters U+E0000-U+E007F, which spell
hidden ASCII) and lone surrogates (which no terminal can show and no UTF-8 stream can carry). The
zero-width joiner and non-joiner stay: scripts (Persian, the Indic ones) and emoji need them.

A face that lays text out in cells (the TUI, a cast, ``--explain``'s columns) uses :func:`visible_cells`:
the same, and also the code points whose width terminals disagree on (the zero-width joiner, the variation
selectors, the emoji skin-tone modifiers: Rich draws a family emoji in 2 cells, tmux 3.3 a skin-toned thumb
in 4), so every code point left has one width everywhere and the panels keep their borders.
:func:`cells` measures and :func:`cut` cuts such text in one pass over it (never a measure per character).

JSON output goes through :func:`json_text`: strict RFC 8259 (a NaN or an infinity is ``null``, never a bare
``NaN``), and every forbidden code point written as a ``\\uXXXX`` escape (a surrogate pair past U+FFFF), so a
parser reads the same value while the terminal that shows the JSON sees none of them. No Textual here.
"""

from __future__ import annotations

import codecs
import json
import math
import os
import re
import unicodedata
from functools import lru_cache


def _escape_one(ch: str) -> str:
    c = ord(ch)
    if c == 0x0A:
        return "\\n"
    if c == 0x09:
        return "\\t"
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" if c < 0x10000 else f"\\U{c:08x}"


def _json_escape_one(ch: str) -> str:
    c = ord(ch)
    if c < 0x10000:
        return f"\\u{c:04x}"
    c -= 0x10000
    return f"\\u{0xD800 + (c >> 10):04x}\\u{0xDC00 + (c & 0x3FF):04x}"  # JSON's surrogate pair


Ranges = tuple[tuple[int, int], ...]
# Everything that must never reach a terminal as it is: controls, bidi controls and marks, invisible format
# characters, the line and paragraph separators (a line break to a reader of JSON Lines by str.splitlines),
# Hangul fillers, tag characters, lone surrogates (C0 apart: tab and newline differ by place).
_FORBIDDEN: Ranges = ((0x7F, 0x9F), (0x61C, 0x61C), (0x115F, 0x1160), (0x180E, 0x180E), (0x200B, 0x200B),
                      (0x200E, 0x200F), (0x2028, 0x2029), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
                      (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF9, 0xFFFB), (0xD800, 0xDFFF), (0xE0000, 0xE007F))
_C0: Ranges = ((0x00, 0x08), (0x0B, 0x1F))  # newline and tab kept
_C0_LINE: Ranges = ((0x00, 0x1F),)
# what terminals measure differently (joiner, variation selectors, skin-tone modifiers): for the cell faces
_CELL_AMBIGUOUS: Ranges = ((0x200D, 0x200D), (0xFE00, 0xFE0F), (0x1F3FB, 0x1F3FF), (0xE0100, 0xE01EF))
_TRANSLATE_FROM = 1 << 16  # a longer text with something to escape goes through str.translate (C, one pass)


class _Rule:
    """One set of code points and how each is written: ``sub(s)`` escapes every one of them in ``s``. A short
    text goes through a regex, one substitution per run; a long one (a 1 MB token of zero-width characters:
    a million runs) through ``str.translate`` with a table built at its first use."""

    def __init__(self, ranges: Ranges, escape_one) -> None:
        self.ranges = ranges
        self.one = re.compile("[" + "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in ranges) + "]")
        self.runs = re.compile(self.one.pattern + "+")
        self._escape_one = escape_one
        self._table: dict[int, str] | None = None

    def _escape(self, m: re.Match) -> str:
        return "".join(map(self._escape_one, m.group()))

    def sub(self, s: str) -> str:
        m = self.runs.search(s)
        if m is None:
            return s
        if len(s) - m.start() < _TRANSLATE_FROM:
            return self.runs.sub(self._escape, s)
        if self._table is None:
            self._table = {c: self._escape_one(chr(c)) for lo, hi in self.ranges for c in range(lo, hi + 1)}
        return s[: m.start()] + s[m.start():].translate(self._table)


_VISIBLE = _Rule(_C0 + _FORBIDDEN, _escape_one)
_VISIBLE_LINE = _Rule(_C0_LINE + _FORBIDDEN, _escape_one)
_CELLS = _Rule(_C0 + _FORBIDDEN + _CELL_AMBIGUOUS, _escape_one)
_CELLS_LINE = _Rule(_C0_LINE + _FORBIDDEN + _CELL_AMBIGUOUS, _escape_one)
_JSON = _Rule(_C0 + _FORBIDDEN, _json_escape_one)
FORBIDDEN_RE = _VISIBLE.one
# The same plus newline and tab: for one-line places (a label, a model name, an error message).
FORBIDDEN_LINE_RE = _VISIBLE_LINE.one
# For a face that lays text out in cells (visible_cells): forbidden, or measured differently by terminals.
CELL_UNSAFE_RE = _CELLS.one
CELL_UNSAFE_RUNS = _CELLS.runs  # runs of them (tui.shared.visible_text escapes a Rich text a run at a time)


def is_forbidden(ch: str) -> bool:
    """True for a code point :func:`visible` escapes (newline and tab excepted)."""
    return FORBIDDEN_RE.match(ch) is not None


def visible(s: object) -> str:
    """``s`` (made a str) with every forbidden code point written as a visible escape; newline and tab kept."""
    return _VISIBLE.sub(s if isinstance(s, str) else str(s))


def visible_line(s: object) -> str:
    """As :func:`visible`, and newline and tab escaped too (``\\n``, ``\\t``): the text stays on one line."""
    return _VISIBLE_LINE.sub(s if isinstance(s, str) else str(s))


def visible_cells(s: object, one_line: bool = False) -> str:
    """As :func:`visible` (``one_line``: :func:`visible_line`), and the code points terminals measure
    differently escaped too (a zero-width joiner is ``\\u200d``): for a face that lays text out in cells."""
    return (_CELLS_LINE if one_line else _CELLS).sub(s if isinstance(s, str) else str(s))


def finite(obj):
    """``obj`` with every NaN / infinity (in dicts, lists, tuples) replaced by None (JSON null)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def json_text(obj, **kwargs) -> str:
    """Strict JSON (RFC 8259: no NaN, no Infinity) safe for a terminal: forbidden code points as \\uXXXX."""
    kwargs.setdefault("ensure_ascii", False)
    try:
        s = json.dumps(obj, allow_nan=False, **kwargs)  # the common case, every number finite: no copy first
    except ValueError:
        s = json.dumps(finite(obj), allow_nan=False, **kwargs)
    if s.isascii() and "\x7f" not in s:  # json.dumps escaped every C0 character: nothing else to escape
        return s
    # Structural JSON is ASCII and json.dumps already escapes C0, so what is left sits inside strings:
    # the \\uXXXX form parses back to the same value.
    return _JSON.sub(s)


def json_raw_safe(s: str) -> bool:
    """True when ``json_text`` leaves ``s`` inside a JSON string as ``json.dumps`` writes it (no code point to
    escape): a face that serialises many values holding the same few texts asks once per text."""
    return _JSON.one.search(s) is None


# ------------------------------------------------------------------ cells: measuring and cutting, linear
MAX_ZERO_WIDTH_RUN = 30  # Unicode's stream-safe limit (UAX #15): a longer run of combining marks is cut there


@lru_cache(maxsize=8192)
def char_cells(ch: str) -> int:
    """Terminal cells one code point takes: 2 for wide and full-width ones (CJK, most emoji), 0 for combining
    marks, format characters and the Hangul medial and final jamo, else 1."""
    o = ord(ch)
    if o < 0x300:
        return 1
    if unicodedata.category(ch) in ("Mn", "Me", "Cf") or 0x1160 <= o <= 0x11FF or 0xD7B0 <= o <= 0xD7FF:
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def cells(s: str) -> int:
    """Terminal cells ``s`` takes (:func:`char_cells` of each code point): one pass, however long ``s`` is."""
    if s.isascii():
        return len(s)
    return sum(map(char_cells, s))


def cut(s: str, width: int, ellipsis: str = "…") -> str:
    """``s`` when it fits ``width`` cells, else its longest start that fits with ``ellipsis`` after it. Reads
    ``s`` only as far as the cut (a 1 MB token costs what its first ``width`` cells cost); a run of more than
    ``MAX_ZERO_WIDTH_RUN`` zero-width code points (a combining-mark flood) is cut where the run goes past it."""
    if width <= 0:
        return ""
    if s.isascii():
        return s if len(s) <= width else s[: max(0, width - cells(ellipsis))] + ellipsis
    room = width - cells(ellipsis)  # what the start may take when it is cut
    used = zero_run = 0
    fit = 0  # the end of the longest start that fits ``room``
    for i, ch in enumerate(s):
        w = char_cells(ch)
        zero_run = zero_run + 1 if w == 0 else 0
        used += w
        if used > width or zero_run > MAX_ZERO_WIDTH_RUN:
            return s[:fit] + ellipsis if room >= 0 else ""
        if used <= room:
            fit = i + 1
    return s


def pad(s: str, width: int) -> str:
    """``s`` padded with spaces to ``width`` terminal cells."""
    return s + " " * max(0, width - cells(s))


def tame(s: str) -> str:
    """``s`` for a face that lays it out in cells (:func:`visible_cells`, newlines kept), with every run of
    more than ``MAX_ZERO_WIDTH_RUN`` zero-width code points cut there (a "…" in its place): a combining-mark
    flood is not sent to the terminal. For text already cut to what can show (it reads all of ``s``)."""
    s = visible_cells(s)
    if s.isascii():
        return s
    out, start, run = [], 0, 0
    for i, ch in enumerate(s):
        if char_cells(ch):
            run = 0
        else:
            run += 1
            if run == MAX_ZERO_WIDTH_RUN + 1:  # the run's excess, up to its end, becomes one ellipsis
                out.append(s[start:i] + "…")
                start = -1
            continue
        if start < 0:
            start = i
    if start >= 0:
        out.append(s[start:])
    return "".join(out)


def token_cell(text: str, width: int) -> str:
    """A token's text in a slot of ``width`` cells on one line: a newline as ⏎, escaped as the cell faces
    escape, cut with an ellipsis. Reads only the start that can show."""
    limit = (width + 2) * (MAX_ZERO_WIDTH_RUN + 1)  # more code points than ``width`` cells can show
    return cut(visible_cells(text[:limit].replace("\n", "⏎"), one_line=True), width)


# ------------------------------------------------------------------ streams that cannot encode every character
def _escape_unencodable(exc: UnicodeError) -> tuple[str, int]:
    """The ``spectui-escape`` error handler: a character the stream cannot encode is written as its escape in
    ASCII (``\\u2019``, a surrogate pair ``\\ud83d\\ude42`` past U+FFFF), which is also JSON's own escape, so
    ``--json`` stays valid JSON with the same value."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    return "".join(map(_json_escape_one, exc.object[exc.start:exc.end])), exc.end


codecs.register_error("spectui-escape", _escape_unencodable)


def escape_unencodable(*streams) -> None:
    """Make each text stream write what its encoding cannot encode as ASCII escapes (``spectui-escape``)
    instead of raising UnicodeEncodeError: stdout and stderr under ``LC_ALL=C`` or ``PYTHONIOENCODING=ascii``,
    latin-1. A stream that cannot be reconfigured (a test's StringIO) is left as it is."""
    for stream in streams:
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", None) != "spectui-escape":
            try:
                reconfigure(errors="spectui-escape")
            except (ValueError, OSError, AttributeError):  # closed, or not a TextIOWrapper underneath
                pass


# words a GGUF's general.name often carries from the repository it was converted from, naming a format or a
# quantization the file does not have ("Qwen2.5 Coder 0.5B Instruct AWQ" for a Q4_K_M file)
_FORMAT_WORDS = re.compile(r"(?:[\s_-]+(?:gguf|awq|gptq|exl2|mlx|fp16|bf16|fp32|f16|int4|int8|q\d[\w]*))+\s*$",
                           re.IGNORECASE)


def model_label(name: str, quantization: str = "", path: str = "") -> str:
    """A model as its metadata names it (general.name, without a format or quantization word the file does
    not have), then its file type when given (the GGUF's own quantization): "Qwen2.5 Coder 0.5B Instruct
    Q4_K_M". Without a name, the file's name. Made visible (a GGUF's words are text from outside)."""
    clean = _FORMAT_WORDS.sub("", name).strip() if name else ""
    if not clean:
        return visible_line(name or os.path.basename(path) or "?")
    return visible_line(f"{clean} {quantization}" if quantization else clean)

