"""llama.cpp's library, loaded once: the bindings imported and silenced (``llama()``), the frames llama.cpp calls
back into (``CALLBACK_CODES``), the library's functions without the GIL's release (``gil_held_lib``), a model's
metadata and load parameters, the build's facts (AMX) and the CPU's name. Every other module reaches llama.cpp
through ``llama()``. No UI imports.
"""

from __future__ import annotations

import ctypes

from ...contract.errors import SpectuiError

LOAD_MODE_NONE, LOAD_MODE_MMAP = 0, 1  # enum llama_load_mode (llama.h)

_llama = None  # the llama_cpp module, imported on first use
_log_cb = None  # keeps the no-op log callback alive for as long as the process runs


def _no_log(level, text, user_data) -> None:
    """llama.cpp's log callback: silence (spectui says what matters in its own words)."""


# Python code that llama.cpp calls back into from inside its own calls (loading a model logs through _no_log). An
# exception raised there cannot propagate (ctypes prints it and carries on), so a signal handler that stops by
# raising must not raise in these frames: spectui.contract.exitcodes.SignalStop(quiet_in=CALLBACK_CODES).
CALLBACK_CODES = (_no_log.__code__,)


def llama():
    """Import llama_cpp once, silence its logging, initialise the backend."""
    global _llama, _log_cb
    if _llama is None:
        from .omp import choose  # noqa: PLC0415

        choose()  # OpenMP's wait policy for the machine's load, before libgomp loads with llama.cpp
        try:
            import llama_cpp  # noqa: PLC0415
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise SpectuiError(
                f"live runs need llama-cpp-python, which is not installed ({exc}): run `bash scripts/install.sh "
                "--live` in a checkout (builds it for this CPU, cached), or pip install 'spectui[live]'"
            ) from exc
        _log_cb = llama_cpp.llama_log_callback(_no_log)
        llama_cpp.llama_log_set(_log_cb, ctypes.c_void_p(0))
        llama_cpp.llama_backend_init()
        _llama = llama_cpp
    return _llama


def address(p) -> int:
    """A ctypes pointer (or an int, or None) as a plain address; 0 for NULL."""
    if p is None:
        return 0
    return p if isinstance(p, int) else (ctypes.cast(p, ctypes.c_void_p).value or 0)


def bindings_lib(L):
    """The bindings' ctypes library of libllama (``llama_cpp.llama_cpp._lib``, which they expose under no other
    name), or None: the functions they do not declare are looked up in it."""
    return getattr(getattr(L, "llama_cpp", None), "_lib", None)


def gil_held_lib(L):
    """The bindings' libllama, its functions called without releasing the GIL (ctypes.PyDLL over the same
    handle), or None. For calls of a few microseconds (a logits address, a KV cell edit): releasing and
    taking back the GIL around each one lets another Python thread (the engine's finishing thread, the
    trace writer) take it in between, and the loop then waits for it; a call that computes (llama_decode,
    llama_synchronize) must go through the bindings' own functions, which release it."""
    lib = bindings_lib(L)
    if lib is None or not getattr(lib, "_handle", None):
        return None
    return ctypes.PyDLL(lib._name, handle=lib._handle)  # ctypes.CDLL's path and handle (no public name)


def system_has_amx() -> bool:
    """True when the llama.cpp CPU backend was built with AMX kernels (they crash on VMs without AMX state)."""
    info = llama().llama_print_system_info().decode("utf-8", "replace")
    return "AMX_INT8 = 1" in info or "AMX = 1" in info or "AMX_TILE = 1" in info


def model_meta(model, key: str) -> str:
    """A GGUF metadata value of a loaded model (``llama_model_meta_val_str``) as text; "" when absent."""
    L = llama()
    buf = ctypes.create_string_buffer(512)
    n = L.llama_model_meta_val_str(model, key.encode(), buf, 512)
    if n < 0:
        return ""
    return buf.value.decode("utf-8", "replace")


def ftype_names() -> dict[int, str]:
    """llama.cpp's file types (``LLAMA_FTYPE_*``) by number: "Q4_K_M", "F16", ..."""
    L = llama()
    out = {}
    for name in dir(L):
        if name.startswith("LLAMA_FTYPE_") and name != "LLAMA_FTYPE_GUESSED":
            val = getattr(L, name)
            if isinstance(val, int):
                out[val] = name.replace("LLAMA_FTYPE_MOSTLY_", "").replace("LLAMA_FTYPE_", "")
    return out


def model_params(vocab_only: bool, use_extra_bufts: bool, n_gpu_layers: int = 0, use_mmap: bool | None = None):
    """llama_model_params for a load: vocabulary only, or the weights (repacked or not, layers offloaded, mmap)."""
    L = llama()
    mp = L.llama_model_default_params()
    mp.vocab_only = vocab_only
    mp.use_extra_bufts = use_extra_bufts
    mp.n_gpu_layers = n_gpu_layers if not vocab_only else 0
    # Repacked weights are copies: with mmap the file's pages of every repacked tensor stay resident next
    # to the copy (+0.8 GB RSS on the 1.1 GB Qwen 1.5B). Without mmap llama.cpp reads each tensor into
    # its final buffer and the page cache, not this process, holds the file.
    if use_mmap is None:
        use_mmap = not use_extra_bufts
    mp.load_mode = LOAD_MODE_MMAP if use_mmap else LOAD_MODE_NONE
    return mp


def cpu_name() -> str:
    """The CPU's model name (for the record of where a model ran); "" when unknown."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform  # noqa: PLC0415

    return platform.processor() or platform.machine()
