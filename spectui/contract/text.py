"""One rule for text that came from outside (a trace, a server, a GGUF's metadata, a dataset).

Such text may carry terminal control sequences: OSC 0 retitles the window, OSC 52 writes the clipboard,
CSI 6n makes the terminal type its answer into the shell, U+202E reverses what follows. Every face and
every output that shows outside text passes it through :func:`visible` (or :func:`visible_line` for a
one-line place: a label, a name, an error message), which writes each forbidden code point as a visible
escape (``\\x1b``, ``\\u202e``, ``\\ud800``). Forbidden: C0 controls except tab and newline, DEL, C1
controls, the bidi embeddings / overrides U+202A-U+202E and isolates U+2066-U+2069, and lone surrogates
(which no terminal can show and no UTF-8 stream can carry).

JSON output goes through :func:`json_text`: strict RFC 8259 (a NaN or an infinity is ``null``, never a bare
``NaN``), and every forbidden code point written as a ``\\uXXXX`` escape, so a parser reads the same value
while the terminal that shows the JSON sees none of them. No Textual here.
"""

from __future__ import annotations

import json
import math
import os
import re

# Everything that must never reach a terminal as it is.
FORBIDDEN_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
# The same plus newline and tab: for one-line places (a label, a model name, an error message).
FORBIDDEN_LINE_RE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def is_forbidden(ch: str) -> bool:
    """True for a code point :func:`visible` escapes (newline and tab excepted)."""
    return FORBIDDEN_RE.match(ch) is not None


def _escape(m: re.Match) -> str:
    c = ord(m.group())
    if c == 0x0A:
        return "\\n"
    if c == 0x09:
        return "\\t"
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def visible(s: object) -> str:
    """``s`` (made a str) with every forbidden code point written as a visible escape; newline and tab kept."""
    s = s if isinstance(s, str) else str(s)
    return FORBIDDEN_RE.sub(_escape, s)


def visible_line(s: object) -> str:
    """As :func:`visible`, and newline and tab escaped too (``\\n``, ``\\t``): the text stays on one line."""
    s = s if isinstance(s, str) else str(s)
    return FORBIDDEN_LINE_RE.sub(_escape, s)


def _json_escape(m: re.Match) -> str:
    return f"\\u{ord(m.group()):04x}"


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
    s = json.dumps(finite(obj), allow_nan=False, **kwargs)
    # Structural JSON is ASCII and json.dumps already escapes C0, so what is left sits inside strings:
    # the \\uXXXX form parses back to the same value.
    return FORBIDDEN_RE.sub(_json_escape, s)


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

