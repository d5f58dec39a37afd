"""Backend ("graph") sampling: llama.cpp's experimental API that runs a sampler chain inside the model's graph,
on the device that runs the model, reached through the ctypes bindings of llama-cpp-python (the loop's graph
path, graph_path.py, builds on it; docs/lossless.md).

The API (llama.h, "backend sampling API [EXPERIMENTAL]"):

- a sampler chain (``llama_sampler_chain_init`` + ``_add``) attached to a context for one sequence, either in
  ``llama_context_params.samplers`` when the context is made, or later with ``llama_set_sampler(ctx, seq, chain)``
  (which returns False when a sampler of the chain cannot run on the backend: the CPU path stays);
- after a ``llama_decode``, per output row i: ``llama_get_sampled_token_ith`` (the chain's token),
  ``_probs_ith`` / ``_probs_count_ith`` (its probabilities, where the chain made them: ``dist``),
  ``_logits_ith`` / ``_logits_count_ith`` (the row after the chain's transforms: ``temp`` divides by T),
  ``_candidates_ith`` / ``_candidates_count_ith`` (the ids the rows index, after ``top_k``; the whole vocabulary
  otherwise);
- where every output row of a decode belongs to a sequence with a backend sampler, llama.cpp does not copy the
  raw logits back (``needs_raw_logits`` in llama-context.cpp): ``llama_get_logits_ith`` is then not that
  decode's; the chain's own logits row is.

Chains here: ``greedy()`` (argmax: the sampled token; its logits row is the raw row), ``temperature(t, seed)``
(``temp`` then ``dist``: a draw from softmax(logits / t); probs = that softmax, over the whole vocabulary).
Small getters go through a GIL-held ``ctypes.PyDLL`` over the bindings' own handle (as ``llama_lib.gil_held_lib``);
``llama_set_sampler`` (it may re-reserve the graph) through the bindings' own function. No UI imports.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

from .llama_lib import address, bindings_lib, gil_held_lib, llama
from .models import LoadedModel, context_params

API = (
    "llama_set_sampler",
    "llama_get_sampled_token_ith",
    "llama_get_sampled_probs_ith",
    "llama_get_sampled_probs_count_ith",
    "llama_get_sampled_logits_ith",
    "llama_get_sampled_logits_count_ith",
    "llama_get_sampled_candidates_ith",
    "llama_get_sampled_candidates_count_ith",
)
LLAMA_TOKEN_NULL = -1


def exports() -> dict[str, bool]:
    """Which backend-sampling functions the bindings' library exports (and the bindings declare)."""
    L = llama()
    lib = bindings_lib(L)
    out = {}
    for name in API:
        try:
            getattr(lib, name)
            out[name] = hasattr(L, name)
        except AttributeError:
            out[name] = False
    return out


def available() -> bool:
    return all(exports().values())


class _Getters:
    """The sampled-output getters, declared once over a GIL-held handle (or the bindings' own functions)."""

    _inst: "_Getters | None" = None

    def __init__(self) -> None:
        L = llama()
        lib = gil_held_lib(L)
        vp, i32, u32 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_uint32

        def fn(name, res):
            if lib is None:
                return getattr(L, name)
            f = lib[name]
            f.restype, f.argtypes = res, [vp, i32]
            return f

        self.token = fn("llama_get_sampled_token_ith", i32)
        self.probs = fn("llama_get_sampled_probs_ith", vp)
        self.probs_count = fn("llama_get_sampled_probs_count_ith", u32)
        self.logits = fn("llama_get_sampled_logits_ith", vp)
        self.logits_count = fn("llama_get_sampled_logits_count_ith", u32)
        self.candidates = fn("llama_get_sampled_candidates_ith", vp)
        self.candidates_count = fn("llama_get_sampled_candidates_count_ith", u32)
        self.raw = lib is not None

    @classmethod
    def get(cls) -> "_Getters":
        if cls._inst is None:
            cls._inst = cls()
        return cls._inst


def _floats(addr: int, n: int) -> np.ndarray | None:
    if not addr or n <= 0:
        return None
    return np.frombuffer((ctypes.c_float * n).from_address(addr), dtype=np.float32)


def _tokens(addr: int, n: int) -> np.ndarray | None:
    if not addr or n <= 0:
        return None
    return np.frombuffer((ctypes.c_int32 * n).from_address(addr), dtype=np.int32)


@dataclass(frozen=True)
class SampledRow:
    """What the chain left for one output row (views over llama.cpp's buffers, valid until the next decode)."""

    token: int  # LLAMA_TOKEN_NULL: none sampled
    probs: np.ndarray | None
    logits: np.ndarray | None
    candidates: np.ndarray | None  # the ids probs / logits index (None: the whole vocabulary, in order)


