"""Write tiny GGUFs of the two drafter kinds llama.cpp runs beside a target: an EAGLE-3 head and MTP layers.

    python benchmarks/make_spec_models.py DIR

writes, with gguf's GGUFWriter and small random float32 weights (no downloads):

- ``DIR/eagle3-target.gguf``: the tests' tiny llama-architecture target (tests/tinymodels.py, seed 0:
  embedding 64, 4 heads, FFN 128, the tests' SentencePiece-style vocabulary), with 4 blocks (the tiny models'
  2 plus two more), so that three distinct block inputs exist for the head to read.
- ``DIR/eagle3-draft.gguf``: an ``eagle3``-architecture head for it: one decoder block whose attention
  takes [norm(token embedding), norm(fused features)] (2 x 64 wide), an ``fc`` that fuses the target's
  hidden states from the three layers in ``eagle3.target_layers`` (default [1, 2, 3]: the inputs of blocks
  1, 2 and 3, i.e. the outputs of blocks 0, 1 and 2, as EAGLE-3 reads low, middle and high layers),
  ``eagle3.target_hidden_size`` 64, its own ``token_embd`` and ``output`` (so it loads without the target's
  context) and the same vocabulary. Id n_layer (the last block's output) is legal in llama.cpp's EAGLE-3
  driver but the llama graph never produces it (src/models/llama.cpp sets t_layer_inp only, never
  t_h_nextn), so the default avoids it.
- ``DIR/mtp-target.gguf``: a ``mimo2``-architecture target (dense FFN, plain attention; block 0 is a
  sliding-window layer whose window is the whole training context, as llama.cpp requires one) with 2 trunk
  blocks and one appended NextN/MTP block (``mimo2.block_count`` 3, ``mimo2.nextn_predict_layers`` 1,
  ``blk.2.nextn.{eh_proj,enorm,hnorm}``). Of the architectures whose graph this llama.cpp builds in an MTP
  context (LLM_GRAPH_TYPE_DECODER_MTP: qwen35, qwen35moe, qwen3next, glm4-moe, deepseek2, step35, mimo2,
  ...), mimo2 is the one whose trunk and MTP block can both be a plain dense transformer (no MoE router, no
  MLA, no recurrent layers): src/models/mimo2.cpp.
  The MTP layers live in the target file itself, so no sidecar is written.

Prints one line per file. ``--eagle3-layers A,B,C`` changes the target layer ids the head records;
``--mtp-agree NOISE`` also writes ``DIR/mtp-agree-target.gguf``, an MTP target whose block agrees with it
(accepted drafts, for the tests of what follows an acceptance); ``--mtp-heads N`` also writes
``DIR/mtp-chain-target.gguf``, the same mimo2 target with N chained NextN blocks (``nextn_predict_layers`` N,
``blk.2..{N+1}.nextn.*``), and with ``--mtp-agree`` its agreeing variant ``DIR/mtp-chain-agree-target.gguf``;
``--dflash-agree A`` / ``--dspark-agree A`` also write ``DIR/dflash-agree-{target,draft}.gguf`` /
``DIR/dspark-agree-{target,draft}.gguf``, a block drafter's pair (benchmarks/make_block_models.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import tinymodels  # noqa: E402 - the tests' tiny-model helpers (vocabulary, token types, sizes)

sys.path.insert(0, str(ROOT / "benchmarks"))
import make_block_models  # noqa: E402 - the block drafters' pairs

N_EMBD = tinymodels.N_EMBD
N_HEAD = tinymodels.N_HEAD
N_HEAD_KV = tinymodels.N_HEAD_KV
N_FF = tinymodels.N_FF
N_CTX_TRAIN = tinymodels.N_CTX_TRAIN

EAGLE3_TARGET_BLOCKS = 4
EAGLE3_LAYERS = (1, 2, 3)  # inputs of blocks 1..3 of the 4-block target (outputs of blocks 0..2)
MTP_TRUNK_LAYERS = 2
MTP_NEXTN_LAYERS = 1


def _mat(rng, out_dim: int, in_dim: int, scale: float | None = None) -> np.ndarray:
    """A (out_dim, in_dim) float32 matrix: GGUF's ne = {in_dim, out_dim}, llama.cpp's {n_in, n_out}."""
    s = scale if scale is not None else 1.0 / np.sqrt(in_dim)
    return (rng.standard_normal((out_dim, in_dim)) * s).astype(np.float32)


def _ones(n: int) -> np.ndarray:
    return np.ones(n, dtype=np.float32)


def build_eagle3_target(path: str | Path, seed: int = 0) -> Path:
    """The target an EAGLE-3 head drafts for: the tests' tiny llama model (eos never the argmax)."""
    return tinymodels.build_model(path, seed=seed, name="tiny-eagle3-target", n_layer=EAGLE3_TARGET_BLOCKS)


