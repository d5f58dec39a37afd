"""A token tree in a model's context (``models.LoadedModel`` made with ``n_seq`` > 1: one unified KV buffer):
every node decoded in one llama_decode, each token in the sequences of the leaves below it, and the sequences
edited without copying KV data (llama_memory_seq_cp / seq_keep / seq_rm only change the cells' sequence sets).
Used by the tree drafter (drafters/draft_tree.py) and the tree verify (run/tree_pass.py)."""

from __future__ import annotations

from .llama_lib import llama
from .models import LoadedModel


def decode_tree(m: LoadedModel, tokens, positions, seqs) -> None:
    """Decode a token tree in one llama_decode, every row's logits kept (``m.logits_rows``): token i at
    ``positions[i]`` in the sequences ``seqs[i]`` (those of the leaves below it: llama.cpp's attention mask then
    lets a token see exactly its ancestors). Each sequence must hold the context before it (``seq_copy``); at
    most ``m.n_seq`` ids.

    Args:
        m: the model.
        tokens: the token ids, each after its parent.
        positions: each token's position.
        seqs: each token's sequence ids.

    Raises:
        RuntimeError: llama.cpp failed (1: no KV slot, other: error).
    """
    b = m.batch
    n = len(tokens)
    for i in range(n):
        b.token[i], b.pos[i], b.logits[i] = tokens[i], positions[i], 1
        b.n_seq_id[i] = len(seqs[i])
        for j, s in enumerate(seqs[i]):
            b.seq_id[i][j] = s
    b.n_tokens = n
    try:
        m.run_batch()
    finally:
        for i in range(n):  # back to what LoadedModel.decode expects: sequence 0 alone
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = 0


def seq_copy(m: LoadedModel, src: int, dst: int, p0: int = -1, p1: int = -1) -> None:
    """Sequence ``dst`` joins every cell of ``src`` at positions [p0, p1) (-1: no bound)."""
    llama().llama_memory_seq_cp(m.mem, src, dst, p0, p1)


def seq_keep(m: LoadedModel, seq: int) -> None:
    """Drop every cell not in ``seq``; the cells kept hold ``seq`` alone."""
    llama().llama_memory_seq_keep(m.mem, seq)


def seq_drop(m: LoadedModel, seq: int, p0: int = -1, p1: int = -1) -> None:
    """Sequence ``seq`` leaves the cells at positions [p0, p1) (-1: no bound); a cell left in no sequence is freed.

    Raises:
        RuntimeError: llama.cpp refused.
    """
    if not llama().llama_memory_seq_rm(m.mem, seq, p0, p1):
        raise RuntimeError(f"llama_memory_seq_rm failed on the {m.role} model")
