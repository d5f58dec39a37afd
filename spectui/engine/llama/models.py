"""A loaded model: ``LoadedModel``, one model and one llama.cpp context (sequence 0) through the low-level API:
tokens, batch decode with logits only where asked (views over llama.cpp's buffer, over the ids both models
share), the rows a backend sampler chain left, and KV rollback.

Everything here talks to ``llama_cpp``'s ctypes layer directly (never ``Llama(logits_all=True)``, which
allocates an n_ctx x n_vocab array per model). What comes before the weights (file checks, vocabulary-only
loads, memory) is in preload.py, the devices in devices.py, the library itself in llama_lib.py. No UI imports.
"""

from __future__ import annotations

import ctypes
import os
import threading
from time import perf_counter as _perf

import numpy as np

from ...contract.errors import SpectuiError
from ...contract.events import ModelInfo
from .abort import DecodeAborted
from .devices import gpu_devices, is_lavapipe, supports_gpu_offload
from .llama_lib import address, cpu_name, ftype_names, gil_held_lib, llama, model_meta, model_params
from .preload import VOCAB_TYPES


def _logits_getters(L):
    """llama_get_logits / llama_get_logits_ith returning plain addresses (c_void_p): a view is then made once
    per buffer address (LoadedModel._view) instead of a ctypes array per call. Falls back to the bindings'
    own functions (pointers) where the raw library is not reachable."""
    lib = gil_held_lib(L)
    if lib is None:
        return (lambda ctx: address(L.llama_get_logits(ctx))), (lambda ctx, i: address(L.llama_get_logits_ith(ctx, i)))
    # (after a decode on a device backend LoadedModel.decode has synchronised: these only read an address)
    get = lib["llama_get_logits"]  # a new function object: the bindings' own keep their types
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
    ith = lib["llama_get_logits_ith"]
    ith.restype, ith.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_int32]
    return get, ith


def _sampled_getters(L):
    """llama_get_sampled_logits_ith / _probs_ith (addresses) and _token_ith, GIL held (backend sampling: a
    chain attached to the context, spectui.engine.llama.graph_sampling), or None where the library lacks them."""
    lib = gil_held_lib(L)
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
    lib = gil_held_lib(L)
    if lib is None:
        return L.llama_memory_seq_rm
    fn = lib["llama_memory_seq_rm"]
    fn.restype = ctypes.c_bool
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32]
    return fn


