"""Where llama-cpp-python's bindings stop: the llama.cpp calls that EAGLE-3 and MTP drafting need, through ctypes.

llama.cpp's reference drivers (common/speculative.cpp: common_speculative_impl_draft_eagle3 / _draft_mtp) use
staging calls declared in src/llama-ext.h, which is C++ (no ``extern "C"``): libllama.so exports them under
their mangled names (``nm -D libllama.so``: ``_Z26llama_set_embeddings_nextnP13llama_contextbb``...). The
bindings of llama-cpp-python 0.3.36 declare none of them; they do declare ``llama_model_n_layer_nextn``, the
``llama_batch_ext_*`` calls, ``llama_process``, and the ``load_mtp`` / ``ctx_type`` / ``ctx_other`` fields of
the parameter structs. Mangled names and signatures belong to one llama.cpp, so ``ext()`` refuses, in one
line, any llama-cpp-python other than the version spectui pins.

``ext()`` returns an ``Ext`` whose methods take the bindings' model/context pointers:

- ``target_layer_ids(model)``: an EAGLE-3 head's target layer ids (llama_model_target_layer_ids / _n);
- ``n_layer_nextn(model)``: the NextN/MTP blocks a model has (block_count - n_layer);
- ``set_embeddings_nextn(ctx, on, masked)``, ``get_embeddings_nextn(ctx)``, ``get_embeddings_nextn_ith(ctx, i)``:
  the pre-norm hidden state after the last block (a target's) or of the head (a draft's);
- ``set_embeddings_layer_inp(ctx, layer, on)``, ``get_embeddings_layer_inp(ctx, layer)``: the input of a block;
- ``set_nextn_layer_offset(ctx, k)``: which NextN block an MTP context runs (chained heads);
- ``get_ctx_other(ctx)``;
- ``dflash_selector_top_k(model)``: a DFlash2 draft's candidate selector width (0: none);
- ``batch_ext_*`` / ``process``: the bindings' own extended-batch calls, re-exported.

Embedding getters return an address (int, 0 for none); ``rows(addr, n_rows, n_embd)`` makes a numpy view.
No UI imports.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

import numpy as np

from ...contract.errors import SpectuiError
from .llama_lib import address, bindings_lib, llama

PINNED_LLAMA_CPP_PYTHON = "0.3.36"  # pyproject.toml: llama-cpp-python==0.3.36 (a test checks they agree)

PROCESS_ENCODE, PROCESS_DECODE = 0, 1  # enum llama_process_type
CONTEXT_TYPE_DEFAULT, CONTEXT_TYPE_MTP = 0, 1  # enum llama_context_type

_vp, _i32, _u32, _b = ctypes.c_void_p, ctypes.c_int32, ctypes.c_uint32, ctypes.c_bool

# name -> (mangled name in llama-cpp-python 0.3.36's libllama.so, restype, argtypes)
_STAGING = {
    "llama_model_target_layer_ids": ("_Z28llama_model_target_layer_idsPK11llama_model",
                                     ctypes.POINTER(ctypes.c_int32), [_vp]),
    "llama_model_target_layer_ids_n": ("_Z30llama_model_target_layer_ids_nPK11llama_model", _u32, [_vp]),
    "llama_set_embeddings_nextn": ("_Z26llama_set_embeddings_nextnP13llama_contextbb", None, [_vp, _b, _b]),
    "llama_set_nextn_layer_offset": ("_Z28llama_set_nextn_layer_offsetP13llama_contexti", None, [_vp, _i32]),
    "llama_get_embeddings_nextn": ("_Z26llama_get_embeddings_nextnP13llama_context", _vp, [_vp]),
    "llama_get_embeddings_nextn_ith": ("_Z30llama_get_embeddings_nextn_ithP13llama_contexti", _vp, [_vp, _i32]),
    "llama_set_embeddings_layer_inp": ("_Z30llama_set_embeddings_layer_inpP13llama_contextjb", None,
                                       [_vp, _u32, _b]),
    "llama_get_embeddings_layer_inp": ("_Z30llama_get_embeddings_layer_inpP13llama_contextj", _vp, [_vp, _u32]),
    "llama_get_ctx_other": ("_Z19llama_get_ctx_otherP13llama_context", _vp, [_vp]),
    "llama_model_dflash_selector_top_k": ("_Z33llama_model_dflash_selector_top_kPK11llama_model", _i32, [_vp]),
}
# C symbols the bindings already declare (checked present, used through the bindings)
_BOUND = ("llama_model_n_layer_nextn", "llama_model_n_embd_out", "llama_batch_ext_init", "llama_batch_ext_free",
          "llama_batch_ext_clear", "llama_batch_ext_add_token", "llama_batch_ext_add_embd",
          "llama_batch_ext_set_embd_state", "llama_batch_ext_set_embd_token", "llama_batch_ext_set_output_logits",
          "llama_batch_ext_set_output_embd", "llama_batch_ext_set_pos", "llama_process")

_ext: "Ext | None" = None


def check_version(version: str | None) -> None:
    """One line, exit 2, unless ``version`` is the llama-cpp-python spectui pins."""
    if version != PINNED_LLAMA_CPP_PYTHON:
        raise SpectuiError(
            f"EAGLE-3 and MTP drafting call llama.cpp functions the bindings do not declare, by the names "
            f"llama-cpp-python {PINNED_LLAMA_CPP_PYTHON} exports; this is llama-cpp-python {version or 'unknown'}"
            f": install llama-cpp-python=={PINNED_LLAMA_CPP_PYTHON} (bash scripts/install.sh --live)")


def _fn(lib, c_name: str, mangled: str, restype, argtypes):
    for name in (c_name, mangled):  # a later llama.cpp may export them as C
        try:
            f = getattr(lib, name)
        except AttributeError:
            continue
        f.restype, f.argtypes = restype, argtypes
        return f
    return None


@dataclass
class Ext:
    """The staging calls, typed (see the module docstring)."""

    L: object  # the llama_cpp module
    fns: dict
    layers_on: set = field(default_factory=set)  # (context address, layer): llama.cpp aborts on any other

    def target_layer_ids(self, model) -> list[int]:
        n = int(self.fns["llama_model_target_layer_ids_n"](model))
        if n == 0:
            return []
        p = self.fns["llama_model_target_layer_ids"](model)
        return [int(p[i]) for i in range(n)] if p else []

    def n_layer_nextn(self, model) -> int:
        return int(self.L.llama_model_n_layer_nextn(model))

    def n_embd_out(self, model) -> int:
        return int(self.L.llama_model_n_embd_out(model))

    def set_embeddings_nextn(self, ctx, on: bool, masked: bool) -> None:
        self.fns["llama_set_embeddings_nextn"](ctx, bool(on), bool(masked))

    def set_nextn_layer_offset(self, ctx, offset: int) -> None:
        self.fns["llama_set_nextn_layer_offset"](ctx, int(offset))

    def get_embeddings_nextn(self, ctx) -> int:
        return self.fns["llama_get_embeddings_nextn"](ctx) or 0

    def get_embeddings_nextn_ith(self, ctx, i: int) -> int:
        return self.fns["llama_get_embeddings_nextn_ith"](ctx, int(i)) or 0

    def set_embeddings_layer_inp(self, ctx, layer: int, on: bool) -> None:
        self.fns["llama_set_embeddings_layer_inp"](ctx, int(layer), bool(on))
        (self.layers_on.add if on else self.layers_on.discard)((address(ctx), int(layer)))

    def get_embeddings_layer_inp(self, ctx, layer: int) -> int:
        """The rows of the last decode; only for a layer set on (llama.cpp's GGML_ASSERT would end the process)."""
        if (address(ctx), int(layer)) not in self.layers_on:
            raise RuntimeError(f"the input of layer {layer} is not extracted on this context")
        return self.fns["llama_get_embeddings_layer_inp"](ctx, int(layer)) or 0

    def get_ctx_other(self, ctx) -> int:
        return self.fns["llama_get_ctx_other"](ctx) or 0

    def dflash_selector_top_k(self, model) -> int:
        return int(self.fns["llama_model_dflash_selector_top_k"](model))

    @staticmethod
    def rows(addr: int, n_rows: int, n_embd: int) -> np.ndarray:
        """A float32 (n_rows, n_embd) view of llama.cpp's buffer at ``addr`` (valid until its next decode)."""
        if not addr:
            raise RuntimeError("llama.cpp returned no embeddings (extraction not enabled for this batch?)")
        buf = (ctypes.c_float * (n_rows * n_embd)).from_address(addr)
        return np.frombuffer(buf, dtype=np.float32).reshape(n_rows, n_embd)

    def __getattr__(self, name: str):  # batch_ext_* and process: the bindings' own
        if name.startswith("batch_ext_") or name == "process":
            return getattr(self.L, "llama_" + name)
        raise AttributeError(name)


def ext() -> Ext:
    """The staging calls of the loaded libllama, after the version check (SpectuiError: one line)."""
    global _ext
    if _ext is None:
        L = llama()
        check_version(getattr(L, "__version__", None))
        lib = bindings_lib(L)
        if lib is None:
            raise SpectuiError("the llama_cpp bindings expose no libllama handle (llama_cpp.llama_cpp._lib)")
        fns = {}
        missing = []
        for name, (mangled, res, args) in _STAGING.items():
            f = _fn(lib, name, mangled, res, args)
            if f is None:
                missing.append(name)
            fns[name] = f
        missing += [n for n in _BOUND if not hasattr(L, n)]
        if missing:
            raise SpectuiError(
                f"this libllama does not export {', '.join(missing)} (llama-cpp-python "
                f"{getattr(L, '__version__', '?')} built without them?): reinstall llama-cpp-python=="
                f"{PINNED_LLAMA_CPP_PYTHON}")
        _ext = Ext(L=L, fns=fns)
    return _ext


class ExtBatch:
    """A ``llama_batch_ext`` of one context (sequence 0 unless an entry names another): entries of (token,
    position, embedding) as common_batch builds them (common/common.cpp: get_sub_batch), and ``run`` =
    llama_process. The float rows handed in are kept alive until the next ``clear``."""

    def __init__(self, ctx, n_embd: int, role: str) -> None:
        self.L = llama()
        self.ctx, self.n_embd, self.role = ctx, n_embd, role
        self.batch = self.L.llama_batch_ext_init(ctx)
        if not self.batch:
            raise SpectuiError(f"llama.cpp could not make an extended batch for the {role}")
        self._keep: list = []
        self.n = 0
        self.last = -1
        self.n_runs = 0

    def clear(self) -> None:
        self.L.llama_batch_ext_clear(self.batch)
        self._keep = []
        self.n = 0
        self.last = -1  # the batch index of the last entry with output (the row a draft step reads)

    def _embd(self, row: np.ndarray, width: int):
        row = np.ascontiguousarray(row, dtype=np.float32)
        if row.shape != (width,):
            raise ValueError(f"embedding row of shape {row.shape}, expected ({width},)")
        self._keep.append(row)
        return self.L.llama_embd(row.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), 1, width)

    def _pos(self, idx: int, pos: int) -> None:
        p = ctypes.c_int32(int(pos))
        self.L.llama_batch_ext_set_pos(self.batch, idx, ctypes.byref(p))

    def add(self, token: int, pos: int, row: np.ndarray, output: bool, seq: int = 0) -> int:
        """A token with an embedding beside it (llama_batch_ext_set_embd_token): EAGLE-3's (token, g) and
        MTP's (token, h) pairs; ``seq``: its sequence (a tree's branch, in a context of several)."""
        idx = self.L.llama_batch_ext_add_token(self.batch, int(seq), int(token))
        if idx < 0:
            raise RuntimeError(f"llama_batch_ext_add_token failed on the {self.role} ({idx})")
        self._pos(idx, pos)
        if not self.L.llama_batch_ext_set_embd_token(self.batch, idx, self._embd(row, self.n_embd)):
            raise RuntimeError(f"llama_batch_ext_set_embd_token failed on the {self.role}")
        if output:
            self.L.llama_batch_ext_set_output_logits(self.batch, idx, True)
            self.last = idx
        self.n += 1
        return idx

    def add_token(self, token: int, pos: int, output: bool) -> int:
        """A token alone (a block drafter's noise block: the anchor, then mask tokens)."""
        idx = self.L.llama_batch_ext_add_token(self.batch, 0, int(token))
        if idx < 0:
            raise RuntimeError(f"llama_batch_ext_add_token failed on the {self.role} ({idx})")
        self._pos(idx, pos)
        if output:
            self.L.llama_batch_ext_set_output_logits(self.batch, idx, True)
            self.last = idx
        self.n += 1
        return idx

    def add_embd(self, row: np.ndarray, pos: int, width: int, output: bool = True) -> int:
        """An embedding without a token (EAGLE-3's encoder input: the fused target features)."""
        idx = self.L.llama_batch_ext_add_embd(self.batch, 0, self._embd(row, width))
        if idx < 0:
            raise RuntimeError(f"llama_batch_ext_add_embd failed on the {self.role} ({idx})")
        self._pos(idx, pos)
        if output:
            self.L.llama_batch_ext_set_output_logits(self.batch, idx, True)
        self.n += 1
        return idx

    def run(self, kind: int = PROCESS_DECODE) -> None:
        rc = self.L.llama_process(self.ctx, kind, self.batch)
        if rc != 0:
            raise RuntimeError(f"llama_process on the {self.role} failed (code {rc})")
        self.n_runs += 1

    def free(self) -> None:
        if self.batch:
            self.L.llama_batch_ext_free(self.batch)
            self.batch = None


