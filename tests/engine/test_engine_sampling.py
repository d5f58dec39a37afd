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
from pathlib import Path

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
        _check_target_law(e, tiny_target, drafter, prompt)


def _check_target_law(e, tiny_target, drafter, prompt, before_run=None):
    """RUNS seeded runs of ``prompt`` on engine ``e`` (pass 0 greedy, then temperature 1, ``drafter`` drafting k = 2
    in pass 1): both verdicts occur, and the second and third tokens follow the target's law (chi-square).
    ``before_run()`` is called before each run."""
    prompt_ids = e.tokenize(prompt)
    second, third = Counter(), {}
    verdicts = Counter()
    t0 = None
    for seed in range(RUNS):
        if before_run is not None:
            before_run()
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


# 36 words in which the target's greedy first token already occurred, last followed by a token the target gives
# p ~ 0.23 after it: what llama.cpp's map and mod types draft there with a 1-token key (more than 32 tokens: mod
# pools the prompt)
LONG_PROMPT = ("an hash else python array chain have none the return two list but function from how size or size or "
               "list as loop and was handle none on python slot this factor true size store hash")
ONE_TOKEN_KEYS = {
    "ngram-map-k": (("spec_ngram_map_k_size_n", 1), ("spec_ngram_map_k_size_m", 2)),
    "ngram-map-k4v": (("spec_ngram_map_k4v_size_n", 1), ("spec_ngram_map_k4v_size_m", 2)),
    "ngram-mod": (("spec_ngram_mod_n_match", 1), ("spec_ngram_mod_n_min", 1), ("spec_ngram_mod_n_max", 2)),
}


@pytest.mark.parametrize("drafter", [*ONE_TOKEN_KEYS, "ngram-cache", "ngram-mod,model"])
@pytest.mark.slow  # a law checked over many samples
def test_llama_ngram_types_keep_the_target_law(make_engine, tiny_target, tiny_draft_noisy, tmp_path, drafter):
    """llama.cpp's point-mass n-gram types at T > 0, and a chain whose first member drafts: the same law check.
    ngram-cache drafts from a static layer (--lookup-cache-static) that says the prompt's last token and the
    target's first are followed by the token mod drafts. The map types cut a key's next draft to what the target
    accepted of its last one, in a state kept across a session's runs, so one rejection would silence the key for
    every later run: each run starts with a fresh map, as one llama-speculative-simple process per sample would."""
    spec = ONE_TOKEN_KEYS.get(drafter.split(",")[0], ())
    if drafter == "ngram-cache":
        spec = (("lookup_cache_static", str(_static_cache(tmp_path, tiny_target))),)
    with make_engine(tiny_target, tiny_draft_noisy, n_ctx=256, spec_options=spec) as e:
        before_run = None
        if drafter.startswith("ngram-map"):
            from spectui.engine.drafters import by_name, spec_params  # noqa: PLC0415
            from spectui.engine.drafters.base import DrafterResources  # noqa: PLC0415

            member = e.parts().drafters.get(drafter)

            def before_run():
                member.algo = by_name(drafter).make(DrafterResources(target=None, params=spec_params(spec))).algo
        _check_target_law(e, tiny_target, drafter, LONG_PROMPT, before_run)


def _static_cache(folder: Path, target: Path) -> Path:
    """A llama.cpp lookup cache file (--lookup-cache-static: 2-gram -> next-token counts) whose one record says
    that (the prompt's last token, the target's greedy first token) is followed twice by the token that followed
    that first token last in the prompt."""
    import struct  # noqa: PLC0415

    m = LoadedModel(str(target), "fresh", 256, 1, True)
    try:
        ids = m.tokenize(LONG_PROMPT)
        m.decode_chunked(ids, 0)
        t0 = int(np.argmax(m.logits_last()))
    finally:
        m.close()
    d = ids[max(i for i in range(len(ids) - 1) if ids[i] == t0) + 1]
    path = folder / "static.bin"
    path.write_bytes(struct.pack("<4ii", ids[-1], t0, -1, -1, 1) + struct.pack("<ii", d, 2))
    return path


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
