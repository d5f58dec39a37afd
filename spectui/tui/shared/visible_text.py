"""visible_rich: the one rule for outside text (:func:`spectui.contract.text.visible_cells`) on Rich text.

Every line a panel, a status line or a banner paints goes through it, so a trace's model name, a server's
label or an error message can style a line but never send a control sequence to the terminal, nor a code
point terminals measure differently (a zero-width joiner: the panels keep their borders). A text without
such a code point is returned as it is (the common case costs one regex search); the escapes go in one
run at a time.
"""

from __future__ import annotations

from rich.text import Span, Text

from ...contract.text import CELL_UNSAFE_RUNS, visible_cells


def visible_rich(t: Text) -> Text:
    """``t`` with every forbidden code point written as a visible escape, its styles kept around it."""
    plain = t.plain
    if CELL_UNSAFE_RUNS.search(plain) is None:
        return t
    cuts = [i for m in CELL_UNSAFE_RUNS.finditer(plain) for i in (m.start(), m.end())]
    out = Text(style=t.style, justify=t.justify, overflow=t.overflow, no_wrap=t.no_wrap, end=t.end)
    for piece in t.divide(cuts):
        if CELL_UNSAFE_RUNS.fullmatch(piece.plain):
            esc = visible_cells(piece.plain)
            piece = Text(esc, style=piece.style, spans=[Span(0, len(esc), s.style) for s in piece.spans])
        out.append_text(piece)
    return out
