"""llama.cpp's speculative types as data: the names ``--spec-type`` takes, the options of each n-gram type with
their defaults and bounds, and the order in which llama.cpp tries the types when several are given.

Follows the llama.cpp vendored in llama-cpp-python 0.3.36: the names and the priority order from
common/speculative.cpp (``common_speculative_type_from_name_map``, ``common_speculative_init``), the defaults
from common/common.h (``common_params_speculative_ngram_map``, ``..._ngram_mod``), the bounds and messages from
common/arg.cpp, the fixed sizes from common/speculative.cpp (``create_state_ngram_cache``: 8 drafted tokens;
``common_speculative_impl_ngram_mod``: a pool of 4 Mi entries). Also the one rule every n-gram drafter of this
package shares: a draft longer than the caller's limit is cut (``common_speculative_draft``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ...contract.errors import SpectuiError

# common_speculative_type, in the enum's order (common/common.h)
SPEC_TYPES = ("none", "draft-simple", "draft-eagle3", "draft-mtp", "draft-dflash", "draft-dspark",
              "ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache")
NGRAM_TYPES = ("ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache")

# common_speculative_init: "this list here defines the priority of the speculators", highest first. The order of
# the names given to --spec-type does not matter; a type given twice is used once.
PRIORITY = ("ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache",
            "draft-simple", "draft-eagle3", "draft-mtp", "draft-dflash", "draft-dspark")
# the types common_speculative_init leaves out when there is no draft context (draft-simple throws instead)
NEED_DRAFT_CONTEXT = ("draft-eagle3", "draft-mtp", "draft-dflash", "draft-dspark")

NGRAM_CACHE_N_DRAFT = 8  # create_state_ngram_cache: "uint16_t n_draft = 8; // TODO get from config?"
NGRAM_MOD_POOL_SIZE = 4 * 1024 * 1024  # common_speculative_impl_ngram_mod: mod(n_match, 4*1024*1024)


@dataclass(frozen=True)
class SpecOption:
    """One command-line option of an n-gram type: its flag, the params field it sets, its default and the
    bounds arg.cpp checks (None: no bound; a path option has neither)."""

    flag: str
    field: str
    default: int | str
    low: int | None = None
    high: int | None = None


def _sizes(kind: str) -> tuple[SpecOption, ...]:
    return (SpecOption(f"--spec-ngram-{kind}-size-n", "size_n", 12, 1, 1024),
            SpecOption(f"--spec-ngram-{kind}-size-m", "size_m", 48, 1, 1024),
            SpecOption(f"--spec-ngram-{kind}-min-hits", "min_hits", 1, 1, None))


OPTIONS: dict[str, tuple[SpecOption, ...]] = {
    "ngram-simple": _sizes("simple"),
    "ngram-map-k": _sizes("map-k"),
    "ngram-map-k4v": _sizes("map-k4v"),
    "ngram-mod": (SpecOption("--spec-ngram-mod-n-match", "n_match", 24, 1, 1024),
                  SpecOption("--spec-ngram-mod-n-min", "n_min", 48, 0, 1024),
                  SpecOption("--spec-ngram-mod-n-max", "n_max", 64, 0, 1024)),
    "ngram-cache": (SpecOption("--lookup-cache-static", "lookup_cache_static", ""),
                    SpecOption("--lookup-cache-dynamic", "lookup_cache_dynamic", "")),
}

# arg.cpp's message for each bounded field, word for word
_MESSAGES = {"size_n": "ngram size N must be between 1 and 1024 inclusive",
             "size_m": "ngram size M must be between 1 and 1024 inclusive",
             "min_hits": "ngram min hits must be at least 1",
             "n_match": "ngram size N must be between 1 and 1024 inclusive",
             "n_min": "ngram n-min must be between 0 and 1024 inclusive",
             "n_max": "ngram n-max must be between 0 and 1024 inclusive"}


def check_options(spec_type: str, params: object) -> None:
    """Refuse a value arg.cpp refuses, with arg.cpp's message.

    Args:
        spec_type: the n-gram type whose ``OPTIONS`` apply.
        params: its params dataclass (fields named after the options).

    Raises:
        SpectuiError: a value out of its bounds, naming the flag.
    """
    for opt in OPTIONS[spec_type]:
        value = getattr(params, opt.field)
        if opt.low is None:
            continue
        if not isinstance(value, int) or value < opt.low or (opt.high is not None and value > opt.high):
            raise SpectuiError(f"{opt.flag} {value!r}: {_MESSAGES[opt.field]}")


def option_name(opt: SpecOption) -> str:
    """The option's name as the command line hands it over (click's: ``--spec-ngram-mod-n-match`` ->
    ``spec_ngram_mod_n_match``)."""
    return opt.flag.lstrip("-").replace("-", "_")


def params_from(given: Iterable[tuple[str, object]], makers: dict) -> dict:
    """Each n-gram type's params from the options the user gave (``(option name, value)`` pairs); a type none of
    whose options was given is left out (llama.cpp's defaults).

    Args:
        given: the options given, by ``option_name``.
        makers: per spec type, its params class (called with the fields given).

    Returns:
        ``{spec type: params}``.
    """
    values = dict(given)
    out = {}
    for spec_type, opts in OPTIONS.items():
        fields = {o.field: values[option_name(o)] for o in opts if option_name(o) in values}
        if fields:
            out[spec_type] = makers[spec_type](**fields)
    return out


def chain_order(names: Iterable[str]) -> tuple[str, ...]:
    """The types llama.cpp runs for one ``--spec-type`` list, in the order it tries them.

    Args:
        names: the comma-separated list's names, in the user's order.

    Returns:
        Those types in ``PRIORITY`` order, each once; empty when ``none`` is among them
        (``common_speculative_types_from_names``).

    Raises:
        SpectuiError: a name llama.cpp does not know ("unknown speculative type: NAME").
    """
    given = list(names)
    for name in given:
        if name not in SPEC_TYPES:
            raise SpectuiError(f"unknown speculative type: {name}")
    if "none" in given:
        return ()
    return tuple(t for t in PRIORITY if t in given)


def cap(draft: list[int], n_max: int) -> list[int]:
    """``common_speculative_draft``'s cut: a draft longer than ``n_max`` keeps its first ``n_max`` tokens; an
    ``n_max`` of 0 or less leaves it whole (llama.cpp's -1: no limit).

    Args:
        draft: the drafter's whole draft (its statistics are already taken from it).
        n_max: the caller's limit.

    Returns:
        The draft to verify.
    """
    return draft[:n_max] if 0 < n_max < len(draft) else draft
