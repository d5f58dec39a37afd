"""visible_rich: the one rule for outside text (:func:`spectui.contract.text.visible`) on Rich text.

Every line a panel, a status line or a banner paints goes through it, so a trace's model name, a server's
label or an error message can style a line but never send a control sequence to the terminal. A text
without a forbidden code point is returned as it is (the common case costs one regex search).
"""

from __future__ import annotations

from rich.text import Span, Text

from ...contract.text import FORBIDDEN_RE, visible


def visible_rich(t: Text) -> Text:
    """``t`` with every forbidden code point written as a visible escape, its styles kept around it."""
    plain = t.plain
    if FORBIDDEN_RE.search(plain) is None:
        return t
    cuts = sorted({i for m in FORBIDDEN_RE.finditer(plain) for i in (m.start(), m.end())})
    out = Text(style=t.style, justify=t.justify, overflow=t.overflow, no_wrap=t.no_wrap, end=t.end)
    for piece in t.divide(cuts):
        if FORBIDDEN_RE.fullmatch(piece.plain):
            esc = visible(piece.plain)
            piece = Text(esc, style=piece.style, spans=[Span(0, len(esc), s.style) for s in piece.spans])
        out.append_text(piece)
    return out
