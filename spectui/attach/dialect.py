"""What a serving engine's Prometheus text calls its speculative decoding metrics: one ``Dialect`` per engine
(``llamacpp.py``, ``vllm.py``, ``sglang.py``), found by the metric prefix (``dialects.detect``).

A dialect names each figure by its metric's base name, without ``_total``: a counter is read under its base
name and under ``<base>_total`` (Prometheus text writes ``_total`` on a counter's sample, OpenMetrics and some
exporters do not), newest name first where an engine renamed one. Gauges are read as they are; one engine's
gauge published by several ranks (SGLang's ``tp_rank``) is read once, never summed.

No Textual, no HTTP: ``metrics.py`` parses the page with these names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# The most draft positions a server may publish (vLLM's num_speculative_tokens, llama.cpp's --spec-draft-n-max
# and SGLang's draft tokens are all far below): a label past it is not a draft position (docs/attach.md).
MAX_POSITIONS = 256

# vLLM's speculative counters (drafts, drafted and accepted tokens, accepted by position); llama-server names
# its own after them (llamacpp.py)
SPEC_DECODE_COUNTERS = {
    "drafts": ("spec_decode_num_drafts",),
    "draft_tokens": ("spec_decode_num_draft_tokens",),
    "accepted": ("spec_decode_num_accepted_tokens",),
    "per_pos": ("spec_decode_num_accepted_tokens_per_pos",),
}
# vLLM's generated tokens counter and time-to-first-token histogram; SGLang names its own after them (sglang.py)
TOKEN_METRICS = {"generated": ("generation_tokens",), "ttft": ("time_to_first_token_seconds",)}


@dataclass(frozen=True)
class Dialect:
    kind: str  # spectui.contract.events.KIND_*
    prefix: str  # "llamacpp:", "vllm:", "sglang:"
    engine_labels: tuple[str, ...] = ()  # the label that tells data-parallel engines apart, first found wins
    drafts: tuple[str, ...] = ()  # verify steps that had a draft (counter)
    draft_tokens: tuple[str, ...] = ()  # counter
    accepted: tuple[str, ...] = ()  # counter
    per_pos: tuple[str, ...] = ()  # counter with a ``position`` label (0 = the first drafted token)
    emitted: tuple[str, ...] = ()  # vLLM v0: accepted + one target token per verify step (counter)
    generated: tuple[str, ...] = ()  # tokens generated, all requests (counter)
    ttft: tuple[str, ...] = ()  # histograms (seconds)
    itl: tuple[str, ...] = ()
    accept_length: tuple[str, ...] = ()  # gauge: mean tokens a verify step (the bonus token included)
    accept_rate: tuple[str, ...] = ()  # gauge: accepted / drafted tokens
    per_request: str = ""  # where the engine gives one request's figures (docs/attach.md)
    words: str = ""  # one line for the help screen: what this engine publishes

    def counters(self) -> frozenset[str]:
        """Every speculative counter's base name: a NaN, infinite or negative one is refused."""
        return frozenset(self.drafts + self.draft_tokens + self.accepted + self.per_pos + self.emitted)


def base_name(sample_name: str, prefix: str) -> str:
    """``llamacpp:spec_decode_num_drafts_total`` -> ``spec_decode_num_drafts`` (the prefix and one ``_total``
    off; histogram parts keep their ``_bucket`` / ``_count`` / ``_sum``)."""
    name = sample_name[len(prefix):]
    return name[: -len("_total")] if name.endswith("_total") else name


def positions_from_histogram(hist) -> tuple[int, ...]:
    """Verify steps whose draft at position i was accepted, from a per-request histogram H (entry n: the steps
    that accepted exactly n drafted tokens; vLLM's ``acceptance_histogram``, SGLang's ``spec_accept_histogram``):
    sum(H[i+1:]) for i = 0 .. len(H) - 2."""
    hist = tuple(hist)
    return tuple(sum(hist[i + 1:]) for i in range(len(hist) - 1))


def count_list(raw, most: int = MAX_POSITIONS + 1) -> tuple[int, ...]:
    """A server's list of counts (a histogram): at most ``most`` finite whole numbers >= 0, else ()."""
    if not isinstance(raw, list) or not 0 < len(raw) <= most:
        return ()
    out = []
    for x in raw:
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0 or x != int(x):
            return ()
        out.append(int(x))
    return tuple(out)
