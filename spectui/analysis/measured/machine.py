"""This machine and its model files as every cached measurement keys them, and whether it ran quiet.

The probe (probe.py) keys its cache on the model files' identity, the threads, where the layers run and the
machine (:func:`cache_key`); the batched curve (batch_knee.py), a head's cost (head_cost.py) and the noise
measurement (noise.py) extend that key or its parts and cache their results beside it (:func:`cache_path`,
under :func:`cache_dir`).
A measurement says whether the machine was quiet by one rule (:func:`quiet_machine`) over the cores other
processes kept busy or, without /proc/stat, the load average (:func:`load_average`). Every measurement starts
from the same short prompt in the KV cache (``contract.prompt.DEFAULT_PROMPT``). No Textual imports; the
engine only when :func:`machine_key` asks llama.cpp for its build.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from pathlib import Path
from typing import Callable

from ...contract.text import visible_line

PROBE_VERSION = 1  # the probe's cache key's version
HEADER_BYTES = 65536  # hashed from the start of each GGUF file (metadata and tensor index)
QUIET_OTHERS_CORES = 0.3  # other processes' busy cores below which the machine counts as quiet
QUIET_LOAD_MARGIN = 0.5  # ... or, without /proc/stat, the 1-min load average at most threads + this
DEFAULT_MAX_BATCH = 16  # the probe's largest verify batch, part of its key


def quiet_machine(others_cpu: float, loadavg, threads: int) -> bool:
    """Whether a measurement ran quiet: other processes' CPU (cores) when it was sampled (>= 0), else the
    load average against the threads the measurement used."""
    if others_cpu >= 0:
        return others_cpu <= QUIET_OTHERS_CORES
    return loadavg[0] <= threads + QUIET_LOAD_MARGIN


def load_average() -> tuple[float, float, float]:
    """The 1, 5 and 15-minute load averages; zeros where the system has none."""
    try:
        return tuple(float(x) for x in os.getloadavg())  # type: ignore[return-value]
    except (AttributeError, OSError):
        return (0.0, 0.0, 0.0)


def quiet_now(threads: int) -> bool:
    """Whether the machine is quiet at this moment: the 1-min load average at most threads + QUIET_LOAD_MARGIN."""
    return load_average()[0] <= threads + QUIET_LOAD_MARGIN


def cache_dir(folder: str = "probe", warn: Callable[[str], None] | None = None) -> Path:
    """``$XDG_CACHE_HOME/spectui/<folder>``, or ``~/.cache/spectui/<folder>`` where that is unset, empty or
    relative (the XDG base-directory specification ignores a relative path: ``warn`` is told so)."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if xdg and not os.path.isabs(xdg):
        if warn is not None:
            warn(f"warning: XDG_CACHE_HOME ({visible_line(xdg)}) is not an absolute path: ignored, as the XDG "
                 "base-directory specification says; caching under ~/.cache")
        xdg = ""
    return Path(xdg or os.path.join(os.path.expanduser("~"), ".cache")) / "spectui" / folder


def file_identity(path: str) -> dict:
    """Real path, size, mtime and a hash of the first HEADER_BYTES of a model file."""
    real = os.path.realpath(path)
    st = os.stat(real)
    h = hashlib.sha256()
    with open(real, "rb") as fh:
        h.update(fh.read(HEADER_BYTES))
    return {"path": real, "size": st.st_size, "mtime_ns": st.st_mtime_ns, "header_sha256": h.hexdigest()[:32]}


def machine_key() -> dict:
    """The CPU model and the llama.cpp build (version and a hash of its system info)."""
    from ...engine.llama.llama_lib import cpu_name, llama  # noqa: PLC0415

    L = llama()
    info = L.llama_print_system_info().decode("utf-8", "replace")
    return {
        "cpu": cpu_name(),
        "arch": platform.machine(),
        "llama_cpp_python": getattr(L, "__version__", ""),
        "system_info_sha256": hashlib.sha256(info.encode()).hexdigest()[:16],
    }


def cache_key(engine, max_batch: int = DEFAULT_MAX_BATCH) -> tuple[dict, str]:
    """The probe's cache key for a loaded engine.

    Args:
        engine: a loaded ``spectui.engine.Engine`` (its models' files, threads and placement are read).
        max_batch: the probe's largest verify batch.

    Returns:
        (the key object: model files, threads, placement, machine; the hash that names its cache file).
    """
    key = {
        "version": PROBE_VERSION,
        "target": file_identity(engine.target_info.path),
        "draft": file_identity(engine.draft_info.path) if engine.draft_info is not None else None,
        "threads": int(engine.threads),
        "target_backend": engine.target_info.backend,
        "target_gpu_layers": int(engine.target_info.n_gpu_layers),
        "draft_gpu_layers": int(engine.draft_info.n_gpu_layers) if engine.draft_info is not None else None,
        "no_repack": bool(getattr(engine, "no_repack", False)),
        "max_batch": int(max_batch),
        "machine": machine_key(),
    }
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:24]
    return key, digest


def cache_path(digest: str, directory: Path | None = None) -> Path:
    """The cache file named ``digest`` in ``directory`` (default: the probe's :func:`cache_dir`)."""
    return (directory or cache_dir()) / f"{digest}.json"
