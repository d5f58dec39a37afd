"""The kernels' noise (spectui.engine.probes.noise) on the real llama.cpp: the tiny models (float32 weights) and, marked
qwen, the Qwen2.5-Coder pair (Q4_K_M): the one-token rows are the target-only run's own, the comparison's figures
mean what they say, the engine runs on afterwards, and a greedy speculative run parts from the target-only run
only at a step within the noise measured at its k."""

from __future__ import annotations

import os

import numpy as np
import pytest
from greedy_checks import emitted_ids, reference, run_with_hook
from qwen_pair import QWEN_DRAFT, QWEN_TARGET, needs_qwen

from spectui.analysis.lossless import check
from spectui.analysis.measured import noise as N
from spectui.contract.control import RunControl
from spectui.contract.errors import SpectuiError
from spectui.contract.events import PassEvent, RunEnded, Settings
from spectui.contract.prompt import DEFAULT_PROMPT
from spectui.engine.probes.noise import compare, measure_noise, one_token_rows


def test_compare_reads_the_largest_difference_and_gap_change():
    single = np.array([[3.0, 1.0, 0.0], [0.0, 2.0, 1.75]], dtype=np.float32)
    same = compare(single, single.copy(), 2)
    assert (same.max_abs, same.max_gap, same.flips, same.rows) == (0.0, 0.0, 0, 2)
    batched = single.copy()
    batched[1, 1] -= 0.25  # the top token of row 1 moves down by 0.25 ...
    batched[1, 2] += 0.125  # ... and its rival up by 0.125: their gap changes by 0.375 and the argmax flips
    b = compare(single, batched, 3)
    assert b.max_abs == 0.25 and b.max_gap == 0.375 and b.flips == 1 and b.worst_row == 1 and b.k == 2
    shift = compare(single, single + 0.5, 2)  # every logit of a row moved alike: no gap changes
    assert shift.max_abs == 0.5 and shift.max_gap == 0.0 and shift.flips == 0


def test_one_token_rows_are_the_target_only_runs(make_engine, tiny_target):
    eng = make_engine(tiny_target)
    toks, rows = one_token_rows(eng.target, eng.tokenize(DEFAULT_PROMPT), 24)
    events = list(eng.run(DEFAULT_PROMPT, RunControl(Settings(draft_max=0, drafter="none")), 24))
    assert emitted_ids(events) == toks
    assert [int(np.argmax(r)) for r in rows] == toks and rows.shape == (24, eng.target.n_use)


def test_noise_on_the_tiny_models(make_engine, tiny_target, tiny_draft_noisy):
    eng = make_engine(tiny_target, tiny_draft_noisy, threads=1)
    m = measure_noise(eng, range(2, 10), 64)
    assert [b.batch for b in m.batches] == list(range(2, 10)) and all(b.rows == 63 for b in m.batches)
    for b in m.batches:
        # a gap changes by at most twice the largest difference; float32 weights: small, not zero
        assert 0.0 < b.max_gap <= 2 * b.max_abs + 1e-12 and b.max_gap < 0.01
        assert b.flips == 0  # the sample has no near tie (its smallest margin is far above the noise)
    assert m.min_margin > 10 * max(b.max_gap for b in m.batches)
    # the engine runs on: the target's cache was left empty, and a run and a verify timing work after it
    assert eng.target.n_decodes > 0
    events = list(eng.run("the hash map", RunControl(Settings(draft_max=3, drafter="model")), 16))
    assert isinstance(events[-1], RunEnded) and events[-1].reason == "n_predict"
    assert eng.measure_verify_ms(3, repeats=1) > 0
    m2 = measure_noise(eng, range(2, 10), 64)
    assert m2.batches == m.batches  # numerics: the same figures every time