def build_eagle3_draft(path: str | Path, seed: int = 7, target_layers=EAGLE3_LAYERS,
                       n_embd_target: int = N_EMBD, out_scale: float = 0.35, transform=None) -> Path:
    """An ``eagle3`` draft head (src/models/eagle3.cpp) for a target of width ``n_embd_target``;
    ``transform`` edits the tensor dict in place before it is written."""
    import gguf  # noqa: PLC0415 - a test/benchmark dependency

    path = Path(path)
    vocab = tinymodels.default_vocab()
    n_vocab = len(vocab)
    layers = [int(x) for x in target_layers]
    rng = np.random.default_rng(seed)
    hd = N_EMBD // N_HEAD
    n_in = 2 * N_EMBD  # attention input: [norm(token embedding), norm(g)]
    t: dict[str, np.ndarray] = {
        "token_embd.weight": _mat(rng, n_vocab, N_EMBD, 1.0),
        "fc.weight": _mat(rng, N_EMBD, len(layers) * n_embd_target),
        "output_norm.weight": _ones(N_EMBD),
        "output.weight": _mat(rng, n_vocab, N_EMBD, out_scale),
        "blk.0.attn_norm.weight": _ones(N_EMBD),
        "blk.0.attn_norm_2.weight": _ones(N_EMBD),
        "blk.0.attn_q.weight": _mat(rng, N_HEAD * hd, n_in),
        "blk.0.attn_k.weight": _mat(rng, N_HEAD_KV * hd, n_in),
        "blk.0.attn_v.weight": _mat(rng, N_HEAD_KV * hd, n_in),
        "blk.0.attn_output.weight": _mat(rng, N_EMBD, N_HEAD * hd),
        "blk.0.ffn_norm.weight": _ones(N_EMBD),
        "blk.0.ffn_gate.weight": _mat(rng, N_FF, N_EMBD),
        "blk.0.ffn_up.weight": _mat(rng, N_FF, N_EMBD),
        "blk.0.ffn_down.weight": _mat(rng, N_EMBD, N_FF),
    }
    t["output.weight"][2] = 0.0  # end-of-sequence never the head's argmax either (as the target's)
    if transform is not None:
        transform(t)
    w = gguf.GGUFWriter(str(path), "eagle3")
    w.add_name("tiny-eagle3-draft")
    tinymodels.add_small_hparams(w, N_EMBD, N_FF, N_HEAD, N_HEAD_KV, hd)
    # the keys src/models/eagle3.cpp reads (src/llama-arch.cpp: LLM_KV_TARGET_LAYERS, LLM_KV_TARGET_HIDDEN_SIZE)
    w.add_array("eagle3.target_layers", layers)
    w.add_uint32("eagle3.target_hidden_size", n_embd_target)
    tinymodels.add_tokenizer(w, vocab)
    tinymodels.write_tensors(w, t)
    return path


