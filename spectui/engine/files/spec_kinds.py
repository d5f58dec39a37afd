"""Which kind of drafter a GGUF file is, read from its header as llama.cpp reads it (no weights loaded).

llama.cpp tells the kinds apart in ``common_speculative_types_from_gguf`` (common/speculative.cpp), which it
applies to the *draft* file when ``--spec-type`` is not given:

- ``general.architecture == "dflash"``: ``draft-dspark`` when the file has a ``markov_w1.weight`` tensor, else
  ``draft-dflash``;
- any other architecture: ``draft-mtp`` when tensor ``blk.{block_count - 1}.nextn.eh_proj.weight`` exists
  (the last block is a NextN/MTP block; ``block_count`` counts the NextN blocks too), else nothing (a plain
  draft model).

That rule does not detect EAGLE-3 (common/preset.cpp: "TODO: handle eagle3- when it's supported by
common_speculative_types_from_gguf()"); llama.cpp's EAGLE-3 driver refuses a draft that does not report three
target layers ("draft model is not eagle3 (expected 3 extract layers, got N)"). spectui goes one step further
and calls a draft of architecture ``eagle3`` an EAGLE-3 head (``eagle3.target_layers`` must hold three ids,
as src/models/eagle3.cpp demands).

Everything here reads a bounded header with plain file reads: no llama.cpp, no numpy.
"""

from __future__ import annotations

import functools
import os
import struct
from dataclasses import dataclass, field

from ...contract.errors import SpectuiError

# bounds on what a header may make us read (a corrupt or hostile file gets a one-line error, never a hang)
MAX_HEADER_BYTES = 256 * 1024 * 1024  # a 262k-token vocabulary with merges is ~30 MB; tensors infos are small
MAX_STRING = 16 * 1024 * 1024  # one string (a chat template is the longest legitimate one)
MAX_KV = 1 << 20
MAX_TENSORS = 1 << 22
MAX_SMALL_ARRAY = 4096  # numeric arrays kept (target_layers, per-layer counts); longer ones are skipped

KIND_EAGLE3 = "eagle3"
KIND_MTP = "mtp"
KIND_DFLASH = "dflash"
KIND_DSPARK = "dspark"
KIND_MODEL = "model"  # a plain model: a separate draft (or a target without MTP layers)
# MTP heads that read the target's KV cache instead of keeping their own (llama.cpp keeps ``ctx_other`` for
# them: src/llama-context.cpp; common/speculative.cpp's is_mem_shared mode). spectui cannot draft with them.
SHARED_KV_ARCHS = ("gemma4-assistant",)

# GGUF value types (ggml/include/gguf.h: enum gguf_type)
_U8, _I8, _U16, _I16, _U32, _I32, _F32, _BOOL, _STR, _ARR, _U64, _I64, _F64 = range(13)
_SCALAR = {_U8: "<B", _I8: "<b", _U16: "<H", _I16: "<h", _U32: "<I", _I32: "<i", _F32: "<f", _BOOL: "<?",
           _U64: "<Q", _I64: "<q", _F64: "<d"}


def _shown(text: str) -> str:
    """Text from a file, safe to print on a terminal: quoted, non-ASCII and control characters escaped."""
    return ascii(text[:80] + ("..." if len(text) > 80 else ""))


