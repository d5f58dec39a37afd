"""Prometheus text from a serving engine -> its speculative decoding counters (``EngineCounters``).

Parsed with ``prometheus_client.parser.text_string_to_metric_families`` (the reference parser), then read in
the engine's dialect, found by the metric prefix (``dialects.detect``): ``llamacpp.py`` (llama-server),
``vllm.py`` (vLLM, V1 and the V0 names), ``sglang.py`` (SGLang's gauges). Each module says what its engine
publishes and where its source says so.

What cannot be true is refused in one line (``BadCounters``), never shown: a speculative count that is NaN,
infinite or negative, more tokens accepted than drafted, a ``position`` label that is not a draft position
(a whole number 0 .. MAX_POSITIONS - 1 written plainly: not "01", "-3", "1e9", 10^20 or an escape sequence),
or positions that do not run 0, 1, 2, ... without a gap (a server publishes every position it drafts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from ..contract.events import (
    KIND_PROMETHEUS,
    Bucket,
    EngineCounters,
    Histogram,
    PositionCount,
)
from .dialect import MAX_POSITIONS, Dialect, base_name
from .dialects import detect

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
    if not samples:
        raise NotPrometheus("no metrics in the /metrics page (only comments)")
    dialect = detect(s.name for s in samples)
    process_start = next((s.value for s in samples if s.name == PROCESS_START), 0.0)
    if dialect is None:  # some other exporter: shown as "no speculation"
        return ParsedMetrics(KIND_PROMETHEUS, (EngineCounters(engine=""),), process_start, len(samples))
    try:
        engines = _engines(dialect, samples)
    except BadCounters as exc:
        exc.kind = dialect.kind  # the server is what it says; its counters are what cannot be true
        raise
    return ParsedMetrics(dialect.kind, engines, process_start, len(samples))


class BadCounters(NotPrometheus):
    """Prometheus text whose speculative decoding counters cannot be true (NaN, negative, accepted > drafted,
    a position label that is no draft position). ``kind``: the server's kind all the same."""

    kind = ""


def _where(labels: dict[str, str]) -> str:
    """``{engine="0"}`` for a message (label values are a server's words: shown through the one text rule)."""
    keep = {k: v for k, v in labels.items() if k in ("engine", "dp_rank", "position")}
    return "{" + ",".join(f'{k}="{v[:40]}"' for k, v in keep.items()) + "}" if keep else ""


def draft_position(label: str) -> int | None:
    """A ``position`` label as a draft position: a whole number 0 .. MAX_POSITIONS - 1 written plainly ("0",
    "17"), else None ("01", "-3", "1e9", "1000", an escape sequence)."""
    if not (0 < len(label) <= 3 and label.isascii() and label.isdigit()) or (len(label) > 1 and label[0] == "0"):
        return None
    pos = int(label)
    return pos if pos < MAX_POSITIONS else None


