"""Prometheus text from a serving engine -> its speculative decoding counters (``EngineCounters``).

Parsed with ``prometheus_client.parser.text_string_to_metric_families`` (the reference parser), then
recognised by metric prefix:

- llama-server (``--metrics``; llama.cpp tools/server/server-task.cpp ``to_metrics``):
  ``llamacpp:spec_decode_num_drafts_total``, ``llamacpp:spec_decode_num_draft_tokens_total``,
  ``llamacpp:spec_decode_num_accepted_tokens_total``,
  ``llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="N"}`` (only once a draft was
  verified), ``llamacpp:tokens_predicted_total``. No TTFT / ITL histograms. The counters are always
  published, also without speculation; they grow when a request finishes, not per token.
- vLLM v1 (vllm/v1/spec_decode/metrics.py): ``vllm:spec_decode_num_drafts_total``,
  ``..._num_draft_tokens_total``, ``..._num_accepted_tokens_total``,
  ``..._num_accepted_tokens_per_pos_total{position}``, labels ``model_name`` and ``engine``
  (data-parallel rank); published only with a speculative config. vLLM v0 had no drafts counter but
  ``vllm:spec_decode_num_emitted_tokens_total`` (accepted + one target token per verify step), from
  which drafts = emitted - accepted. Histograms ``vllm:time_to_first_token_seconds`` and
  ``vllm:inter_token_latency_seconds`` (older: ``vllm:time_per_output_token_seconds``).
- SGLang: the ``sglang:spec_accept_length`` gauge (mean accepted length, no counters), and
  ``sglang:time_to_first_token_seconds`` / ``sglang:inter_token_latency_seconds``; engines by ``dp_rank``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from ..contract.events import (
    KIND_LLAMA_SERVER,
    KIND_PROMETHEUS,
    KIND_SGLANG,
    KIND_VLLM,
    Bucket,
    EngineCounters,
    Histogram,
    PositionCount,
)

PREFIXES = {"llamacpp:": KIND_LLAMA_SERVER, "vllm:": KIND_VLLM, "sglang:": KIND_SGLANG}

# Counter sample names (with _total), per field, newest name first.
DRAFTS = ("spec_decode_num_drafts_total",)
DRAFT_TOKENS = ("spec_decode_num_draft_tokens_total",)
ACCEPTED = ("spec_decode_num_accepted_tokens_total",)
PER_POS = ("spec_decode_num_accepted_tokens_per_pos_total",)
EMITTED_V0 = ("spec_decode_num_emitted_tokens_total",)  # vLLM v0
GENERATED = ("generation_tokens_total", "tokens_predicted_total")  # vLLM / SGLang, llama-server
TTFT = ("time_to_first_token_seconds",)
ITL = ("inter_token_latency_seconds", "time_per_output_token_seconds")  # newest first
ACCEPT_LENGTH = ("spec_accept_length",)  # SGLang gauge
PROCESS_START = "process_start_time_seconds"  # prometheus_client's process collector (vLLM, SGLang)


class NotPrometheus(ValueError):
    """The text is not Prometheus exposition format (an HTML page, JSON, garbage)."""


@dataclass(frozen=True)
class ParsedMetrics:
    kind: str
    engines: tuple[EngineCounters, ...]
    process_start: float = 0.0
    n_samples: int = 0


def parse(text: str) -> ParsedMetrics:
    """Parse one /metrics page. Raises NotPrometheus (one line) for anything that is not metrics text."""
    head = text.lstrip()[:200].lower()
    if head.startswith(("<!doctype", "<html", "<?xml", "<")):
        raise NotPrometheus("not Prometheus metrics: got an HTML/XML page")
    if head.startswith(("{", "[")):
        raise NotPrometheus("not Prometheus metrics: got JSON")
    if not text.strip():
        raise NotPrometheus("empty /metrics page")
    try:
        families = list(text_string_to_metric_families(text))
    except (ValueError, IndexError, KeyError, TypeError) as exc:
        first = str(exc).splitlines()[0][:120] if str(exc) else "unparsable"
        raise NotPrometheus(f"not Prometheus metrics: {first}") from None
    samples = [s for fam in families for s in fam.samples]
    kind = KIND_PROMETHEUS
    for prefix, k in PREFIXES.items():
        if any(s.name.startswith(prefix) for s in samples):
            kind = k
            break
    if not samples:
        raise NotPrometheus("no metrics in the /metrics page (only comments)")
    process_start = next((s.value for s in samples if s.name == PROCESS_START), 0.0)
    if kind == KIND_PROMETHEUS:  # some other exporter: shown as "no speculation"
        return ParsedMetrics(kind, (EngineCounters(engine=""),), process_start, len(samples))
    prefix = next(p for p, k in PREFIXES.items() if k == kind)
    try:
        engines = _engines(prefix, samples)
    except BadCounters as exc:
        exc.kind = kind  # the server is what it says; its counters are what cannot be true
        raise
    return ParsedMetrics(kind, engines, process_start, len(samples))


class BadCounters(NotPrometheus):
    """Prometheus text whose speculative decoding counters cannot be true (NaN, negative, accepted > drafted).
    ``kind``: the server's kind all the same (llama-server, vLLM, SGLang)."""

    kind = ""


