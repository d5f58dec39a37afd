"""Where a model runs, said the same way by every face (TUI header, headless summary, JSON, replay).

Built from ``ModelInfo`` alone, so a replayed trace says what hardware produced it. Traces recorded
before this was measured have an empty ``backend``: they say nothing rather than guess.

Layers are counted as llama.cpp counts them when it offloads (``offloaded 29/29 layers to GPU`` for a
28-layer model): the repeating layers plus the output layer, ``n_layer + 1``. ``ModelInfo.n_gpu_layers``
is in the same units (the engine records what llama.cpp offloaded), so ``offloaded_text`` is the one
place that writes "offloaded / all" for every face.
"""

from __future__ import annotations

from ..contract.events import ModelInfo, RunStarted


def placement(info: ModelInfo) -> dict:
    """The JSON form: backend, device, layers and layers offloaded."""
    return {"backend": info.backend, "device": info.device, "n_layer": info.n_layer, "n_gpu_layers": info.n_gpu_layers}


def layer_units(info: ModelInfo) -> int:
    """llama.cpp's count of offloadable layers: the repeating layers and the output layer (0: unknown)."""
    return info.n_layer + 1 if info.n_layer else 0


def offloaded_text(info: ModelInfo) -> str:
    """'29/29' (offloaded / all, llama.cpp's count), or '29' when the model's layer count is unknown."""
    units = layer_units(info)
    return f"{info.n_gpu_layers}/{units}" if units else f"{info.n_gpu_layers}"


def placement_text(info: ModelInfo, threads: int = 0, short: bool = False) -> str:
    """'CPU (Intel Xeon ...), -t 2' or 'CUDA (NVIDIA H200), 29/29 layers' ('' for old traces).

    ``short`` leaves out the device description (for narrow screens)."""
    if not info.backend:
        return ""
    units = layer_units(info)
    if info.n_gpu_layers:
        where = info.backend if short or not info.device else f"{info.backend} ({info.device})"
        where += f", {offloaded_text(info)} layers"
        if units and info.n_gpu_layers < units and threads:
            where += f", rest on CPU -t {threads}"
        return where
    where = "CPU" if short or not info.device else f"CPU ({info.device})"
    return where + (f", -t {threads}" if threads else "")


def where(info: ModelInfo | None, short: bool = False) -> str:
    """The TUI's few words: "CPU", "CUDA 29/29 layers" ("CUDA 29/29" short: offloaded / all layers, as
    ``placement_text`` counts them); "" when the trace did not record it (older traces)."""
    if info is None or not info.backend:
        return ""
    if info.backend.upper() == "CPU" or not info.n_gpu_layers:
        return "CPU"
    return f"{info.backend} {offloaded_text(info)}" + ("" if short else " layers")


def models_where(start: RunStarted | None, short: bool = False) -> str:
    """ "target CPU · draft CUDA 25/25 layers" (short: "CPU + CUDA 25/25"); only what was recorded."""
    if start is None:
        return ""
    roles = (("target", start.target), ("draft", start.draft))
    if short:
        return " + ".join(w for _, info in roles if (w := where(info, short=True)))
    return " · ".join(f"{role} {w}" for role, info in roles if (w := where(info)))
