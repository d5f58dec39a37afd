"""Before any weights load: the GGUF file checks, vocabulary-only loads (metadata, the KV cache's shape),
llama.cpp's vocabulary rule for a speculative pair (the ids both models share) and what the models will need of
host and GPU memory, with a warning when they will not fit. No UI imports.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import Callable

import psutil

from ...contract.errors import SpectuiError
from ...contract.outputs import missing
from .devices import Device, gpu_devices
from .llama_lib import llama, model_meta, model_params

GGUF_MAGIC = b"GGUF"
VOCAB_TYPES = {0: "none", 1: "SPM", 2: "BPE", 3: "WPM", 4: "UGM", 5: "RWKV", 6: "PLaMo2"}

# llama.cpp's vocabulary compatibility rule for speculation (common/speculative.cpp)
SPEC_VOCAB_MAX_SIZE_DIFFERENCE = 128
SPEC_VOCAB_CHECK_START_TOKEN_ID = 5


def check_gguf_file(path: str, role: str = "model") -> str:
    """Raise SpectuiError (one line) unless ``path`` is a readable GGUF file; return the absolute path."""
    p = os.path.abspath(os.path.expanduser(str(path)))
    if not os.path.exists(p):
        why = missing(p)  # a loop of symbolic links is not "not found"
        raise SpectuiError(f"{role} file not found: {path}" if why == "file not found" else
                           f"{role} file {path}: {why}")
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


class VocabOnly:
    """A vocabulary-only load: cheap, used to check vocabularies and read metadata before loading weights."""

    def __init__(self, path: str, role: str) -> None:
        L = llama()
        self.path = path
        self.model = L.llama_model_load_from_file(path.encode(), model_params(True, False))
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
        arch = model_meta(self.model, "general.architecture")

        def num(key: str, default: int = 0) -> int:
            s = model_meta(self.model, f"{arch}.{key}")
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


def check_pair(tpath: str, dpath: str | None, n_ctx: int, ngl_t: int, ngl_d: int,
               warn: Callable[[str], None]) -> int | None:
    """Cheap vocabulary-only loads first: the vocabulary check and the memory estimate before any weights load.

    Args:
        tpath: the target's file (checked).
        dpath: the draft's file, or None.
        n_ctx: the context each model gets.
        ngl_t: the target's GPU layers (``devices.gpu_layers``).
        ngl_d: the draft's GPU layers.
        warn: where a memory warning goes.

    Returns:
        The number of token ids both models share (None without a draft).

    Raises:
        SpectuiError: a file llama.cpp cannot load, or vocabularies that cannot speculate together.
    """
    tv = VocabOnly(tpath, "target")
    dv = None
    n_shared = None
    try:
        parts = [ModelMemory.of(tv, tpath, n_ctx, ngl_t)]
        if dpath:
            dv = VocabOnly(dpath, "draft")
            n_shared = check_vocabs(tv, dv)
            parts.append(ModelMemory.of(dv, dpath, n_ctx, ngl_d))
    finally:
        tv.close()
        if dv is not None:
            dv.close()
    devices = gpu_devices() if ngl_t or ngl_d else []
    placement_report(parts, psutil.virtual_memory().available, devices, warn)
    return n_shared
