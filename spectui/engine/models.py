"""Model files and llama.cpp contexts: GGUF checks, loading via the low-level API, vocabulary checks,
batch decode with logits only where asked, and KV rollback.

Everything here talks to ``llama_cpp``'s ctypes layer directly (never ``Llama(logits_all=True)``, which
allocates an n_ctx x n_vocab array per model). No UI imports.
"""

from __future__ import annotations

import ctypes
import os
import stat
import threading
from time import perf_counter as _perf
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..contract.errors import SpectuiError
from ..contract.events import ModelInfo

GGUF_MAGIC = b"GGUF"
VOCAB_TYPES = {0: "none", 1: "SPM", 2: "BPE", 3: "WPM", 4: "UGM", 5: "RWKV", 6: "PLaMo2"}

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


# ---------------------------------------------------------------- devices (GPU offload)

# llama.cpp's vocabulary compatibility rule for speculation (common/speculative.cpp)
SPEC_VOCAB_MAX_SIZE_DIFFERENCE = 128
SPEC_VOCAB_CHECK_START_TOKEN_ID = 5

LOAD_MODE_NONE, LOAD_MODE_MMAP = 0, 1  # enum llama_load_mode (llama.h)

_DEV_GPU_TYPES = (1, 2)  # GGML_BACKEND_DEVICE_TYPE_GPU, _IGPU (enum ggml_backend_dev_type)


@dataclass(frozen=True)
class Device:
    backend: str  # registry name: "CUDA", "Metal", "Vulkan", ...
    name: str  # "CUDA0"
    description: str  # "NVIDIA H200"
    kind: int  # enum ggml_backend_dev_type
    free_bytes: int
    total_bytes: int


def _ggml():
    """The ggml shared library with the device functions declared (ggml-backend.h)."""
    from llama_cpp import _ggml  # noqa: PLC0415 - the library ships with llama_cpp

    lib = _ggml.libggml
    if not getattr(lib, "_spectui_declared", False):
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
        lib._spectui_declared = True
    return lib


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


def _is_lavapipe(dev: Device) -> bool:
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


def system_has_amx() -> bool:
    """True when the llama.cpp CPU backend was built with AMX kernels (they crash on VMs without AMX state)."""
    info = llama().llama_print_system_info().decode("utf-8", "replace")
    return "AMX_INT8 = 1" in info or "AMX = 1" in info or "AMX_TILE = 1" in info


# ---------------------------------------------------------------- file checks


def check_gguf_file(path: str, role: str = "model") -> str:
    """Raise SpectuiError (one line) unless ``path`` is a readable GGUF file; return the absolute path."""
    p = os.path.abspath(os.path.expanduser(str(path)))
    if not os.path.exists(p):
        raise SpectuiError(f"{role} file not found: {path}")
    if os.path.isdir(p):
        raise SpectuiError(f"{role} path is a directory, not a GGUF file: {path}")
    try:
        st = os.stat(p)
        if not stat.S_ISREG(st.st_mode):
            raise SpectuiError(f"{role} path is not a regular file: {path}")
        with open(p, "rb") as fh:
            magic = fh.read(4)
    except PermissionError as exc:
        raise SpectuiError(f"cannot read {role} file {path}: permission denied") from exc
    except OSError as exc:
        raise SpectuiError(f"cannot read {role} file {path}: {exc.strerror or exc}") from exc
    if magic != GGUF_MAGIC:
        raise SpectuiError(f"{role} file is not a GGUF model (bad magic bytes {magic!r}): {path}")
    return p


# ---------------------------------------------------------------- metadata helpers


def _meta(model, key: str) -> str:
    L = llama()
    buf = ctypes.create_string_buffer(512)
    n = L.llama_model_meta_val_str(model, key.encode(), buf, 512)
    if n < 0:
        return ""
    return buf.value.decode("utf-8", "replace")


def _ftype_names() -> dict[int, str]:
    L = llama()
    out = {}
    for name in dir(L):
        if name.startswith("LLAMA_FTYPE_") and name != "LLAMA_FTYPE_GUESSED":
            val = getattr(L, name)
            if isinstance(val, int):
                out[val] = name.replace("LLAMA_FTYPE_MOSTLY_", "").replace("LLAMA_FTYPE_", "")
    return out


