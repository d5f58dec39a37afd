"""The fast pair: a target whose decode takes a few milliseconds with a real 151,936-token vocabulary, and a
draft that is the same model with a little noise - the GPU-like regime (decode fast, a logit row still 152k
floats) made on a CPU.

``build_fast_pair(out_dir)`` writes ``fast-target.gguf`` and ``fast-draft.gguf`` (cached: a second call with
the same parameters returns the files at once) and returns their paths:

- llama architecture, embedding 256, 2 blocks, 4 heads (head size 64), FFN 768, random weights
  (a fixed seed); the embedding and output matrices in f16 (78 MB each: the output matmul is what a
  decode costs), the rest in f32;
- the real Qwen2.5 tokenizer (BPE, pre-tokenizer "qwen2", its 151,936 tokens, types and merges, BOS/EOS
  ids) copied from the Qwen2.5-Coder 0.5B GGUF the project already fetches
  (~/.cache/spectui/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf, or ``SPECTUI_MODELS``), so prompts
  tokenize as they would on Qwen;
- every token that is not a normal token (control tokens, end-of-generation, FIM markers) gets an
  all-zero output row: its logit is exactly 0 while the best random logits are far above, so random
  weights do not end a 256-token run early;
- the draft: the target's weights plus ``noise`` x N(0, 1) x each tensor's std (a second fixed stream),
  so it agrees with the target only part of the time (noise 0.05: about 75% of first drafts accepted at
  temperature 0).

``build_model(path, ...)`` writes one model of any shape (``benchmarks/gpu/`` makes the shapes of
Qwen2.5 7B and 0.5B with it); ``vocab="synthetic"`` makes a SentencePiece-style vocabulary of any size
without the Qwen file (for a machine that does not have it).

Needs the ``gguf`` package (in spectui's ``[test]`` extra). Run as a script to build the pair and print
its paths: ``.venv/bin/python benchmarks/fastpair.py [--out DIR] [--noise 0.5]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

MODELS = Path(os.environ.get("SPECTUI_MODELS", Path.home() / ".cache" / "spectui" / "models"))
QWEN_TOKENIZER_SOURCE = MODELS / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
CACHE = Path.home() / ".cache" / "spectui" / "fastpair"
FORMAT = 1  # bump when what build_model writes changes (the cache key includes it)

_NORMAL, _UNKNOWN, _CONTROL, _BYTE = 1, 2, 3, 6


@dataclass(frozen=True)
class Shape:
    n_embd: int = 256
    n_layer: int = 2
    n_head: int = 4
    n_head_kv: int = 4
    n_ff: int = 768
    n_vocab: int | None = None  # rows of the embedding/output matrices; None: the tokenizer's size
    ctx_train: int = 8192
    rope_base: float = 10000.0


FAST = Shape()
# The shapes of Qwen2.5 7B and 0.5B (config.json of the released checkpoints): for benchmarks/gpu/.
QWEN25_7B = Shape(n_embd=3584, n_layer=28, n_head=28, n_head_kv=4, n_ff=18944, n_vocab=152064, ctx_train=32768,
                  rope_base=1000000.0)
QWEN25_05B = Shape(n_embd=896, n_layer=24, n_head=14, n_head_kv=2, n_ff=4864, n_vocab=151936, ctx_train=32768,
                   rope_base=1000000.0)


@dataclass
class Tokenizer:
    model: str
    pre: str | None
    tokens: list[str]
    types: list[int]
    merges: list[str]
    scores: list[float] | None
    bos: int
    eos: int
    pad: int | None
    add_bos: bool


def qwen_tokenizer(source: Path = QWEN_TOKENIZER_SOURCE) -> Tokenizer:
    """The tokenizer fields of a Qwen GGUF (read with gguf's reader; no weights are touched)."""
    import gguf

    if not source.is_file():
        raise SystemExit(f"the Qwen tokenizer source {source} is missing (../shared/models/fetch-qwen-coder-pair.sh)")
    r = gguf.GGUFReader(str(source))

    def get(key: str, default=None):
        f = r.fields.get(key)
        return default if f is None else f.contents()

    return Tokenizer(
        model=get("tokenizer.ggml.model"), pre=get("tokenizer.ggml.pre"), tokens=list(get("tokenizer.ggml.tokens")),
        types=[int(t) for t in get("tokenizer.ggml.token_type")], merges=list(get("tokenizer.ggml.merges", [])),
        scores=None, bos=int(get("tokenizer.ggml.bos_token_id")), eos=int(get("tokenizer.ggml.eos_token_id")),
        pad=get("tokenizer.ggml.padding_token_id"), add_bos=bool(get("tokenizer.ggml.add_bos_token", False)),
    )


def synthetic_tokenizer(n_tokens: int) -> Tokenizer:
    """A SentencePiece-style vocabulary of exactly ``n_tokens`` (``<unk> <s> </s>``, 256 byte tokens, then
    made-up pieces): for a machine without the Qwen file, where only the vocabulary's size matters."""
    toks = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [_UNKNOWN, _CONTROL, _CONTROL] + [_BYTE] * 256
    letters = "abcdefghijklmnopqrstuvwxyz"
    i = 0
    while len(toks) < n_tokens:
        s, j = "", i
        while True:
            s += letters[j % 26]
            j //= 26
            if j == 0:
                break
        toks.append("\u2581" + s)
        types.append(_NORMAL)
        i += 1
    scores = [0.0] * 259 + [-float(k) for k in range(n_tokens - 259)]
    return Tokenizer(model="llama", pre=None, tokens=toks, types=types, merges=[], scores=scores, bos=1, eos=2,
                     pad=None, add_bos=True)


def _weights(shape: Shape, n_rows: int, types: list[int], seed: int, noise: float, noise_seed: int,
             out_scale: float) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    nrng = np.random.default_rng(noise_seed) if noise else None
    hd = shape.n_embd // shape.n_head

    def mat(out_dim: int, in_dim: int, scale: float | None = None, dtype=np.float32) -> np.ndarray:
        s = scale if scale is not None else 1.0 / np.sqrt(in_dim)
        m = rng.standard_normal((out_dim, in_dim), dtype=np.float32)
        if nrng is not None:  # the draft: the same base stream plus noise of the given share of its std
            m += np.float32(noise) * nrng.standard_normal((out_dim, in_dim), dtype=np.float32)
        m *= np.float32(s)
        return m.astype(dtype, copy=False)

    w: dict[str, np.ndarray] = {}
    e = shape.n_embd
    w["token_embd.weight"] = mat(n_rows, e, 1.0, np.float16)
    w["output_norm.weight"] = np.ones(e, dtype=np.float32)
    out = mat(n_rows, e, out_scale, np.float16)
    special = np.ones(n_rows, dtype=bool)
    special[: len(types)] = np.asarray(types) != _NORMAL
    out[special] = 0  # control / end-of-generation / padding rows: logit exactly 0, never chosen
    w["output.weight"] = out
    for i in range(shape.n_layer):
        p = f"blk.{i}."
        w[p + "attn_norm.weight"] = np.ones(e, dtype=np.float32)
        w[p + "attn_q.weight"] = mat(e, e)
        w[p + "attn_k.weight"] = mat(shape.n_head_kv * hd, e)
        w[p + "attn_v.weight"] = mat(shape.n_head_kv * hd, e)
        w[p + "attn_output.weight"] = mat(e, e)
        w[p + "ffn_norm.weight"] = np.ones(e, dtype=np.float32)
        w[p + "ffn_gate.weight"] = mat(shape.n_ff, e)
        w[p + "ffn_up.weight"] = mat(shape.n_ff, e)
        w[p + "ffn_down.weight"] = mat(e, shape.n_ff)
    return w


def build_model(path: str | Path, tok: Tokenizer, shape: Shape = FAST, seed: int = 0, noise: float = 0.0,
                noise_seed: int = 12345, out_scale: float | None = None, name: str | None = None) -> Path:
    """Write one llama-architecture GGUF with random weights and the given tokenizer; returns ``path``.

    ``out_scale``: std of the output matrix; default 4 / sqrt(n_embd) (logits of std about 4: a few tokens
    stand out, as in a trained model's confident rows)."""
    import gguf

    path = Path(path)
    n_rows = shape.n_vocab or len(tok.tokens)
    tokens, types = list(tok.tokens), list(tok.types)
    if n_rows > len(tokens):  # padded rows, as checkpoints pad (Qwen2.5 7B: 152,064 rows)
        tokens += [f"[PAD{i}]" for i in range(len(tokens), n_rows)]
        types += [5] * (n_rows - len(types))  # unused
    scale = out_scale if out_scale is not None else 4.0 / np.sqrt(shape.n_embd)
    weights = _weights(shape, n_rows, types, seed, noise, noise_seed, scale)
    tmp = path.with_name(path.name + ".tmp")  # written beside, then renamed: never a half model in the cache
    w = gguf.GGUFWriter(str(tmp), "llama")
    w.add_name(name or path.stem)
    w.add_context_length(shape.ctx_train)
    w.add_embedding_length(shape.n_embd)
    w.add_block_count(shape.n_layer)
    w.add_feed_forward_length(shape.n_ff)
    w.add_head_count(shape.n_head)
    w.add_head_count_kv(shape.n_head_kv)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_dimension_count(shape.n_embd // shape.n_head)
    w.add_rope_freq_base(shape.rope_base)
    w.add_file_type(1)  # MOSTLY_F16 (the big matrices)
    w.add_tokenizer_model(tok.model)
    if tok.pre:
        w.add_tokenizer_pre(tok.pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    if tok.scores is not None:
        w.add_token_scores(tok.scores + [-1e9] * (len(tokens) - len(tok.scores)))
    if tok.merges:
        w.add_token_merges(tok.merges)
    w.add_bos_token_id(tok.bos)
    w.add_eos_token_id(tok.eos)
    if tok.pad is not None:
        w.add_pad_token_id(int(tok.pad))
    w.add_add_bos_token(tok.add_bos)
    w.add_add_eos_token(False)
    for k, v in weights.items():
        w.add_tensor(k, v)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, path)
    return path


def build_fast_pair(out_dir: str | Path | None = None, noise: float = 0.05, seed: int = 0,
                    shape: Shape = FAST) -> tuple[Path, Path]:
    """(target, draft) GGUF paths of the fast pair, built once per parameter set under ``out_dir``
    (default ~/.cache/spectui/fastpair/<key>/)."""
    params = {"format": FORMAT, "noise": noise, "seed": seed, "shape": asdict(shape), "tok": "qwen2.5"}
    key = hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:12]
    d = Path(out_dir) if out_dir is not None else CACHE / key
    target, draft = d / "fast-target.gguf", d / "fast-draft.gguf"
    if target.is_file() and draft.is_file():
        return target, draft
    d.mkdir(parents=True, exist_ok=True)
    tok = qwen_tokenizer()
    build_model(target, tok, shape, seed=seed, name="fast-target (random, Qwen2.5 vocabulary)")
    build_model(draft, tok, shape, seed=seed, noise=noise, name=f"fast-draft (target + noise {noise:g})")
    (d / "params.json").write_text(json.dumps(params, indent=1) + "\n")
    return target, draft


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="folder (default: the cache, keyed by the parameters)")
    ap.add_argument("--noise", type=float, default=0.05)
    a = ap.parse_args()
    t, d = build_fast_pair(a.out, noise=a.noise)
    print(t)
    print(d)


if __name__ == "__main__":
    main()
