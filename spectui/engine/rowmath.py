"""One kernel for 150k-entry logit rows: y = exp(x - m) and its sum, in one pass.

A softmax or a log-sum-exp over a Qwen row is the loop's largest cost outside llama_decode (numpy's exp
alone takes several times a whole-row max, and the subtraction and the sum are two more passes). llama.cpp
ships the fused SIMD kernel it uses for its own softmax, ``ggml_vec_soft_max_f32(n, y, x, max)`` in
libggml-cpu (exported; writes exp(x[i] - max) to y, returns their sum in double precision; ggml's expf is
accurate to about one ulp). This module finds that library beside the installed llama_cpp package without
importing it (so verify.py stays a pure numpy module for its tests) and falls back to numpy when the library
or the symbol is missing (another build layout, another platform), or for float64 input (the exact tests).

``SPECTUI_NUMPY_ROWS=1`` forces the numpy path.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
from pathlib import Path

import numpy as np

_fn = None
_tried = False


def _load():
    global _fn, _tried
    _tried = True
    if os.environ.get("SPECTUI_NUMPY_ROWS") == "1":
        return None
    try:
        spec = importlib.util.find_spec("llama_cpp")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    lib_dir = Path(next(iter(spec.submodule_search_locations))) / "lib"
    for name in ("libggml-cpu.so", "libggml-cpu.dylib", "ggml-cpu.dll"):
        p = lib_dir / name
        if p.is_file():
            try:
                lib = ctypes.CDLL(str(p))
                fn = lib.ggml_vec_soft_max_f32
            except (OSError, AttributeError):
                return None
            fn.restype = ctypes.c_double
            fn.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_float]
            _fn = fn
            return fn
    return None


def exp_sum(x: np.ndarray, m: float, out: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """(exp(x - m), its sum as a float): float32 rows through ggml's kernel, anything else through numpy.
    ``out`` (same shape, float32) receives the exponentials when given."""
    fn = _fn if _tried else _load()
    if fn is not None and x.dtype == np.float32 and x.ndim == 1 and x.flags.c_contiguous:
        if out is None:
            out = np.empty_like(x)
        s = fn(len(x), out.__array_interface__["data"][0], x.__array_interface__["data"][0], m)
        return out, s
    if x.dtype == np.float64:
        y = np.exp(x - m) if out is None else np.exp(np.subtract(x, m, out=out), out=out)
        return y, float(y.sum())
    y = np.subtract(x, np.float32(m), out=out, dtype=np.float32)
    np.exp(y, out=y)
    return y, float(y.sum(dtype=np.float64))


class RowPool:
    """Reusable float32 rows of one length: a fresh 600 KB array per softmax costs its page faults and the
    kernel's zeroing (about 0.1 ms a Qwen row, more than the softmax's own arithmetic in places). ``take``
    pops a row (or makes one), ``give`` returns one nobody reads any more. Safe across threads (list
    operations under the GIL); keeps at most ``cap`` rows."""

    def __init__(self, cap: int = 48) -> None:
        self.cap = cap
        self._free: list[np.ndarray] = []

    def take(self, n: int) -> np.ndarray:
        while self._free:
            a = self._free.pop()
            if len(a) == n:
                return a
        return np.empty(n, dtype=np.float32)

    def give(self, a: np.ndarray | None) -> None:
        if (a is not None and a.dtype == np.float32 and a.ndim == 1 and a.base is None
                and len(self._free) < self.cap):
            self._free.append(a)