@dataclass(frozen=True)
class VocabFacts:
    n_tokens: int
    vocab_type: int
    bos: int
    eos: int
    eot: int
    add_bos: bool
    add_eos: bool


@dataclass(frozen=True)
class KVShape:
    """What the KV cache size depends on, from GGUF metadata."""

    n_layer: int
    n_head_kv: int
    head_dim_k: int
    head_dim_v: int

    def bytes_for(self, n_ctx: int, bytes_per_elem: int = 2) -> int:
        """K and V caches in f16 (llama.cpp's default cache type)."""
        return self.n_layer * n_ctx * self.n_head_kv * (self.head_dim_k + self.head_dim_v) * bytes_per_elem


def _model_params(vocab_only: bool, use_extra_bufts: bool, n_gpu_layers: int = 0, use_mmap: bool | None = None):
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


class VocabOnly:
    """A vocabulary-only load: cheap, used to check vocabularies and read metadata before loading weights."""

    def __init__(self, path: str, role: str) -> None:
        L = llama()
        self.path = path
        self.model = L.llama_model_load_from_file(path.encode(), _model_params(True, False))
        if not self.model:
            raise SpectuiError(f"llama.cpp could not load the {role} model {path} (unsupported or corrupt GGUF)")
        self.vocab = L.llama_model_get_vocab(self.model)

    def facts(self) -> VocabFacts:
        L = llama()
        v = self.vocab
        return VocabFacts(
            n_tokens=L.llama_vocab_n_tokens(v),
            vocab_type=L.llama_vocab_type(v),
            bos=L.llama_vocab_bos(v),
            eos=L.llama_vocab_eos(v),
            eot=L.llama_vocab_eot(v),
            add_bos=bool(L.llama_vocab_get_add_bos(v)),
            add_eos=bool(L.llama_vocab_get_add_eos(v)),
        )

    def text(self, tid: int) -> str:
        raw = llama().llama_vocab_get_text(self.vocab, tid)
        return raw.decode("utf-8", "replace") if raw is not None else ""

    def n_layer(self) -> int:
        return int(llama().llama_model_n_layer(self.model))

    def kv_shape(self) -> KVShape:
        arch = _meta(self.model, "general.architecture")

        def num(key: str, default: int = 0) -> int:
            s = _meta(self.model, f"{arch}.{key}")
            try:
                return int(s)
            except ValueError:
                return default

        n_layer = num("block_count")
        n_head = num("attention.head_count", 1) or 1
        n_head_kv = num("attention.head_count_kv", n_head) or n_head
        n_embd = num("embedding_length")
        hk = num("attention.key_length", n_embd // n_head)
        hv = num("attention.value_length", n_embd // n_head)
        return KVShape(n_layer, n_head_kv, hk, hv)

    def close(self) -> None:
        if self.model:
            llama().llama_model_free(self.model)
            self.model = None


def check_vocabs(target: VocabOnly, draft: VocabOnly) -> int:
    """Judge the pair as llama.cpp does (``common_speculative_are_compatible``) and return the number of
    token ids they share; raise SpectuiError (one line) when the draft cannot speculate for the target.

    Same tokenizer type; the same BOS (and EOS) rule: whether it is added, and its id when it is; sizes
    within ``SPEC_VOCAB_MAX_SIZE_DIFFERENCE`` (128) of each other (checkpoints pad their embedding and
    output matrices, as Qwen2.5 7B's 152,064 rows against the 0.5B's 151,936); identical token texts
    from id ``SPEC_VOCAB_CHECK_START_TOKEN_ID`` (5) up to the smaller size.
    """
    ft, fd = target.facts(), draft.facts()
    if ft.vocab_type != fd.vocab_type:
        raise SpectuiError(
            "vocabulary mismatch: the target's tokenizer is "
            f"{VOCAB_TYPES.get(ft.vocab_type, ft.vocab_type)}, "
            f"the draft's {VOCAB_TYPES.get(fd.vocab_type, fd.vocab_type)}"
        )
    for what, add_t, add_d, id_t, id_d in (
        ("BOS", ft.add_bos, fd.add_bos, ft.bos, fd.bos),
        ("EOS", ft.add_eos, fd.add_eos, ft.eos, fd.eos),
    ):
        if add_t != add_d:
            raise SpectuiError(
                f"vocabulary mismatch: the target {'adds' if add_t else 'does not add'} a {what} token, "
                f"the draft {'does' if add_d else 'does not'}"
            )
        if add_t and id_t != id_d:
            raise SpectuiError(f"vocabulary mismatch: {what} is token {id_t} in the target, {id_d} in the draft")
    diff = abs(ft.n_tokens - fd.n_tokens)
    if diff > SPEC_VOCAB_MAX_SIZE_DIFFERENCE:
        raise SpectuiError(
            f"vocabulary mismatch: the target has {ft.n_tokens} tokens, the draft {fd.n_tokens} "
            f"(difference {diff}, at most {SPEC_VOCAB_MAX_SIZE_DIFFERENCE} allowed, as in llama.cpp); "
            "the draft must share the target's tokenizer"
        )
    n_shared = min(ft.n_tokens, fd.n_tokens)
    get = llama().llama_vocab_get_text
    tv, dv = target.vocab, draft.vocab
    for i in range(SPEC_VOCAB_CHECK_START_TOKEN_ID, n_shared):
        a, b = get(tv, i), get(dv, i)
        if a != b:
            sa = a.decode("utf-8", "replace") if a is not None else ""
            sb = b.decode("utf-8", "replace") if b is not None else ""
            raise SpectuiError(f"vocabulary mismatch at token id {i}: target has {sa!r}, draft has {sb!r}")
    return n_shared


# ---------------------------------------------------------------- a loaded model with its context


def _gil_held_lib(L):
    """The bindings' libllama, its functions called without releasing the GIL (ctypes.PyDLL over the same
    handle), or None. For calls of a few microseconds (a logits address, a KV cell edit): releasing and
    taking back the GIL around each one lets another Python thread (the engine's finishing thread, the
    trace writer) take it in between, and the loop then waits for it; a call that computes (llama_decode,
    llama_synchronize) must go through the bindings' own functions, which release it."""
    lib = getattr(getattr(L, "llama_cpp", None), "_lib", None)
    if lib is None or not getattr(lib, "_handle", None):
        return None
    return ctypes.PyDLL(lib._name, handle=lib._handle)


def _logits_getters(L):
    """llama_get_logits / llama_get_logits_ith returning plain addresses (c_void_p): a view is then made once
    per buffer address (LoadedModel._view) instead of a ctypes array per call. Falls back to the bindings'
    own functions (pointers) where the raw library is not reachable."""
    lib = _gil_held_lib(L)
    if lib is None:
        def addr(p):
            return ctypes.cast(p, ctypes.c_void_p).value

        return (lambda ctx: addr(L.llama_get_logits(ctx))), (lambda ctx, i: addr(L.llama_get_logits_ith(ctx, i)))
    # (after a decode on a device backend LoadedModel.decode has synchronised: these only read an address)
    get = lib["llama_get_logits"]  # a new function object: the bindings' own keep their types
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
    ith = lib["llama_get_logits_ith"]
    ith.restype, ith.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_int32]
    return get, ith


def _sampled_getters(L):
    """llama_get_sampled_logits_ith / _probs_ith (addresses) and _token_ith, GIL held (backend sampling: a
    chain attached to the context, spectui.engine.graph_sampling), or None where the library lacks them."""
    lib = _gil_held_lib(L)
    try:
        if lib is None:
            return None
        out = []
        for name, res in (("llama_get_sampled_logits_ith", ctypes.c_void_p),
                          ("llama_get_sampled_probs_ith", ctypes.c_void_p),
                          ("llama_get_sampled_token_ith", ctypes.c_int32)):
            f = lib[name]
            f.restype, f.argtypes = res, [ctypes.c_void_p, ctypes.c_int32]
            out.append(f)
        return tuple(out)
    except AttributeError:
        return None


def _seq_rm_fn(L):
    """llama_memory_seq_rm without releasing the GIL (it edits KV cell bookkeeping), or the bindings' own."""
    lib = _gil_held_lib(L)
    if lib is None:
        return L.llama_memory_seq_rm
    fn = lib["llama_memory_seq_rm"]
    fn.restype = ctypes.c_bool
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32]
    return fn


