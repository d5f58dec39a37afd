"""One cache for every measurement spectui keeps (the probe's curve, the batched curve, the server's step costs, a
head's cost, the kernels' noise): a :class:`Measurement` declares one (its result type, its key, how it is
measured, whether a result cached busy is measured again once the machine is quiet) and ``get`` reads it back or
measures and stores it. A cache file is JSON ``{"key": ..., "result": ...}`` under ``machine.cache_dir``, read
with a size limit and written atomically; a file that does not read back is one :class:`CacheError` line, then
measured again. A cache folder that is not a folder (a file on its way) is one warning: measured, printed, not
kept."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, ClassVar, TypeVar

from ...contract.errors import SpectuiError
from ...contract.outputs import PROBE_CACHE, OutputError, atomic_write
from ...contract.text import visible_line
from .machine import cache_dir, cache_path, quiet_now

MAX_CACHE_BYTES = 4 * 1024 * 1024  # a cache file is a few KB: anything this large is not one of ours

R = TypeVar("R", bound="CachedRecord")


class CacheError(SpectuiError):
    """A cache file, or the result in it, that cannot be read back (reported in one line, then measured again)."""


def read_entry(path: Path, key: dict) -> Any | None:
    """The cached ``result`` at ``path`` when it was measured for ``key``; None when the file is absent (its
    folder too, or not a folder) or holds another key's. Raises CacheError (one line) when the file is
    unreadable, too large or corrupt. A symbolic link is not read (spectui never makes one there): absent,
    so measured again, and :func:`write_entry` replaces the link, never what it names."""
    if path.is_symlink():
        return None
    try:
        if path.stat().st_size > MAX_CACHE_BYTES:
            raise CacheError(f"larger than {MAX_CACHE_BYTES // (1024 * 1024)} MiB")
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise CacheError(f"cannot read it ({exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CacheError(f"not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict) or "result" not in data or "key" not in data:
        raise CacheError("missing 'key' or 'result'")
    return data["result"] if data["key"] == key else None


def _not_a_folder(folder: Path) -> str:
    """Why ``folder`` cannot be a folder: the first of it and the folders above it that exists and is not one
    ("": none is in its way)."""
    for p in reversed((folder, *folder.parents)):
        if not p.is_dir():
            if not p.exists():
                return ""
            what = "is a file, not a folder" if p == folder else f"is not a folder ({visible_line(str(p))} is a file)"
            return f"the cache folder {visible_line(str(folder))} {what}"
    return ""


def write_entry(path: Path, key: dict, result: dict, inputs, name: str) -> str:
    """Write ``{"key": key, "result": result}`` atomically at ``path`` (never over one of ``inputs``, the model
    files) and return where it went: the path with its directory's links resolved (a symlinked cache
    directory is named as what it names). A symbolic link at ``path`` is replaced by the file, never written
    through (a warning says so); a cache that cannot be written is one warning and "" (the figures are still
    printed). ``name``: the cache's name in the warnings ("probe", "head-cost")."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        place = Path(os.path.realpath(path.parent)) / path.name
        if path.is_symlink():
            print(f"spectui: warning: the {name} cache file {visible_line(str(place))} was a symbolic link (to "
                  f"{visible_line(os.readlink(path))}): replaced by this measurement, what it named left alone",
                  file=sys.stderr)
        with atomic_write(path, PROBE_CACHE, inputs=list(inputs)) as fh:
            fh.write(json.dumps({"key": key, "result": result}, indent=1, sort_keys=True))
    except (OSError, OutputError) as exc:
        why = _not_a_folder(path.parent) or f"cannot write {visible_line(str(path))}: {visible_line(exc)}"
        print(f"spectui: warning: {why}: the {name} was measured, not cached", file=sys.stderr)
        return ""
    return str(place)


def loadavg_of(d: dict) -> tuple[float, float, float]:
    """A record's 1/5/15-minute load averages (0.0 each when it has none); ValueError unless three."""
    la = tuple(float(x) for x in d.get("loadavg", (0.0, 0.0, 0.0)))
    if len(la) != 3:
        raise ValueError("loadavg must have 3 figures")
    return la  # type: ignore[return-value]


