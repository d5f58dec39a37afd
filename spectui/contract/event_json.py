"""The JSON form of events: ``to_dict`` (plain dicts, as a trace stores them) and ``from_dict`` (its
inverse, type-checked: a trace is untrusted input, so a consumer never meets a string where a number
belongs; ``EventFormatError`` names the bad field).

Reading is on the replay hot path (100k passes in a few seconds): each event class gets a straight-line
builder generated once from its field annotations (``_compile``); when it meets a problem, the
field-by-field reference builder (``_build_checked``) runs again to name the field.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
import threading
from typing import Any

from .events import (
    ACCEPTED,
    AUTO_MODES,
    BONUS,
    CORRECTION,
    DISCARDED,
    DRAFT_STOPS,
    EVENT_TYPES,
    KINDS,
    PLAIN,
    REJECTED,
    REQ_REASONS,
    SPEC_WHYS,
    Bucket,
    Candidate,
    DraftToken,
    EngineCounters,
    Event,
    HeadInfo,
    Histogram,
    Inspection,
    MachineProbe,
    ModelInfo,
    PipeInfo,
    PositionCount,
    Settings,
    Target,
    TargetToken,
    Timing,
    Token,
    TreeNode,
    is_drafter_name,
)
from .judged import Judged

__all__ = ["EventFormatError", "NonFinite", "NumberTooLong", "from_dict", "loads_line", "to_dict"]


# ------------------------------------------------------------------ numbers a JSON line may spell
class NonFinite:
    """What :func:`loads_line` makes of a number that is no finite float however it is spelled: ``NaN``,
    ``Infinity``, ``-Infinity`` (JSON extensions) and strict JSON that overflows a float (``1e400``,
    ``-1e309``). ``text`` says which; the trace reader names the field in a warning and reads it as 0."""

    def __init__(self, text: str) -> None:
        self.text = text


class NumberTooLong(ValueError):
    """An integer with more digits than Python converts (``sys.get_int_max_str_digits()``, 4,300): valid JSON,
    but no number a run records; the message says what it is."""


_DIGITS = re.compile(r"value has (\d+) digits")


def _int(text: str) -> int | NonFinite:
    digits = len(text.lstrip("-"))
    if digits > _int_digits():
        raise _too_long(digits)
    if digits > 308:  # more than a float holds, and than any count or id a run records
        return NonFinite(f"a {digits}-digit integer")
    return int(text)


def _int_digits() -> int:
    get = getattr(sys, "get_int_max_str_digits", None)  # Python 3.11+; older ones convert any length
    return get() if get is not None and get() > 0 else 1 << 62


def _too_long(n: int) -> NumberTooLong:
    return NumberTooLong(f"a {n:,}-digit integer (Python reads at most {_int_digits():,} digits; no number a run "
                         "records has more than 20)")


class _Decoder:
    """One thread's JSON decoder for trace lines: every number through a check that costs little (a NaN, an
    infinity, a float or integer too large becomes a :class:`NonFinite` and sets ``found``). It replaced a
    regular expression run over every line first, which cost more than the parse itself."""

    def __init__(self) -> None:
        self.found = False
        self.decode = json.JSONDecoder(parse_float=self._float, parse_int=self._int,
                                       parse_constant=self._constant).decode

    def _float(self, text: str) -> float | NonFinite:
        v = float(text)
        if v - v == 0.0:  # finite (inf - inf and nan are nan)
            return v
        self.found = True
        return NonFinite(f"{text}, infinite as a float")

    def _int(self, text: str) -> int | NonFinite:
        if len(text) < 20:
            return int(text)
        v = _int(text)
        if type(v) is NonFinite:
            self.found = True
        return v

    def _constant(self, text: str) -> NonFinite:
        self.found = True
        return NonFinite(text)


_LOCAL = threading.local()


def loads_line(line: bytes) -> tuple[Any, bool]:
    """One JSON line (a trace's) parsed: ``(value, checked)``. ``checked``: the line holds a :class:`NonFinite`
    (it spells NaN or Infinity, or a number that overflows a float), so the caller walks it to name and replace
    each. Raises ``UnicodeDecodeError``, ``ValueError`` (not JSON) or :class:`NumberTooLong` (with what it is)."""
    text = line.decode("utf-8")
    dec = getattr(_LOCAL, "decoder", None)
    if dec is None:
        dec = _LOCAL.decoder = _Decoder()
    dec.found = False
    try:
        return dec.decode(text), dec.found
    except NumberTooLong:
        raise
    except ValueError as exc:
        m = _DIGITS.search(str(exc))
        if m is not None and "integer string conversion" in str(exc):
            raise _too_long(int(m.group(1))) from None
        raise


def to_dict(event: Event) -> dict[str, Any]:
    """Plain JSON-ready dict (tuples become lists); equal to dataclasses.asdict(event), faster."""
    return _as_dict(event)


def event_fields(obj: Any) -> dict[str, Any]:
    """``json.dumps(event, default=event_fields)``: the JSON encoder itself walks an event, each dataclass as its
    fields (the text of ``json.dumps(to_dict(event))``, without building the dicts first)."""
    if _is_dataclass(type(obj)):
        return obj.__dict__
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")


def _as_dict(obj: Any) -> Any:
    out = {}
    for k, v in obj.__dict__.items():
        t = type(v)
        if t in _PLAIN:
            out[k] = v
        elif t is tuple or t is list:
            out[k] = [x if type(x) in _PLAIN else _as_dict(x) if _is_dataclass(type(x)) else x for x in v]
        else:
            out[k] = _as_dict(v) if _is_dataclass(t) else v
    return out


_PLAIN = {int, float, str, bool, type(None)}
_DATACLASS: dict[type, bool] = {}  # type -> is it a dataclass (asked once per type, not once per value)


def _is_dataclass(t: type) -> bool:
    known = _DATACLASS.get(t)
    if known is None:
        known = _DATACLASS[t] = dataclasses.is_dataclass(t)
    return known


class EventFormatError(ValueError):
    """A dict that is not a valid event."""


# Per-class converters, built once from the field annotations: every value read from JSON is
# type-checked (a trace is untrusted input), so a consumer never meets a string where a number belongs.
# Reading is on the replay hot path (100k passes in a few seconds), hence the flat, table-driven loop.
_INT, _FLOAT, _STR, _BOOL, _OTHER = range(5)
_MISSING = object()


def _type_name(v: Any) -> str:
    return "null" if v is None else type(v).__name__


def _scalar(kind: int, v: Any) -> Any:
    """Slow path of the scalar checks: a value whose type is not the expected one."""
    if kind == _INT and type(v) is float and v.is_integer():
        return int(v)
    if kind == _FLOAT and type(v) is int:
        return float(v)
    expected = {_INT: "an integer", _FLOAT: "a number", _STR: "a string", _BOOL: "true or false"}[kind]
    raise EventFormatError(f"expected {expected}, got {_type_name(v)}")


def _optional(conv: Any) -> Any:
    def c(v: Any) -> Any:
        return None if v is None else conv(v)

    return c


def _nested(cls: type) -> Any:
    def c(v: Any) -> Any:
        return _build_checked(cls, v)

    return c


def _each(item: Any) -> Any:
    """A JSON list as a tuple, ``item`` converting (and checking) each element; a bad one is named by index."""

    def c(v: Any) -> tuple:
        if type(v) is not list:
            raise EventFormatError(f"expected a list, got {_type_name(v)}")
        out = []
        for i, x in enumerate(v):
            try:
                out.append(item(x))
            except EventFormatError as exc:
                raise EventFormatError(f"[{i}]{_sep(exc)}") from None
        return tuple(out)

    return c


def _tuple_of(cls: type) -> Any:
    return _each(lambda x: _build_checked(cls, x))


def _list_of(kind: int, py: type) -> Any:
    """A JSON list of numbers of one kind (each value checked as a scalar field is)."""
    return _each(lambda x: x if type(x) is py else _scalar(kind, x))


_floats = _list_of(_FLOAT, float)
_ints = _list_of(_INT, int)


def _drafter_name(empty: bool) -> Any:
    def c(v: Any) -> str:
        if (empty and v == "") or is_drafter_name(v):
            return v
        raise EventFormatError(f"expected a drafter's name, got {v!r}"[:200])

    return c


def _one_of(values: tuple[str, ...]) -> Any:
    canon = {v: v for v in values}  # the one string of each value: a million verdicts hold three strings

    def c(v: Any) -> str:
        if type(v) is str and v in canon:
            return canon[v]
        raise EventFormatError(f"expected one of {', '.join(values)}, got {v!r}"[:200])

    return c


def _sep(exc: Exception) -> str:
    msg = str(exc)
    return msg if msg.startswith(("[", ".")) else ": " + msg


_SCALARS = {"int": _INT, "float": _FLOAT, "str": _STR, "bool": _BOOL}
_CLASSES: dict[str, type] = {}  # filled below: annotation name -> dataclass
_ENUMS: dict[tuple[str, str], Any] = {}  # (class name, field) -> converter for enumerated strings
_SPECS: dict[type, tuple[tuple[tuple[str, int, Any], ...], dict[str, Any], int]] = {}


def _field_spec(cls: type, name: str, ann: str) -> tuple[int, Any] | None:
    ann = ann.replace(" ", "")
    if (cls.__name__, name) in _ENUMS:
        return _OTHER, _ENUMS[(cls.__name__, name)]
    if ann.startswith("Literal["):
        return None  # the event's type tag: checked by from_dict, never taken from the data
    optional = ann.endswith("|None")
    if optional:
        ann = ann[: -len("|None")]
    if ann in _SCALARS and not optional:
        return _SCALARS[ann], None
    if ann in _SCALARS:
        kind = _SCALARS[ann]
        return _OTHER, _optional(lambda v, kind=kind: v if type(v) is _PY[kind] else _scalar(kind, v))
    if ann in _CLASSES:
        conv = _nested(_CLASSES[ann])
    elif ann.startswith("tuple[") and ann.endswith(",...]") and ann[6:-5] in _CLASSES:
        conv = _tuple_of(_CLASSES[ann[6:-5]])
    elif ann == "tuple[float,...]":
        conv = _floats
    elif ann == "tuple[int,...]":
        conv = _ints
    else:  # pragma: no cover - a new field type must be added here
        raise TypeError(f"no JSON converter for {cls.__name__}.{name}: {ann}")
    return _OTHER, (_optional(conv) if optional else conv)


_PY = {_INT: int, _FLOAT: float, _STR: str, _BOOL: bool}


def _spec(cls: type) -> tuple[tuple[tuple[str, int, Any], ...], dict[str, Any], int]:
    spec = _SPECS.get(cls)
    if spec is None:
        items = []
        defaults: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                defaults[f.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:  # immutable values: one shared default is fine
                defaults[f.name] = f.default_factory()
            fs = _field_spec(cls, f.name, f.type if isinstance(f.type, str) else f.type.__name__)
            if fs is not None:
                items.append((f.name, fs[0], fs[1]))
        spec = _SPECS[cls] = (tuple(items), defaults, len(dataclasses.fields(cls)))
    return spec


def _build_checked(cls: type, data: Any) -> Any:
    """The reference builder: field by field, with an error message that names the bad field."""
    if type(data) is not dict:
        raise EventFormatError(f"expected an object for {cls.__name__}, got {_type_name(data)}")
    items, defaults, n_fields = _spec(cls)
    values = dict(defaults)
    for name, kind, conv in items:
        v = data.get(name, _MISSING)
        if v is _MISSING:
            continue
        try:
            if kind == _OTHER:
                v = conv(v)
            elif type(v) is not _PY[kind]:
                v = _scalar(kind, v)
        except EventFormatError as exc:
            raise EventFormatError(f".{name}{_sep(exc)}") from None
        values[name] = v
    if len(values) != n_fields:  # a field without a default that the data lacks
        missing = [f.name for f in dataclasses.fields(cls) if f.name not in values]
        raise EventFormatError(f"{cls.__name__} lacks {', '.join(missing)}")
    # Frozen dataclasses: fill the instance directly (same object as cls(**values), several times faster).
    obj = object.__new__(cls)
    obj.__dict__.update(values)
    return obj


_FAST: dict[type, Any] = {}


def _compile(cls: type) -> Any:
    """Generate a straight-line builder for ``cls`` (like dataclasses does for __init__): the same checks
    as _build_checked without its per-field loop. On any problem it raises a bare EventFormatError and
    from_dict re-runs _build_checked to name the field."""
    items, defaults, _n = _spec(cls)
    kinds = {name: (kind, conv) for name, kind, conv in items}
    hints = {
        f.name: (f.type if isinstance(f.type, str) else f.type.__name__).replace(" ", "")
        for f in dataclasses.fields(cls)
    }
    env: dict[str, Any] = {
        "M": _MISSING, "D": defaults, "E": EventFormatError, "S": _scalar, "new": object.__new__, "C": cls,
        "I": sys.intern,
    }
    lines = ["def build(data):", "    if type(data) is not dict: raise E('not an object')", "    g = data.get"]
    out = []
    for f in dataclasses.fields(cls):
        v = f"v_{f.name}"
        out.append(f"{f.name!r}: {v}")
        if f.name not in kinds:  # the type tag
            lines.append(f"    {v} = D[{f.name!r}]")
            continue
        kind, conv = kinds[f.name]
        lines.append(f"    {v} = g({f.name!r}, M)")
        if f.name in defaults:
            lines.append(f"    if {v} is M: {v} = D[{f.name!r}]")
        else:
            lines.append(f"    if {v} is M: raise E('missing')")
        ann = hints[f.name]
        optional = ann.endswith("|None")
        base = ann[: -len("|None")] if optional else ann
        if kind == _STR and f.name == "text" and issubclass(cls, Token):
            # token texts repeat endlessly: interned, a long replay keeps one copy of each
            lines.append(f"    elif type({v}) is not str: {v} = S({kind}, {v})")
            lines.append(f"    else: {v} = I({v})")
        elif kind in _PY:
            lines.append(f"    elif type({v}) is not {_PY[kind].__name__}: {v} = S({kind}, {v})")
        elif (cls.__name__, f.name) not in _ENUMS and base in _CLASSES:
            env[f"B_{base}"] = _fast_builder(_CLASSES[base])
            cond = f"{v} is not None" if optional else "True"
            lines.append(f"    elif {cond}: {v} = B_{base}({v})")
        elif (cls.__name__, f.name) not in _ENUMS and base.startswith("tuple[") and base[6:-5] in _CLASSES:
            inner = base[6:-5]
            env[f"B_{inner}"] = _fast_builder(_CLASSES[inner])
            lines.append(f"    elif type({v}) is not list: raise E('not a list')")
            lines.append(f"    else: {v} = tuple([B_{inner}(x) for x in {v}])")
        else:
            env[f"K_{f.name}"] = conv
            lines.append(f"    else: {v} = K_{f.name}({v})")
    lines.append("    obj = new(C)")
    lines.append("    obj.__dict__.update({" + ", ".join(out) + "})")
    lines.append("    return obj")
    exec("\n".join(lines), env)  # noqa: S102 - generated from our own dataclass fields only
    return env["build"]


def _fast_builder(cls: type) -> Any:
    b = _FAST.get(cls)
    if b is None:
        b = _FAST[cls] = _compile(cls)
    return b


def _build(cls: type, data: Any) -> Any:
    try:
        return _fast_builder(cls)(data)
    except (EventFormatError, TypeError, AttributeError):
        return _build_checked(cls, data)  # raises with the field's name (or builds, if the fast path erred)


_CLASSES.update({c.__name__: c for c in (Settings, ModelInfo, Token, DraftToken, TargetToken, Timing, Candidate,
                                           Inspection, MachineProbe, HeadInfo, PipeInfo, TreeNode, Judged,
                                           Target, Bucket, Histogram, PositionCount, EngineCounters)})
_ENUMS.update(
    {
        ("DraftToken", "verdict"): _one_of((ACCEPTED, REJECTED, DISCARDED)),
        ("TreeNode", "verdict"): _one_of((ACCEPTED, REJECTED, DISCARDED)),
        ("TargetToken", "kind"): _one_of((CORRECTION, BONUS, PLAIN)),
        ("Settings", "drafter"): _drafter_name(empty=False),
        ("HeadInfo", "kind"): _drafter_name(empty=True),
        ("PassEvent", "drafter"): _drafter_name(empty=True),
        ("PassEvent", "left_out"): _each(_drafter_name(empty=False)),
        ("PassEvent", "draft_stop"): _one_of(DRAFT_STOPS),
        ("PipeInfo", "thrown_why"): _one_of(SPEC_WHYS),
        ("Settings", "auto"): _optional(_one_of(AUTO_MODES)),
        ("Target", "kind"): _one_of(KINDS),
        ("MetricsScraped", "kind"): _one_of(KINDS),
        ("RequestEnded", "reason"): _one_of(REQ_REASONS),
    }
)


def from_dict(data: Any) -> Event:
    """Inverse of to_dict. Raises EventFormatError (naming the bad field) for anything that is not an
    event: wrong types included, so consumers of a replayed trace never meet malformed values."""
    if type(data) is not dict:
        raise EventFormatError(f"an event must be a JSON object, got {_type_name(data)}")
    kind = data.get("type")
    cls = EVENT_TYPES.get(kind) if type(kind) is str else None
    if cls is None:
        raise EventFormatError(f"unknown event type {kind!r}"[:200])
    try:
        return _build(cls, data)
    except EventFormatError as exc:
        raise EventFormatError(f"{cls.__name__}{_sep(exc)}") from None