def _context_params(L, n_ctx: int, n_batch: int, n_ubatch: int, threads: int, offload_devs):
    """llama_context_params for one sequence of n_ctx cells."""
    cp = L.llama_context_default_params()
    cp.n_ctx = n_ctx
    cp.n_batch = n_batch
    cp.n_ubatch = n_ubatch
    cp.n_seq_max = 1
    cp.n_threads = threads
    cp.n_threads_batch = threads
    if any(_is_lavapipe(d) for d in offload_devs):
        # Mesa's lavapipe (22.3) dereferences a destroyed buffer's resource when a command buffer binds a
        # descriptor set that still names it in a binding the pipeline does not use (legal Vulkan: ggml-vulkan
        # writes only a pipeline's own bindings into sets shared by all pipelines). ggml-vulkan destroys and
        # regrows its flash-attention split-k buffer mid-graph whenever a batch needs a bigger one; once that
        # freed memory is reused (a pipeline compiled later), the device thread segfaults. Without flash
        # attention the buffers ggml-vulkan regrows sit only in bindings 0 and 1, which every pipeline writes
        # (README: "The Vulkan path"). Every other device keeps llama.cpp's default (auto).
        cp.flash_attn_type = getattr(L, "LLAMA_FLASH_ATTN_TYPE_DISABLED", 0)
    return cp


