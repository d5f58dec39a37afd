"""Traces: the event stream written down as JSON Lines, and read back as a stream.

A trace file is one header line, then one line per event, each exactly ``event_json.to_dict(event)``::

    {"schema": "spectui.trace", "version": 3, "spectui": "0.1.0", "created": "...", "machine": {...},
     "models": {"target": {...}, "draft": {...}}, "params": {...}, "prompt": "..."}
    {"type": "start", ...}
    {"type": "pass", "index": 0, ...}
    ...
    {"type": "end", ...}

An attach trace (``spectui attach --record``) has ``"attach": {"targets": [...], "interval": ...}`` in its
header instead of models and parameters, then ``attach_start``, ``scrape`` / ``request_*`` events and
``attach_end``. Version 2 added the attach events, version 3 the inspector's data per pass (``inspect``, the
draft's stop reason, --draft-p-min in the settings); version-1 and -2 traces read unchanged (no inspector data).

The writer flushes after every event, so a run killed with SIGKILL leaves every complete pass
readable; the reader turns a truncated or damaged *tail* (one line or several, no intact event after
them) into one warning, not an error. The writer creates its file at the first event, through
spectui.contract.outputs (never over an input, nor over a file that is not a trace unless forced). Files
ending in ``.gz`` are gzip-compressed (the bundled demo trace); the reader detects gzip by its magic
bytes. No Textual import here: this module is part of the core.

This module is the trace API in one place; the code is in schema.py (the format, the header), writer.py
(``TraceWriter``, ``write_trace``), reader.py (``iter_trace``, ``read_trace``, ``TraceReader``, the limits) and
synthetic.py (``synthetic_run``).
"""

from __future__ import annotations

from .reader import (
    MAX_BLANK_LINES,
    MAX_LINE_BYTES,
    MAX_LINES,
    MAX_TRACE_BYTES,
    Trace,
    TraceLimitError,
    TraceReader,
    iter_trace,
    read_trace,
)
from .schema import SCHEMA, SUPPORTED_VERSIONS, VERSION, TraceError, TraceWarning, machine_info, make_header
from .synthetic import synthetic_run
from .writer import TraceWriter, write_trace

__all__ = [
    "MAX_BLANK_LINES", "MAX_LINES", "MAX_LINE_BYTES", "MAX_TRACE_BYTES", "SCHEMA", "SUPPORTED_VERSIONS", "VERSION",
    "Trace", "TraceError", "TraceLimitError", "TraceReader", "TraceWarning", "TraceWriter", "iter_trace",
    "machine_info", "make_header", "read_trace", "synthetic_run", "write_trace",
]
