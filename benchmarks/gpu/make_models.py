"""Random-weight GGUF models in the shapes of Qwen2.5 7B (target) and 0.5B (draft), for benchmarks/gpu/run.sh.

Made on the GPU machine itself (nothing can be downloaded there, and 15 GB cannot travel): llama
architecture, f16 weights, the shapes of the released checkpoints (7B: embedding 3584, 28 blocks, 28/4 heads,
FFN 18944, 152,064 rows; 0.5B: 896, 24 blocks, 14/2 heads, FFN 4864, 151,936 rows) and a synthetic
SentencePiece-style vocabulary of 151,936 tokens (benchmarks/fastpair.py synthetic_tokenizer: the Qwen file
is not on that machine; only the size of a row matters for the loop's cost).

So that drafts are accepted part of the time, both models share one embedding-to-output map: the 0.5B's
embedding E and output O are random, the 7B's are E P and O P for a random P with orthonormal rows
(896 x 3584), so O P (E P)^T = O E^T: with small residual blocks both models' next token follows mostly the
current token the same way; the blocks' output projections (scale --block-scale) make them disagree.
Block weights are cut from one random pool (random offsets) instead of drawn one by one: 7.6 billion normal
draws would take minutes; random enough for timing.

usage: python benchmarks/gpu/make_models.py OUT_DIR [--block-scale 0.3] [--scale 1.0]
  --scale < 1 shrinks every width (a smoke test of this script on a small machine)
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fastpair import QWEN25_05B, QWEN25_7B, Shape, synthetic_tokenizer  # noqa: E402

N_TOKENS = 151936


class Pool:
    def __init__(self, seed: int, size: int = 1 << 24) -> None:
        self.rng = np.random.default_rng(seed)
        self.data = self.rng.standard_normal(size, dtype=np.float32).astype(np.float16)

    def mat(self, rows: int, cols: int, scale: float) -> np.ndarray:
        n = rows * cols
        start = int(self.rng.integers(0, len(self.data)))
        reps = -(-(start + n) // len(self.data))
        flat = np.tile(self.data, reps)[start : start + n] if reps > 1 else self.data[start : start + n]
        return (flat.reshape(rows, cols) * np.float16(scale)).astype(np.float16)


def write(path: Path, shape: Shape, tok, embd: np.ndarray, out: np.ndarray, pool: Pool, block_scale: float,
          name: str) -> None:
    import gguf

    e, hd = shape.n_embd, shape.n_embd // shape.n_head
    tokens, types = list(tok.tokens), list(tok.types)
    rows = embd.shape[0]
    if rows > len(tokens):
        tokens += [f"[PAD{i}]" for i in range(len(tokens), rows)]
        types += [5] * (rows - len(types))
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name(name)
    w.add_context_length(shape.ctx_train)
    w.add_embedding_length(e)
    w.add_block_count(shape.n_layer)
    w.add_feed_forward_length(shape.n_ff)
    w.add_head_count(shape.n_head)
    w.add_head_count_kv(shape.n_head_kv)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_dimension_count(hd)
    w.add_rope_freq_base(shape.rope_base)
    w.add_file_type(1)
    w.add_tokenizer_model(tok.model)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_scores(tok.scores + [-1e9] * (len(tokens) - len(tok.scores)))
    w.add_bos_token_id(tok.bos)
    w.add_eos_token_id(tok.eos)
    w.add_add_bos_token(tok.add_bos)
    w.add_add_eos_token(False)
    w.add_tensor("token_embd.weight", embd)
    w.add_tensor("output_norm.weight", np.ones(e, dtype=np.float32))
    w.add_tensor("output.weight", out)
    s_in = 1.0 / np.sqrt(e)
    for i in range(shape.n_layer):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", np.ones(e, dtype=np.float32))
        w.add_tensor(p + "attn_q.weight", pool.mat(e, e, s_in))
        w.add_tensor(p + "attn_k.weight", pool.mat(shape.n_head_kv * hd, e, s_in))
        w.add_tensor(p + "attn_v.weight", pool.mat(shape.n_head_kv * hd, e, s_in))
        w.add_tensor(p + "attn_output.weight", pool.mat(e, e, block_scale * s_in))
        w.add_tensor(p + "ffn_norm.weight", np.ones(e, dtype=np.float32))
        w.add_tensor(p + "ffn_gate.weight", pool.mat(shape.n_ff, e, s_in))
        w.add_tensor(p + "ffn_up.weight", pool.mat(shape.n_ff, e, s_in))
        w.add_tensor(p + "ffn_down.weight", pool.mat(e, shape.n_ff, block_scale / np.sqrt(shape.n_ff)))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--block-scale", type=float, default=0.3)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--layers", type=int, default=0, help="override the block count of both (smoke tests)")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()

    def scaled(s: Shape) -> Shape:
        if a.scale == 1.0 and not a.layers:
            return s
        f = a.scale
        heads = max(1, int(s.n_head * f))
        kv = max(1, min(heads, int(s.n_head_kv * max(f, 1 / s.n_head_kv))))
        while heads % kv:
            kv -= 1
        return replace(s, n_embd=heads * 64, n_head=heads, n_head_kv=kv, n_ff=max(64, int(s.n_ff * f)),
                       n_layer=a.layers or s.n_layer)

    t7, d05 = scaled(QWEN25_7B), scaled(QWEN25_05B)
    tok = synthetic_tokenizer(N_TOKENS)
    rng = np.random.default_rng(0)
    e_small = rng.standard_normal((d05.n_vocab, d05.n_embd), dtype=np.float32)
    o_small = rng.standard_normal((d05.n_vocab, d05.n_embd), dtype=np.float32) * np.float32(4 / np.sqrt(d05.n_embd))
    special = np.asarray(tok.types[: d05.n_vocab]) != 1
    o_small[special] = 0  # never end a run early
    q, _ = np.linalg.qr(rng.standard_normal((t7.n_embd, d05.n_embd), dtype=np.float32))  # 3584 x 896
    proj = q.T * np.float32(np.sqrt(t7.n_embd / d05.n_embd))  # orthonormal rows, scaled: same per-entry size
    pad = t7.n_vocab - d05.n_vocab
    e_big = np.concatenate([e_small @ proj, np.zeros((pad, t7.n_embd), np.float32)]).astype(np.float16)
    o_big = np.concatenate([(o_small @ proj) * np.float32(np.sqrt(d05.n_embd / t7.n_embd)),
                            np.zeros((pad, t7.n_embd), np.float32)]).astype(np.float16)
    print(f"embeddings ready ({time.time() - t0:.0f} s)", flush=True)
    write(a.out / "target-7b-shape.gguf", t7, tok, e_big, o_big, Pool(1), a.block_scale, "random Qwen2.5-7B shape")
    del e_big, o_big
    print(f"target written ({time.time() - t0:.0f} s)", flush=True)
    write(a.out / "draft-0.5b-shape.gguf", d05, tok, e_small.astype(np.float16), o_small.astype(np.float16),
          Pool(2), a.block_scale, "random Qwen2.5-0.5B shape")
    print(f"draft written ({time.time() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