def build_mtp_target(path: str | Path, seed: int = 0, out_scale: float = 0.35, agree: float | None = None,
                     n_nextn: int = MTP_NEXTN_LAYERS) -> Path:
    """A ``mimo2`` target with ``MTP_TRUNK_LAYERS`` dense blocks and ``n_nextn`` NextN blocks (more than one:
    chained heads, block ``MTP_TRUNK_LAYERS + i`` drafting position i, as step35's; mimo2's MTP graph selects
    the block with ``nextn_layer_offset``).

    ``agree`` (a noise level) writes a pair whose MTP block agrees with the target: every block's attention
    output and FFN down projection are zero (each block passes its input through, so the target's next token
    depends on the current token only), and the NextN block's ``eh_proj`` selects the normalized token
    embedding plus ``agree`` times random noise. At 0 every draft is accepted; a little noise gives
    partial acceptance. Random weights are never accepted: this is what tests the paths after an acceptance."""
    import gguf  # noqa: PLC0415

    path = Path(path)
    vocab = tinymodels.default_vocab()
    n_vocab = len(vocab)
    rng = np.random.default_rng(seed)
    hd = N_EMBD // N_HEAD
    if n_nextn < 1:
        raise ValueError(f"an MTP target needs at least one NextN block, not {n_nextn}")
    n_all = MTP_TRUNK_LAYERS + n_nextn
    t: dict[str, np.ndarray] = {
        "token_embd.weight": _mat(rng, n_vocab, N_EMBD, 1.0),
        "output_norm.weight": _ones(N_EMBD),
        "output.weight": _mat(rng, n_vocab, N_EMBD, out_scale),
    }
    t["output.weight"][2] = 0.0
    for i in range(n_all):
        p = f"blk.{i}."
        t[p + "attn_norm.weight"] = _ones(N_EMBD)
        if i >= MTP_TRUNK_LAYERS:  # mimo2's MTP graph asserts a fused QKV (src/models/mimo2.cpp)
            t[p + "attn_qkv.weight"] = _mat(rng, (N_HEAD + 2 * N_HEAD_KV) * hd, N_EMBD)
        else:
            t[p + "attn_q.weight"] = _mat(rng, N_HEAD * hd, N_EMBD)
            t[p + "attn_k.weight"] = _mat(rng, N_HEAD_KV * hd, N_EMBD)
            t[p + "attn_v.weight"] = _mat(rng, N_HEAD_KV * hd, N_EMBD)
        t[p + "attn_output.weight"] = _mat(rng, N_EMBD, N_HEAD * hd)
        t[p + "ffn_norm.weight"] = _ones(N_EMBD)
        t[p + "ffn_gate.weight"] = _mat(rng, N_FF, N_EMBD)
        t[p + "ffn_up.weight"] = _mat(rng, N_FF, N_EMBD)
        t[p + "ffn_down.weight"] = _mat(rng, N_EMBD, N_FF)
        if agree is not None:
            t[p + "attn_output.weight"][:] = 0.0
            t[p + "ffn_down.weight"][:] = 0.0
        if i >= MTP_TRUNK_LAYERS:
            t[p + "nextn.eh_proj.weight"] = _mat(rng, N_EMBD, 2 * N_EMBD)
            if agree is not None:
                sel = np.concatenate([np.eye(N_EMBD), np.zeros((N_EMBD, N_EMBD))], axis=1)
                # (the first NextN block's noise as before; each further block its own draw)
                noise = np.random.default_rng(seed + 1 + i - MTP_TRUNK_LAYERS).standard_normal(sel.shape) \
                    / np.sqrt(2 * N_EMBD)
                t[p + "nextn.eh_proj.weight"] = (sel + agree * noise).astype(np.float32)
            t[p + "nextn.enorm.weight"] = _ones(N_EMBD)
            t[p + "nextn.hnorm.weight"] = _ones(N_EMBD)
            t[p + "nextn.shared_head_norm.weight"] = _ones(N_EMBD)
    w = gguf.GGUFWriter(str(path), "mimo2")
    chain = "" if n_nextn == 1 else f"-chain{n_nextn}"
    w.add_name(f"tiny-mtp{chain}-target" if agree is None else f"tiny-mtp{chain}-agree-{agree:g}")
    w.add_context_length(N_CTX_TRAIN)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(n_all)  # block_count counts the NextN blocks too (n_layer = block_count - nextn)
    w.add_uint32("mimo2.nextn_predict_layers", n_nextn)
    w.add_feed_forward_length(N_FF)
    w.add_uint32("mimo2.expert_feed_forward_length", N_FF)  # read unconditionally by mimo2's loader
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(hd)
    # llama.cpp asserts at least one sliding-window layer for mimo2 (llama-model.cpp: GGML_ASSERT(is_swa_any()));
    # block 0 is one, with a window of the whole training context, so it attends exactly as a full layer does
    w.add_uint32("mimo2.attention.sliding_window", N_CTX_TRAIN)
    w.add_array("mimo2.attention.sliding_window_pattern", [1] + [0] * (n_all - 1))
    w.add_file_type(0)
    tinymodels.add_tokenizer(w, vocab)
    tinymodels.write_tensors(w, t)
    return path