class _Reader:
    def __init__(self, fh, path: str, size: int) -> None:
        self.fh, self.path, self.size, self.pos = fh, path, size, 0

    def bad(self, why: str) -> SpectuiError:
        return SpectuiError(f"not a readable GGUF header ({why}): {self.path}")

    def read(self, n: int) -> bytes:
        if n < 0 or self.pos + n > min(self.size, MAX_HEADER_BYTES):
            if self.pos + n > MAX_HEADER_BYTES:
                raise self.bad(f"header larger than {MAX_HEADER_BYTES >> 20} MiB")
            raise self.bad("truncated")
        b = self.fh.read(n)
        if len(b) != n:
            raise self.bad("truncated")
        self.pos += n
        return b

    def skip(self, n: int) -> None:
        if n < 0 or self.pos + n > min(self.size, MAX_HEADER_BYTES):
            raise self.bad("truncated" if self.pos + n <= MAX_HEADER_BYTES else "header too large")
        self.fh.seek(n, os.SEEK_CUR)
        self.pos += n

    def skip_strings(self, n: int) -> None:
        """Skip ``n`` length-prefixed strings, reading the file in blocks: a tokenizer's vocabulary and merges
        (300k strings for Qwen2.5) cost one loop over offsets, not three calls and a seek a string (which took
        seconds a file on a slow two-core machine, before a run's first token)."""
        buf, off, base = b"", 0, self.pos  # buf[0] is at file offset base; the file is at base + len(buf)
        for _ in range(n):
            if off + 8 > len(buf):
                buf, off, base = self._refill(buf, off, base, 8)
            (length,) = struct.unpack_from("<Q", buf, off)
            if length > MAX_STRING:
                raise self.bad(f"a string of {length} bytes")
            if off + 8 + length > len(buf):
                buf, off, base = self._refill(buf, off, base, 8 + length)
            off += 8 + length
        self.pos = base + off
        self.fh.seek(self.pos)

    def _refill(self, buf: bytes, off: int, base: int, need: int) -> tuple[bytes, int, int]:
        """The unread rest of ``buf`` and at least ``need`` bytes from it on (a block of 1 MiB or more), within
        the header's bound."""
        rest, base = buf[off:], base + off
        limit = min(self.size, MAX_HEADER_BYTES)
        if base + need > limit:
            raise self.bad("truncated" if base + need <= MAX_HEADER_BYTES else "header too large")
        more = self.fh.read(min(max(need - len(rest), 1 << 20), limit - base - len(rest)))
        buf = rest + more
        if len(buf) < need:
            raise self.bad("truncated")
        return buf, 0, base

    def unpack(self, fmt: str):
        return struct.unpack(fmt, self.read(struct.calcsize(fmt)))[0]

    def string(self, keep: bool = True) -> str:
        n = self.unpack("<Q")
        if n > MAX_STRING:
            raise self.bad(f"a string of {n} bytes")
        if not keep:
            self.skip(n)
            return ""
        return self.read(n).decode("utf-8", "replace")

    def value(self, vtype: int):
        if vtype in _SCALAR:
            return self.unpack(_SCALAR[vtype])
        if vtype == _STR:
            return self.string()
        if vtype == _ARR:
            etype = self.unpack("<I")
            n = self.unpack("<Q")
            if etype in _SCALAR:
                width = struct.calcsize(_SCALAR[etype])
                if n <= MAX_SMALL_ARRAY:
                    raw = self.read(width * n)
                    return list(struct.unpack("<" + _SCALAR[etype][1] * n, raw))
                self.skip(width * n)
                return None
            if etype == _STR:
                self.skip_strings(n)
                return None
            raise self.bad(f"array of unknown type {etype}")
        raise self.bad(f"value of unknown type {vtype}")


@dataclass(frozen=True)
class GGUFHeader:
    """What spectui needs from a GGUF header: its metadata (numeric arrays up to MAX_SMALL_ARRAY, no string
    arrays) and the names of its tensors."""

    path: str
    version: int
    metadata: dict = field(repr=False)
    tensor_names: frozenset = field(repr=False)

    @property
    def architecture(self) -> str:
        a = self.metadata.get("general.architecture")
        return a if isinstance(a, str) else ""

    def arch_key(self, name: str, default=None):
        return self.metadata.get(f"{self.architecture}.{name}", default)


def read_header(path: str) -> GGUFHeader:
    """Read ``path``'s GGUF header (bounded). Raises SpectuiError (one line) on anything but a GGUF file.
    A file read before, unchanged since (its size and modification time), is not read again: a run asks of
    its target and its draft more than once before it starts."""
    p = os.path.abspath(os.path.expanduser(str(path)))
    try:
        st = os.stat(p)
    except OSError as exc:
        raise SpectuiError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return _read_header(p, str(path), st.st_size, st.st_mtime_ns, st.st_ino)