def sampled(ctx, i: int) -> SampledRow:
    """Output row ``i`` of the last decode (in batch order, as llama_get_logits_ith)."""
    g = _Getters.get()
    n_p = int(g.probs_count(ctx, i))
    n_l = int(g.logits_count(ctx, i))
    n_c = int(g.candidates_count(ctx, i))
    return SampledRow(
        token=int(g.token(ctx, i)),
        probs=_floats(address(g.probs(ctx, i)), n_p),
        logits=_floats(address(g.logits(ctx, i)), n_l),
        candidates=_tokens(address(g.candidates(ctx, i)), n_c) if n_c else None,
    )


class SamplerChain:
    """A llama.cpp sampler chain, owned here (freed by ``free``; detach it from every context first)."""

    def __init__(self, kind: str, temperature: float = 0.0, seed: int = 0) -> None:
        L = llama()
        self.kind = kind
        self.temperature = float(temperature)
        self.ptr = L.llama_sampler_chain_init(L.llama_sampler_chain_default_params())
        if kind == "greedy":
            L.llama_sampler_chain_add(self.ptr, L.llama_sampler_init_greedy())
        elif kind == "temperature":
            if not temperature > 0:
                raise ValueError("a temperature chain needs T > 0")
            L.llama_sampler_chain_add(self.ptr, L.llama_sampler_init_temp(float(temperature)))
            L.llama_sampler_chain_add(self.ptr, L.llama_sampler_init_dist(int(seed) & 0xFFFFFFFF))
        else:
            raise ValueError(f"unknown chain {kind!r}")
        self.attached: list = []  # the (context, sequence) pairs it runs in

    @classmethod
    def greedy(cls) -> "SamplerChain":
        return cls("greedy")

    @classmethod
    def at_temperature(cls, t: float, seed: int = 0) -> "SamplerChain":
        return cls("temperature", t, seed)

    def attach(self, ctx, seq_id: int = 0) -> bool:
        """``llama_set_sampler(ctx, seq_id, chain)``: True when the chain runs in the graph from now on."""
        ok = bool(llama().llama_set_sampler(ctx, seq_id, self.ptr))
        if ok:
            self.attached.append((ctx, seq_id))
        return ok

    def detach(self, ctx, seq_id: int = 0) -> None:
        llama().llama_set_sampler(ctx, seq_id, None)
        self.attached = [a for a in self.attached if a != (ctx, seq_id)]

    def free(self) -> None:
        if self.ptr:
            for ctx, seq in list(self.attached):
                self.detach(ctx, seq)
            llama().llama_sampler_free(self.ptr)
            self.ptr = None


def context_with_sampler(model: LoadedModel, chain: SamplerChain, n_ctx: int = 512, threads: int = 1,
                         n_batch: int = 64, n_outputs_max_per_seq: int = 0):
    """A second llama_context on ``model``'s weights, made with ``chain`` in ``llama_context_params.samplers``
    for sequence 0 (the way llama.h prefers); free it with ``close_context``. None when llama.cpp refuses.

    ``n_outputs_max_per_seq``: the output rows one decode may have per sequence with a backend sampler
    (0: n_batch). llama.cpp's default is 1: a context made without it (``LoadedModel``'s) can sample in the
    graph only for decodes with one output row (a draft step), and fails (-1) on a verify of k + 1 rows."""
    L = llama()
    cp = context_params(L, n_ctx, n_batch, n_batch, threads, ())  # as LoadedModel's, on the CPU
    cp.n_outputs_max_per_seq = int(n_outputs_max_per_seq)
    conf = (L.llama_sampler_seq_config * 1)()
    conf[0].seq_id = 0
    conf[0].sampler = ctypes.cast(chain.ptr, ctypes.c_void_p)
    cp.samplers = ctypes.cast(conf, ctypes.POINTER(L.llama_sampler_seq_config))
    cp.n_samplers = 1
    ctx = L.llama_init_from_model(model.model, cp)
    if not ctx:
        return None
    chain.attached.append((ctx, 0))
    return ctx


def close_context(ctx, chain: SamplerChain | None = None) -> None:
    """Detach ``chain`` from a context made by ``context_with_sampler``, then free the context."""
    if chain is not None and (ctx, 0) in chain.attached:
        chain.detach(ctx, 0)
    llama().llama_free(ctx)


def decode_on(ctx, tokens, pos0: int, logits: str = "all") -> int:
    """One llama_decode of ``tokens`` at pos0.. on sequence 0 of ``ctx`` (a context without a LoadedModel);
    ``logits``: "all" or "last". Returns llama_decode's status."""
    L = llama()
    n = len(tokens)
    b = L.llama_batch_init(n, 0, 1)
    try:
        for i, t in enumerate(tokens):
            b.token[i] = int(t)
            b.pos[i] = pos0 + i
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = 0
            b.logits[i] = 1 if (logits == "all" or i == n - 1) else 0
        b.n_tokens = n
        return int(L.llama_decode(ctx, b))
    finally:
        L.llama_batch_free(b)