def build_eagle3_agreeing(out_dir: str | Path, noise: float) -> tuple[Path, Path]:
    """A degenerate EAGLE-3 pair that is accepted: ``eagle3-agree-target.gguf`` has one embedding row for every
    token and blocks that pass their input through, so it always predicts the same token; the head's ``fc``
    takes the first feature (that embedding), its attention output is zero and its output matrix is the
    target's, so its first step predicts that token too. Its FFN (down projection ``noise`` times random)
    moves the state fed back at each further step, so at a small noise the later steps drift off and are
    rejected: every pass then accepts the same number of drafts, between 0 and k."""
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    kept: dict[str, np.ndarray] = {}

    def flatten(w: dict) -> None:
        w["token_embd.weight"][:] = w["token_embd.weight"][300]
        for name, arr in w.items():
            if name.endswith(("attn_output.weight", "ffn_down.weight")):
                arr[:] = 0.0
        kept["output.weight"] = w["output.weight"].copy()

    target = tinymodels.build_model(d / "eagle3-agree-target.gguf", seed=0, name="tiny-eagle3-agree-target",
                                    n_layer=EAGLE3_TARGET_BLOCKS, transform=flatten)

    def follow(t: dict) -> None:
        t["fc.weight"][:] = 0.0
        t["fc.weight"][:, :N_EMBD] = np.eye(N_EMBD, dtype=np.float32)
        t["output.weight"] = kept["output.weight"]
        t["blk.0.attn_output.weight"][:] = 0.0
        t["blk.0.ffn_down.weight"] *= np.float32(noise)

    head = build_eagle3_draft(d / "eagle3-agree-draft.gguf", transform=follow)
    return target, head


def build_all(out_dir: str | Path, eagle3_layers=EAGLE3_LAYERS, mtp_agree: float | None = None,
              eagle3_agree: float | None = None, mtp_heads: int | None = None,
              block_agree: dict[str, float] | None = None) -> dict[str, Path]:
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    out = {
        "eagle3-target": build_eagle3_target(d / "eagle3-target.gguf"),
        "eagle3-draft": build_eagle3_draft(d / "eagle3-draft.gguf", target_layers=eagle3_layers),
        "mtp-target": build_mtp_target(d / "mtp-target.gguf"),
    }
    if mtp_agree is not None:
        out["mtp-agree-target"] = build_mtp_target(d / "mtp-agree-target.gguf", agree=mtp_agree)
    if eagle3_agree is not None:
        out["eagle3-agree-target"], out["eagle3-agree-draft"] = build_eagle3_agreeing(d, eagle3_agree)
    if mtp_heads is not None:
        out["mtp-chain-target"] = build_mtp_target(d / "mtp-chain-target.gguf", n_nextn=mtp_heads)
        if mtp_agree is not None:
            out["mtp-chain-agree-target"] = build_mtp_target(d / "mtp-chain-agree-target.gguf", agree=mtp_agree,
                                                             n_nextn=mtp_heads)
    for kind, agree in (block_agree or {}).items():  # dflash / dspark: make_block_models.py
        out[f"{kind}-agree-target"], out[f"{kind}-agree-draft"] = make_block_models.build_block_pair(d, kind, agree)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", help="output folder (created)")
    ap.add_argument("--eagle3-layers", default=",".join(map(str, EAGLE3_LAYERS)),
                    help="the three target layer ids the EAGLE-3 head records (default %(default)s)")
    ap.add_argument("--mtp-agree", type=float, default=None, metavar="NOISE",
                    help="also write DIR/mtp-agree-target.gguf, whose MTP block agrees with its target up to NOISE "
                         "(0: always; see build_mtp_target)")
    ap.add_argument("--eagle3-agree", type=float, default=None, metavar="NOISE",
                    help="also write DIR/eagle3-agree-{target,draft}.gguf, a degenerate pair whose head is accepted "
                         "(see build_eagle3_agreeing)")
    ap.add_argument("--mtp-heads", type=int, default=None, metavar="N",
                    help="also write DIR/mtp-chain-target.gguf, an MTP target with N chained NextN blocks (one per "
                         "draft position), and with --mtp-agree DIR/mtp-chain-agree-target.gguf")
    for kind in ("dflash", "dspark"):
        ap.add_argument(f"--{kind}-agree", type=float, default=None, metavar="A",
                        help=f"also write DIR/{kind}-agree-{{target,draft}}.gguf, a draft-{kind} pair whose drafts "
                             "are accepted (A: the weight of the injected context; see make_block_models.py)")
    a = ap.parse_args(argv)
    if a.mtp_heads is not None and a.mtp_heads < 2:
        ap.error(f"--mtp-heads must be 2 or more (one NextN block is DIR/mtp-target.gguf), not {a.mtp_heads}")
    try:
        layers = [int(x) for x in a.eagle3_layers.split(",")]
    except ValueError:
        ap.error(f"--eagle3-layers must be three integers, not {a.eagle3_layers!r}")
    if len(layers) != 3:
        ap.error(f"--eagle3-layers must be three integers, not {a.eagle3_layers!r}")
    block = {k: v for k, v in (("dflash", a.dflash_agree), ("dspark", a.dspark_agree)) if v is not None}
    for name, p in build_all(a.dir, layers, a.mtp_agree, a.eagle3_agree, a.mtp_heads, block).items():
        print(f"{name}: {p} ({p.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
