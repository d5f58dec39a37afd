"""Words for a change, computed from its numbers: every sentence spectui prints from data says rose / fell /
flat, wins / loses / ties through here, so the word always matches the numbers it cites.

- ``trend(before, after, tol)`` -> "rose" | "fell" | "flat": flat when ``|after - before| <= tol``.
- ``outcome(value, reference, tol)`` -> "wins" | "loses" | "ties": ``value`` against ``reference``.
- ``moved(name, before, after, fmt, tol)`` -> "acceptance fell 29% -> 20%" / "acceptance stayed flat at 29% ->
  29% (within 1 pt)": the word and the two numbers in one phrase.

The tolerance is the caller's statement of what counts as a change (noise, or the printed precision: give at
least one unit of the printed format, so that two numbers printed differently never get "flat" and a rise
never prints as "20% -> 20%"). No Textual, no project imports: the bench and race faces use it too.
"""

from __future__ import annotations

RISE, FALL, FLAT = "rose", "fell", "flat"
WINS, LOSES, TIES = "wins", "loses", "ties"


def trend(before: float, after: float, tol: float = 0.0) -> str:
    """How a figure moved.

    Args:
        before, after: the figure, then and now; tol: a change this small or smaller is none.

    Returns:
        "rose", "fell" or "flat" (``|after - before| <= tol``).
    """
    d = after - before
    if abs(d) <= tol:
        return FLAT
    return RISE if d > 0 else FALL


def outcome(value: float, reference: float, tol: float = 0.0) -> str:
    """How a figure compares with a reference.

    Args:
        value, reference: the two figures (tokens/s, a speedup against 1.0); tol: the margin of a tie.

    Returns:
        "wins" when ``value`` beats ``reference`` by more than ``tol``, "loses" when it is more than ``tol``
        below, else "ties".
    """
    d = value - reference
    if abs(d) <= tol:
        return TIES
    return WINS if d > 0 else LOSES


def moved(name: str, before: float, after: float, fmt: str = ".0%", tol: float = 0.0, tol_text: str = "") -> str:
    """A figure and how it moved, with both numbers.

    Args:
        name: what moved ("acceptance"); before, after: its values; fmt: their format (``format`` spec).
        tol: a change this small is flat (``trend``); tol_text: the tolerance in words, said when flat.

    Returns:
        "acceptance fell 29% -> 20%", "tokens/s rose 8.1 -> 9.0", "acceptance stayed flat at 29% -> 29%
        (within 1 pt)".
    """
    word = trend(before, after, tol)
    a, b = format(before, fmt), format(after, fmt)
    if word == FLAT:
        within = f" (within {tol_text})" if tol_text else ""
        return f"{name} stayed flat at {a} -> {b}{within}"
    return f"{name} {word} {a} -> {b}"


__all__ = ["FALL", "FLAT", "LOSES", "RISE", "TIES", "WINS", "moved", "outcome", "trend"]
