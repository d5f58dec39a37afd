"""Every sentence spectui prints from data is computed from that data: random statistics through every
sentence builder (the sweep report, the cost model's advice, the demo's act reasons, spectui.analysis.cost.wording
itself),
and each claim checked against the numbers the sentence cites."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spectui.analysis.cost.costmodel import SPEEDUP_TIE, Prediction, advice
from spectui.analysis.cost.wording import FALL, FLAT, LOSES, RISE, TIES, WINS, moved, outcome, trend
from spectui.analysis.stats import StatsSnapshot
from spectui.sweep.aggregate import Cell, Spread, SweepRun
from spectui.sweep.report import acceptance_change, report_lines

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
rate = st.floats(0.0, 1.0, allow_nan=False)
pos = st.floats(0.1, 500.0, allow_nan=False)


def _pct(text: str) -> float:
    return float(text.rstrip("%")) / 100.0


# ------------------------------------------------------------------ the helper itself


@SETTINGS
@given(st.floats(-1e6, 1e6), st.floats(-1e6, 1e6), st.floats(0, 1e3))
def test_trend_and_outcome_match_the_numbers(a, b, tol):
    w = trend(a, b, tol)
    assert w == (FLAT if abs(b - a) <= tol else RISE if b > a else FALL)
    o = outcome(b, a, tol)
    assert {FLAT: TIES, RISE: WINS, FALL: LOSES}[w] == o


@SETTINGS
@given(rate, rate)
def test_moved_with_one_printed_unit_never_contradicts_its_printed_numbers(a, b):
    phrase = moved("acceptance", a, b, ".0%", 0.01)
    m = re.fullmatch(r"acceptance (rose|fell|stayed flat at) (\d+)% -> (\d+)%", phrase)
    assert m, phrase
    word, pa, pb = m.group(1), int(m.group(2)), int(m.group(3))
    if word == "rose":
        assert pb > pa
    elif word == "fell":
        assert pb < pa
    else:
        assert abs(pb - pa) <= 2  # flat within one point, printed rounded


# ------------------------------------------------------------------ the sweep report


def _spread(mean: float, sd: float = 0.0, n: int = 1) -> Spread:
    return Spread(mean, sd, n, mean - sd, mean + sd)


@st.composite
def cells(draw, temps=(0.0, 0.8)):
    """A baseline and some draft lengths per temperature, with random (consistent-typed) statistics."""
    out = []
    ks = sorted(draw(st.sets(st.integers(1, 8), min_size=1, max_size=4)))
    n = draw(st.integers(1, 3))
    for t in temps:
        base_tps = draw(pos)
        out.append(Cell(t, 0, "none", _spread(0.0), _spread(1.0), _spread(base_tps, 0, n), _spread(1.0),
                        _spread(draw(pos)), _spread(draw(pos)), _spread(1.0), _spread(draw(pos)),
                        _spread(draw(pos)), _spread(0.0), (), 0))
        for k in ks:
            acc = draw(rate)
            tps = draw(pos)
            by_pos = tuple(draw(rate) for _ in range(k))
            out.append(Cell(t, k, "model", _spread(acc, draw(st.floats(0, 0.2)), n), _spread(1 + acc * k),
                            _spread(tps, 0, n), _spread(tps / base_tps), _spread(draw(pos)), _spread(draw(pos)),
                            _spread(draw(st.floats(1.0, k + 1.0))), _spread(draw(pos)), _spread(draw(pos)),
                            _spread(draw(pos)), by_pos, draw(st.integers(0, 2000))))
    return out


@pytest.mark.slow  # the sweep's report over 300 generated sweeps
@SETTINGS
@given(cells())
def test_acceptance_change_matches_its_numbers(cs):
    spec = [c for c in cs if not c.is_baseline and c.temperature == 0.0]
    for a in spec:
        for b in spec:
            phrase = acceptance_change(a, b)
            m = re.match(r"acceptance (rose|fell|stayed flat at) (\d+)% -> (\d+)%", phrase)
            assert m, phrase
            pa, pb = int(m.group(2)), int(m.group(3))
            if m.group(1) == "rose":
                assert pb > pa and b.acceptance_rate.mean > a.acceptance_rate.mean
            elif m.group(1) == "fell":
                assert pb < pa and b.acceptance_rate.mean < a.acceptance_rate.mean
            if "mostly rejected" in phrase:
                assert m.group(1) == "fell"
                shown = [_pct(x) for x in re.findall(r"\d+:(\d+%)", phrase.split("by position", 1)[1])]
                assert shown and all(x <= 0.5 for x in shown)


def _runs_for(cs) -> list[SweepRun]:
    return [SweepRun(c.temperature, c.k, c.drafter, 0, StatsSnapshot(ttft_ms=c.ttft_ms.mean)) for c in cs]


@pytest.mark.slow  # the sweep's report over 300 generated sweeps
@SETTINGS
@given(cells())
def test_every_report_sentence_matches_its_numbers(cs):
    lines = report_lines(cs, _runs_for(cs))
    text = "\n".join(lines)
    # every "X rose/fell a -> b" phrase: the direction of its own printed numbers
    for word, a, b in re.findall(r"(rose|fell) (\d+(?:\.\d+)?)%? -> (\d+(?:\.\d+)?)%?", text):
        assert (float(b) > float(a)) if word == "rose" else (float(b) < float(a)), text
    # "Tokens/s peaked at k=K, temp T": K is the fastest cell
    best = max(cs, key=lambda c: c.tokens_per_second.mean)
    m = re.search(r"Tokens/s peaked at k=(\d+), temp ([\d.]+)", text)
    if m:
        assert not best.is_baseline and int(m.group(1)) == best.k and float(m.group(2)) == best.temperature
    else:
        assert best.is_baseline and "Tokens/s peaked with the target alone" in text
    # "Why longer drafts stopped paying": the longer k is really slower than the peak at that temperature
    for t, k0, k1 in re.findall(r"stopped paying \(temp ([\d.]+)\): from k=(\d+) to k=(\d+)", text):
        at = {c.k: c for c in cs if c.temperature == float(t) and not c.is_baseline}
        assert at[int(k1)].tokens_per_second.mean <= at[int(k0)].tokens_per_second.mean
    # the temperature sentence: "lowered"/"raised" only with the printed rates moving that way
    m = re.search(r"Temperature [\d.]+ -> [\d.]+ (.*?): (k=.*?); ± is", text)
    if m:
        verdict, parts = m.group(1), m.group(2)
        figures = {int(k): (int(a), int(b), int(se)) for k, a, b, se in
                   re.findall(r"k=(\d+) (\d+)% -> (\d+)% \(±(\d+)%\)", parts)}
        if verdict.startswith("lowered acceptance at every"):
            assert all(b <= a for a, b, _ in figures.values()), text
        if verdict.startswith("raised acceptance at every"):
            assert all(b >= a for a, b, _ in figures.values()), text
    # TTFT: "longer" / "shorter" as the printed means say
    m = re.search(r"TTFT: target only ([\d.]+) ms .*? with speculation ([\d.]+) ms .*?: (\d+) ms \(([+-]\d+)%\) "
                  r"(longer|shorter)", text)
    if m:
        base, spec, word = float(m.group(1)), float(m.group(2)), m.group(5)
        assert (spec > base) if word == "longer" else (spec < base)


# ------------------------------------------------------------------ the cost model's advice


@st.composite
def predictions(draw):
    k_max = draw(st.integers(1, 8))
    t0 = draw(st.floats(1.0, 200.0))
    speed = [1.0] + [draw(st.floats(0.2, 3.0)) for _ in range(k_max)]
    best = max(range(k_max + 1), key=lambda k: speed[k])
    tps = tuple(100.0 * s for s in speed)
    tpp = tuple(1.0 + draw(st.floats(0, k)) for k in range(k_max + 1))
    ms = tuple(t0 * tpp[k] / speed[k] for k in range(k_max + 1))
    return Prediction(
        k_max=k_max, tps_by_k=tps, tokens_per_pass_by_k=tpp, ms_per_pass_by_k=ms, speedup_by_k=tuple(speed),
        verify_ms_by_k=tuple(t0 * (1 + 0.5 * k) for k in range(k_max + 1)),
        verify_measured_by_k=(True,) * (k_max + 1), verify_note="", acceptance_by_position=(draw(rate),) * k_max,
        reach_by_position=(0.5,) * k_max, acceptance_measured_by_position=(True,) * k_max, acceptance_note="",
        draft_ms_per_token=draw(st.floats(0.0, 100.0)), target_decode_ms=t0, other_ms_per_pass=0.0, best_k=best,
        current_k=draw(st.one_of(st.none(), st.integers(0, k_max))), advice="")


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
@SETTINGS
@given(predictions())
def test_advice_says_loses_wins_or_ties_from_the_speedups(p):
    text = advice(p)
    best_spec = max(p.speedup_by_k[1:])
    if "speculation loses here" in text:
        assert p.best_k == 0 and best_spec < 1.0 - SPEEDUP_TIE
    if "at best ties" in text:
        assert p.best_k == 0 and abs(best_spec - 1.0) <= SPEEDUP_TIE
        assert f"({best_spec:.2f}x)" in text
    m = re.search(r"best k = (\d+), ([\d.]+)x the target alone(, a tie)?", text)
    if m:
        b, printed = int(m.group(1)), float(m.group(2))
        assert b == p.best_k and printed == round(p.speedup_by_k[b], 2)
        if not m.group(3):
            assert p.speedup_by_k[b] > 1.0 + SPEEDUP_TIE and printed > 1.0
    if p.best_k == 0:
        assert "best k = 0" in text


# ------------------------------------------------------------------ the demo's act reasons


def _segment_events(tps_alone: float, tps_lookup: float):
    """Two recorded segments (the target alone, then prompt lookup) with the given decode rates."""
    import dataclasses

    from spectui.contract.events import PassEvent, Settings, Timing
    from spectui.recording.trace import synthetic_run

    evs = [e for e in synthetic_run(40, k=3) if isinstance(e, PassEvent) and not e.prefill]
    out, t = [], 0.0
    for i, e in enumerate(evs):
        drafter = "none" if i < 20 else "ngram"
        n = len(e.emitted)
        wall = 1000.0 * n / (tps_alone if drafter == "none" else tps_lookup)
        t += wall / 1000.0
        out.append(dataclasses.replace(e, settings=Settings(draft_max=3, drafter=drafter),
                                       timing=Timing(0.0, wall, 0.0, wall, t)))
    return out


@SETTINGS
@given(st.floats(1.0, 100.0), st.floats(1.0, 100.0))
def test_demo_act_two_says_pays_only_when_it_did(alone, lookup):
    from spectui.analysis.stats import compute
    from spectui.commands.demo import ACTS, act_reason
    from spectui.commands.demo import SPEEDUP_TIE as TIE

    evs = _segment_events(alone, lookup)
    text = act_reason(ACTS[1], evs)
    a = compute([e for e in evs if e.settings.drafter == "none"]).tokens_per_second
    b = compute([e for e in evs if e.settings.drafter == "ngram"]).tokens_per_second
    ratio = b / a
    assert f"{ratio:.2f}x the target alone" in text
    if "mostly right pay" in text:
        assert ratio > 1 + TIE
    if "did not pay" in text:
        assert ratio < 1 - TIE


# ------------------------------------------------------------------ the probe's verdict


@st.composite
def probe_results(draw):
    from spectui.analysis.measured.probe import ProbeResult
    from spectui.contract.events import ModelInfo

    n = draw(st.integers(2, 16))
    decode = draw(st.floats(1.0, 200.0))
    ratios = [1.0] + [draw(st.floats(0.5, 3.0 * b)) for b in range(2, n + 1)]
    has_draft = draw(st.booleans())
    return ProbeResult(target=ModelInfo("t.gguf", size_bytes=10**9),
                       draft=ModelInfo("d.gguf", size_bytes=10**8) if has_draft else None, threads=2, machine={},
                       decode_ms=decode, verify_ms_by_batch=tuple(decode * r for r in ratios),
                       draft_decode_ms=decode * draw(st.floats(0.0, 1.5)) if has_draft else 0.0)


@SETTINGS
@given(probe_results())
def test_probe_verdict_claims_match_its_figures(r):
    from spectui.analysis.cost.draft_policy import PLAUSIBLE_RATE
    from spectui.analysis.measured.probe_verdict import FLAT_MARGINAL, analyse

    v = analyse(r)
    s = v.sentence
    m = re.search(r"a pass at k = (\d+) must yield ([\d.]+) tokens to break even(, more than the| of the) (\d+)", s)
    assert m, s
    need, can = float(m.group(2)), int(m.group(4))
    if m.group(3).startswith(", more"):
        assert need > can - 0.005
    else:
        assert need <= can + 0.005
    m = re.search(r"pays here once more than (\d+)% of drafts are accepted \(every draft accepted: ([\d.]+)x", s)
    if m:
        assert float(m.group(2)) >= 1.0 and v.min_acceptance is not None and v.min_acceptance <= PLAUSIBLE_RATE
    if "cannot pay here" in s:
        assert v.min_acceptance is None or v.min_acceptance > PLAUSIBLE_RATE
    m = re.search(r"costs only ([\d.]+) of a decode \(the flat line\)", s)
    if m:
        assert float(m.group(1)) <= FLAT_MARGINAL + 0.005
