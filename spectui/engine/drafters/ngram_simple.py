"""llama.cpp's ``ngram-simple`` spec type over plain token-id lists: the last ``size_n`` tokens are looked up in
the history (latest earlier occurrence first, position 0 never) and the ``size_m`` tokens that followed are the
draft; a draft shorter than ``size_n`` is dropped. No state: ``begin`` and ``accept`` do nothing, and
``--spec-ngram-simple-min-hits`` is read by no code (llama.cpp parses and prints it only).

Follows common/ngram-map.cpp ``common_ngram_simple_draft`` and common/speculative.cpp
``common_speculative_impl_ngram_simple`` (llama.cpp vendored in llama-cpp-python 0.3.36).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .base import DrafterSpec
from .llama_spec import cap, check_options
from .point_mass import PointMassDrafter


@dataclass(frozen=True)
class NgramSimpleParams:
    """``--spec-ngram-simple-size-n``, ``-size-m`` and ``-min-hits`` (common_params_speculative_ngram_map)."""

    size_n: int = 12
    size_m: int = 48
    min_hits: int = 1

    def __post_init__(self) -> None:
        check_options("ngram-simple", self)


def simple_draft(size_n: int, size_m: int, prompt: Sequence[int], sampled: int) -> list[int]:
    """``common_ngram_simple_draft``: the draft for the context ``prompt`` + ``sampled``.

    Args:
        size_n: the lookup n-gram's length.
        size_m: the longest draft.
        prompt: the accepted tokens before ``sampled``.
        sampled: the last accepted token.

    Returns:
        The tokens that followed the latest earlier occurrence of the context's last ``size_n`` tokens (at
        most ``size_m``), or [] (too short a history, no match, or fewer than ``size_n`` tokens to copy).
    """
    cur_len = len(prompt)
    if cur_len <= size_n + size_m + 1:
        return []
    pattern = list(prompt[cur_len - size_n + 1:]) + [sampled]
    first = pattern[0]
    match_pos = 0
    for j in range(cur_len - size_n - 1, 0, -1):  # j > 0: position 0 means "no match"
        if prompt[j] == first and list(prompt[j:j + size_n]) == pattern:
            match_pos = j
            break
    if match_pos == 0:
        return []
    copy_max = min(size_m, cur_len - (match_pos + size_n))
    if copy_max < size_n:
        return []
    start = match_pos + size_n
    return list(prompt[start:start + copy_max])


class NgramSimple:
    """``ngram-simple``: stateless lookup of the context's last n-gram in the context."""

    def __init__(self, params: NgramSimpleParams | None = None) -> None:
        self.params = params or NgramSimpleParams()

    @property
    def n_max(self) -> int:
        """The longest draft it makes (the impl's ``n_max``: ``size_m``)."""
        return self.params.size_m

    def begin(self, prompt: Sequence[int]) -> None:
        """A new generation starts from ``prompt``: nothing to do (llama.cpp's ``begin`` is a no-op here)."""

    def draft(self, tokens: Sequence[int], n_max: int = -1) -> list[int]:
        """The draft after ``tokens``.

        Args:
            tokens: the whole accepted context, its last token the one just sampled (llama.cpp's ``id_last``).
            n_max: the caller's limit (0 or less: none), applied as ``common_speculative_draft`` does.

        Returns:
            The drafted token ids, possibly [].
        """
        if not tokens:
            return []
        p = self.params
        return cap(simple_draft(p.size_n, p.size_m, tokens[:-1], tokens[-1]), n_max)

    def accept(self, n_accepted: int) -> None:
        """The target accepted ``n_accepted`` of the last draft: nothing to record (a no-op in llama.cpp)."""


SPEC = DrafterSpec(name="ngram-simple", spec_type="ngram-simple", needs="nothing", shape="chain", order=21, priority=1,
                   params=NgramSimpleParams,
                   summary="llama.cpp's ngram-simple: what followed the latest earlier match of the last size-n tokens",
                   make=lambda res: PointMassDrafter("ngram-simple",
                                                     lambda: NgramSimple(res.params.get("ngram-simple"))))
