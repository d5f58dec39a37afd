"""One reader and one writer for the measurement caches (the probe's curve, the batched curve, the kernels'
noise): a JSON file ``{"key": ..., "result": ...}`` under ~/.cache/spectui, read with a size limit and
written atomically. Each cache keeps its own result type (a ``CachedRecord``: its version, its figures'
checks) and its own error class (the one line a corrupt file gets)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, ClassVar, TypeVar

from ..contract.outputs import Kind, OutputError, atomic_write
from ..contract.text import visible_line

MAX_CACHE_BYTES = 4 * 1024 * 1024  # a cache file is a few KB: anything this large is not one of ours

R = TypeVar("R", bound="CachedRecord")


def read_entry(path: Path, key: dict, error: type[Exception]) -> Any | None:
    """The cached ``result`` at ``path`` when it was measured for ``key``; None when the file is absent or
    holds another key's. Raises ``error`` (one line) when the file is unreadable, too large or corrupt. A
    symbolic link is not read (spectui never makes one there): absent, so measured again, and
    :func:`write_entry` replaces the link, never what it names."""
    if path.is_symlink():
        return None
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


def write_entry(path: Path, key: dict, result: dict, kind: Kind, inputs, name: str) -> str:
    """Write ``{"key": key, "result": result}`` atomically at ``path`` (never over one of ``inputs``, the model
    files) and return where it went: the path with its directory's links resolved (a symlinked cache
    directory is named as what it names). A symbolic link at ``path`` is replaced by the file, never written
    through (a warning says so); a cache that cannot be written is a warning and "" (the figures are still
    printed). ``name``: the cache's name in the warnings ("probe", "head-cost")."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        place = Path(os.path.realpath(path.parent)) / path.name
        if path.is_symlink():
            print(f"spectui: warning: the {name} cache file {visible_line(str(place))} was a symbolic link (to "
                  f"{visible_line(os.readlink(path))}): replaced by this measurement, what it named left alone",
                  file=sys.stderr)
        with atomic_write(path, kind, inputs=list(inputs)) as fh:
            fh.write(json.dumps({"key": key, "result": result}, indent=1, sort_keys=True))
    except (OSError, OutputError) as exc:
        print(f"spectui: warning: cannot write the {name} cache {visible_line(str(path))}: {visible_line(exc)}",
              file=sys.stderr)
        return ""
    return str(place)


def loadavg_of(d: dict) -> tuple[float, float, float]:
    """A record's 1/5/15-minute load averages (0.0 each when it has none); ValueError unless three."""
    la = tuple(float(x) for x in d.get("loadavg", (0.0, 0.0, 0.0)))
    if len(la) != 3:
        raise ValueError("loadavg must have 3 figures")
    return la  # type: ignore[return-value]


class CachedRecord:
    """What the caches' result types share: each is a frozen dataclass with ``cached`` and ``cache_file``
    fields, a ``to_dict`` and a ``_from_checked(d)`` that reads its figures from a JSON object (raising
    KeyError / TypeError / ValueError on anything malformed). Here: the checked opening (``from_dict``), the
    cached entry at a path (``load_cached``, ``load_or_warn``) and the atomic write (``store``)."""

    RECORD_VERSION: ClassVar[int]
    RECORD_ERROR: ClassVar[type[Exception]]
    RECORD_WHAT: ClassVar[str] = ""  # names the record in the error line ("": the line is "Kind: detail")
    CACHE_NAME: ClassVar[str]  # in the warnings: "the {CACHE_NAME} cache file ... is corrupt"
    CACHE_KIND: ClassVar[Kind]  # what atomic_write may replace at the cache's path

    @classmethod
    def _from_checked(cls: type[R], d: dict) -> R:
        raise NotImplementedError

    @classmethod
    def from_dict(cls: type[R], d: Any) -> R:
        """Checked: an object of ``RECORD_VERSION`` whose figures read; anything malformed raises
        ``RECORD_ERROR`` in one line, ``Kind: detail`` (``RECORD_WHAT (Kind: detail)`` when it is named)."""
        try:
            if not isinstance(d, dict):
                raise TypeError("not an object")
            if d.get("version") != cls.RECORD_VERSION:
                raise ValueError(f"version {d.get('version')!r}, expected {cls.RECORD_VERSION}")
            return cls._from_checked(d)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            line = f"{type(exc).__name__}: {exc}"
            raise cls.RECORD_ERROR(f"{cls.RECORD_WHAT} ({line})" if cls.RECORD_WHAT else line) from None

    @classmethod
    def load_cached(cls: type[R], path: Path, key: dict) -> R | None:
        """The cached result at ``path`` for ``key``; None when absent or another key's. Raises
        ``RECORD_ERROR`` when the file is corrupt."""
        result = read_entry(path, key, cls.RECORD_ERROR)
        if result is None:
            return None
        place = Path(os.path.realpath(path.parent)) / path.name  # a symlinked cache directory: what it names
        return replace(cls.from_dict(result), cached=True, cache_file=str(place))  # type: ignore[type-var]

    @classmethod
    def load_or_warn(cls: type[R], path: Path, key: dict, warn: Callable[[str], None]) -> R | None:
        """``load_cached``, a corrupt file a warning (then None: measured again)."""
        try:
            return cls.load_cached(path, key)
        except cls.RECORD_ERROR as exc:
            warn(f"the {cls.CACHE_NAME} cache file {visible_line(str(path))} is corrupt ({exc}); measuring again")
            return None

    def store(self: R, key: dict, path: Path, inputs) -> R:
        """Write this result for ``key`` atomically at ``path`` (never over one of ``inputs``, the model files);
        returns it with its cache file named. A cache that cannot be written is a warning, not an error (the
        figures are still printed)."""
        d = replace(self, cache_file=str(path)).to_dict()  # type: ignore[attr-defined, type-var]
        d["cached"] = False
        place = write_entry(path, key, d, self.CACHE_KIND, inputs, self.CACHE_NAME)
        return replace(self, cache_file=place)  # type: ignore[type-var]