def _where(labels: dict[str, str]) -> str:
    """``{engine="0"}`` for a message (label values are a server's words: shown through the one text rule)."""
    keep = {k: v for k, v in labels.items() if k in ("engine", "dp_rank", "position")}
    return "{" + ",".join(f'{k}="{v[:40]}"' for k, v in keep.items()) + "}" if keep else ""


def _engine_key(labels: dict[str, str]) -> str:
    return labels.get("engine", labels.get("dp_rank", ""))


def _engines(prefix: str, samples: list) -> tuple[EngineCounters, ...]:
    by_engine: dict[str, dict] = {}

    def slot(labels: dict[str, str]) -> dict:
        e = by_engine.setdefault(_engine_key(labels), {"model": "", "values": {}, "pos": {}, "hist": {}})
        if not e["model"] and labels.get("model_name"):
            e["model"] = labels["model_name"]
        return e

    counts = set(DRAFTS + DRAFT_TOKENS + ACCEPTED + PER_POS + EMITTED_V0)  # the speculative counters
    for s in samples:
        if not s.name.startswith(prefix):
            continue
        name = s.name[len(prefix):]
        if name in counts and not (math.isfinite(s.value) and s.value >= 0):
            # a speculative count is finite and not negative: NaN, Inf or -5 is named, never "no speculation"
            # (other NaN / Inf values, a gauge or the tokens generated, read as absent, below)
            raise BadCounters(f"impossible counter: {s.name}{_where(s.labels)} = {s.value:g} "
                              "(a count is a finite number, not negative)")
        if not math.isfinite(s.value):  # a NaN / Inf gauge or histogram part: as if absent
            continue
        e = slot(s.labels)
        if name in PER_POS and "position" in s.labels:
            try:
                pos = int(s.labels["position"])
            except ValueError:
                continue
            e["pos"][pos] = e["pos"].get(pos, 0.0) + s.value
        elif name.endswith(("_bucket", "_count", "_sum")):
            base, _, part = name.rpartition("_")
            if base in TTFT or base in ITL:
                h = e["hist"].setdefault(base, {"buckets": {}, "count": 0.0, "sum": 0.0})
                if part == "bucket":
                    le = float(s.labels.get("le", "nan"))
                    if le == le and le != float("inf"):
                        h["buckets"][le] = h["buckets"].get(le, 0.0) + s.value
                else:
                    h[part] += s.value
            else:
                e["values"][name] = e["values"].get(name, 0.0) + s.value
        else:
            # counters of one engine with several model_name values are summed
            e["values"][name] = e["values"].get(name, 0.0) + s.value
    known = set(DRAFTS + DRAFT_TOKENS + ACCEPTED + EMITTED_V0 + GENERATED + ACCEPT_LENGTH)
    kept = [(k, e) for k, e in sorted(by_engine.items()) if e["pos"] or e["hist"] or known & set(e["values"])]
    if not kept:  # the engine's own metrics, none of them about generation: one engine, no speculation
        return (EngineCounters(engine=""),)
    return tuple(_counters(key, e) for key, e in kept)


def _first(values: dict[str, float], names: tuple[str, ...]) -> float:
    for n in names:
        if n in values:
            return values[n]
    return -1.0


def _hist(hists: dict, names: tuple[str, ...]) -> Histogram | None:
    for n in names:
        if n in hists:
            h = hists[n]
            buckets = tuple(Bucket(le, c) for le, c in sorted(h["buckets"].items()))
            return Histogram(buckets, h["count"], h["sum"])
    return None


def _counters(key: str, e: dict) -> EngineCounters:
    v = e["values"]
    drafts = _first(v, DRAFTS)
    draft_tokens = _first(v, DRAFT_TOKENS)
    accepted = _first(v, ACCEPTED)
    derived = False
    if drafts < 0 and accepted >= 0:
        emitted = _first(v, EMITTED_V0)
        if emitted >= 0:
            drafts, derived = max(emitted - accepted, 0.0), True
    accept_length = _first(v, ACCEPT_LENGTH)
    if draft_tokens >= 0 and accepted > draft_tokens:
        raise BadCounters(f"impossible counters{_where({'engine': key} if key else {})}: {accepted:g} accepted "
                          f"tokens > {draft_tokens:g} drafted tokens")
    return EngineCounters(
        engine=key,
        model=e["model"],
        speculation=draft_tokens >= 0 or accepted >= 0 or accept_length >= 0,
        num_drafts=drafts,
        num_draft_tokens=draft_tokens,
        num_accepted_tokens=accepted,
        accepted_per_pos=tuple(PositionCount(p, c) for p, c in sorted(e["pos"].items())),
        drafts_derived=derived,
        generated_tokens=_first(v, GENERATED),
        ttft=_hist(e["hist"], TTFT),
        itl=_hist(e["hist"], ITL),
        accept_length=accept_length,
    )
