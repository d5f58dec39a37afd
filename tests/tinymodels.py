"""Tiny GGUF models for tests, built with gguf's GGUFWriter (no downloads, no stand-ins).

A llama-architecture model with embedding 64, 2 blocks, 4 heads, FFN 128, float32 random weights and a
hand-made SentencePiece-style vocabulary (``<unk>``, ``<s>``, ``</s>``, the 256 byte tokens, then word
pieces). About 0.2-0.5 MB; llama.cpp loads and decodes it in milliseconds.

``build_model(path, seed=0, noise=0.0, vocab=None, ...)``:

- ``seed`` picks the base weights; two models with the same seed and ``noise=0`` are identical (a draft
  that is always accepted at temperature 0).
- ``noise`` adds ``noise * N(0, 1) * std`` (a second, fixed random stream) to every weight of the
  ``seed`` model: a draft that agrees with the target only part of the time.
- ``vocab``: a list of token texts (default ``default_vocab()``); ``other_vocab()`` differs in one text.
- ``eos_logit``: ``"never"`` gives end-of-sequence an all-zero output row (logit exactly 0, so it is
  practically never the argmax and rarely sampled - good for tests that need length); ``"often"`` gives
  it a large row so greedy runs end on it within a few dozen tokens (for the stop-reason test).

``shared_model(folder, filename, **build_model_kwargs)``: the same model, built once into ``folder`` (the
fixtures of tests/conftest.py pass one folder for a whole test run, shared by every pytest-xdist worker):
under ``folder/<key>/filename``, where the key hashes the arguments and this file's source, so that two
different models never share a path. The first process to ask builds it under a file lock and renames it into
place whole; the others wait for the lock and find it there.

``shared_folder(folder, name, key, build)``: the same for a folder of models another builder writes (the
drafting heads of benchmarks/make_spec_models.py): ``build(path)`` fills a new folder once per ``folder``, under
``folder/<name>-<hash of key>``, renamed into place whole; its files are for reading only.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from pathlib import Path
from typing import Callable

import numpy as np

N_EMBD = 64
N_LAYER = 2
N_HEAD = 4
N_HEAD_KV = 4
N_FF = 128
N_CTX_TRAIN = 2048

WORDS = (
    "the a an of to in and is it that for on with as was at by be this are or from not but have "
    "hash map key value table bucket chain probe slot list node array index load factor size grow "
    "collision collisions handles handle step explanation how when each two same find store entry "
    "code python function return def class if else while loop print true false none data time"
).split()

# A small chat template in the style of instruct checkpoints: BOS first (dropped when rendering, as llama.cpp does,
# because the tokenizer adds BOS itself), one line per message, then the assistant's cue.
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'system' %}system: {{ m['content'] }}\n"
    "{% elif m['role'] == 'user' %}the user: {{ m['content'] }}\n{% else %}the answer: {{ m['content'] }}\n"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}the answer:{% endif %}"
)

# token types (llama.cpp's llama_token_type): 1 normal, 2 unknown, 3 control, 6 byte
_NORMAL, _UNKNOWN, _CONTROL, _UNUSED, _BYTE = 1, 2, 3, 5, 6


def default_vocab() -> list[str]:
    """``<unk> <s> </s>``, 256 byte tokens, then word pieces (with and without the '▁' space marker)."""
    toks = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    # SentencePiece merges need every intermediate piece: add all prefixes of each word piece
    for w in WORDS:
        full = "\u2581" + w
        toks += [full[:i] for i in range(2, len(full) + 1)]
    for w in WORDS[:40]:
        toks += [w[:i] for i in range(2, len(w) + 1)]
    toks += ["\u2581", "\u2581\u2581", ".", ",", "\n"]
    # dedupe while keeping order
    seen: set[str] = set()
    out = []
    for t in toks:
        if t not in seen:
            seen.add(t)
            out.append(t)
    return out


def other_vocab() -> list[str]:
    """Same size and specials as ``default_vocab()``, one word piece different (id 300)."""
    v = default_vocab()
    v[300] = "\u2581zebra"
    return v


def _token_types(vocab: list[str]) -> list[int]:
    types = []
    for t in vocab:
        if t == "<unk>":
            types.append(_UNKNOWN)
        elif t in ("<s>", "</s>"):
            types.append(_CONTROL)
        elif len(t) == 6 and t.startswith("<0x") and t.endswith(">"):
            types.append(_BYTE)
        elif t.startswith("[PAD"):
            types.append(_UNUSED)
        else:
            types.append(_NORMAL)
    return types


def _weights(seed: int, n_vocab: int, eos_logit: str, out_scale: float,
             n_layer: int = N_LAYER) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    hd = N_EMBD // N_HEAD

    def mat(out_dim: int, in_dim: int, scale: float | None = None) -> np.ndarray:
        s = scale if scale is not None else 1.0 / np.sqrt(in_dim)
        return (rng.standard_normal((out_dim, in_dim)) * s).astype(np.float32)

    w: dict[str, np.ndarray] = {}
    w["token_embd.weight"] = mat(n_vocab, N_EMBD, 1.0)
    w["output_norm.weight"] = np.ones(N_EMBD, dtype=np.float32)
    out = mat(n_vocab, N_EMBD, out_scale)
    if eos_logit == "never":
        out[2] = 0.0
    elif eos_logit == "often":
        out[2] = out[3:].mean(axis=0) + 2.0 * out[259 % n_vocab]
    w["output.weight"] = out
    for i in range(n_layer):
        p = f"blk.{i}."
        w[p + "attn_norm.weight"] = np.ones(N_EMBD, dtype=np.float32)
        w[p + "attn_q.weight"] = mat(N_EMBD, N_EMBD)
        w[p + "attn_k.weight"] = mat(N_HEAD_KV * hd, N_EMBD)
        w[p + "attn_v.weight"] = mat(N_HEAD_KV * hd, N_EMBD)
        w[p + "attn_output.weight"] = mat(N_EMBD, N_EMBD)
        w[p + "ffn_norm.weight"] = np.ones(N_EMBD, dtype=np.float32)
        w[p + "ffn_gate.weight"] = mat(N_FF, N_EMBD)
        w[p + "ffn_up.weight"] = mat(N_FF, N_EMBD)
        w[p + "ffn_down.weight"] = mat(N_EMBD, N_FF)
    return w


def add_small_hparams(w, n_embd: int, n_ff: int, n_head: int, n_head_kv: int, head_dim: int) -> None:
    """The one-block hyperparameters a small drafting model's GGUF writes (an EAGLE-3 head, a DFlash/DSpark draft:
    benchmarks/make_spec_models.py, make_block_models.py), F32 weights."""
    w.add_context_length(N_CTX_TRAIN)
    w.add_embedding_length(n_embd)
    w.add_block_count(1)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(head_dim)
    w.add_file_type(0)


def build_model(
    path: str | Path,
    seed: int = 0,
    noise: float = 0.0,
    vocab: list[str] | None = None,
    eos_logit: str = "never",
    out_scale: float = 0.35,
    name: str | None = None,
    noise_seed: int = 12345,
    pad: int = 0,
    add_bos: bool = True,
    chat_template: str | None = None,
    n_layer: int = N_LAYER,
    transform=None,
) -> Path:
    """Write a tiny llama GGUF to ``path`` and return the path (see the module docstring).

    ``pad`` appends that many ``[PAD<id>]`` tokens (type unused) with zero rows in the embedding and
    output matrices, as checkpoints pad their vocabulary (Qwen2.5 7B: 152,064 rows for 151,665 tokens);
    the other weights are those of the unpadded model. ``chat_template`` writes ``tokenizer.chat_template`` (a
    Jinja chat template, as instruct checkpoints carry; ``CHAT_TEMPLATE`` is a small one). ``n_layer``: the
    number of blocks (the first ``N_LAYER`` blocks' weights do not depend on it). ``transform``: a function
    that edits the weight dict (name -> array) in place before it is written."""
    import gguf  # test-only dependency

    path = Path(path)
    vocab = list(vocab) if vocab is not None else default_vocab()
    n_vocab = len(vocab)
    weights = _weights(seed, n_vocab, eos_logit, out_scale, n_layer)
    if noise:
        nrng = np.random.default_rng(noise_seed)
        for k, v in weights.items():
            if k.endswith("norm.weight"):
                continue
            std = float(v.std()) or 1.0
            weights[k] = (v + noise * std * nrng.standard_normal(v.shape)).astype(np.float32)
    if pad:
        vocab += [f"[PAD{n_vocab + i}]" for i in range(pad)]
        for k in ("token_embd.weight", "output.weight"):
            weights[k] = np.concatenate([weights[k], np.zeros((pad, N_EMBD), dtype=np.float32)])

    if transform is not None:
        transform(weights)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name(name or f"tiny-s{seed}-n{noise:g}")
    w.add_context_length(N_CTX_TRAIN)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(N_EMBD // N_HEAD)
    w.add_file_type(0)  # ALL_F32
    add_tokenizer(w, vocab, add_bos)
    if chat_template is not None:
        w.add_chat_template(chat_template)
    write_tensors(w, weights)
    return path


def add_tokenizer(w, vocab: list[str], add_bos: bool = True) -> None:
    """The tiny models' tokenizer metadata on a GGUFWriter (byte tokens first, then the words; bos 1, eos 2)."""
    w.add_tokenizer_model("llama")
    w.add_token_list(vocab)
    w.add_token_scores([0.0] * 259 + [-float(i) for i in range(len(vocab) - 259)])
    w.add_token_types(_token_types(vocab))
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(add_bos)
    w.add_add_eos_token(False)


def write_tensors(w, tensors) -> None:
    """Add the tensors (name -> array) to a GGUFWriter and write the file: header, metadata, tensors; closed."""
    for k, v in tensors.items():
        w.add_tensor(k, v)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


@contextlib.contextmanager
def _locked(lock: Path):
    with open(lock, "a") as fh:
        try:
            import fcntl
        except ImportError:  # not POSIX: the atomic rename alone keeps the file whole; a model may be built twice
            yield
            return
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def shared_model(folder: str | Path, filename: str, **kwargs) -> Path:
    """``build_model(folder/<key>/filename, **kwargs)``, built at most once per folder (see the module docstring).
    The key is the arguments' repr: a callable (``transform``) has none that holds across processes."""
    if any(callable(v) for v in kwargs.values()):
        raise TypeError("shared_model: a callable argument has no stable key; call build_model")
    spec = repr(sorted(kwargs.items())).encode() + Path(__file__).read_bytes()
    where = Path(folder) / hashlib.sha256(spec).hexdigest()[:16]
    where.mkdir(parents=True, exist_ok=True)
    path = where / filename
    with _locked(where / (filename + ".lock")):
        if not path.exists():
            part = where / f".{filename}.{os.getpid()}.part"
            build_model(part, **kwargs)
            os.replace(part, path)
    return path


def shared_folder(folder: str | Path, name: str, key: bytes, build: Callable[[Path], object]) -> Path:
    """``folder/<name>-<hash of key>``, a folder that ``build(path)`` fills, built at most once per ``folder``
    (under a file lock, into a temporary folder renamed into place whole). ``key`` must change with whatever the
    build writes: its arguments and its builders' sources."""
    where = Path(folder) / f"{name}-{hashlib.sha256(key).hexdigest()[:16]}"
    where.parent.mkdir(parents=True, exist_ok=True)
    with _locked(where.parent / f"{where.name}.lock"):
        if not where.exists():
            part = where.parent / f".{where.name}.{os.getpid()}.part"
            shutil.rmtree(part, ignore_errors=True)
            build(part)
            os.replace(part, where)
    return where
