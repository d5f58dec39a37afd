"""One reader for the measurement caches (the probe's curve, the batched curve, the kernels' noise): a JSON
file ``{"key": ..., "result": ...}`` under ~/.cache/spectui, read with a size limit. Each cache keeps its own
result type and its own error class (the one line a corrupt file gets)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MAX_CACHE_BYTES = 4 * 1024 * 1024  # a cache file is a few KB: anything this large is not one of ours


def read_entry(path: Path, key: dict, error: type[Exception]) -> Any | None:
    """The cached ``result`` at ``path`` when it was measured for ``key``; None when the file is absent or
    holds another key's. Raises ``error`` (one line) when the file is unreadable, too large or corrupt."""
    try:
        if path.stat().st_size > MAX_CACHE_BYTES:
            raise error(f"larger than {MAX_CACHE_BYTES // (1024 * 1024)} MiB")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"cannot read it ({exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict) or "result" not in data or "key" not in data:
        raise error("missing 'key' or 'result'")
    if data["key"] != key:
        return None
    return data["result"]