def context_params(L, n_ctx: int, n_batch: int, n_ubatch: int, threads: int, offload_devs, n_seq: int = 1):
    """llama_context_params for n_ctx cells: one sequence, or ``n_seq`` sharing one unified KV buffer (a token tree's
    branches: every cell one set of sequence ids, so copying a sequence copies no KV data)."""
    cp = L.llama_context_default_params()
    cp.n_ctx = n_ctx
    cp.n_batch = n_batch
    cp.n_ubatch = n_ubatch
    cp.n_seq_max = max(1, int(n_seq))
    if cp.n_seq_max > 1:
        cp.kv_unified = True
    cp.n_threads = threads
    cp.n_threads_batch = threads
    if any(is_lavapipe(d) for d in offload_devs):
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
    """One model plus one llama_context (sequence 0 only) and a reusable batch.

    Args:
        path: the GGUF file (checked: ``preload.check_gguf_file``).
        role: "target", "draft" (or "head"): what messages call it.
        n_ctx: the context's cells.
        threads: decode threads.
        use_extra_bufts: repack the weights for this CPU's kernels (False: --no-repack).
        n_batch: the most tokens one decode takes (at most ``n_ctx``).
        n_gpu_layers: layers offloaded (-1: all; 0 on a CPU-only build).
        n_ubatch: the physical batch (default ``n_batch``).
        use_mmap: map the file (None: unless the weights are repacked).
        load_mtp: load the target's NextN / MTP blocks too (``Engine(head="mtp")``).
        n_outputs_max_per_seq: output rows one decode may have with a backend sampler (0: ``n_batch``).
        kv_cells: the KV cells the context starts with (None: ``n_ctx``; at least ``n_batch``, at most ``n_ctx``):
            ``resize_cells`` grows them where a run begins.
        n_seq: the sequences the context holds (1; more for token trees: kv_tree.py).

    Raises:
        SpectuiError: llama.cpp cannot load the file or make its context.
    """

    def __init__(self, path: str, role: str, n_ctx: int, threads: int, use_extra_bufts: bool, n_batch: int = 512,
                 n_gpu_layers: int = 0, n_ubatch: int | None = None, use_mmap: bool | None = None,
                 load_mtp: bool = False, n_outputs_max_per_seq: int = 1, kv_cells: int | None = None,
                 n_seq: int = 1) -> None:
        L = llama()
        self.path = path
        self.role = role
        params = model_params(False, use_extra_bufts, n_gpu_layers, use_mmap)
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
        # never fewer cells than n_batch: llama.cpp would cut its batch to the cells (other decodes, other numbers)
        cells = n_ctx if kv_cells is None else min(n_ctx, max(int(kv_cells), self.n_batch))
        self.n_seq, self.kv_user = max(1, int(n_seq)), None  # kv_user: the drafter whose context the KV holds
        self.context_made = (offload_devs, int(n_outputs_max_per_seq))  # what resize_cells makes a context with
        self.ctx = new_context(self, cells, threads)
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
        self.batch = L.llama_batch_init(self.n_batch, 0, self.n_seq)
        for i in range(self.n_batch):  # one sequence, fixed: set once
            self.batch.n_seq_id[i] = 1
            self.batch.seq_id[i][0] = 0
        self._decode = L.llama_decode
        self._get_logits, self._get_logits_ith = _logits_getters(L)
        self._sampled = _sampled_getters(L)
        # a backend sampler chain is attached (graph_path.GraphSide): llama.cpp then hands back the chain's
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

    def resize_cells(self, n_cells: int) -> None:
        """A fresh context of ``n_cells`` KV cells in place of this one, all else as it was; the cache's contents are
        dropped (only where a run begins, which empties the caches).

        Args:
            n_cells: the cells (at least ``n_batch``; llama.cpp pads them to 256).

        Raises:
            SpectuiError: llama.cpp cannot make the context (this model is then left without one).
        """
        L = llama()
        L.llama_free(self.ctx)  # first: the old cache and the new one are never both in memory
        self.ctx = new_context(self, max(int(n_cells), self.n_batch), self.threads)
        if not self.ctx:
            raise SpectuiError(f"llama.cpp could not make a context of {n_cells} cells for the {self.role} model")
        self.n_ctx, self.mem = L.llama_n_ctx(self.ctx), L.llama_get_memory(self.ctx)
        self._views.clear()  # views over the old context's logits

    # ---- facts
    def _info(self) -> ModelInfo:
        L = llama()
        ftype = L.llama_model_ftype(self.model) if hasattr(L, "llama_model_ftype") else -1
        quant = ftype_names().get(ftype, "") or model_meta(self.model, "general.file_type")
        backend, device = "CPU", cpu_name()
        if self.n_gpu_layers:
            devs = gpu_devices()
            backend = devs[0].backend if devs else "GPU"
            device = ", ".join(d.description or d.name for d in devs)
        return ModelInfo(
            path=self.path, name=model_meta(self.model, "general.name") or os.path.basename(self.path),
            size_bytes=os.path.getsize(self.path), quantization=quant, n_params=self.n_params, n_vocab=self.n_vocab,
            vocab_type=VOCAB_TYPES.get(L.llama_vocab_type(self.vocab), "unknown"),
            architecture=model_meta(self.model, "general.architecture"),
            n_ctx_train=int(L.llama_model_n_ctx_train(self.model)), backend=backend, device=device,
            n_layer=self.n_layer, n_gpu_layers=self.n_gpu_layers,
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

        Args:
            tokens: the token ids.
            pos0: the first token's position.
            logits: "last" (only the last position), "all", or "none".

        Returns:
            The number of logit rows (``logits_rows`` reads them until the next decode).

        Raises:
            RuntimeError: llama.cpp failed (1: no KV slot, other: error).
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
        self.run_batch()
        return n_out

    def run_batch(self) -> None:
        """llama_decode of ``batch`` as filled (the engine's gate open meanwhile, the time counted; kv_tree.py)."""
        b = self.batch
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
        if rc == 2:  # the engine's DecodeAbort stopped it (a stop asked mid-pass: spectui.engine.llama.abort)
            raise DecodeAborted(self.role)
        if rc != 0:
            raise RuntimeError(
                f"llama_decode failed on the {self.role} model (code {rc}{': no KV slot' if rc == 1 else ''})"
            )

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

    @property
    def reads_sampled(self) -> bool:
        """Whether the rows and tokens a backend sampler chain leaves are readable here (the graph path)."""
        return self._sampled is not None

    def sampled_token(self, i: int) -> int:
        """The attached chain's token for output row ``i`` of the last decode (-1: the last row)."""
        return int(self._sampled[2](self.ctx, i))

    def set_threads(self, n: int) -> None:
        """The threads of this context's decodes from now on, one-token and batched alike (llama_set_n_threads:
        the pipelined passes' split, engine/run/pipeline.py)."""
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


def new_context(m: LoadedModel, n_cells: int, threads: int):
    """A llama_context of ``n_cells`` cells on ``m``'s model, with its batch sizes and offload (NULL: it failed)."""
    L = llama()
    offload_devs, n_outputs = m.context_made
    cp = context_params(L, n_cells, m.n_batch, m.n_ubatch, threads, offload_devs, m.n_seq)
    # output rows one decode may have per sequence with a backend sampler (0: n_batch; llama.cpp's default
    # 1 lets a chain sample a one-row decode only): without a chain attached it changes nothing
    cp.n_outputs_max_per_seq = n_outputs
    return L.llama_init_from_model(m.model, cp)