@dataclass(frozen=True, kw_only=True)
class CachedRecord:
    """What every cached result shares: the fields below (how its measurement ran, where it is cached), a
    ``to_dict`` and a ``_from_checked(d)`` that reads its own figures from a JSON object (``shared(d)`` reads
    these; KeyError / TypeError / ValueError on anything malformed). Here: the checked opening (``from_dict``),
    the cached entry at a path (``load_cached``, ``load_or_warn``) and the atomic write (``store``)."""

    RECORD_VERSION: ClassVar[int]
    RECORD_WHAT: ClassVar[str] = ""  # names the record in the error line ("": the line is "Kind: detail")
    CACHE_NAME: ClassVar[str]  # in the warnings: "the {CACHE_NAME} cache file ... is corrupt"
    threads: int = 0
    loadavg: tuple[float, float, float] = (0.0, 0.0, 0.0)  # the busier of before and after measuring
    measured_at: float = 0.0  # unix time
    wall_s: float = 0.0
    key: str = ""  # the cache file's name
    cached: bool = False  # read back from the cache rather than measured now
    cache_file: str = ""

    @staticmethod
    def shared(d: dict) -> dict:
        """The fields every record has, read from its JSON object (``cached`` and ``cache_file`` are the
        reader's to say)."""
        return {"threads": int(d["threads"]), "loadavg": loadavg_of(d), "measured_at": float(d.get("measured_at", 0.0)),
                "wall_s": float(d.get("wall_s", 0.0)), "key": str(d.get("key", ""))}

    @classmethod
    def _from_checked(cls: type[R], d: dict) -> R:
        raise NotImplementedError

    @classmethod
    def from_dict(cls: type[R], d: Any) -> R:
        """Checked: an object of ``RECORD_VERSION`` whose figures read; anything malformed raises CacheError in
        one line, ``Kind: detail`` (``RECORD_WHAT (Kind: detail)`` when it is named)."""
        try:
            if not isinstance(d, dict):
                raise TypeError("not an object")
            if d.get("version") != cls.RECORD_VERSION:
                raise ValueError(f"version {d.get('version')!r}, expected {cls.RECORD_VERSION}")
            return cls._from_checked(d)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            line = f"{type(exc).__name__}: {exc}"
            raise CacheError(f"{cls.RECORD_WHAT} ({line})" if cls.RECORD_WHAT else line) from None

    @classmethod
    def load_cached(cls: type[R], path: Path, key: dict) -> R | None:
        """The cached result at ``path`` for ``key``; None when absent or another key's. Raises CacheError when
        the file is corrupt."""
        result = read_entry(path, key)
        if result is None:
            return None
        place = Path(os.path.realpath(path.parent)) / path.name  # a symlinked cache directory: what it names
        return replace(cls.from_dict(result), cached=True, cache_file=str(place))  # type: ignore[type-var]

    @classmethod
    def load_or_warn(cls: type[R], path: Path, key: dict, warn: Callable[[str], None]) -> R | None:
        """``load_cached``, a corrupt file a warning (then None: measured again)."""
        try:
            return cls.load_cached(path, key)
        except CacheError as exc:
            warn(f"the {cls.CACHE_NAME} cache file {visible_line(str(path))} is corrupt ({exc}); measuring again")
            return None

    def store(self: R, key: dict, path: Path, inputs) -> R:
        """Write this result for ``key`` atomically at ``path`` (never over one of ``inputs``, the model files);
        returns it with its cache file named. A cache that cannot be written is a warning, not an error (the
        figures are still printed)."""
        d = replace(self, cache_file=str(path)).to_dict()  # type: ignore[attr-defined, type-var]
        d["cached"] = False
        return replace(self, cache_file=write_entry(path, key, d, inputs, self.CACHE_NAME))  # type: ignore[type-var]


def _say(message: str) -> None:
    print(f"spectui: {message}", file=sys.stderr)


def model_files(engine) -> list:
    """The files a measurement of ``engine`` read (its target, draft and head): a cache never replaces one."""
    draft = engine.draft_info.path if engine.draft_info is not None else None
    return [engine.target_info.path, draft, getattr(engine, "head_file", None)]


@dataclass(frozen=True)
class Measurement:
    """One cached measurement: its result type (a CachedRecord: version, figures' checks, JSON form), its key
    (``key(engine, params)``: the key object and the cache file's name), how it is measured (``measure(engine,
    params)``: an uncached result), its folder under ``machine.cache_dir`` and, when ``busy`` names it ("the
    cached probe was"), that a result cached while the machine was busy is measured again once it is quiet."""

    record: type
    key: Callable[[Any, dict], tuple[dict, str]]
    measure: Callable[[Any, dict], Any]
    folder: str = "probe"
    busy: str = ""

    def _place(self, engine, params: dict, directory: Path | None, warn) -> tuple[dict, str, Path]:
        key, name = self.key(engine, params)
        return key, name, cache_path(name, directory or cache_dir(self.folder, warn))

    def _read(self, path: Path, key: dict, warn, now_quiet) -> tuple[Any, bool]:
        res = self.record.load_or_warn(path, key, warn)
        if res is None:
            return None, True
        return res, bool(self.busy) and not res.quiet and (now_quiet or quiet_now)(res.threads)

    def cached(self, engine, params: dict, *, directory: Path | None = None,
               warn: Callable[[str], None] | None = None,
               now_quiet: Callable[[int], bool] | None = None) -> tuple[Any, bool]:
        """(the cached result or None, whether measuring is worth it: none cached, or it was cached busy and
        the machine is quiet now); measures nothing. ``params``: as ``get``'s."""
        warn = warn or _say
        key, _, path = self._place(engine, params, directory, warn)
        return self._read(path, key, warn, now_quiet)

    def get(self, engine, params: dict, *, refresh: bool = False, directory: Path | None = None,
            warn: Callable[[str], None] | None = None, now_quiet: Callable[[int], bool] | None = None) -> Any:
        """The result for ``engine`` and ``params`` (what the key and the measurement read): from the cache, or
        measured now and stored (``refresh``: always). ``directory``: the cache folder (default: ``folder``
        under ``machine.cache_dir``); ``warn``: the one-line messages; ``now_quiet(threads)``: whether the
        machine is quiet at this moment (default ``machine.quiet_now``)."""
        warn = warn or _say
        key, name, path = self._place(engine, params, directory, warn)
        res, again = (None, True) if refresh else self._read(path, key, warn, now_quiet)
        if not again:
            return res
        if res is not None:
            warn(f"{self.busy} measured while the machine was busy; it is quiet now: measuring again")
        return replace(self.measure(engine, params), key=name).store(key, path, model_files(engine))
