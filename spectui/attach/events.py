"""What ``spectui attach`` observes of a serving engine, as plain immutable events and their JSON form.

These are observations, not statistics: a scrape holds the server's raw cumulative counters and
histogram buckets, a request chunk holds what arrived on the wire and when. Acceptance by position,
rates and quantiles are computed from them by :mod:`spectui.attach.window`, so a live attach and a
replayed attach trace give the same numbers.

One attach session is: ``AttachStarted``, then per interval one ``MetricsScraped`` per URL (also for
a URL that failed: ``error`` says why, in one line), in request mode ``RequestStarted``,
``RequestChunk``... ``RequestEnded``, and finally ``AttachEnded``.

They use only the field types spectui/events.py already decodes (scalars, optional scalars, nested
dataclasses, tuples of dataclasses), so they can move into that module as they are; until then
:func:`to_dict` / :func:`from_dict` here give the JSON form (type-checked, like spectui.events).
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import Any, Literal, Union

# What a URL turned out to be.
KIND_LLAMA_SERVER = "llama-server"
KIND_VLLM = "vllm"
KIND_SGLANG = "sglang"
KIND_PROMETHEUS = "prometheus"  # Prometheus text from something else: no speculative decoding metrics
KIND_UNKNOWN = ""  # not reached yet
KINDS = (KIND_LLAMA_SERVER, KIND_VLLM, KIND_SGLANG, KIND_PROMETHEUS, KIND_UNKNOWN)

# Why a streamed request ended.
REQ_STOP = "stop"  # the server ended it (end of generation, stop string)
REQ_LENGTH = "length"  # reached -n
REQ_ERROR = "error"  # connection lost, HTTP error, malformed stream: RequestEnded.error says which
REQ_STOPPED = "stopped"  # Ctrl+C
REQ_REASONS = (REQ_STOP, REQ_LENGTH, REQ_ERROR, REQ_STOPPED)


@dataclass(frozen=True)
class Target:
    """One watched server: the URL as given (its /metrics is scraped) and what it turned out to be."""

    url: str
    kind: str = KIND_UNKNOWN


@dataclass(frozen=True)
class Bucket:
    """One cumulative histogram bucket: observations <= ``le`` (seconds). +Inf is Histogram.count."""

    le: float
    count: float


@dataclass(frozen=True)
class Histogram:
    buckets: tuple[Bucket, ...] = ()  # finite upper bounds, ascending
    count: float = 0.0  # all observations (the +Inf bucket)
    sum: float = 0.0


@dataclass(frozen=True)
class PositionCount:
    """Drafts whose token at ``position`` (0 = first drafted token) was accepted, cumulative."""

    position: int
    accepted: float


@dataclass(frozen=True)
class EngineCounters:
    """One engine's cumulative counters at one scrape, as the server published them.

    ``engine`` is vLLM's ``engine`` label (data-parallel rank; SGLang's ``dp_rank``), "" for a
    single-engine server. Counters the server does not publish stay at -1.
    """

    engine: str = ""
    model: str = ""
    speculation: bool = False  # the server publishes speculative decoding counters (or SGLang's gauge)
    num_drafts: float = -1.0  # verify steps that had a draft
    num_draft_tokens: float = -1.0
    num_accepted_tokens: float = -1.0
    accepted_per_pos: tuple[PositionCount, ...] = ()
    drafts_derived: bool = False  # num_drafts = emitted - accepted (vLLM v0 had no drafts counter)
    generated_tokens: float = -1.0  # tokens the engine generated (all requests)
    ttft: Histogram | None = None  # the engine's own time-to-first-token histogram (seconds)
    itl: Histogram | None = None  # inter-token latency histogram (seconds)
    accept_length: float = -1.0  # SGLang's sglang:spec_accept_length gauge (mean tokens per verify)


@dataclass(frozen=True)
class AttachStarted:
    type: Literal["attach_start"] = "attach_start"
    started_at: float = 0.0  # unix time
    targets: tuple[Target, ...] = ()
    interval: float = 1.0  # seconds between scrapes
    prompt: str = ""  # request mode only
    n_predict: int = 0
    draft_max: int = -1  # per-request draft length asked for (-1: the server's own)


@dataclass(frozen=True)
class MetricsScraped:
    """One scrape of one URL's /metrics (``t``: seconds since attach started, at the response)."""

    type: Literal["scrape"] = "scrape"
    url: str = ""
    t: float = 0.0
    kind: str = KIND_UNKNOWN
    error: str = ""  # one line when the scrape failed ("" = it worked)
    process_start: float = 0.0  # the server's start time (unix) when it says; a change means a restart
    speculation: str = ""  # "on" / "none" when the server says (llama-server's /slots), else ""
    engines: tuple[EngineCounters, ...] = ()


@dataclass(frozen=True)
class RequestStarted:
    type: Literal["request_start"] = "request_start"
    url: str = ""
    t: float = 0.0
    api: str = ""  # "completion" (llama-server /completion) or "openai" (/v1/completions)
    prompt: str = ""
    n_predict: int = 0
    draft_max: int = -1  # speculative.n_max sent with the request (-1: not sent)


