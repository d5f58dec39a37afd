"""Engine construction: every bad model input is a one-line SpectuiError; warnings go to the callable."""

from __future__ import annotations

import functools

import pytest
import tinymodels

from spectui.contract.errors import SpectuiError
from spectui.engine.llama import preload as P


def one_line(excinfo) -> str:
    msg = str(excinfo.value)
    assert msg and "\n" not in msg
    return msg


@pytest.fixture
def make(make_engine):
    """Engines on a 128-token context: loading checks need no more."""
    return functools.partial(make_engine, n_ctx=128)


def test_vocab_mismatch_names_token_and_texts(make, tiny_target, tiny_other_vocab):
    with pytest.raises(SpectuiError) as e:
        make(tiny_target, tiny_other_vocab)
    msg = one_line(e)
    assert "token id 300" in msg
    v = tinymodels.default_vocab()
    assert repr(v[300]) in msg and repr("\u2581zebra") in msg


def test_vocab_size_mismatch(make, tiny_target, tiny_model):
    # llama.cpp's rule: sizes may differ by up to 128 (padding rows); 129 more tokens is a mismatch
    extra = [f"\u2581extra{i}" for i in range(129)]
    bigger = tiny_model("bigger.gguf", vocab=tinymodels.default_vocab() + extra)
    with pytest.raises(SpectuiError) as e:
        make(tiny_target, bigger)
    assert "tokens" in one_line(e) and "vocabulary mismatch" in str(e.value)


def test_special_token_mismatch(make, tiny_target, tiny_model):
    # llama.cpp's rule compares the BOS/EOS settings (added or not, and the id when added), not the texts
    # of ids below 5 (tests/engine/test_real_pairs.py: such a pair is accepted)
    other = tiny_model("nobos.gguf", add_bos=False)
    with pytest.raises(SpectuiError) as e:
        make(tiny_target, other)
    assert "BOS" in one_line(e)


@pytest.mark.parametrize("role", ["target", "draft"])
def test_bad_paths(make, tiny_target, tmp_path, role):
    not_gguf = tmp_path / "x.gguf"
    not_gguf.write_text("hello")
    for bad, words in [(tmp_path / "missing.gguf", "not found"), (tmp_path, "directory"), (not_gguf, "not a GGUF")]:
        with pytest.raises(SpectuiError) as e:
            make(bad, tiny_target) if role == "target" else make(tiny_target, bad)
        msg = one_line(e)
        assert words in msg and role in msg


def test_corrupt_gguf_is_a_load_error(make, tiny_target, tmp_path):
    p = tmp_path / "truncated.gguf"
    p.write_bytes(tiny_target.read_bytes()[:300])  # valid magic, truncated metadata
    with pytest.raises(SpectuiError) as e:
        make(p)
    assert "could not load" in one_line(e)


def test_bad_context_and_threads(make_engine, tiny_target):
    with pytest.raises(SpectuiError):
        make_engine(tiny_target, n_ctx=2)
    with pytest.raises(SpectuiError):
        make_engine(tiny_target, n_ctx="lots")
    with pytest.raises(SpectuiError):
        make_engine(tiny_target, threads=-1)


def test_draft_not_smaller_warns(make, tiny_target, tiny_draft_same):
    warnings = []
    e = make(tiny_target, tiny_draft_same, warn=warnings.append)
    e.close()
    assert any("not much smaller" in w and "ratio 1.00" in w for w in warnings)
    assert all("\n" not in w for w in warnings)


def test_model_info(make, tiny_target, tiny_draft_noisy):
    with make(tiny_target, tiny_draft_noisy) as e:
        t = e.target_info
        assert t.path == str(tiny_target) and t.name == "tiny-target" and t.architecture == "llama"
        assert t.size_bytes == tiny_target.stat().st_size and t.quantization == "ALL_F32"
        assert t.n_params > 100_000 and t.n_vocab == len(tinymodels.default_vocab()) and t.vocab_type == "SPM"
        assert t.n_ctx_train == tinymodels.N_CTX_TRAIN
        assert e.draft_info.name == "tiny-draft-noisy"
        assert e.tokenize("the hash")[0] == 1 and e.detokenize(e.tokenize("the hash")).strip() == "the hash"


def test_memory_report_numbers():
    warnings = []
    gib = 1024**3
    assert P.memory_report([gib, gib // 2], [gib // 4, gib // 4], 4 * gib, warnings.append)
    assert not warnings
    assert not P.memory_report([3 * gib, gib], [gib, gib], 4 * gib, warnings.append)
    (w,) = warnings
    assert "4.00 GiB" in w and "2.00 GiB" in w and "6.00 GiB" in w and "\n" not in w


def test_kv_shape_from_metadata(tiny_target):
    v = P.VocabOnly(str(tiny_target), "target")
    try:
        shape = v.kv_shape()
    finally:
        v.close()
    assert shape == P.KVShape(tinymodels.N_LAYER, tinymodels.N_HEAD_KV, 16, 16)
    assert shape.bytes_for(1000) == 2 * 1000 * 4 * (16 + 16) * 2


def test_amx_build_loads_without_repacking(make, tiny_target, monkeypatch):
    """A library built with AMX kernels must load with use_extra_bufts=False and say why (one line)."""
    monkeypatch.setattr("spectui.engine.loop.system_has_amx", lambda: True)  # as the engine calls it
    warnings = []
    with make(tiny_target, warn=warnings.append) as e:
        assert e.no_repack
    assert any("AMX" in w for w in warnings)
    with make(tiny_target, no_repack=True) as e:
        assert e.no_repack


def test_close_then_run_is_an_error(make, tiny_target):
    e = make(tiny_target)
    e.close()
    with pytest.raises(SpectuiError):
        e.run("x")
