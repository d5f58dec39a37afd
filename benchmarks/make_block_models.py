"""Tiny generated pairs for llama.cpp's block drafters, ``draft-dflash`` and ``draft-dspark``.

    python benchmarks/make_block_models.py DIR [--agree A]     # or: make_spec_models.py DIR --dflash-agree A ...

Each pair is a target and a ``dflash``-architecture draft (src/models/dflash.cpp) written with gguf's GGUFWriter,
float32, no downloads:

- ``{kind}-agree-target.gguf``: the tests' tiny llama model (tests/tinymodels.py, seed 0) with 4 blocks whose
  attention output and FFN down projection are zero: every block passes its input through, so the target's next
  token is a function F of the current token only (and end-of-sequence and ``<unk>`` are never its argmax).
- ``{kind}-agree-draft.gguf``: one DFlash block that reads the target's block inputs at ``dflash.target_layers``
  [1, 3], ``dflash.block_size`` 16, the mask token ``<unk>`` (id 0; its draft embedding is zero), its own
  ``token_embd`` and ``output`` (the target's, so it loads without the target's context). Its weights make every
  mask position of a block attend uniformly (a zero token gives a zero query) and carry the value of the anchor
  (the last accepted token; ``attn_norm`` 1000, V and O the identity) plus ``A`` times the fused target features of
  the context (``enc.output_norm`` = A): at A = 0 each mask position predicts F(anchor), exactly the target's
  next token; a larger A mixes the context in (and tests that the features injected are the target's).
  DFlash therefore drafts F(anchor) at every position: the first draft of a block is accepted, the rest rarely.
- the DSpark draft adds the Markov head (``markov_w1``: each token's normalized target embedding; ``markov_w2``:
  4 x the target's output matrix, so the bias at position i is 4 x the target's logits after the previous draft)
  and a confidence head (``conf_proj``, small random), ``dflash.sample_from_anchor`` true (slot 0 predicts): its
  block follows F(F(...)) and is accepted further.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import tinymodels  # noqa: E402 - the tests' tiny-model helpers (vocabulary, token types, sizes)

N_EMBD = tinymodels.N_EMBD
N_HEAD = tinymodels.N_HEAD
N_HEAD_KV = tinymodels.N_HEAD_KV
N_FF = tinymodels.N_FF

TARGET_BLOCKS = 4
DFLASH_LAYERS = (1, 3)  # the inputs of the target's blocks 1 and 3
BLOCK_SIZE = 16
MASK_ID = 0  # <unk>: never in a prompt, never the target's argmax
ANCHOR_GAIN = 1000.0  # attn_norm of the noise tokens: the anchor's value outweighs the context's
MARKOV_SCALE = 4.0


def build_block_target(path: str | Path) -> tuple[Path, dict[str, np.ndarray]]:
    """The pass-through llama target (see the module docstring); returns its path and weights."""
    kept: dict[str, np.ndarray] = {}

    def flatten(w: dict) -> None:
        for name, arr in w.items():
            if name.endswith(("attn_output.weight", "ffn_down.weight")):
                arr[:] = 0.0
        w["output.weight"][MASK_ID] = 0.0
        kept.update({k: v.copy() for k, v in w.items()})

    p = tinymodels.build_model(path, seed=0, name="tiny-block-agree-target", n_layer=TARGET_BLOCKS, transform=flatten)
    return p, kept


def _rms_rows(x: np.ndarray) -> np.ndarray:
    return (x / np.sqrt((x.astype(np.float64) ** 2).mean(axis=1, keepdims=True) + 1e-5)).astype(np.float32)


def build_block_draft(path: str | Path, target: dict[str, np.ndarray], agree: float, dspark: bool,
                      seed: int = 11, conf_head: bool = True) -> Path:
    """A ``dflash`` draft for ``target`` (its weights): DFlash, or DSpark with ``dspark`` (see the docstring;
    ``conf_head`` False: a DSpark draft without the confidence head, ``dflash.has_confidence_head`` false)."""
    import gguf  # noqa: PLC0415 - a test/benchmark dependency

    path = Path(path)
    vocab = tinymodels.default_vocab()
    rng = np.random.default_rng(seed)
    hd = N_EMBD // N_HEAD
    eye = np.eye(N_EMBD, dtype=np.float32)
    embd = target["token_embd.weight"].copy()
    embd[MASK_ID] = 0.0
    n_in = len(DFLASH_LAYERS) * N_EMBD
    t: dict[str, np.ndarray] = {
        "token_embd.weight": embd,
        "output.weight": target["output.weight"].copy(),
        "fc.weight": (rng.standard_normal((N_EMBD, n_in)) / np.sqrt(n_in)).astype(np.float32),
        "enc.output_norm.weight": np.full(N_EMBD, agree, dtype=np.float32),
        "output_norm.weight": np.ones(N_EMBD, dtype=np.float32),
        "blk.0.attn_norm.weight": np.full(N_EMBD, ANCHOR_GAIN, dtype=np.float32),
        "blk.0.attn_q.weight": (rng.standard_normal((N_HEAD * hd, N_EMBD)) / 8).astype(np.float32),
        "blk.0.attn_k.weight": (rng.standard_normal((N_HEAD_KV * hd, N_EMBD)) / 8).astype(np.float32),
        "blk.0.attn_v.weight": eye.copy(),
        "blk.0.attn_output.weight": eye.copy(),
        "blk.0.attn_q_norm.weight": np.ones(hd, dtype=np.float32),
        "blk.0.attn_k_norm.weight": np.ones(hd, dtype=np.float32),
        "blk.0.ffn_norm.weight": np.ones(N_EMBD, dtype=np.float32),
        "blk.0.ffn_gate.weight": (rng.standard_normal((N_FF, N_EMBD)) / 8).astype(np.float32),
        "blk.0.ffn_up.weight": (rng.standard_normal((N_FF, N_EMBD)) / 8).astype(np.float32),
        "blk.0.ffn_down.weight": np.zeros((N_EMBD, N_FF), dtype=np.float32),
    }
    if dspark:
        t["markov_w1.weight"] = _rms_rows(target["token_embd.weight"])  # ne {R, n_vocab}: one row per token
        t["markov_w2.weight"] = (MARKOV_SCALE * target["output.weight"]).astype(np.float32)
        conf = (rng.standard_normal((1, 2 * N_EMBD)) / 4).astype(np.float32)
        if conf_head:
            t["conf_proj.weight"], t["conf_proj.bias"] = conf, np.zeros(1, dtype=np.float32)
    w = gguf.GGUFWriter(str(path), "dflash")
    w.add_name(f"tiny-{'dspark' if dspark else 'dflash'}-agree-{agree:g}")
    tinymodels.add_small_hparams(w, N_EMBD, N_FF, N_HEAD, N_HEAD_KV, hd)
    # the keys src/models/dflash.cpp and common/speculative.cpp read
    w.add_array("dflash.target_layers", list(DFLASH_LAYERS))
    w.add_uint32("dflash.block_size", BLOCK_SIZE)
    if dspark:
        w.add_bool("dflash.sample_from_anchor", True)
        w.add_bool("dflash.has_confidence_head", conf_head)
    tinymodels.add_tokenizer(w, vocab)
    w.add_mask_token_id(MASK_ID)
    tinymodels.write_tensors(w, t)
    return path


def build_block_pair(out_dir: str | Path, kind: str, agree: float) -> tuple[Path, Path]:
    """``{kind}-agree-target.gguf`` and ``{kind}-agree-draft.gguf`` in ``out_dir`` (kind: dflash or dspark)."""
    if kind not in ("dflash", "dspark"):
        raise ValueError(f"block drafter kind {kind!r} (dflash or dspark)")
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    target, weights = build_block_target(d / f"{kind}-agree-target.gguf")
    draft = build_block_draft(d / f"{kind}-agree-draft.gguf", weights, agree, dspark=kind == "dspark")
    return target, draft


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", help="output folder (created)")
    ap.add_argument("--agree", type=float, default=0.0, metavar="A",
                    help="the weight of the injected context in the drafts (default %(default)s: the anchor alone)")
    a = ap.parse_args(argv)
    for kind in ("dflash", "dspark"):
        for p in build_block_pair(a.dir, kind, a.agree):
            print(f"{p} ({p.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