@functools.lru_cache(maxsize=16)
def _read_header(p: str, path: str, size: int, _mtime_ns: int, _ino: int) -> GGUFHeader:
    try:
        fh = open(p, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise SpectuiError(f"cannot read {path}: {exc.strerror or exc}") from exc
    with fh:
        r = _Reader(fh, str(path), size)
        if r.read(4) != b"GGUF":
            raise SpectuiError(f"not a GGUF model (bad magic bytes): {path}")
        version = r.unpack("<I")
        if version not in (2, 3):
            raise SpectuiError(f"unsupported GGUF version {version}: {path}")
        n_tensors, n_kv = r.unpack("<Q"), r.unpack("<Q")
        if n_kv > MAX_KV or n_tensors > MAX_TENSORS:
            raise r.bad(f"{n_kv} keys, {n_tensors} tensors")
        meta: dict = {}
        for _ in range(n_kv):
            key = r.string()
            meta[key] = r.value(r.unpack("<I"))
        names = []
        for _ in range(n_tensors):
            names.append(r.string())
            n_dims = r.unpack("<I")
            if n_dims > 8:
                raise r.bad(f"a tensor with {n_dims} dimensions")
            r.skip(8 * n_dims + 4 + 8)  # ne[], type, offset
    return GGUFHeader(path=str(path), version=version, metadata=meta, tensor_names=frozenset(names))


@dataclass(frozen=True)
class SpecInfo:
    """A GGUF's speculative-decoding facts: ``kind`` is one of KIND_*."""

    path: str
    architecture: str
    kind: str
    block_count: int  # as written: trunk blocks + NextN blocks
    n_layer_nextn: int  # {arch}.nextn_predict_layers (0 when absent)
    n_embd: int = 0  # {arch}.embedding_length
    target_layer_ids: tuple[int, ...] = ()  # eagle3: the target layers whose hidden states the head fuses
    target_hidden_size: int = 0  # eagle3: the target's n_embd the head expects
    llama_cpp_types: tuple[str, ...] = ()  # what common_speculative_types_from_gguf says of it as a draft file

    @property
    def shared_kv(self) -> bool:
        """An MTP head that shares the target's KV cache (a gemma4 assistant)."""
        return self.architecture in SHARED_KV_ARCHS

    @property
    def n_layer(self) -> int:
        """The trunk's blocks (llama.cpp's n_layer: block_count - nextn_predict_layers)."""
        return self.block_count - self.n_layer_nextn


def llama_cpp_types_from_header(h: GGUFHeader) -> tuple[str, ...]:
    """common_speculative_types_from_gguf, line for line, on a header already read."""
    arch = h.architecture
    if not arch:
        return ()
    if arch != "dflash":
        block_count = h.arch_key("block_count")
        if not isinstance(block_count, int):
            return ()  # llama.cpp reads u32 0 here; blk.-1... never exists
        if f"blk.{block_count - 1}.nextn.eh_proj.weight" in h.tensor_names:
            return ("draft-mtp",)
        return ()
    return ("draft-dspark",) if "markov_w1.weight" in h.tensor_names else ("draft-dflash",)


def _int(v) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def spec_info(path: str) -> SpecInfo:
    """Read ``path``'s header and say which kind of drafter (or target) it is."""
    h = read_header(path)
    arch = h.architecture
    if not arch:
        raise SpectuiError(f"GGUF file has no general.architecture: {path}")
    bc, nextn, n_embd = (_int(h.arch_key(k)) for k in ("block_count", "nextn_predict_layers", "embedding_length"))
    types = llama_cpp_types_from_header(h)
    layers = h.arch_key("target_layers")
    layers = tuple(int(x) for x in layers) if isinstance(layers, list) else ()
    hidden = _int(h.arch_key("target_hidden_size"))
    if arch == "eagle3":
        kind = KIND_EAGLE3
    elif types == ("draft-mtp",):
        kind = KIND_MTP
    elif types == ("draft-dflash",):
        kind = KIND_DFLASH
    elif types == ("draft-dspark",):
        kind = KIND_DSPARK
    else:
        kind = KIND_MODEL
    return SpecInfo(path=str(path), architecture=arch, kind=kind, block_count=bc, n_layer_nextn=nextn, n_embd=n_embd,
                    target_layer_ids=layers, target_hidden_size=hidden, llama_cpp_types=types)


def check_eagle3_draft(path: str, target: SpecInfo | None = None) -> SpecInfo:
    """``--drafter eagle3``: the draft must be an ``eagle3`` head with three target layers (and, given the
    target's facts, layer ids the target has: 0..n_layer, n_layer being its last block's output)."""
    info = spec_info(path)
    if info.kind != KIND_EAGLE3:
        raise SpectuiError(
            f"--drafter eagle3 needs an EAGLE-3 head (architecture 'eagle3'), but the draft {path} is a "
            f"{_shown(info.architecture)} model" + (" with MTP layers (try --drafter mtp)" if info.kind == KIND_MTP
                                                   else ""))
    if len(info.target_layer_ids) != 3:
        raise SpectuiError(
            f"the EAGLE-3 head {path} lists {len(info.target_layer_ids)} target layers in eagle3.target_layers; "
            "llama.cpp needs exactly 3")
    if target is not None:
        bad = [i for i in info.target_layer_ids if not 0 <= i <= target.n_layer]
        if bad:
            raise SpectuiError(
                f"the EAGLE-3 head {path} reads target layers {list(info.target_layer_ids)}, but the target "
                f"{target.path} has {target.n_layer} (ids 0..{target.n_layer})")
        if info.target_hidden_size and target.n_embd and info.target_hidden_size != target.n_embd:
            raise SpectuiError(
                f"the EAGLE-3 head {path} expects a target of width {info.target_hidden_size} "
                f"(eagle3.target_hidden_size), but the target {target.path} is {target.n_embd} wide")
    return info


def check_mtp_target(path: str) -> SpecInfo:
    """``--drafter mtp``: the target must carry NextN/MTP layers that llama.cpp finds (its rule above)."""
    info = spec_info(path)
    if info.kind != KIND_MTP:
        has = f" (nextn_predict_layers {info.n_layer_nextn}, but no blk.{info.block_count - 1}.nextn.eh_proj)" \
            if info.n_layer_nextn else ""
        raise SpectuiError(
            f"--drafter mtp needs a target with MTP (NextN) layers, and the {_shown(info.architecture)} target "
            f"{path} has none{has}; convert the checkpoint with its MTP layers or use another drafter")
    return info


def check_not_shared_kv(info: SpecInfo) -> SpecInfo:
    """A head that shares the target's KV cache gets one line (exit 2): spectui's MtpHead keeps its own KV."""
    if info.shared_kv:
        raise SpectuiError(
            f"the draft {info.path} is a {_shown(info.architecture)} MTP head, which shares the target's KV cache; "
            "spectui drafts only with MTP heads that keep their own (llama.cpp runs it: --spec-type draft-mtp)")
    return info


def detect_drafter(target: str, draft: str | None) -> str | None:
    """The drafter kind to use when ``--drafter`` is not given, as llama.cpp picks ``--spec-type``: from the
    draft file (eagle3 by architecture, mtp/dflash/dspark by llama.cpp's rule, else a separate model: "model").
    Without a draft file llama.cpp drafts nothing unless told (``--spec-type draft-mtp``), so this returns
    None; ``spec_info(target).kind == KIND_MTP`` says whether ``--drafter mtp`` would work."""
    del target  # the rule reads the draft file only (common/arg.cpp)
    return check_not_shared_kv(spec_info(draft)).kind if draft is not None else None
