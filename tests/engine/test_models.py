"""Model file checks and loading: every bad input is a one-line SpectuiError; tiny models load and decode."""

from __future__ import annotations

import os

import numpy as np
import pytest

from spectui.contract.errors import SpectuiError
from spectui.engine.llama.models import LoadedModel
from spectui.engine.llama.preload import check_gguf_file


def test_tiny_models_load_and_decode(tiny_target):
    m = LoadedModel(str(tiny_target), "target", 128, 1, True)
    try:
        assert m.info.architecture == "llama"
        assert m.info.name == "tiny-target"
        assert m.info.n_vocab == m.n_vocab > 300
        assert m.info.vocab_type == "SPM"
        assert m.info.n_params > 0
        ids = m.tokenize("the hash map handles collisions")
        assert ids[0] == 1 and len(ids) < 12  # BOS, then word pieces (not bytes)
        assert m.detokenize(ids).strip() == "the hash map handles collisions"
        m.decode(ids, 0, "last")
        row = m.logits_last()
        assert row.shape == (m.n_vocab,) and np.isfinite(row).all()
    finally:
        m.close()


def test_check_gguf_file_accepts_tiny(tiny_target):
    assert check_gguf_file(str(tiny_target)) == os.path.abspath(tiny_target)


def _one_line(exc: pytest.ExceptionInfo) -> str:
    msg = str(exc.value)
    assert "\n" not in msg and msg
    return msg


def test_missing_file(tmp_path):
    with pytest.raises(SpectuiError) as e:
        check_gguf_file(str(tmp_path / "nope.gguf"), "target")
    assert "not found" in _one_line(e)


def test_directory(tmp_path):
    with pytest.raises(SpectuiError) as e:
        check_gguf_file(str(tmp_path), "draft")
    assert "directory" in _one_line(e)


def test_unreadable(tmp_path, tiny_target):
    if os.geteuid() != 0:
        p = tmp_path / "locked.gguf"
        p.write_bytes(tiny_target.read_bytes())
        p.chmod(0)
        expect = "permission denied"
    else:  # root reads any mode-0 file; /proc/self/mem is a regular file whose offset 0 cannot be read
        p = "/proc/self/mem"
        expect = "cannot read"
    with pytest.raises(SpectuiError) as e:
        check_gguf_file(str(p))
    assert expect in _one_line(e)


def test_not_gguf(tmp_path):
    p = tmp_path / "model.gguf"
    p.write_bytes(b"PK\x03\x04 this is a zip, not a model")
    with pytest.raises(SpectuiError) as e:
        check_gguf_file(str(p))
    assert "not a GGUF" in _one_line(e)


def test_empty_file(tmp_path):
    p = tmp_path / "empty.gguf"
    p.write_bytes(b"")
    with pytest.raises(SpectuiError) as e:
        check_gguf_file(str(p))
    assert "not a GGUF" in _one_line(e)


def test_the_loops_tiny_calls_keep_the_gil_and_decode_releases_it(tiny_target):
    """A logits address and a KV edit take microseconds: called without releasing the GIL, no other Python
    thread (the finishing thread, the trace writer) slips in between and makes the loop wait; llama_decode
    computes, so it releases the GIL (ctypes' FUNCFLAG_PYTHONAPI marks a function that keeps it)."""
    import ctypes  # noqa: PLC0415

    keeps = ctypes._FUNCFLAG_PYTHONAPI
    m = LoadedModel(str(tiny_target), "target", n_ctx=64, threads=1, use_extra_bufts=True)
    try:
        assert m._get_logits._flags_ & keeps and m._get_logits_ith._flags_ & keeps and m._seq_rm._flags_ & keeps
        assert not m._decode._flags_ & keeps
        m.decode([1, 2, 3], 0, "all")
        rows = m.logits_rows(3)
        assert rows.shape[0] == 3 and np.array_equal(m.logits_last(), rows[2])
        m.rollback(1)
        m.decode([2], 1, "last")
        assert np.allclose(m.logits_last(), rows[1], atol=1e-4)
    finally:
        m.close()


def test_row_pool_reuses_only_rows_it_may():
    from spectui.engine.rowmath import RowPool  # noqa: PLC0415

    pool = RowPool(cap=2)
    a = pool.take(8)
    assert a.dtype == np.float32 and a.shape == (8,)
    pool.give(a)
    assert pool.take(8) is a  # the same buffer back
    pool.give(a)
    assert pool.take(4) is not a  # another length: a new row (the mismatched one is dropped)
    view = np.zeros(16, dtype=np.float32)[:8]
    pool.give(view)  # a view of someone else's memory is never handed out again
    pool.give(np.zeros(8, dtype=np.float64))  # nor another dtype
    assert pool.take(8) is not view
    for _ in range(3):
        pool.give(np.zeros(8, dtype=np.float32))
    assert len(pool._free) == 2  # at most cap rows kept