@dataclass(frozen=True)
class RequestChunk:
    """One streamed chunk, timed on arrival. ``draft_n`` / ``draft_n_accepted`` are the server's
    cumulative figures for this request when it sends them per chunk (llama-server
    ``timings_per_token``), else -1."""

    type: Literal["request_chunk"] = "request_chunk"
    t: float = 0.0
    text: str = ""
    n_tokens: int = 1
    draft_n: int = -1
    draft_n_accepted: int = -1


@dataclass(frozen=True)
class RequestEnded:
    """The server's own per-request figures where it gave them (-1 otherwise)."""

    type: Literal["request_end"] = "request_end"
    t: float = 0.0
    reason: str = REQ_STOP
    error: str = ""
    n_tokens: int = 0  # tokens received (server count when given, else chunks)
    draft_n: int = -1  # drafted tokens (llama-server timings.draft_n, vLLM num_draft_tokens)
    draft_n_accepted: int = -1
    spec_steps: int = -1  # verify steps with a draft (vLLM num_spec_steps)
    prompt_ms: float = -1.0  # server-side prompt time (llama-server timings.prompt_ms)
    predicted_ms: float = -1.0  # server-side generation time
    predicted_n: int = -1


@dataclass(frozen=True)
class AttachEnded:
    type: Literal["attach_end"] = "attach_end"
    t: float = 0.0
    reason: str = "stopped"  # "stopped" (Ctrl+C / SIGTERM), "done" (request mode finished), "error"
    error: str = ""


AttachEvent = Union[AttachStarted, MetricsScraped, RequestStarted, RequestChunk, RequestEnded, AttachEnded]
ATTACH_EVENT_TYPES: dict[str, type] = {
    "attach_start": AttachStarted,
    "scrape": MetricsScraped,
    "request_start": RequestStarted,
    "request_chunk": RequestChunk,
    "request_end": RequestEnded,
    "attach_end": AttachEnded,
}
NESTED: tuple[type, ...] = (Target, Bucket, Histogram, PositionCount, EngineCounters)
ENUMS: dict[tuple[str, str], tuple[str, ...]] = {
    ("Target", "kind"): KINDS,
    ("MetricsScraped", "kind"): KINDS,
    ("RequestEnded", "reason"): REQ_REASONS,
}


# --------------------------------------------------------------- JSON form (until merged into events.py)


class AttachEventFormatError(ValueError):
    """A dict that is not a valid attach event."""


def to_dict(event: Any) -> dict[str, Any]:
    """Plain JSON-ready dict (tuples become lists), like spectui.events.to_dict."""
    return _plain(event)


def _plain(v: Any) -> Any:
    if dataclasses.is_dataclass(v):
        return {f.name: _plain(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, (tuple, list)):
        return [_plain(x) for x in v]
    return v


def from_dict(data: Any) -> AttachEvent:
    if type(data) is not dict:
        raise AttachEventFormatError(f"an event must be a JSON object, got {type(data).__name__}")
    cls = ATTACH_EVENT_TYPES.get(data.get("type")) if type(data.get("type")) is str else None
    if cls is None:
        raise AttachEventFormatError(f"unknown event type {data.get('type')!r}"[:200])
    return _build(cls, data, cls.__name__)


_SCALARS = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}


def _build(cls: type, data: Any, where: str) -> Any:
    if type(data) is not dict:
        raise AttachEventFormatError(f"{where}: expected an object, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    values = {}
    for f in dataclasses.fields(cls):
        if f.name == "type" or f.name not in data:
            continue
        values[f.name] = _convert(hints[f.name], data[f.name], f"{where}.{f.name}", (cls.__name__, f.name))
    try:
        return cls(**values)
    except TypeError as exc:
        raise AttachEventFormatError(f"{where}: {exc}") from None


def _convert(tp: Any, v: Any, where: str, key: tuple[str, str]) -> Any:
    args = typing.get_args(tp)
    if type(None) in args:  # X | None
        if v is None:
            return None
        tp = next(a for a in args if a is not type(None))
        args = typing.get_args(tp)
    if tp in _SCALARS:
        if tp is float and type(v) is int:
            v = float(v)
        elif tp is int and type(v) is float and v.is_integer():
            v = int(v)
        if type(v) is not tp:
            raise AttachEventFormatError(f"{where}: expected {_SCALARS[tp]}, got {type(v).__name__}")
        if key in ENUMS and v not in ENUMS[key]:
            raise AttachEventFormatError(f"{where}: expected one of {', '.join(ENUMS[key])}, got {v!r}"[:200])
        return v
    if typing.get_origin(tp) is tuple:
        if type(v) is not list:
            raise AttachEventFormatError(f"{where}: expected a list, got {type(v).__name__}")
        return tuple(_build(args[0], x, f"{where}[{i}]") for i, x in enumerate(v))
    if tp in NESTED:
        return _build(tp, v, where)
    raise TypeError(f"no JSON converter for {where}: {tp}")  # pragma: no cover - a new field type
