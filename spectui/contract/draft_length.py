"""Draft lengths as the user writes them: ``-k 4``, ``-k auto``, ``-k 2,4,auto``, ``--b "k=schedule"``. ONE
parser for every command (the live run, sweep, bench, race), so k means the same everywhere.

A draft length is an integer 0..32 (0: speculation off) or a mode that chooses k pass by pass: ``auto``
(the cost model) or ``schedule`` (HF-style +2 / -1; ``heuristic`` is another name for it). A list is
comma-separated; duplicates are dropped, order kept. Errors are one line (SpectuiError, exit 2).
"""

from __future__ import annotations

from .control import DRAFT_MAX_LIMIT
from .errors import SpectuiError

MODES = {"auto": "auto", "schedule": "schedule", "heuristic": "schedule"}  # the word -> its name
AUTO_OF_MODE = {"auto": "cost", "schedule": "schedule"}  # its name -> Settings.auto


def parse_ks(value: str | int, flag: str = "--draft-max", *, modes: bool = True, many: bool = True
             ) -> list[int | str]:
    """"2,4,auto" -> [2, 4, "auto"]. ``modes=False``: a command that runs fixed draft lengths only (a mode is
    a one-line error saying so); ``many=False``: one draft length, not a list."""
    out: list[int | str] = []
    for part in str(value).split(","):
        word = part.strip().lower()
        if not word:
            continue
        if word in MODES:
            if not modes:
                raise SpectuiError(f"{flag} {word}: this command runs fixed draft lengths (auto and schedule choose "
                                   f"k pass by pass in the live run and a race); give integers 0..{DRAFT_MAX_LIMIT}")
            k: int | str = MODES[word]
        else:
            try:
                k = int(word)
            except ValueError:
                what = "comma-separated integers" if many else "an integer"
                words = ", 'auto' or 'schedule'" if modes else ""
                example = (" (e.g. 2,4,auto)" if modes else " (e.g. 2,5,10)") if many else ""
                raise SpectuiError(f"{flag} takes {what} 0..{DRAFT_MAX_LIMIT}{words}{example}, not {value!r}") from None
            if not 0 <= k <= DRAFT_MAX_LIMIT:
                raise SpectuiError(f"{flag} values must be between 0 and {DRAFT_MAX_LIMIT}, not {k}")
        if k not in out:
            out.append(k)
    if not out:
        raise SpectuiError(f"{flag} needs at least one draft length (e.g. 2,5,10)")
    if not many and len(out) > 1:
        raise SpectuiError(f"{flag} takes one draft length here (0..{DRAFT_MAX_LIMIT}, 'auto' or 'schedule'), "
                           f"not a list: {value!r}")
    return out


def parse_k(value: str | int, flag: str = "--draft-max") -> int | str:
    """One draft length: "4" -> 4, "auto" -> "auto", "heuristic" -> "schedule"."""
    return parse_ks(value, flag, many=False)[0]


def k_setting(k: int | str) -> tuple[int, str | None]:
    """A parsed draft length as Settings' (draft_max, auto): 4 -> (4, None); "auto" -> (2, "cost");
    "schedule" -> (2, "schedule") (a mode starts at k = 2)."""
    if isinstance(k, str):
        return 2, AUTO_OF_MODE[k]
    return k, None