class LoadedModel:
    """One model plus one llama_context (sequence 0 only) and a reusable batch."""

    def __init__(self, path: str, role: str, n_ctx: int, threads: int, use_extra_bufts: bool, n_batch: int = 512,
                 n_gpu_layers: int = 0, n_ubatch: int | None = None, use_mmap: bool | None = None,
                 load_mtp: bool = False, n_outputs_max_per_seq: int = 1) -> None:
        L = llama()
        self.path = path
        self.role = role
        params = _model_params(False, use_extra_bufts, n_gpu_layers, use_mmap)
        params.load_mtp = load_mtp  # the NextN/MTP blocks too (an MTP context on this model needs them)
        self.model = L.llama_model_load_from_file(path.encode(), params)
        if not self.model:
            raise SpectuiError(f"llama.cpp could not load the {role} model {path} (unsupported or corrupt GGUF)")
        self.n_batch = max(1, min(n_batch, n_ctx))
        # The compute buffer is reserved for the largest micro-batch with every row's logits
        # (n_ubatch x n_vocab floats: 311 MB at 512 x 151,936). Verify batches are at most 33 tokens, so
        # a small n_ubatch costs nothing there; a long prompt is evaluated in more, smaller pieces.
        self.n_ubatch = max(1, min(n_ubatch or self.n_batch, self.n_batch))
        offload_devs = gpu_devices() if n_gpu_layers and supports_gpu_offload() else []
        cp = _context_params(L, n_ctx, self.n_batch, self.n_ubatch, threads, offload_devs)
        # output rows one decode may have per sequence with a backend sampler (0: n_batch; llama.cpp's default
        # 1 lets a chain sample a one-row decode only): without a chain attached it changes nothing
        cp.n_outputs_max_per_seq = int(n_outputs_max_per_seq)
        self.ctx = L.llama_init_from_model(self.model, cp)
        self.threads = threads  # of every decode, one-token and batched (set_threads changes it)
        if not self.ctx:
            L.llama_model_free(self.model)
            self.model = None
            raise SpectuiError(f"llama.cpp could not create a context for the {role} model {path} (n_ctx={n_ctx})")
        self.n_ctx = L.llama_n_ctx(self.ctx)
        self.vocab = L.llama_model_get_vocab(self.model)
        self.n_vocab = L.llama_vocab_n_tokens(self.vocab)
        self.n_use = self.n_vocab  # ids that may be chosen: the vocabulary shared with the other model
        self.n_layer = int(L.llama_model_n_layer(self.model))
        self.n_gpu_layers = 0
        if offload_devs:
            self.n_gpu_layers = min(self.n_layer + 1, n_gpu_layers if n_gpu_layers > 0 else self.n_layer + 1)
        self.mem = L.llama_get_memory(self.ctx)
        self._sync = L.llama_synchronize if self.n_gpu_layers else None
        self.batch = L.llama_batch_init(self.n_batch, 0, 1)
        for i in range(self.n_batch):  # one sequence, fixed: set once
            self.batch.n_seq_id[i] = 1
            self.batch.seq_id[i][0] = 0
        self._decode = L.llama_decode
        self._get_logits, self._get_logits_ith = _logits_getters(L)
        self._sampled = _sampled_getters(L)
        # a backend sampler chain is attached (graph_sampling.GraphSide): llama.cpp then hands back the chain's
        # rows, not the raw logits, and logits_rows / logits_last read those
        self.chain_rows = False
        self._views: dict[tuple[int, int], np.ndarray] = {}  # (address, rows) -> a view over llama.cpp's logits
        self._seq_rm = _seq_rm_fn(L)
        self._pieces: dict[int, bytes] = {}
        self._piece_buf = ctypes.create_string_buffer(256)
        self.decode_s = 0.0  # cumulative seconds inside llama_decode (benchmarks: time outside decode)
        self.n_decodes = 0
        # set while llama_decode runs (the GIL is released then): the engine's finishing thread works in
        # those windows only, so the loop's own Python never waits for the GIL (Engine, run(overlap=True))
        self.gate: threading.Event | None = None
        self._eog_cache: dict[int, bool] = {}
        self.n_params = int(L.llama_model_n_params(self.model))
        self.info = self._info()

    # ---- facts
    def _info(self) -> ModelInfo:
        L = llama()
        ftype = L.llama_model_ftype(self.model) if hasattr(L, "llama_model_ftype") else -1
        quant = _ftype_names().get(ftype, "") or _meta(self.model, "general.file_type")
        backend, device = "CPU", cpu_name()
        if self.n_gpu_layers:
            devs = gpu_devices()
            backend = devs[0].backend if devs else "GPU"
            device = ", ".join(d.description or d.name for d in devs)
        return ModelInfo(
            path=self.path,
            name=_meta(self.model, "general.name") or os.path.basename(self.path),
            size_bytes=os.path.getsize(self.path),
            quantization=quant,
            n_params=self.n_params,
            n_vocab=self.n_vocab,
            vocab_type=VOCAB_TYPES.get(L.llama_vocab_type(self.vocab), "unknown"),
            architecture=_meta(self.model, "general.architecture"),
            n_ctx_train=int(L.llama_model_n_ctx_train(self.model)),
            backend=backend,
            device=device,
            n_layer=self.n_layer,
            n_gpu_layers=self.n_gpu_layers,
        )

    # ---- tokens
    def tokenize(self, text: str, add_special: bool = True, parse_special: bool = True) -> list[int]:
        L = llama()
        data = text.encode("utf-8")
        n_max = len(data) + 8
        buf = (L.llama_token * n_max)()
        n = L.llama_tokenize(self.vocab, data, len(data), buf, n_max, add_special, parse_special)
        if n < 0:
            n_max = -n
            buf = (L.llama_token * n_max)()
            n = L.llama_tokenize(self.vocab, data, len(data), buf, n_max, add_special, parse_special)
        return list(buf[: max(n, 0)])

    def piece(self, tid: int) -> bytes:
        """The bytes a token adds to the output (special tokens render as b"")."""
        p = self._pieces.get(tid)
        if p is None:
            L = llama()
            n = L.llama_token_to_piece(self.vocab, tid, self._piece_buf, 256, 0, False)
            if n < 0:
                big = ctypes.create_string_buffer(-n)
                n = L.llama_token_to_piece(self.vocab, tid, big, -n, 0, False)
                p = big.raw[:n]
            else:
                p = self._piece_buf.raw[:n]
            self._pieces[tid] = p
        return p

    def detokenize(self, ids) -> str:
        return b"".join(self.piece(int(t)) for t in ids).decode("utf-8", "replace")

    def is_eog(self, tid: int) -> bool:
        v = self._eog_cache.get(tid)
        if v is None:
            v = bool(llama().llama_vocab_is_eog(self.vocab, tid))
            self._eog_cache[tid] = v
        return v

    # ---- decoding
    def decode(self, tokens, pos0: int, logits: str = "last") -> int:
        """Decode ``tokens`` at positions pos0.. in one llama_decode (len <= n_batch).

        ``logits``: "last" (only the last position), "all", or "none". Returns the number of logit rows.
        Raises RuntimeError when llama.cpp fails (1: no KV slot, other: error).
        """
        n = len(tokens)
        b = self.batch
        tok, pos, lg = b.token, b.pos, b.logits
        for i in range(n):
            tok[i] = tokens[i]
            pos[i] = pos0 + i
            lg[i] = 0
        if logits == "all":
            for i in range(n):
                lg[i] = 1
            n_out = n
        elif logits == "last":
            lg[n - 1] = 1
            n_out = 1
        else:
            n_out = 0
        b.n_tokens = n
        gate = self.gate
        if gate is not None:
            gate.set()
        t = _perf()
        rc = self._decode(self.ctx, b)
        if self._sync is not None:  # a device backend computes asynchronously: wait, so that the time is the
            self._sync(self.ctx)    # decode's and no KV edit (rollback, clear) races the graph still running
        self.decode_s += _perf() - t
        if gate is not None:
            gate.clear()
        self.n_decodes += 1
        if rc != 0:
            raise RuntimeError(
                f"llama_decode failed on the {self.role} model (code {rc}{': no KV slot' if rc == 1 else ''})"
            )
        return n_out

    def decode_chunked(self, tokens, pos0: int) -> None:
        """Decode a long sequence in n_batch chunks with logits only at the very last position."""
        n = len(tokens)
        i = 0
        while i < n:
            j = min(n, i + self.n_batch)
            self.decode(tokens[i:j], pos0 + i, "last" if j == n else "none")
            i = j

    def _view(self, addr: int | None, n_rows: int) -> np.ndarray:
        """A float32 view of ``n_rows`` rows at ``addr`` over the shared ids, made once per (address, rows):
        llama.cpp keeps its output buffer between decodes (it reallocates only to grow), so a pass reads
        its rows through a cached view instead of building one per call."""
        if not addr:
            raise RuntimeError(f"llama.cpp returned no logits for the {self.role} model")
        key = (addr, n_rows)
        v = self._views.get(key)
        if v is None:
            buf = (ctypes.c_float * (n_rows * self.n_vocab)).from_address(addr)
            v = np.frombuffer(buf, dtype=np.float32).reshape(n_rows, self.n_vocab)
            if self.n_use != self.n_vocab:
                v = v[:, : self.n_use]
            if len(self._views) > 256:
                self._views.clear()
            self._views[key] = v
        return v

    def logits_rows(self, n_rows: int) -> np.ndarray:
        """Zero-copy view of the logit rows of the last decode (in batch order); overwritten by the next decode.
        Only the first ``n_use`` ids (the vocabulary both models share) are in the view. With a backend chain
        attached (``chain_rows``): the chain's logits rows (the raw row for greedy, row / T after ``temp``)."""
        if self.chain_rows:
            return self._view(self._sampled[0](self.ctx, 0), n_rows)
        return self._view(self._get_logits(self.ctx), n_rows)

    def logits_last(self) -> np.ndarray:
        if self.chain_rows:
            return self._view(self._sampled[0](self.ctx, -1), 1)[0]
        return self._view(self._get_logits_ith(self.ctx, -1), 1)[0]

    def probs_rows(self, n_rows: int) -> np.ndarray:
        """Zero-copy view of the attached chain's probability rows of the last decode (``dist``: the softmax
        of the chain's logits row), in batch order; overwritten by the next decode."""
        return self._view(self._sampled[1](self.ctx, 0), n_rows)

    def probs_last(self) -> np.ndarray:
        return self._view(self._sampled[1](self.ctx, -1), 1)[0]

    def sampled_token(self, i: int) -> int:
        """The attached chain's token for output row ``i`` of the last decode (-1: the last row)."""
        return int(self._sampled[2](self.ctx, i))

    def set_threads(self, n: int) -> None:
        """The threads of this context's decodes from now on, one-token and batched alike (llama_set_n_threads:
        the pipelined passes' split, engine/pipeline.py)."""
        n = max(1, int(n))
        if n != self.threads:
            llama().llama_set_n_threads(self.ctx, n, n)
            self.threads = n

    def rollback(self, p0: int) -> None:
        """Drop every KV cell at position >= p0 (sequence 0)."""
        if not self._seq_rm(self.mem, 0, p0, -1):
            raise RuntimeError(f"llama_memory_seq_rm failed on the {self.role} model")

    def clear(self) -> None:
        llama().llama_memory_clear(self.mem, True)

    def close(self) -> None:
        L = llama()
        if getattr(self, "batch", None) is not None:
            L.llama_batch_free(self.batch)
            self.batch = None
        if getattr(self, "ctx", None):
            L.llama_free(self.ctx)
            self.ctx = None
        if getattr(self, "model", None):
            L.llama_model_free(self.model)
            self.model = None


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


