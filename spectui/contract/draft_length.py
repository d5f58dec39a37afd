"""Draft lengths as the user writes them: ``-k 4``, ``-k auto``, ``-k 2,4,auto``, ``--b "k=schedule"``. ONE
parser, ONE range rule and ONE default for every command (the live run, sweep, bench and its concurrency sweep,
race and its specs, the batched probe), so k means the same everywhere.

A draft length is an integer 0..32 (0: speculation off) or a mode that chooses k pass by pass: ``auto``
(the cost model) or ``schedule`` (HF-style +2 / -1; ``heuristic`` is another name for it). A list is
comma-separated; duplicates are dropped, order kept. Errors are one line (SpectuiError, exit 2).

In code the user's setting is ``draft_max`` (``Settings.draft_max``, llama.cpp's ``--draft-max`` / ``n_max``);
the k a pass drafted is ``PassEvent.k``. The parser is the one place where the user's words for a mode
become its name (``Settings.auto``, as recorded in traces): ``auto`` -> ``"cost"``, ``heuristic`` ->
``"schedule"``.
"""

from __future__ import annotations

from .errors import SpectuiError

DRAFT_MAX_LIMIT = 32  # k is 0..DRAFT_MAX_LIMIT everywhere (parsed, clamped in RunControl, chosen per pass)
K_MAX = 16  # the draft lengths a prediction covers (1..K_MAX) and the batched probe measures at most
DEFAULT_DRAFT_MAX = 2  # -k when none is given (the live run, bench); a mode starts from it too
MODES = {"auto": "cost", "schedule": "schedule", "heuristic": "schedule"}  # the user's word -> Settings.auto


def clamp_draft_length(k: int) -> int:
    """The range rule for a draft length already inside the program (a key press, a policy's choice, a
    Settings read back): into 0..DRAFT_MAX_LIMIT. What the user types is refused instead (``parse_ks``)."""
    return max(0, min(DRAFT_MAX_LIMIT, int(k)))


def parse_ks(value: str | int, flag: str = "--draft-max", *, modes: bool = True, many: bool = True,
             low: int = 0, high: int = DRAFT_MAX_LIMIT) -> list[int | str]:
    """Parse what the user wrote for a draft length, or a list of them.

    Args:
        value: the text given (``"2,4,auto"``), or an int.
        flag: how the messages name the option (``-k``'s long name, ``k`` in a race spec).
        modes: False for a command that runs fixed draft lengths only (a mode is a one-line error saying so).
        many: False where one draft length is taken, not a list.
        low, high: a narrower range than 0..32 where a command measures fewer (the batched probe: 1..K_MAX).

    Returns:
        The draft lengths in the order given, without duplicates: ints, and a mode as its name in
        ``Settings.auto`` (``"cost"`` for ``auto``, ``"schedule"``).

    Raises:
        SpectuiError: one line, exit status 2, naming ``flag``.
    """
    out: list[int | str] = []
    for part in str(value).split(","):
        word = part.strip().lower()
        if not word:
            continue
        if word in MODES:
            if not modes:
                raise SpectuiError(f"{flag} {word}: this command runs fixed draft lengths (auto and schedule choose "
                                   f"k pass by pass in the live run and a race); give integers {low}..{high}")
            k: int | str = MODES[word]
        else:
            k = _integer(word, value, flag, modes=modes, many=many, low=low, high=high)
        if k not in out:
            out.append(k)
    if not out:
        raise SpectuiError(f"{flag} needs at least one draft length (e.g. 2,5,10)")
    if not many and len(out) > 1:
        words = ", 'auto' or 'schedule'" if modes else ""
        raise SpectuiError(f"{flag} takes one draft length here ({low}..{high}{words}), not a list: {value!r}")
    return out


def _integer(word: str, value, flag: str, *, modes: bool, many: bool, low: int, high: int) -> int:
    """One integer draft length within low..high, or the one-line error."""
    try:
        k = int(word)
    except ValueError:
        what = "comma-separated integers" if many else "an integer"
        words = ", 'auto' or 'schedule'" if modes else ""
        example = (" (e.g. 2,4,auto)" if modes else " (e.g. 2,5,10)") if many else ""
        raise SpectuiError(f"{flag} takes {what} {low}..{high}{words}{example}, not {value!r}") from None
    if not low <= k <= high:
        raise SpectuiError(f"{flag} values must be between {low} and {high}, not {k}")
    return k


def parse_k(value: str | int, flag: str = "--draft-max", *, modes: bool = True) -> int | str:
    """One draft length: "4" -> 4, "auto" -> "cost", "heuristic" -> "schedule" (``parse_ks`` with
    ``many=False``)."""
    return parse_ks(value, flag, modes=modes, many=False)[0]


def k_setting(k: int | str) -> tuple[int, str | None]:
    """A parsed draft length as Settings' (draft_max, auto): 4 -> (4, None); "cost" -> (2, "cost");
    "schedule" -> (2, "schedule") (a mode starts at the default k; the user's word is taken too)."""
    if isinstance(k, str):
        return DEFAULT_DRAFT_MAX, MODES.get(k, k)
    return k, None
