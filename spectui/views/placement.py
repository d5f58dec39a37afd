"""Where a model runs, said the same way by every face (TUI header, headless summary, JSON, replay).

Built from ``ModelInfo`` alone, so a replayed trace says what hardware produced it. Traces recorded
before this was measured have an empty ``backend``: they say nothing rather than guess.
"""

from __future__ import annotations

from ..contract.events import ModelInfo


def placement(info: ModelInfo) -> dict:
    """The JSON form: backend, device, layers and layers offloaded."""
    return {"backend": info.backend, "device": info.device, "n_layer": info.n_layer, "n_gpu_layers": info.n_gpu_layers}


def placement_text(info: ModelInfo, threads: int = 0, short: bool = False) -> str:
    """'CPU (Intel Xeon ...), -t 2' or 'CUDA (NVIDIA H200), 29/29 layers' ('' for old traces).

    ``short`` leaves out the device description (for narrow screens)."""
    if not info.backend:
        return ""
    units = info.n_layer + 1 if info.n_layer else 0
    if info.n_gpu_layers:
        where = info.backend if short or not info.device else f"{info.backend} ({info.device})"
        where += f", {info.n_gpu_layers}/{units} layers" if units else f", {info.n_gpu_layers} layers"
        if units and info.n_gpu_layers < units and threads:
            where += f", rest on CPU -t {threads}"
        return where
    where = "CPU" if short or not info.device else f"CPU ({info.device})"
    return where + (f", -t {threads}" if threads else "")
