"""Model files and llama.cpp contexts: GGUF checks, loading via the low-level API, vocabulary checks,
batch decode with logits only where asked, and KV rollback.

Everything here talks to ``llama_cpp``'s ctypes layer directly (never ``Llama(logits_all=True)``, which
allocates an n_ctx x n_vocab array per model). No UI imports.
"""

from __future__ import annotations

import ctypes
import os
import stat
from time import perf_counter as _perf
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import SpectuiError
from ..events import ModelInfo

GGUF_MAGIC = b"GGUF"
VOCAB_TYPES = {0: "none", 1: "SPM", 2: "BPE", 3: "WPM", 4: "UGM", 5: "RWKV", 6: "PLaMo2"}

_llama = None  # the llama_cpp module, imported on first use
_log_cb = None  # keeps the no-op log callback alive for as long as the process runs


def llama():
    """Import llama_cpp once, silence its logging, initialise the backend."""
    global _llama, _log_cb
    if _llama is None:
        try:
            import llama_cpp  # noqa: PLC0415
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise SpectuiError(f"llama-cpp-python is not importable ({exc}); see the README to install it") from exc
        _log_cb = llama_cpp.llama_log_callback(lambda level, text, user_data: None)
        llama_cpp.llama_log_set(_log_cb, ctypes.c_void_p(0))
        llama_cpp.llama_backend_init()
        _llama = llama_cpp
    return _llama


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


def _model_params(vocab_only: bool, use_extra_bufts: bool):
    L = llama()
    mp = L.llama_model_default_params()
    mp.vocab_only = vocab_only
    mp.use_extra_bufts = use_extra_bufts
    mp.n_gpu_layers = 0
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


def check_vocabs(target: VocabOnly, draft: VocabOnly) -> None:
    """Raise SpectuiError (one line) when the draft's vocabulary differs from the target's."""
    ft, fd = target.facts(), draft.facts()
    if ft.n_tokens != fd.n_tokens:
        raise SpectuiError(
            f"vocabulary mismatch: the target has {ft.n_tokens} tokens, the draft {fd.n_tokens}; "
            "the draft must share the target's tokenizer"
        )
    if ft.vocab_type != fd.vocab_type:
        raise SpectuiError(
            "vocabulary mismatch: the target's tokenizer is "
            f"{VOCAB_TYPES.get(ft.vocab_type, ft.vocab_type)}, the draft's {VOCAB_TYPES.get(fd.vocab_type, fd.vocab_type)}"
        )
    for field in ("bos", "eos", "eot", "add_bos", "add_eos"):
        a, b = getattr(ft, field), getattr(fd, field)
        if a != b:
            raise SpectuiError(f"vocabulary mismatch: special token setting {field} is {a} in the target, {b} in the draft")
    L = llama()
    get = L.llama_vocab_get_text
    tv, dv = target.vocab, draft.vocab
    for i in range(ft.n_tokens):
        a, b = get(tv, i), get(dv, i)
        if a != b:
            sa = a.decode("utf-8", "replace") if a is not None else ""
            sb = b.decode("utf-8", "replace") if b is not None else ""
            raise SpectuiError(f"vocabulary mismatch at token id {i}: target has {sa!r}, draft has {sb!r}")


# ---------------------------------------------------------------- a loaded model with its context


class LoadedModel:
    """One model plus one llama_context (sequence 0 only) and a reusable batch."""

    def __init__(self, path: str, role: str, n_ctx: int, threads: int, use_extra_bufts: bool, n_batch: int = 512) -> None:
        L = llama()
        self.path = path
        self.role = role
        self.model = L.llama_model_load_from_file(path.encode(), _model_params(False, use_extra_bufts))
        if not self.model:
            raise SpectuiError(f"llama.cpp could not load the {role} model {path} (unsupported or corrupt GGUF)")
        self.n_batch = max(1, min(n_batch, n_ctx))
        cp = L.llama_context_default_params()
        cp.n_ctx = n_ctx
        cp.n_batch = self.n_batch
        cp.n_ubatch = self.n_batch
        cp.n_seq_max = 1
        cp.n_threads = threads
        cp.n_threads_batch = threads
        self.ctx = L.llama_init_from_model(self.model, cp)
        if not self.ctx:
            L.llama_model_free(self.model)
            self.model = None
            raise SpectuiError(f"llama.cpp could not create a context for the {role} model {path} (n_ctx={n_ctx})")
        self.n_ctx = L.llama_n_ctx(self.ctx)
        self.vocab = L.llama_model_get_vocab(self.model)
        self.n_vocab = L.llama_vocab_n_tokens(self.vocab)
        self.mem = L.llama_get_memory(self.ctx)
        self.batch = L.llama_batch_init(self.n_batch, 0, 1)
        for i in range(self.n_batch):  # one sequence, fixed: set once
            self.batch.n_seq_id[i] = 1
            self.batch.seq_id[i][0] = 0
        self._decode = L.llama_decode
        self._get_logits = L.llama_get_logits
        self._get_logits_ith = L.llama_get_logits_ith
        self._seq_rm = L.llama_memory_seq_rm
        self._pieces: dict[int, bytes] = {}
        self._piece_buf = ctypes.create_string_buffer(256)
        self.decode_s = 0.0  # cumulative seconds inside llama_decode (benchmarks: time outside decode)
        self.n_decodes = 0
        self._eog_cache: dict[int, bool] = {}
        self.n_params = int(L.llama_model_n_params(self.model))
        self.info = self._info()

    # ---- facts
    def _info(self) -> ModelInfo:
        L = llama()
        ftype = L.llama_model_ftype(self.model) if hasattr(L, "llama_model_ftype") else -1
        quant = _ftype_names().get(ftype, "") or _meta(self.model, "general.file_type")
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
        t = _perf()
        rc = self._decode(self.ctx, b)
        self.decode_s += _perf() - t
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

    def logits_rows(self, n_rows: int) -> np.ndarray:
        """Zero-copy view of the logit rows of the last decode (in batch order); overwritten by the next decode."""
        ptr = self._get_logits(self.ctx)
        return np.ctypeslib.as_array(ptr, shape=(n_rows, self.n_vocab))

    def logits_last(self) -> np.ndarray:
        ptr = self._get_logits_ith(self.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))

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


def memory_report(
    sizes: list[int], kv: list[int], available: int, warn: Callable[[str], None]
) -> bool:
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
