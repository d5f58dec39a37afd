"""What is odd about a target/draft pair, said in words that name it: the same file twice, a draft that is
larger than its target (the two swapped), a draft not much smaller. Pure functions; the engine prints them
as warnings (the run still goes on: the output stays the target's, only the time is wasted)."""

from __future__ import annotations

import os

DRAFT_SIZE_WARN_RATIO = 0.5  # a draft above half the target's parameters saves little


def same_file(target: str | os.PathLike | None, draft: str | os.PathLike | None) -> bool:
    """Whether target and draft are one file (same resolved path, or the same inode: a link)."""
    if not target or not draft:
        return False
    try:
        return os.path.realpath(target) == os.path.realpath(draft) or os.path.samefile(target, draft)
    except OSError:
        return False


def same_file_warning(target, draft) -> str:
    if not same_file(target, draft):
        return ""
    return (f"warning: the target and the draft are the same file ({os.fspath(draft)}): every draft is the "
            "target's own guess, so at temperature 0 all are accepted and speculation can only cost time; "
            "give --draft a smaller model of the same family")


def size_warning(draft_params: int, target_params: int) -> str:
    """'' when the draft is small enough; else the sentence (swapped pair, or not much smaller)."""
    if not draft_params or not target_params:
        return ""
    ratio = draft_params / target_params
    if ratio > 1.0:
        return (f"warning: the draft is {ratio:.1f}x larger than the target ({draft_params:,} vs "
                f"{target_params:,} parameters): are --target and --draft swapped?")
    if ratio > DRAFT_SIZE_WARN_RATIO:
        return (f"warning: the draft model is not much smaller than the target ({draft_params:,} vs "
                f"{target_params:,} parameters, ratio {ratio:.2f}); drafting will cost nearly as much as it saves")
    return ""


def pair_warning(target, draft, draft_params: int, target_params: int) -> str:
    """The one warning a pair gets ("" for none): the same file twice, else a swapped pair or a draft not much
    smaller (the same file is not also "not much smaller")."""
    return same_file_warning(target, draft) or size_warning(draft_params, target_params)