def _engines(d: Dialect, samples: list) -> tuple[EngineCounters, ...]:
    by_engine: dict[str, dict] = {}

    def slot(labels: dict[str, str]) -> dict:
        key = next((labels[k] for k in d.engine_labels if k in labels), "")
        e = by_engine.setdefault(key, {"model": "", "values": {}, "gauges": {}, "pos": {}, "hist": {}})
        if not e["model"] and labels.get("model_name"):
            e["model"] = labels["model_name"]
        return e

    counts = d.counters()
    gauges = set(d.accept_length + d.accept_rate)
    hists = set(d.ttft + d.itl)
    for s in samples:
        if not s.name.startswith(d.prefix):
            continue
        name = base_name(s.name, d.prefix)
        if name in counts and not (math.isfinite(s.value) and s.value >= 0):
            # a speculative count is finite and not negative: NaN, Inf or -5 is named, never "no speculation"
            # (other NaN / Inf values, a gauge or the tokens generated, read as absent, below)
            raise BadCounters(f"impossible counter: {s.name}{_where(s.labels)} = {s.value:g} "
                              "(a count is a finite number, not negative)")
        if name in d.per_pos:
            if "position" not in s.labels:
                continue
            pos = draft_position(s.labels["position"])
            if pos is None:
                raise BadCounters(f"impossible draft position: {s.name}{_where(s.labels)} (a draft position is a "
                                  f"whole number from 0 to {MAX_POSITIONS - 1})")
            e = slot(s.labels)
            e["pos"][pos] = e["pos"].get(pos, 0.0) + s.value
            continue
        if not math.isfinite(s.value):  # a NaN / Inf gauge or histogram part: as if absent
            continue
        e = slot(s.labels)
        base, _, part = name.rpartition("_")
        if part in ("bucket", "count", "sum") and base in hists:
            h = e["hist"].setdefault(base, {"buckets": {}, "count": 0.0, "sum": 0.0})
            if part == "bucket":
                le = float(s.labels.get("le", "nan"))
                if le == le and le != float("inf"):
                    h["buckets"][le] = h["buckets"].get(le, 0.0) + s.value
            else:
                h[part] += s.value
        elif name in gauges:
            e["gauges"].setdefault(name, s.value)  # one engine's gauge from several ranks: read once, not summed
        else:
            # counters of one engine with several model_name values are summed
            e["values"][name] = e["values"].get(name, 0.0) + s.value
    known = set(d.drafts + d.draft_tokens + d.accepted + d.emitted + d.generated)
    kept = [(k, e) for k, e in sorted(by_engine.items())
            if e["pos"] or e["hist"] or e["gauges"] or known & set(e["values"])]
    if not kept:  # the engine's own metrics, none of them about generation: one engine, no speculation
        return (EngineCounters(engine=""),)
    return tuple(_counters(d, key, e) for key, e in kept)


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


def _positions(key: str, pos: dict[int, float]) -> tuple[PositionCount, ...]:
    """The per-position counts, positions 0 .. n-1 without a gap (a server publishes every position it drafts:
    one missing is refused, never closed up so that position 5 would be drawn as position 2)."""
    if pos and sorted(pos) != list(range(len(pos))):
        missing = min(set(range(max(pos) + 1)) - set(pos))
        where = f' (engine "{key[:40]}")' if key else ""
        raise BadCounters(f"impossible draft positions{where}: {', '.join(map(str, sorted(pos)[:6]))}"
                          f"{', ...' if len(pos) > 6 else ''} published, position {missing} missing "
                          "(a server publishes every position it drafts)")
    return tuple(PositionCount(p, c) for p, c in sorted(pos.items()))


def _gauge(gauges: dict[str, float], names: tuple[str, ...], top: float) -> float:
    """A gauge in 0 .. top (an acceptance rate: 1, a length: MAX_POSITIONS + 1), else -1 (absent)."""
    v = _first(gauges, names)
    return v if 0.0 <= v <= top else -1.0


def _counters(d: Dialect, key: str, e: dict) -> EngineCounters:
    v = e["values"]
    drafts = _first(v, d.drafts)
    draft_tokens = _first(v, d.draft_tokens)
    accepted = _first(v, d.accepted)
    derived = False
    if drafts < 0 and accepted >= 0:
        emitted = _first(v, d.emitted)
        if emitted >= 0:
            drafts, derived = max(emitted - accepted, 0.0), True
    accept_length = _gauge(e["gauges"], d.accept_length, MAX_POSITIONS + 1.0)
    accept_rate = _gauge(e["gauges"], d.accept_rate, 1.0)
    if draft_tokens >= 0 and accepted > draft_tokens:
        raise BadCounters(f"impossible counters{_where({'engine': key} if key else {})}: {accepted:g} accepted "
                          f"tokens > {draft_tokens:g} drafted tokens")
    return EngineCounters(
        engine=key,
        model=e["model"],
        speculation=draft_tokens >= 0 or accepted >= 0 or accept_length >= 0 or accept_rate >= 0,
        num_drafts=drafts,
        num_draft_tokens=draft_tokens,
        num_accepted_tokens=accepted,
        accepted_per_pos=_positions(key, e["pos"]),
        drafts_derived=derived,
        generated_tokens=_first(v, d.generated),
        ttft=_hist(e["hist"], d.ttft),
        itl=_hist(e["hist"], d.itl),
        accept_length=accept_length,
        accept_rate=accept_rate,
    )
