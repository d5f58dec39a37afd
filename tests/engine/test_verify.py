"""The acceptance rules as pure functions: exact output distributions by enumeration, plus sampled checks."""

from __future__ import annotations

import numpy as np
import pytest

from spectui.engine.verify import (
    Verdict,
    accept_probability,
    greedy_verify,
    logsumexp,
    prob_of,
    residual,
    sample,
    softmax,
    speculative_verify,
)


def _rand_dist(rng, n, peaked=1.0):
    return softmax(rng.standard_normal(n) * peaked)


def _first_token_distribution(p, q):
    """Exact distribution of the first emitted token for one draft x ~ q, computed by enumeration:
    P(y) = q(y) a(y) + sum_x q(x) (1 - a(x)) r_x(y)  with a, r the module's own rule functions."""
    out = np.zeros_like(p)
    for x in range(len(p)):
        if q[x] == 0:
            continue
        a = accept_probability(p, q, x)
        out[x] += q[x] * a
        out += q[x] * (1.0 - a) * residual(p, q, x)
    return out


@pytest.mark.parametrize("seed", range(20))
def test_exact_first_token_distribution_equals_p(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 9))
    p = _rand_dist(rng, n, peaked=float(rng.uniform(0.2, 3)))
    q = _rand_dist(rng, n, peaked=float(rng.uniform(0.2, 3)))
    if seed % 4 == 0:  # drafts that put zero mass somewhere, and targets with zeros
        q[int(rng.integers(n))] = 0.0
        q /= q.sum()
    if seed % 5 == 0:
        p[int(rng.integers(n))] = 0.0
        p /= p.sum()
    np.testing.assert_allclose(_first_token_distribution(p, q), p, atol=1e-12)


@pytest.mark.parametrize("seed", range(10))
def test_exact_two_token_joint_distribution_k2(seed):
    """k = 2 with context-dependent rows: the exact joint law of the first two emitted tokens equals
    p1(y1) p2(y2 | y1). Enumerates both drafts, every accept/reject branch, and the bonus row."""
    rng = np.random.default_rng(100 + seed)
    n = 4
    p1 = _rand_dist(rng, n, 1.5)
    q1 = _rand_dist(rng, n, 1.5)
    p2 = {x: _rand_dist(rng, n, 1.5) for x in range(n)}  # target's next-token law after x
    q2 = {x: _rand_dist(rng, n, 1.5) for x in range(n)}
    joint = np.zeros((n, n))
    for x1 in range(n):  # first draft
        a1 = accept_probability(p1, q1, x1)
        # rejected at position 1: the emitted token is a residual sample, the pass ends; the next pass
        # samples from the target directly (k=0 equivalent for the purpose of the law)
        r1 = residual(p1, q1, x1)
        for y1 in range(n):
            joint[y1] += q1[x1] * (1 - a1) * r1[y1] * p2[y1]
        for x2 in range(n):  # accepted x1, second draft
            pr = q1[x1] * a1 * q2[x1][x2]
            a2 = accept_probability(p2[x1], q2[x1], x2)
            joint[x1, x2] += pr * a2  # accepted (the bonus token is the third token)
            joint[x1] += pr * (1 - a2) * residual(p2[x1], q2[x1], x2)
    expected = p1[:, None] * np.stack([p2[x] for x in range(n)])
    np.testing.assert_allclose(joint, expected, atol=1e-12)


def test_point_mass_draft_rule():
    p = np.array([0.5, 0.3, 0.2])
    assert accept_probability(p, None, 1) == pytest.approx(0.3)
    np.testing.assert_allclose(residual(p, None, 1), [0.5 / 0.7, 0.0, 0.2 / 0.7])
    # exact law of the first token with an n-gram (point mass) proposal x = 1
    out = p[1] * np.eye(3)[1] + (1 - p[1]) * residual(p, None, 1)
    np.testing.assert_allclose(out, p)


@pytest.mark.slow  # a law checked over many samples
def test_speculative_verify_sampled_matches_p():
    """The stateful function itself (Generator-driven) against the exact law: chi-square, fixed seed."""
    rng_case = np.random.default_rng(7)
    n = 6
    p1 = _rand_dist(rng_case, n, 1.2)
    q1 = _rand_dist(rng_case, n, 1.2)
    p_bonus = _rand_dist(rng_case, n, 1.2)
    rng = np.random.default_rng(12345)
    N = 60000
    counts = np.zeros(n)
    for _ in range(N):
        x = sample(q1, rng)
        v = speculative_verify([p1, p_bonus], [q1], [x], rng)
        counts[x if v.n_accepted == 1 else v.token] += 1
    exp = N * p1
    chi2 = float(((counts - exp) ** 2 / exp).sum())
    # 5 degrees of freedom: P(chi2 > 20.5) = 0.001
    assert chi2 < 20.5, (chi2, counts / N, p1)


def test_greedy_verify_rules():
    rows = np.array([[0, 5, 1], [9, 0, 1], [0, 0, 3]], dtype=np.float32)
    assert greedy_verify(rows, [1, 0]) == Verdict(2, 2)  # all accepted: bonus = argmax(last row)
    assert greedy_verify(rows, [1, 2]) == Verdict(1, 0)  # second rejected: correction 0
    assert greedy_verify(rows, [0, 0]) == Verdict(0, 1)  # first rejected
    assert greedy_verify(rows[:1], []) == Verdict(0, 1)  # no drafts: plain argmax


def test_softmax_and_prob_of():
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(1000) * 30).astype(np.float32)
    for t in (0.0, 0.5, 1.0, 1.7):
        p = softmax(x, t)
        assert p.sum() == pytest.approx(1.0)
        assert prob_of(x, 17, t) == pytest.approx(p[17], rel=1e-4, abs=1e-12)
        assert logsumexp(x, t) == pytest.approx(np.log(np.exp(x.astype(np.float64) / (t or 1.0)).sum()), rel=1e-6)


def test_sample_edges():
    rng = np.random.default_rng(0)
    assert sample(np.array([0.0, 0.0, 1.0]), rng) == 2
    assert sample(np.array([1.0, 0.0, 0.0]), rng) == 0
    counts = np.bincount([sample(np.array([0.25, 0.75]), rng) for _ in range(4000)], minlength=2)
    assert abs(counts[1] / 4000 - 0.75) < 0.03


def test_residual_degenerate_falls_back_to_p():
    p = np.array([0.2, 0.8])
    np.testing.assert_allclose(residual(p, p.copy(), 0), p)


@pytest.mark.slow  # a law checked over many samples
def test_sample_law_across_blocks():
    """The two-level inverse CDF over a 5000-entry float32 vector (5 blocks) follows p: chi-square, fixed seed."""
    p = softmax((np.random.default_rng(11).standard_normal(5000) * 2.5).astype(np.float32))
    p[[0, 1023, 1024, 4999]] = 0.0  # zeros at block edges are never drawn
    p /= p.sum(dtype=np.float64)
    rng = np.random.default_rng(2024)
    N = 100_000
    counts = np.bincount([sample(p, rng) for _ in range(N)], minlength=len(p))
    assert counts[[0, 1023, 1024, 4999]].sum() == 0
    big = np.flatnonzero(N * p >= 20)
    obs = np.append(counts[big], N - counts[big].sum())
    exp = np.append(N * p[big], N - N * p[big].sum())
    chi2 = float(((obs - exp) ** 2 / exp).sum())
    df = len(obs) - 1
    bound = df * (1 - 2 / (9 * df) + 3.0902 * np.sqrt(2 / (9 * df))) ** 3  # chi-square 0.999 quantile
    assert chi2 < bound, (chi2, bound, df)
