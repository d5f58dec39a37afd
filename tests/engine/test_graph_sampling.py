"""Backend ("graph") sampling through llama-cpp-python 0.3.36's library (spectui.engine.llama.graph_sampling) on the
CPU backend with the tiny models: the library exports the API; a greedy chain set on a context after it was made
samples the argmax of the very row a context without it computes, one output row per decode (llama.cpp's default
n_outputs_max_per_seq = 1 refuses more); a chain given in the context's parameters with room for every row samples
each row of a verify batch; a temperature chain's probabilities are a temperature softmax of the row within
float32 tolerance."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from spectui.engine.llama import graph_sampling as G
from spectui.engine.llama import models as M

PROMPT = "the hash map handles collisions"


@pytest.fixture()
def model(tiny_target):
    m = M.LoadedModel(str(tiny_target), "target", n_ctx=256, threads=1, use_extra_bufts=True, n_batch=64)
    yield m
    m.close()


def _one_at_a_time(m, ids):
    m.clear()
    rows = []
    for i, t in enumerate(ids):
        m.decode([t], i, "last")
        rows.append(m.logits_last().copy())
    m.clear()
    return np.stack(rows)


def _batch(m, ids):
    m.clear()
    m.decode(ids, 0, "all")
    rows = m.logits_rows(len(ids)).copy()
    m.clear()
    return rows


def _softmax(row, t):
    z = row.astype(np.float64) / t
    p = np.exp(z - z.max())
    return p / p.sum()


def test_the_library_exports_backend_sampling():
    ex = G.exports()
    assert set(ex) == set(G.API) and all(ex.values()), ex
    assert G.available()


def test_greedy_chain_set_after_samples_the_argmax_one_row_per_decode(model):
    ids = model.tokenize(PROMPT)
    plain = _one_at_a_time(model, ids)
    chain = G.SamplerChain.greedy()
    try:
        assert chain.attach(model.ctx)
        for i, t in enumerate(ids):
            model.decode([t], i, "last")
            r = G.sampled(model.ctx, 0)
            assert r.token == int(np.argmax(plain[i]))
            assert r.probs is None and r.candidates is None  # greedy makes no probabilities; whole vocabulary
            assert r.logits is not None and len(r.logits) == model.n_vocab
            assert np.array_equal(r.logits[: model.n_use], plain[i])  # the very row, bit for bit
        # a verify of several rows: llama.cpp's default allows one output row per sequence with a sampler
        model.clear()
        with pytest.raises(RuntimeError, match="code -1"):
            model.decode(ids[:3], 0, "all")
    finally:
        chain.detach(model.ctx)
        chain.free()
    model.clear()
    model.decode(ids[:3], 0, "all")  # detached: the CPU path again, every row's raw logits
    assert np.array_equal(model.logits_rows(3), _batch(model, ids[:3]))


def test_greedy_chain_in_the_context_parameters_samples_every_verify_row(model):
    ids = model.tokenize(PROMPT)
    plain = _batch(model, ids)
    chain = G.SamplerChain.greedy()
    ctx = G.context_with_sampler(model, chain, n_ctx=256, threads=1, n_batch=64, n_outputs_max_per_seq=0)
    assert ctx
    try:
        assert G.decode_on(ctx, ids, 0, "all") == 0
        toks = [G.sampled(ctx, i).token for i in range(len(ids))]
        assert toks == [int(np.argmax(r)) for r in plain]
        assert all(np.array_equal(G.sampled(ctx, i).logits[: model.n_use], plain[i]) for i in range(len(ids)))
    finally:
        G.close_context(ctx, chain)
        chain.free()


@pytest.mark.parametrize("temp", [0.5, 0.8, 1.3])
def test_temperature_chain_probs_are_a_temperature_softmax(model, temp):
    ids = model.tokenize(PROMPT)
    plain = _batch(model, ids)
    chain = G.SamplerChain.at_temperature(temp, seed=3)
    ctx = G.context_with_sampler(model, chain, n_ctx=256, threads=1, n_batch=64)
    assert ctx
    try:
        assert G.decode_on(ctx, ids, 0, "all") == 0
        for i in range(len(ids)):
            r = G.sampled(ctx, i)
            assert r.probs is not None and len(r.probs) == model.n_vocab
            p = _softmax(plain[i], temp)
            np.testing.assert_allclose(r.probs[: model.n_use], p, rtol=2e-5, atol=1e-9)
            assert abs(float(r.probs.sum(dtype=np.float64)) - 1.0) < 1e-5
            assert 0 <= r.token < model.n_vocab and r.probs[r.token] > 0
            np.testing.assert_allclose(r.logits[: model.n_use], plain[i] / np.float32(temp), rtol=1e-6, atol=1e-6)
    finally:
        G.close_context(ctx, chain)
        chain.free()


def test_temperature_chain_draws_follow_its_seed(model):
    ids = model.tokenize(PROMPT)

    def draws(seed):
        chain = G.SamplerChain.at_temperature(1.0, seed=seed)
        ctx = G.context_with_sampler(model, chain, n_ctx=256, threads=1, n_batch=64, n_outputs_max_per_seq=1)
        try:
            out = []
            for i, t in enumerate(ids):
                assert G.decode_on(ctx, [t], i, "last") == 0
                out.append(G.sampled(ctx, 0).token)
            return out
        finally:
            G.close_context(ctx, chain)
            chain.free()

    assert draws(7) == draws(7)
    assert len({tuple(draws(s)) for s in range(6)}) > 1
    with pytest.raises(ValueError):
        G.SamplerChain.at_temperature(0.0)


MODELS = Path(os.environ.get("SPECTUI_MODELS", Path.home() / ".cache" / "spectui" / "models"))
QWEN_DRAFT = MODELS / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"


@pytest.mark.qwen
@pytest.mark.skipif(not QWEN_DRAFT.is_file(), reason=f"Qwen draft GGUF not found: {QWEN_DRAFT}")
@pytest.mark.timeout(1200)
def test_on_the_qwen_draft_with_its_real_vocabulary():
    """The draft side as the loop would use it: one row per decode on the Qwen 0.5B (151,936 ids): greedy = the
    argmax of the row a context without the chain computes, bit for bit; at T = 0.8 the probabilities are the
    temperature softmax of that row within float32 tolerance."""
    m = M.LoadedModel(str(QWEN_DRAFT), "draft", n_ctx=256, threads=2, use_extra_bufts=True, n_batch=64)
    try:
        ids = m.tokenize("def merge_intervals(intervals):")[:8]
        plain = _one_at_a_time(m, ids)
        greedy = G.SamplerChain.greedy()
        assert greedy.attach(m.ctx)
        for i, t in enumerate(ids):
            m.decode([t], i, "last")
            r = G.sampled(m.ctx, 0)
            assert r.token == int(np.argmax(plain[i])) and np.array_equal(r.logits[: m.n_use], plain[i])
        greedy.free()
        m.clear()
        hot = G.SamplerChain.at_temperature(0.8, seed=1)
        assert hot.attach(m.ctx)
        for i, t in enumerate(ids):
            m.decode([t], i, "last")
            r = G.sampled(m.ctx, 0)
            assert len(r.probs) == m.n_vocab == 151936
            np.testing.assert_allclose(r.probs, _softmax(plain[i], 0.8), rtol=1e-4, atol=1e-9)
            assert r.probs[r.token] > 0
        hot.free()
    finally:
        m.close()
