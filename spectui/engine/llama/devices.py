"""Devices and -ngl: the GPUs llama.cpp can offload to (the ggml backend registry), Mesa's software Vulkan device
(lavapipe) told apart, the layer counts -ngl / -ngld ask for, and a GPU this machine has that a CPU-only build
leaves idle (``cpu_build_note``). No UI imports.
"""

from __future__ import annotations

import ctypes
import glob
import os
import shutil
from dataclasses import dataclass
from typing import Callable

from ...contract.errors import SpectuiError
from .llama_lib import llama

_DEV_GPU_TYPES = (1, 2)  # GGML_BACKEND_DEVICE_TYPE_GPU, _IGPU (enum ggml_backend_dev_type)


@dataclass(frozen=True)
class Device:
    backend: str  # registry name: "CUDA", "Metal", "Vulkan", ...
    name: str  # "CUDA0"
    description: str  # "NVIDIA H200"
    kind: int  # enum ggml_backend_dev_type
    free_bytes: int
    total_bytes: int


_ggml_lib = None  # libggml, its device functions declared (on first use)


def _ggml():
    """The ggml shared library with the device functions declared (ggml-backend.h)."""
    global _ggml_lib
    if _ggml_lib is None:
        llama()  # llama.cpp loaded the one way (its wait policy chosen first: spectui.engine.llama.omp)
        from llama_cpp import _ggml  # noqa: PLC0415 - the library ships with llama_cpp (no public name)

        lib = _ggml.libggml
        vp, cp, sz = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t
        for name, res, args in (
            ("ggml_backend_dev_count", sz, []),
            ("ggml_backend_dev_get", vp, [sz]),
            ("ggml_backend_dev_name", cp, [vp]),
            ("ggml_backend_dev_description", cp, [vp]),
            ("ggml_backend_dev_type", ctypes.c_int, [vp]),
            ("ggml_backend_dev_memory", None, [vp, ctypes.POINTER(sz), ctypes.POINTER(sz)]),
            ("ggml_backend_dev_backend_reg", vp, [vp]),
            ("ggml_backend_reg_name", cp, [vp]),
        ):
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        _ggml_lib = lib
    return _ggml_lib


def gpu_devices() -> list[Device]:
    """The GPU devices llama.cpp can offload to (empty on a CPU-only build)."""
    llama()
    try:
        lib = _ggml()
    except (ImportError, OSError, AttributeError):  # pragma: no cover - depends on the build
        return []
    out = []
    for i in range(lib.ggml_backend_dev_count()):
        dev = lib.ggml_backend_dev_get(i)
        kind = lib.ggml_backend_dev_type(dev)
        if kind not in _DEV_GPU_TYPES:
            continue
        free, total = ctypes.c_size_t(0), ctypes.c_size_t(0)
        lib.ggml_backend_dev_memory(dev, ctypes.byref(free), ctypes.byref(total))
        reg = lib.ggml_backend_dev_backend_reg(dev)
        out.append(Device(
            backend=(lib.ggml_backend_reg_name(reg) or b"?").decode("utf-8", "replace") if reg else "?",
            name=(lib.ggml_backend_dev_name(dev) or b"").decode("utf-8", "replace"),
            description=(lib.ggml_backend_dev_description(dev) or b"").decode("utf-8", "replace"),
            kind=kind, free_bytes=free.value, total_bytes=total.value,
        ))
    return out


def is_lavapipe(dev: Device) -> bool:
    """Mesa's software Vulkan device (lavapipe), which ggml-vulkan names by its renderer "llvmpipe (...)"."""
    return dev.backend == "Vulkan" and "llvmpipe" in dev.description.lower()


def supports_gpu_offload() -> bool:
    return bool(llama().llama_supports_gpu_offload())


def parse_gpu_layers(value, flag: str = "-ngl") -> int | None:
    """'all' -> -1 (every layer, llama.cpp's negative value), 'N' -> N, None -> None (the default)."""
    if value is None:
        return None
    if isinstance(value, int):
        n = value
    else:
        v = str(value).strip().lower()
        if v == "all":
            return -1
        try:
            n = int(v)
        except ValueError:
            raise SpectuiError(f"{flag} must be a number of layers or 'all', not {value!r}") from None
    if n < 0:
        return -1
    return n


