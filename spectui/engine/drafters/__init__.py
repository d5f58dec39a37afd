"""Who proposes the next tokens: one module per drafter, each with its ``SPEC`` (``base.DrafterSpec``).

``specs()`` finds every module of this package that defines ``SPEC``, so adding a drafter is adding its module:
the command line's choices, --help, the ``d`` key's cycle, the names a trace may carry and the docs' list are all
read from here. ``base.py`` is the interface; ``head.py`` puts an EAGLE-3 head (``eagle3.py``) or the target's MTP
layers (``mtp.py``) behind it; ``spec_heads.py`` loads a head. No UI imports, and llama.cpp is imported only when a
model is (``--help`` reads this package without it).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil

from .base import DrafterSpec

__all__ = ["DrafterSpec", "block_names", "by_name", "canonical", "head_names", "names", "spec_params", "specs"]


@functools.lru_cache(maxsize=1)
def specs() -> tuple[DrafterSpec, ...]:
    """Every drafter of this package (each module's ``SPEC``, or its ``SPECS`` where one module holds a family,
    as ``ngram_map`` holds llama.cpp's map-k and map-k4v), in ``order``.

    Returns:
        Their specs.
    """
    found = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for spec in (getattr(module, "SPEC", None), *getattr(module, "SPECS", ())):
            if isinstance(spec, DrafterSpec):
                found.append(spec)
    return tuple(sorted(found, key=lambda s: (s.order, s.name)))


def names() -> tuple[str, ...]:
    """spectui's drafter names (``--drafter``), in order."""
    return tuple(s.name for s in specs())


def head_names() -> tuple[str, ...]:
    """The drafters that need the engine loaded with their head (``Engine(head=name)``)."""
    return tuple(s.name for s in specs() if s.head)


def block_names() -> tuple[str, ...]:
    """The block drafters: each drafts its k tokens in one draft pass (``DrafterSpec.block``)."""
    return tuple(s.name for s in specs() if s.block)


def by_name(name: str) -> DrafterSpec | None:
    """The drafter named ``name`` (spectui's name, or llama.cpp's ``--spec-type`` name), or None."""
    for s in specs():
        if name and name in (s.name, s.spec_type):
            return s
    return None


def canonical(value: str) -> str:
    """A drafter or a chain as the user wrote it (spectui's names or llama.cpp's ``--spec-type`` names,
    comma-separated) -> spectui's names in the chain's priority order: "draft-simple,ngram" -> "ngram,model".

    Args:
        value: one name, or several separated by commas.

    Returns:
        The one name, or the chain's names joined by commas (duplicates dropped).

    Raises:
        ValueError: a name no drafter has, or "none" inside a chain; the message lists the names.
    """
    from .chain import CHAIN_SEPARATOR, chain_names  # noqa: PLC0415

    found: list[DrafterSpec] = []
    for part in chain_names(value):
        spec = by_name(part.lower())
        if spec is None:
            other = [s.spec_type for s in specs() if s.spec_type and s.spec_type != s.name]
            raise ValueError(f"no drafter is named {part!r} (one of {', '.join(names())}; llama.cpp's names "
                             f"{', '.join(other)} work too)")
        if spec not in found:
            found.append(spec)
    if not found:
        raise ValueError("no drafter named")
    if len(found) > 1 and any(s.name == "none" for s in found):
        raise ValueError("none drafts nothing: it cannot be part of a chain")
    return CHAIN_SEPARATOR.join(s.name for s in sorted(found, key=lambda s: s.priority))


def spec_params(given) -> dict:
    """The params of each drafter whose llama.cpp options the user gave (``EngineOptions.spec_options``: option
    name and value pairs), by its ``--spec-type`` name; a drafter none of whose options was given takes
    llama.cpp's defaults (it is left out).

    Args:
        given: ``(option name, value)`` pairs (``llama_spec.option_name``).

    Returns:
        ``{spec type: params}``, and the tree drafter's ``TreeParams`` under "tree" when one of its options was given.

    Raises:
        SpectuiError: a value llama.cpp refuses, with its message.
    """
    from .draft_tree import tree_params  # noqa: PLC0415
    from .llama_spec import params_from  # noqa: PLC0415

    out = params_from(given, {s.spec_type: s.params for s in specs() if s.params is not None})
    tree = tree_params(given)  # the tree drafter's limits (-np, --draft-p-split, --spec-eagle-topk ...)
    if tree is not None:
        out["tree"] = tree
    return out