def head_context(model, ctx_tgt, n_ctx: int, n_ubatch: int, threads: int, ctx_type: int, n_seq: int = 1):
    """A head's own context on ``model`` (batches of ``n_ubatch``), with ``ctx_other`` = the target's context (an
    EAGLE-3 head without token_embd / output uses the target's; an MTP context reads the target's model). One
    sequence, or ``n_seq`` sharing one unified KV buffer (an EAGLE-3 head drafting trees: one per branch, as the
    draft model's context, ``models.context_params``). NULL when llama.cpp refuses it."""
    L = llama()
    cp = L.llama_context_default_params()
    cp.n_ctx = n_ctx
    cp.n_batch = cp.n_ubatch = max(1, n_ubatch)
    cp.n_seq_max = max(1, int(n_seq))
    if cp.n_seq_max > 1:
        cp.kv_unified = True
    cp.n_threads = cp.n_threads_batch = threads
    cp.ctx_type = ctx_type
    cp.n_rs_seq = 0
    cp.ctx_other = ctx_tgt
    return L.llama_init_from_model(model, cp)


TOP_K = 10  # the reference drafts with a top-k 10 sampler: p is the softmax over the 10 best logits


@dataclass(frozen=True)
class DraftStep:
    token: int
    p: float  # the reference's candidate probability (softmax over the TOP_K best logits)


