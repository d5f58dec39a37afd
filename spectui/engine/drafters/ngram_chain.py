"""llama.cpp's chain of n-gram spec types for one sequence (``--spec-type a,b,...``): every type sees ``begin``;
a draft asks the types in llama.cpp's priority order and the first non-empty draft is the one verified (cut to
the caller's limit); ``accept`` reaches the type that drafted last, which a round where no type drafted leaves
as it was. The other types' ``accept`` is a no-op in llama.cpp (``is_other``), so they are not called.

Follows common/speculative.cpp (``common_speculative_init``, ``common_speculative_begin``,
``common_speculative_draft``, ``common_speculative_accept``) of the llama.cpp vendored in llama-cpp-python
0.3.36; the types themselves are this package's ngram_* modules.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from ...contract.errors import SpectuiError
from .llama_spec import NGRAM_TYPES, chain_order
from .ngram_cache import NgramCache, NgramCacheParams
from .ngram_map import NgramMap, NgramMapParams
from .ngram_mod import NgramMod, NgramModParams, NgramModPool
from .ngram_simple import NgramSimple, NgramSimpleParams


class NgramDrafter(Protocol):
    """The lifecycle every n-gram type of this package has."""

    def begin(self, prompt: Sequence[int]) -> None: ...

    def draft(self, tokens: Sequence[int], n_max: int = -1) -> list[int]: ...

    def accept(self, n_accepted: int) -> None: ...


def make_drafter(spec_type: str, params: object = None, pool: NgramModPool | None = None) -> NgramDrafter:
    """One n-gram type's drafter.

    Args:
        spec_type: its ``--spec-type`` name.
        params: its params dataclass (None: llama.cpp's defaults).
        pool: for ``ngram-mod``, the hash pool to share (None: a new one).

    Returns:
        The drafter.

    Raises:
        SpectuiError: a name that is not an n-gram type, or map params of the other map type.
    """
    if spec_type == "ngram-simple":
        return NgramSimple(params or NgramSimpleParams())  # type: ignore[arg-type]
    if spec_type in ("ngram-map-k", "ngram-map-k4v"):
        key_only = spec_type == "ngram-map-k"
        params = params or NgramMapParams(key_only=key_only)
        if getattr(params, "key_only", None) != key_only:
            raise SpectuiError(f"{spec_type} takes NgramMapParams with key_only={key_only}")
        return NgramMap(params)  # type: ignore[arg-type]
    if spec_type == "ngram-mod":
        return NgramMod(params or NgramModParams(), pool)  # type: ignore[arg-type]
    if spec_type == "ngram-cache":
        return NgramCache(params or NgramCacheParams())  # type: ignore[arg-type]
    raise SpectuiError(f"{spec_type!r} is not one of llama.cpp's n-gram types ({', '.join(NGRAM_TYPES)})")


class NgramChain:
    """``common_speculative`` over n-gram types, for one sequence."""

    def __init__(self, types: Iterable[str], params: Mapping[str, object] | None = None,
                 pool: NgramModPool | None = None) -> None:
        params = params or {}
        self.types = chain_order(types)
        self.drafters = [make_drafter(t, params.get(t), pool) for t in self.types]
        self.last: str | None = None  # the type whose draft was verified last (llama.cpp's impl_last)

    def begin(self, prompt: Sequence[int]) -> None:
        """``common_speculative_begin``: every type starts a generation over ``prompt``.

        Args:
            prompt: the tokens before the first sampled one.
        """
        for d in self.drafters:
            d.begin(prompt)

    def draft(self, tokens: Sequence[int], n_max: int = -1) -> list[int]:
        """``common_speculative_draft``: the first type, in priority order, with a draft makes it.

        Args:
            tokens: the whole accepted context, its last token the one just sampled.
            n_max: the caller's limit (0 or less: none).

        Returns:
            The draft, possibly [] (then ``last`` stays as it was).
        """
        for name, d in zip(self.types, self.drafters, strict=True):
            out = d.draft(tokens, n_max)
            if out:
                self.last = name
                return out
        return []

    def accept(self, n_accepted: int) -> None:
        """``common_speculative_accept``: the type that drafted last learns how much the target kept.

        Args:
            n_accepted: how many drafted tokens the target accepted.
        """
        if self.last is None:
            if n_accepted != 0:
                raise ValueError("accepted tokens before any draft (llama.cpp asserts n_accepted == 0)")
            return
        self.drafters[self.types.index(self.last)].accept(n_accepted)
