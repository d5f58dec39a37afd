"""Statistical checks of the T > 0 speculative loop shared by tests/engine/test_graph_path.py and its Vulkan
run (no tests here, no pytest: the Vulkan environment imports this file in a subprocess).

``sampled_runs`` runs the engine at T > 0 many times from one prompt, each run with its own seed, and keeps,
per run, the prefill's token t1 and the first token pass 1 emits (an accepted first draft, or the target's
correction) with whether that first draft was accepted. ``law`` gives, for a context, the target's law
p = softmax(row / T) there and the first draft's acceptance probability sum_x min(p(x), q(x)) (q the
draft's law), from plain decodes without a chain. ``chi_square`` pools, over the t1 groups, the Pearson
statistic of the emitted tokens against p (bins with expected count >= 5; the rest pooled into one bin) and
its degrees of freedom; ``chi2_limit`` is the Wilson-Hilferty quantile (no scipy in the environments)."""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import numpy as np

from spectui.contract.control import RunControl
from spectui.contract.events import PassEvent, Settings

PROMPT = "the hash map handles collisions"


def sampled_runs(engine, n_runs: int, temperature: float, k: int = 3, seed0: int = 0,
                 prompt: str = PROMPT) -> list[tuple]:
    """(t1, first token pass 1 emitted, first draft accepted, d1, q(d1), p(d1)) per run."""
    out = []
    for i in range(n_runs):
        control = RunControl(Settings(draft_max=k, drafter="model", temperature=temperature, seed=seed0 + i))
        t1 = None
        for ev in engine.run(prompt, control, 8):
            if isinstance(ev, PassEvent) and ev.prefill:
                t1 = ev.emitted[0].id
            elif isinstance(ev, PassEvent):
                assert ev.drafts, "pass 1 drafted nothing"
                d1 = ev.drafts[0]
                out.append((t1, ev.emitted[0].id, ev.n_accepted >= 1, d1.id, d1.prob, d1.target_prob))
                control.stop()
    return out


def _softmax(row: np.ndarray, t: float) -> np.ndarray:
    z = row.astype(np.float64) / t
    p = np.exp(z - z.max())
    return p / p.sum()


def law(target, draft, tokens: list[int], temperature: float) -> tuple[np.ndarray, np.ndarray, float]:
    """(p and q after ``tokens``, the first draft's acceptance probability) from plain LoadedModels (no
    chain)."""
    rows = []
    for m in (target, draft):
        m.clear()  # as the loop decodes: the prompt in one batch, then t1 alone
        m.decode(tokens[:-1], 0, "none")
        m.decode(tokens[-1:], len(tokens) - 1, "last")
        rows.append(m.logits_last().copy())
        m.clear()
    p, q = _softmax(rows[0], temperature), _softmax(rows[1], temperature)
    return p, q, float(np.minimum(p, q).sum())


def laws(target, draft, runs, temperature: float, prompt: str = PROMPT) -> dict[int, tuple]:
    """``law`` for each t1 the runs drew (the context: the prompt's tokens, then t1)."""
    ids = target.tokenize(prompt)
    return {t1: law(target, draft, ids + [t1], temperature) for t1 in {r[0] for r in runs}}


def check_runs(runs, by_t1: dict[int, tuple], z_max: float = 4.0, min_df: int = 10, rel_tol: float = 5e-3) -> dict:
    """The three checks on one path's runs: the recorded q(d1), p(d1) equal the laws' (within the kernels' batch
    noise: the target judged d1 in a verify batch, 1e-3 logits on the tiny models on the CPU; ``rel_tol``),
    the emitted tokens follow p (chi-square), the first drafts are accepted at sum min(p, q) (z). Returns the
    figures; raises AssertionError on a failure."""
    for t1, _tok, _a, d1, qd, pd in runs:
        p, q, _ = by_t1[t1]
        assert math.isclose(qd, q[d1], rel_tol=rel_tol, abs_tol=1e-6), (t1, d1, qd, q[d1])
        assert math.isclose(pd, p[d1], rel_tol=rel_tol, abs_tol=1e-6), (t1, d1, pd, p[d1])
    stat, df = chi_square(runs, {t: v[0] for t, v in by_t1.items()})
    assert df >= min_df, df
    assert stat < chi2_limit(df), (stat, df, chi2_limit(df))
    z = acceptance_z(runs, {t: v[2] for t, v in by_t1.items()})
    assert abs(z) < z_max, z
    return {"chi2": stat, "df": df, "limit": chi2_limit(df), "z": z,
            "accepted": sum(1 for r in runs if r[2]) / len(runs)}


def two_rates_z(a_runs, b_runs) -> float:
    """z of the difference of two paths' first-draft acceptance rates (pooled two-proportion test)."""
    na, nb = len(a_runs), len(b_runs)
    xa, xb = sum(1 for r in a_runs if r[2]), sum(1 for r in b_runs if r[2])
    pool = (xa + xb) / (na + nb)
    sd = math.sqrt(max(pool * (1 - pool) * (1 / na + 1 / nb), 1e-12))
    return (xa / na - xb / nb) / sd


def chi_square(runs, laws: dict[int, np.ndarray]) -> tuple[float, int]:
    """Pooled Pearson statistic and degrees of freedom of the emitted tokens against p, per t1 group."""
    stat, df = 0.0, 0
    groups = defaultdict(list)
    for t1, tok, *_ in runs:
        groups[t1].append(tok)
    for t1, toks in groups.items():
        n = len(toks)
        if n < 30:
            continue
        counts = Counter(toks)
        exp = laws[t1] * n
        big = np.flatnonzero(exp >= 5.0)
        if len(big) < 2:
            continue
        obs_big = np.array([counts.get(int(j), 0) for j in big], dtype=np.float64)
        rest_exp = n - exp[big].sum()
        rest_obs = n - obs_big.sum()
        stat += float(((obs_big - exp[big]) ** 2 / exp[big]).sum())
        bins = len(big)
        if rest_exp >= 5.0:
            stat += (rest_obs - rest_exp) ** 2 / rest_exp
            bins += 1
        else:
            assert rest_obs <= max(5.0, 4 * rest_exp + 4), (t1, rest_obs, rest_exp)
        df += bins - 1
    return stat, df


def chi2_limit(df: int, z: float = 3.29) -> float:
    """The chi-square quantile of ``df`` degrees of freedom at the normal quantile ``z`` (3.29: p = 5e-4)."""
    a = 2.0 / (9.0 * df)
    return df * (1.0 - a + z * math.sqrt(a)) ** 3


def acceptance_z(runs, accept_p: dict[int, float]) -> float:
    """(observed - expected) / sd of the first drafts accepted, the expected per run its t1's probability."""
    obs = sum(1 for r in runs if r[2])
    ps = [accept_p[r[0]] for r in runs]
    mean = sum(ps)
    var = sum(p * (1 - p) for p in ps)
    return (obs - mean) / math.sqrt(max(var, 1e-12))