@dataclass(frozen=True)
class ModelMemory:
    """What one model needs, split between host memory and the GPU by the share of layers offloaded
    (llama.cpp offloads n_layer + 1 units: the repeating layers and the output layer)."""

    file_bytes: int
    kv_bytes: int
    n_layer: int
    n_gpu_layers: int  # as asked: 0 none, -1 all, else N

    @classmethod
    def of(cls, vocab: "VocabOnly", path: str, n_ctx: int, n_gpu_layers: int) -> "ModelMemory":
        return cls(os.path.getsize(path), vocab.kv_shape().bytes_for(n_ctx), vocab.n_layer(), n_gpu_layers)

    @property
    def device_share(self) -> float:
        units = self.n_layer + 1
        if self.n_gpu_layers == 0 or units <= 1:
            return 0.0
        return 1.0 if self.n_gpu_layers < 0 else min(self.n_gpu_layers, units) / units

    @property
    def host(self) -> tuple[int, int]:
        f = 1.0 - self.device_share
        return int(self.file_bytes * f), int(self.kv_bytes * f)

    @property
    def device_bytes(self) -> int:
        return int((self.file_bytes + self.kv_bytes) * self.device_share)


def memory_report(sizes: list[int], kv: list[int], available: int, warn: Callable[[str], None]) -> bool:
    """Warn (with the numbers) when model files + KV caches exceed the available memory. Returns fits."""
    need = sum(sizes) + sum(kv)
    if need > available:
        gib = 1024**3
        warn(
            f"warning: the models ({sum(sizes) / gib:.2f} GiB) and their KV caches ({sum(kv) / gib:.2f} GiB) "
            f"need {need / gib:.2f} GiB but only {available / gib:.2f} GiB of memory is available; "
            "expect swapping (a slow draft is not speculation's fault) - try a smaller -c"
        )
        return False
    return True


def placement_report(
    parts: list[ModelMemory], available: int, devices: list[Device], warn: Callable[[str], None]
) -> bool:
    """memory_report for what stays in host memory, then the offloaded part against the GPUs' free
    memory where the backend reports it. Returns fits."""
    fits = memory_report([m.host[0] for m in parts], [m.host[1] for m in parts], available, warn)
    need = sum(m.device_bytes for m in parts)
    free = sum(d.free_bytes for d in devices)
    if need and free and need > free:
        gib = 1024**3
        names = ", ".join(d.description or d.name for d in devices)
        warn(
            f"warning: the offloaded layers and their KV caches need {need / gib:.2f} GiB of GPU memory but "
            f"{names} report{'s' if len(devices) == 1 else ''} {free / gib:.2f} GiB free; lower -ngl / -ngld or -c"
        )
        fits = False
    return fits
