"""The knee as each engine's config (spectui.analysis.knee.engine_configs), from a prediction made of hand-checkable
numbers: the worked example of docs/batch-knee.md (plain 10, 10, 12, 20 ms; verify k = 2 10, 15, 30, 60 ms; B = 1,
2, 4, 8; a = 0.5; prompt lookup): 1.75x, 1.17x, 0.70x, 0.58x, so k = 2 up to B = 2 and off from B = 4."""

from __future__ import annotations

import json

import pytest

from spectui.analysis.knee.engine_configs import (
    LLAMA_KIND,
    TRTLLM_KIND,
    VLLM_KIND,
    emit,
    trtllm_schedule,
    vllm_table,
)
from spectui.analysis.measured import batch_knee as bk
from spectui.contract.errors import SpectuiError


def pred(verify=(10, 15, 30, 60), plain=(10, 10, 12, 20), drafter=bk.DRAFTER_LOOKUP, a=0.5):
    curve = bk.BatchCurve(seqs=(1, 2, 4, 8), ks=(2,), plain_ms=plain, verify_ms={2: verify})
    return bk.predict(curve, a, drafter)


def test_the_vllm_table_and_config():
    p = pred()
    assert p.k_schedule() == [[1, 3, 2], [4, 8, 0]]  # B = 1 covers 1, B = 2 covers 2-3: k = 2; off from 4
    assert vllm_table(p) == [[1, 3, 2], [4, 512, 0]]  # the last range open (vLLM carries it on anyway)
    made = emit("vllm", p)
    cfg = json.loads(made.text)
    assert cfg == {"method": "ngram", "prompt_lookup_max": 4, "prompt_lookup_min": 2, "num_speculative_tokens": 2,
                   "num_speculative_tokens_per_batch_size": [[1, 3, 2], [4, 512, 0]]}
    assert VLLM_KIND.recognise(made.text.encode()) and not made.note


def test_vllm_when_speculation_never_pays():
    made = emit("vllm", pred(verify=(30, 40, 60, 120)))
    cfg = json.loads(made.text)
    assert cfg["num_speculative_tokens_per_batch_size"] == [[1, 512, 0]] and cfg["num_speculative_tokens"] == 2
    assert "does not pay at any batch size" in made.note


def test_the_trtllm_schedule():
    p = pred()
    assert trtllm_schedule(p) == {3: 2}  # batch sizes 1-3 draft 2, past 3 draft 0 (implicit)
    made = emit("trtllm", p)
    assert TRTLLM_KIND.recognise(made.text.encode())
    body = made.text.split("\n")
    assert "  decoding_type: NGram" in body and "  max_draft_len: 2" in body
    assert body[body.index("  draft_len_schedule:") + 1:] == ["    3: 2", ""]


def test_trtllm_refuses_a_k_that_grows_with_the_batch():
    # k = 0 at B = 1 but k = 2 at B = 2: TensorRT-LLM's schedule must start at max_draft_len
    with pytest.raises(SpectuiError, match="grows with the batch size"):
        emit("trtllm", pred(verify=(40, 15, 30, 60)))


def test_the_llama_server_lines_name_each_np():
    made = emit("llama-server", pred())
    lines = made.text.splitlines()
    assert LLAMA_KIND.recognise(made.text.encode())
    assert lines[2].startswith("-np 1 --spec-type ngram-simple") and "--spec-draft-n-max 2" in lines[2]
    assert "1.75x predicted" in lines[2] and lines[3].startswith("-np 2 ") and "1.17x" in lines[3]
    assert lines[4] == "-np 4   # no speculation: 0.70x at the best k (2)"
    assert lines[5] == "-np 8   # no speculation: 0.58x at the best k (2)"


def test_a_draft_model_path_is_quoted_for_a_shell():
    curve = bk.BatchCurve(seqs=(1, 2), ks=(2,), plain_ms=(10, 10), verify_ms={2: (10, 12)}, draft_ms=(1, 1))
    p = bk.predict(curve, 0.8, bk.DRAFTER_MODEL)
    made = emit("llama-server", p, "/models/my draft's.gguf")
    assert "-md '/models/my draft'\\''s.gguf' --spec-type draft-simple" in made.text
    assert json.loads(emit("vllm", p, "/m/d.gguf").text)["model"] == "/m/d.gguf"