def top_of_row(row: np.ndarray, top_k: int = TOP_K) -> tuple[int, float]:
    """The reference drafters' choice at temperature 0 (a top-k 10 sampler, common/speculative.cpp) on one
    logit row: the best token and its probability in the softmax over the ``top_k`` best logits.

    The same numbers as a top-k over the whole row, found without partitioning a copy of it: the k-th largest
    logit of every (n // 1024)-th one is a floor that at least k logits of the row reach, so the k best are
    among the few at or above it (on a 152k-token row, about 1,000 ids in one comparison). The best token is
    the first maximal logit; the softmax is summed from the largest logit down, as llama.cpp's sorted
    candidates are."""
    n = int(row.shape[0])
    k = max(1, min(int(top_k), n))
    if n > 4096:
        sub = row[:: n // 1024]
        floor = np.partition(sub, len(sub) - k)[len(sub) - k]
        ids = np.flatnonzero(row >= floor)
        vals = row[ids]
    else:
        ids, vals = None, row
    j = int(np.argmax(vals))
    best = int(ids[j]) if ids is not None else j
    if len(vals) > k:
        vals = vals[np.argpartition(vals, len(vals) - k)[len(vals) - k:]]
    z = np.sort(vals.astype(np.float64))[::-1]
    return best, float(1.0 / np.exp(z - z[0]).sum())


def top_candidate(ctx, i: int, n_vocab: int, top_k: int = TOP_K) -> tuple[int, float]:
    """``top_of_row`` on output row ``i`` of ``ctx``'s last decode (read in place, not copied)."""
    L = llama()
    return top_of_row(np.ctypeslib.as_array(L.llama_get_logits_ith(ctx, int(i)), shape=(n_vocab,)), top_k)


class HeadContext:
    """What a drafting head's own llama.cpp context shares, EAGLE-3's and MTP's alike: ``ctx``, its memory
    ``mem`` and an ``ExtBatch`` ``batch``; an EAGLE-3 head also owns its ``model`` (MTP's is the target's)."""

    ctx = None
    mem = None
    batch = None
    model = None
    n_seq = 1  # the sequences of its context (more: an EAGLE-3 head drafting trees)

    def open_own(self, path: str, what: str, ctx_tgt, n_ctx: int, n_ubatch: int, threads: int, check,
                 n_seq: int = 1) -> None:
        """Load the head's own model from ``path`` and make its context (EAGLE-3's and the block drafters'):
        ``check()`` reads the model's metadata first; any failure closes what was made and raises (one line,
        ``what`` names the file's kind). Sets ``model``, ``ctx``, ``ctx_tgt``, ``n_ubatch``, ``n_vocab``, ``mem``,
        ``n_seq`` (the context's sequences: ``head_context``)."""
        L = llama()
        self.model = L.llama_model_load_from_file(str(path).encode(), L.llama_model_default_params())
        if not self.model:
            raise SpectuiError(f"llama.cpp could not load the {what} {path} (unsupported or corrupt GGUF)")
        self.ctx = None
        self.batch = None
        try:
            check()
            self.ctx = head_context(self.model, ctx_tgt, n_ctx, n_ubatch, threads, CONTEXT_TYPE_DEFAULT, n_seq)
            if not self.ctx:
                raise SpectuiError(f"llama.cpp could not create a context for the {what} {path}")
        except BaseException:
            self.close()
            raise
        self.ctx_tgt = ctx_tgt
        self.n_seq = max(1, int(n_seq))
        self.n_ubatch = int(L.llama_n_ubatch(self.ctx))
        self.n_vocab = int(L.llama_vocab_n_tokens(L.llama_model_get_vocab(self.model)))
        self.mem = L.llama_get_memory(self.ctx)

    def rollback(self, p0: int) -> None:
        """Drop the head's KV at positions >= p0, with the target's (the server rolls both back after a verify:
        slot.mem.seq_rm(pos_next) in tools/server/server-context.cpp)."""
        llama().llama_memory_seq_rm(self.mem, 0, int(p0), -1)

    def draft_loop(self, n_max: int, p_min: float, pick, n_embd: int, next_batch, before=None) -> list[DraftStep]:
        """The drafting loop both reference drivers share (common/speculative.cpp, EAGLE-3's and MTP's): run
        ``self.batch``, choose (token, p) at its last output row (the reference's top-k 10 choice, or the
        engine's ``pick(ctx, i)``), read that row's pre-norm state h; stop under ``p_min`` or at ``n_max``
        drafts, else ``next_batch(token, h, n_drafted)`` fills the batch for the next step. ``before(i)``
        runs before step i's decode (chained MTP heads select head i there)."""
        out: list[DraftStep] = []
        while True:
            if before is not None:
                before(len(out))
            self.batch.run(PROCESS_DECODE)
            i = self.batch.last
            tok, p = top_candidate(self.ctx, i, self.n_vocab, TOP_K) if pick is None else pick(self.ctx, i)
            h = self.x.rows(self.x.get_embeddings_nextn_ith(self.ctx, i), 1, n_embd)[0].copy()
            if p < p_min:
                break
            out.append(DraftStep(tok, p))
            if len(out) >= n_max:
                break
            self.batch.clear()
            next_batch(tok, h, len(out))
        return out

    def close(self) -> None:
        L = llama()
        if self.batch is not None:
            self.batch.free()
            self.batch = None
        if self.ctx:
            L.llama_free(self.ctx)
            self.ctx = None
        if self.model:
            L.llama_model_free(self.model)
            self.model = None
