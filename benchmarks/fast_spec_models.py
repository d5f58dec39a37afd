"""The EAGLE-3 and MTP models of benchmarks/make_spec_models.py with a vocabulary of the fast pair's size
(151,936 tokens), for the heads' rows of benchmarks/bench_fast_regime.py: each logit row is then 152k floats,
as on the fast pair, while the models stay tiny (embedding 64), so a decode is fast and the loop around it shows.

The models are make_spec_models' own (its builders, unchanged: ``build_all`` with the agreeing variants), written
while the tests' tiny vocabulary (``tinymodels.default_vocab``) is replaced by the SentencePiece-style
vocabulary of benchmarks/fastpair.py's ``synthetic_tokenizer`` (``<unk> <s> </s>``, 256 byte tokens, then
made-up pieces): the same kind of vocabulary as the tests', of the fast pair's size. It is not Qwen's BPE
vocabulary: the rows' size is what the loop pays for, and the token texts do not matter here.

Beside them, ``draft-model.gguf``: the tests' tiny llama draft (seed 0, noise 0.1) in the same vocabulary, a
separate draft model to compare a head with (``spectui probe --draft``, bench, race).

``build_fast_spec_models(out_dir=None, agree=0.5)`` returns make_spec_models' dict of paths (cached under
~/.cache/spectui/fast-spec/<key>/ unless ``out_dir`` is given). Run as a script to write them and print the
paths: ``.venv/bin/python benchmarks/fast_spec_models.py [--out DIR] [--agree 0.5]``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

import fastpair  # noqa: E402
import make_spec_models  # noqa: E402
import tinymodels  # noqa: E402

N_VOCAB = 151936  # the fast pair's (Qwen2.5's) vocabulary size
CACHE = Path.home() / ".cache" / "spectui" / "fast-spec"
NAMES = ("eagle3-target", "eagle3-draft", "mtp-target", "mtp-agree-target", "eagle3-agree-target",
         "eagle3-agree-draft", "draft-model")


@contextlib.contextmanager
def fast_vocabulary(n_tokens: int = N_VOCAB):
    """While inside, the tiny models' vocabulary is the synthetic one of ``n_tokens`` (make_spec_models and
    tinymodels read ``tinymodels.default_vocab()`` when they write a model)."""
    tokens = list(fastpair.synthetic_tokenizer(n_tokens).tokens)
    old = tinymodels.default_vocab
    tinymodels.default_vocab = lambda: list(tokens)
    try:
        yield tokens
    finally:
        tinymodels.default_vocab = old


def _key(agree: float) -> str:
    h = hashlib.sha256(json.dumps({"agree": agree, "n_vocab": N_VOCAB}).encode())
    for mod in (make_spec_models, tinymodels, fastpair):  # what the files are made from
        h.update(Path(mod.__file__).read_bytes())
    return h.hexdigest()[:12]


def build_fast_spec_models(out_dir: str | Path | None = None, agree: float = 0.5) -> dict[str, Path]:
    """make_spec_models' models (with the agreeing pair of each kind at ``agree``) in the fast vocabulary."""
    d = Path(out_dir) if out_dir is not None else CACHE / _key(agree)
    paths = {n: d / f"{n}.gguf" for n in NAMES}
    if out_dir is None and all(p.is_file() for p in paths.values()):
        return paths
    part = d.with_name(d.name + ".part")
    part.mkdir(parents=True, exist_ok=True)
    with fast_vocabulary():
        made = make_spec_models.build_all(part, mtp_agree=agree, eagle3_agree=agree)
        # a separate draft model of the same vocabulary (the tests' tiny llama, seed 0 + noise), for
        # `spectui probe --draft` beside a head and the model drafter beside one in bench/race
        made["draft-model"] = tinymodels.build_model(part / "draft-model.gguf", seed=0, noise=0.1,
                                                     name="tiny-draft (fast vocabulary)")
    d.mkdir(parents=True, exist_ok=True)
    for p in made.values():
        p.replace(d / p.name)  # each file whole, then moved: never a half model in the cache
    with contextlib.suppress(OSError):
        part.rmdir()
    return {n: d / f"{n}.gguf" for n in made}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="folder (default: the cache, keyed by the parameters)")
    ap.add_argument("--agree", type=float, default=0.5, help="the agreeing pairs' noise (make_spec_models)")
    a = ap.parse_args()
    for name, p in build_fast_spec_models(a.out, a.agree).items():
        print(f"{name}: {p}")


if __name__ == "__main__":
    main()
