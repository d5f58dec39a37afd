"""End-to-end speculative sampling on tiny real models: the empirical law of the tokens a speculative
pass emits matches the target's own next-token law (chi-square goodness of fit, fixed seeds).

Each run decodes the first token greedily (temperature 0 in pass 0, so the context is fixed), then
switches to temperature 1 and lets one speculative pass (k = 2) emit up to three tokens. The second
emitted token must follow p(. | prompt, t0) exactly - whatever the draft proposed, accepted or rejected -
and the third p(. | prompt, t0, t1). Bound: chi-square statistic below the 99.9% quantile for its degrees
of freedom (a correct engine fails this with probability 0.001 per check; the seeds are fixed, so the
outcome is deterministic)."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from spectui.contract.control import RunControl
from spectui.contract.events import PassEvent, Settings
from spectui.engine.llama.models import LoadedModel
from spectui.engine.verify import softmax

RUNS = 1500


def chi2_quantile_999(df: int) -> float:
    """Wilson-Hilferty approximation of the 0.999 quantile of chi-square(df) (z = 3.0902)."""
    z = 3.0902
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


def chi2_check(counts: Counter, p: np.ndarray, n: int) -> tuple[float, float]:
    """Chi-square over the tokens with expected count >= 5, plus one bin for all the rest."""
    big = [t for t in range(len(p)) if n * p[t] >= 5]
    obs = [counts.get(t, 0) for t in big]
    exp = [n * p[t] for t in big]
    rest_o = n - sum(obs)
    rest_e = n - sum(exp)
    if rest_e >= 5:
        obs.append(rest_o)
        exp.append(rest_e)
    else:
        assert rest_o <= max(5, 3 * rest_e + 3), "tokens the target almost never produces were emitted"
    chi2 = sum((o - e) ** 2 / e for o, e in zip(obs, exp))
    return chi2, chi2_quantile_999(len(obs) - 1)


def target_law(path, tokens, temperature=1.0):
    m = LoadedModel(str(path), "fresh", 256, 1, True)
    try:
        m.decode_chunked(tokens, 0)
        return softmax(m.logits_last().copy(), temperature)
    finally:
        m.close()


# llama.cpp's ngram-simple with a 1-token key: a point mass proposed from the text, as prompt lookup's
NGRAM_SIMPLE_1 = (("spec_ngram_simple_size_n", 1), ("spec_ngram_simple_size_m", 2))


@pytest.mark.parametrize(
    "drafter,prompt,spec",
    [("model", "the hash map handles collisions", ()), ("ngram", "at if false same it true", ()),
     ("ngram-simple", "at if false same it true", NGRAM_SIMPLE_1),
     # suffix decoding: a point mass, the most frequent continuation of the longest suffix match
     ("suffix", "at if false same it true", ()),
     # a chain: ngram-mod (its pool fills in chunks of more than 32 tokens) finds nothing in this short prompt, so
     # the pass falls through to ngram-simple's point mass; the draft model behind them is not asked
     ("ngram-mod,ngram-simple,model", "at if false same it true", NGRAM_SIMPLE_1)],
)
@pytest.mark.slow  # a law checked over many samples
def test_speculative_sampling_matches_target_law(make_engine, tiny_target, tiny_draft_noisy, drafter, prompt, spec):
    with make_engine(tiny_target, tiny_draft_noisy, n_ctx=256, spec_options=spec) as e:
        prompt_ids = e.tokenize(prompt)
        second, third = Counter(), {}
        verdicts = Counter()
        t0 = None
        for seed in range(RUNS):
            control = RunControl(Settings(draft_max=2, temperature=0.0, drafter=drafter, seed=seed))
            out = []
            for ev in e.run(prompt, control, 4):
                if isinstance(ev, PassEvent):
                    out.extend(t.id for t in ev.emitted)
                    if ev.prefill:
                        control.update(temperature=1.0)
                    elif ev.index == 1:
                        verdicts.update(d.verdict for d in ev.drafts)
            assert len(out) == 4 or (len(out) >= 2 and out[-1] == 2)  # n_predict, or ended on EOS (id 2)
            t0 = out[0] if t0 is None else t0
            assert out[0] == t0  # greedy first token: the context of the tested pass is fixed
            second[out[1]] += 1
            if len(out) >= 3:
                third.setdefault(out[1], Counter())[out[2]] += 1
    # the drafter really proposed, and both verdicts occurred (so acceptance and residual paths ran)
    assert verdicts["accepted"] > 50 and verdicts["rejected"] > 50, verdicts
    # (the n-gram prompt was chosen so that its proposal has p(x) ~ 0.14 under the target)
    p1 = target_law(tiny_target, prompt_ids + [t0])
    chi2, bound = chi2_check(second, p1, RUNS)
    assert chi2 < bound, (chi2, bound)
    t1, n1 = second.most_common(1)[0]
    p2 = target_law(tiny_target, prompt_ids + [t0, t1])
    chi2, bound = chi2_check(third[t1], p2, n1)
    assert chi2 < bound, (chi2, bound, t1, n1)


def test_seeded_runs_repeat_and_seeds_differ(make_engine, tiny_target, tiny_draft_noisy):
    with make_engine(tiny_target, tiny_draft_noisy, n_ctx=256) as e:

        def run(seed, reseed_at=None):
            c = RunControl(Settings(draft_max=3, temperature=0.8, seed=seed))
            out = []
            for ev in e.run("the hash map", c, 40):
                if isinstance(ev, PassEvent):
                    out.extend(t.id for t in ev.emitted)
                    if reseed_at is not None and ev.index == reseed_at:
                        c.update(seed=seed + 1000)
            return out

        a, b, c = run(1), run(1), run(2)
        assert a == b and a != c
        d = run(1, reseed_at=5)  # a seed change re-seeds the generator at the next pass
        assert d != a