def gpu_layers(n_gpu_layers, n_gpu_layers_draft, warn: Callable[[str], None]) -> tuple[int, int]:
    """-ngl / -ngld as layer counts (-1 = all): every layer by default on a build that can offload, as
    llama.cpp does; 0 on a CPU-only build (with one warning when layers were asked for).

    Args:
        n_gpu_layers: the target's -ngl ("all", a number, or None for the default).
        n_gpu_layers_draft: the draft's -ngld (the same forms).
        warn: where the one warning goes.

    Returns:
        (the target's layers, the draft's layers).
    """
    ngl_t = parse_gpu_layers(n_gpu_layers, "-ngl/--n-gpu-layers")
    ngl_d = parse_gpu_layers(n_gpu_layers_draft, "-ngld/--n-gpu-layers-draft")
    if supports_gpu_offload():
        return (-1 if ngl_t is None else ngl_t), (-1 if ngl_d is None else ngl_d)
    if (ngl_t or 0) != 0 or (ngl_d or 0) != 0:
        warn(
            "warning: this llama.cpp build cannot offload to a GPU (no GPU backend or device), so "
            "-ngl/-ngld are ignored and every layer runs on the CPU; see README: GPU builds"
        )
    return 0, 0


# PCI vendors whose GPUs llama.cpp has a backend for (CUDA; HIP or Vulkan), and how to rebuild for them
_PCI_GPU_VENDORS = {"0x10de": "NVIDIA", "0x1002": "AMD"}
_REBUILD = {
    "NVIDIA": "CUDA (install the CUDA toolkit, then bash scripts/install.sh --live; see docs/gpu.md)",
    "AMD": "HIP or Vulkan (install ROCm or the Vulkan SDK, then bash scripts/install.sh --live; see docs/gpu.md)",
    "Apple": "Metal (bash scripts/install.sh --live; see docs/gpu.md)",
}


def _read_small(path: str) -> str:
    """The first 32 bytes of a sysfs attribute as text ("" when unreadable)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(32).decode("ascii", "replace").strip()
    except OSError:
        return ""


def present_gpu(sysfs_root: str | None = None, path: str | None = None, uname: tuple[str, str] | None = None) -> str:
    """The maker of a GPU this machine has that llama.cpp can build for, cheaply (a few small sysfs files read,
    nothing started): "NVIDIA" or "AMD" (a PCI display-class device of that vendor, or nvidia-smi on PATH),
    "Apple" (macOS on Apple silicon), "" when none is seen.

    Args:
        sysfs_root: where sysfs is (None: SPECTUI_SYSFS_ROOT, else /sys).
        path: the PATH to look for nvidia-smi on (None: this process's).
        uname: (system, machine) (None: this machine's).

    Returns:
        The maker's name, or "".
    """
    root = sysfs_root if sysfs_root is not None else os.environ.get("SPECTUI_SYSFS_ROOT") or "/sys"
    for dev in sorted(glob.glob(os.path.join(glob.escape(root), "bus", "pci", "devices", "*")))[:1024]:
        vendor = _PCI_GPU_VENDORS.get(_read_small(os.path.join(dev, "vendor")).lower())
        if vendor and _read_small(os.path.join(dev, "class")).lower().startswith("0x03"):
            return vendor
    if shutil.which("nvidia-smi", path=path):
        return "NVIDIA"
    system, machine = uname if uname is not None else (os.uname().sysname, os.uname().machine)
    return "Apple" if system == "Darwin" and machine == "arm64" else ""


def cpu_build_note(vendor: str | None = None) -> str:
    """One line when this llama.cpp build cannot offload while the machine has a GPU it could use
    ("llama.cpp was built for the CPU, but an NVIDIA GPU is present: rebuild with CUDA (...)"); "" otherwise.

    Args:
        vendor: the GPU's maker (None: ``present_gpu()``, looked at only on a CPU-only build).

    Returns:
        The line, or "".
    """
    if supports_gpu_offload():
        return ""
    vendor = present_gpu() if vendor is None else vendor
    if vendor not in _REBUILD:
        return ""
    return f"llama.cpp was built for the CPU, but an {vendor} GPU is present: rebuild with {_REBUILD[vendor]}"
