"""A server's per-request ``timings`` (llama-server's last stream chunk), checked before a bench row believes
them: a count is a whole number of 0 or more, a time or a rate a finite number of 0 or more, and the drafts
accepted never outnumber the drafts made. ``draft_n -5``, ``draft_n_accepted 99`` over ``draft_n 5`` and
``predicted_n 1e400`` (infinite as JSON reads it) are impossible: the request's timings are then left out
whole (its row keeps what the client measured: tokens, time to first token, tokens/s) and the report's notes
name what was impossible. No number a server sends reaches a row unchecked.
"""

from __future__ import annotations

import math
from typing import Any

COUNTS = ("draft_n", "draft_n_accepted", "predicted_n", "prompt_n")
AMOUNTS = ("predicted_ms", "prompt_ms", "predicted_per_second", "prompt_per_second")
MOST_NAMED = 4  # impossible fields named in one note


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


def _count(v: Any) -> bool:
    return _number(v) and float(v).is_integer()


def _shown(v: Any) -> str:
    """A value as a note names it: a number as written (``inf`` for JSON's ``1e400``), anything else its type."""
    if isinstance(v, bool) or v is None:
        return str(v).lower() if v is not None else "null"
    if isinstance(v, (int, float)):
        return f"{v:g}" if isinstance(v, float) else str(v)[:24]
    return {str: "a string", list: "a list", dict: "an object"}.get(type(v), type(v).__name__)


def timing_problems(timings: Any) -> list[str]:
    """What is impossible in one request's ``timings`` object, each in a few words ([] when nothing is).

    Args:
        timings: the object as the server sent it (anything: it comes from outside).

    Returns:
        ``["draft_n -5", "predicted_n inf"]``, ``["draft_n_accepted 99 > draft_n 5"]``, ...; a ``timings`` that
        is not an object is one problem.
    """
    if timings is None:
        return []
    if not isinstance(timings, dict):
        return [f"timings is {_shown(timings)}, not an object"]
    out = [f"{key} {_shown(timings[key])}" for key in COUNTS if key in timings and not _count(timings[key])]
    out += [f"{key} {_shown(timings[key])}" for key in AMOUNTS if key in timings and not _number(timings[key])]
    drafted, accepted = timings.get("draft_n"), timings.get("draft_n_accepted")
    if _count(drafted) and _count(accepted) and accepted > drafted:
        out.append(f"draft_n_accepted {_shown(accepted)} > draft_n {_shown(drafted)}")
    return out


def timings_note(url: str, problems: list[list[str]]) -> str:
    """The report's note for the requests of ``url`` whose timings were impossible ("" when none was)."""
    bad = [p for p in problems if p]
    if not bad:
        return ""
    named: list[str] = []
    for p in bad:
        named += [x for x in p if x not in named]
    more = f" and {len(named) - MOST_NAMED} more" if len(named) > MOST_NAMED else ""
    return (f"{url}: impossible request timings ({', '.join(named[:MOST_NAMED])}{more}) in {len(bad)} "
            f"request{'s' if len(bad) != 1 else ''}: the server's timings of those requests are left out "
            "(their rows keep what the client measured)")


__all__ = ["timing_problems", "timings_note"]