def test_noise_bad_input(make_engine, tiny_target):
    eng = make_engine(tiny_target, n_ctx=64)
    with pytest.raises(SpectuiError, match="between 2 and"):
        measure_noise(eng, [1, 2], 16)
    with pytest.raises(SpectuiError, match="at least 8 tokens"):
        measure_noise(eng, [2], 4)
    with pytest.raises(SpectuiError, match="more than the context"):
        measure_noise(eng, [2], 60)


def test_greedy_speculation_parts_only_within_the_noise(noisy_engine):
    """The tests' rule at work: the reference's margins carry the noise measured on the same engine and prompt,
    and each k's speculative run is equal to the reference, or parts from it at a step within that noise."""
    ref_toks, margins = reference(noisy_engine)
    assert margins.noise == max(b.max_gap for b in margins.measurement.batches) > 0
    for k in (1, 3, 8):
        events, _ = run_with_hook(noisy_engine, Settings(draft_max=k, drafter="model"))
        c = check(emitted_ids(events), ref_toks, margins, margins.noise)
        assert c.equal, c.describe()


def test_another_model_parts_above_the_noise(make_engine, tiny_target, tiny_draft_noisy):
    """A real inequality, caught: the noisy draft's own greedy text is not the target's, and where it parts the
    target's margin is far above the target's noise, so the check says unequal (a failure the tests catch)."""
    tgt = make_engine(tiny_target)
    other = make_engine(tiny_draft_noisy)
    ref_toks, margins = reference(tgt, n_predict=40)
    other_toks = emitted_ids(list(other.run("the hash map handles collisions",
                                            RunControl(Settings(draft_max=0, drafter="none")), 40)))
    c = check(other_toks, ref_toks, margins, margins.noise)
    assert c.parted and not c.equal and c.margin > margins.noise
    assert "above the noise" in c.describe()


# ---------------------------------------------------------------- the real pair (qwen)


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.qwen
@needs_qwen
@pytest.mark.timeout(3000)
def test_qwen_noise_and_greedy_partings(make_engine, tmp_path_factory, k):
    """On the Qwen pair (CPU): the noise by k (measured once for the module: batches of 2..4), and a greedy
    speculative run at k that equals the target-only run or parts from it at a near tie of that k's noise (where
    the noise is 0, as it is for batches of up to 3 tokens on the 2-core EPYC, token for token)."""
    threads = min(os.cpu_count() or 2, 8)
    eng = make_engine(QWEN_TARGET, QWEN_DRAFT, n_ctx=1024, threads=threads, inspect_top=1)
    res = N.cached_or_measure(eng, max_batch=4, n_tokens=48, directory=tmp_path_factory.getbasetemp() / "qwen-noise")
    print("\n".join(res.lines()))
    assert res.backend == "CPU" and res.max_batch == 4
    assert all(0.0 <= b.max_gap <= 2 * b.max_abs + 1e-9 for b in res.batches)
    n = 48
    base = list(eng.run(DEFAULT_PROMPT, RunControl(Settings(draft_max=0, drafter="none")), n))
    from spectui.analysis.lossless import margins_of  # noqa: PLC0415

    ref, margins = emitted_ids(base), margins_of(base)
    spec = list(eng.run(DEFAULT_PROMPT, RunControl(Settings(draft_max=k, drafter="model")), n))
    assert isinstance(spec[-1], RunEnded) and spec[-1].error == ""
    assert any(ev.drafts for ev in spec if isinstance(ev, PassEvent))
    c = check(emitted_ids(spec), ref, margins, res.threshold(k))
    print(f"k = {k}: noise {res.threshold(k):.3g}; {c.describe() or 'equal token for token'}")
    assert c.equal, c.describe()


def test_not_during_a_run(make_engine, tiny_target):
    eng = make_engine(tiny_target)
    run = eng.run("the hash map", RunControl(Settings(draft_max=0, drafter="none")), 8)
    next(run)  # RunStarted: the run has begun
    with pytest.raises(SpectuiError, match="between runs"):
        measure_noise(eng, [2], 8)
    list(run)
    assert measure_noise(eng, [2], 8).batches[0].rows == 7
