"""The trace format: its schema name and versions, the header line a writer puts first (the machine, the models,
the run's parameters, or an attach session's targets), one event's JSON line, and the errors a reader raises.
The writer is writer.py, the reader reader.py; trace.py has the whole API in one place. No Textual import.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import sys
from dataclasses import asdict
from typing import Any

from .. import __version__
from ..contract.errors import SpectuiError
from ..contract.events import AttachStarted, RunStarted

SCHEMA = "spectui.trace"
# 3: the inspector's data (PassEvent.inspect, draft_stop; Settings.draft_p_min / draft_min; RunStarted.inspect_top)
# 2: attach traces (AttachStarted ... AttachEnded). Older versions read as is: their passes have no inspector data.
VERSION = 3
SUPPORTED_VERSIONS = (1, 2, 3)
GZIP_MAGIC = b"\x1f\x8b"


class TraceError(SpectuiError):
    """A file that cannot be read as a trace (one line: the file, the problem, the versions supported)."""


class TraceWarning(UserWarning):
    """A recoverable problem: a truncated or damaged last line (the run was killed mid-write)."""


def versions_read() -> str:
    return "this spectui reads trace version " + ", ".join(str(v) for v in SUPPORTED_VERSIONS)



def machine_info(threads: int = 0) -> dict[str, Any]:
    """CPU model, core count, memory, OS and library versions of the machine that records."""
    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info: dict[str, Any] = {
        "cpu": cpu or platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count() or 0,
        "threads": threads,
        "arch": platform.machine(),
        "os": platform.platform(),
        "python": platform.python_version(),
    }
    try:
        info["memory_bytes"] = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        pass
    llama = sys.modules.get("llama_cpp")  # recorded when the engine loaded it; never imported here
    if llama is not None:
        info["llama_cpp_python"] = getattr(llama, "__version__", "")
    return info


def make_header(start: RunStarted | AttachStarted | None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The header line, built from the run's start event (models, parameters, prompt), or for an attach
    trace from its AttachStarted (the watched URLs, the scrape interval, the request-mode prompt)."""
    attach = start if isinstance(start, AttachStarted) else None
    if attach is not None:
        start = None
    when = _dt.datetime.now(_dt.timezone.utc)
    if attach is not None and attach.started_at > 0:
        when = _dt.datetime.fromtimestamp(attach.started_at, _dt.timezone.utc)
    if start is not None and start.started_at > 0:
        when = _dt.datetime.fromtimestamp(start.started_at, _dt.timezone.utc)
    header: dict[str, Any] = {
        "schema": SCHEMA,
        "version": VERSION,
        "spectui": __version__,
        "created": when.isoformat(timespec="seconds"),
        "machine": machine_info(start.threads if start is not None else 0),
    }
    if start is not None:
        header["run_id"] = start.run_id
        header["models"] = {
            "target": asdict(start.target),
            "draft": asdict(start.draft) if start.draft is not None else None,
        }
        if start.head is not None:  # an EAGLE-3 head / the target's MTP layers (absent for the other drafters)
            header["models"]["head"] = asdict(start.head)
        header["params"] = {
            "n_predict": start.n_predict,
            "n_ctx": start.n_ctx,
            "threads": start.threads,
            "prompt_tokens": start.prompt_tokens,
            "settings": asdict(start.settings),
            "target_decode_ms": start.target_decode_ms,
            "draft_decode_ms": start.draft_decode_ms,
        }
        header["prompt"] = start.prompt
    if attach is not None:
        header["attach"] = {"targets": [t.url for t in attach.targets], "interval": attach.interval,
                            "prompt": attach.prompt, "n_predict": attach.n_predict, "draft_max": attach.draft_max}
    for key, value in (extra or {}).items():
        if key not in ("schema", "version"):
            header[key] = value
    return header


_SURROGATE = re.compile("[\ud800-\udfff]")


def json_line(obj: Any) -> str:
    """``obj`` as one line of compact JSON (UTF-8 text, a lone surrogate as its \\uXXXX escape), newline included."""
    s = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    if _SURROGATE.search(s):  # a lone surrogate (a server's or a trace's "\ud800") cannot be UTF-8: \\uXXXX
        s = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", s)
    return s + "\n"
