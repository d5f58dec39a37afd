"""Who wins each category (spectui.bench.winners): the sentence for constructed numbers, word for word, and for
random numbers every claim checked against the figures it prints (the pattern of tests/analysis/test_wording.py):
the winner is the fastest setting and is above 1.00x, else the target alone wins; each setting's wins / loses /
ties is its printed speedup against 1.00x; the shares, acceptance lengths and step costs are the summaries'."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spectui.bench.aggregate import OVERALL, Range, Summary
from spectui.bench.export import to_json, to_markdown
from spectui.bench.plan import BASELINE, Setting
from spectui.bench.report import report_lines
from spectui.bench.winners import TARGET_ALONE, verdicts, winner_lines


def summ(drafter: str, k: int, tps: float, base_tps: float, pass_ms: float, tpp: float, *, passes: int = 100,
         drafted: int = 60, mal: float = 2.0, category: str = "agentic", temp: float = 0.0) -> Summary:
    setting = Setting(drafter, k, temp)
    sp = 1.0 if setting.is_baseline else tps / base_tps
    return Summary(
        category=category, setting=setting, runs=3, prompts=3,
        mean_accepted_tokens=0.0 if setting.is_baseline else mal, acceptance_rate=0.5, acceptance_by_position=(),
        n_drafted=drafted * k, n_accepted=0, passes_drafted=0 if setting.is_baseline else drafted,
        tokens_per_second=tps, baseline_tokens_per_second=base_tps,
        speedup=sp, speedup_range=Range(), ttft_ms=None, tokens_per_pass=tpp, pass_ms=pass_ms, draft_ms_per_pass=0.0,
        verify_ms=pass_ms, n_passes=passes,
    )


def test_the_winner_and_every_setting_for_constructed_numbers():
    base = summ(BASELINE, 0, 10.0, 10.0, 20.0, 1.0)
    mod = summ("ngram-mod", 8, 13.1, 10.0, 32.0, 2.1, drafted=62, mal=4.1)
    chain = summ("ngram-mod,model", 8, 11.0, 10.0, 40.0, 2.2, drafted=97, mal=2.6)
    model = summ("model", 2, 8.0, 10.0, 32.0, 1.28, drafted=98, mal=2.4)
    lookup = summ("ngram", 4, 10.0, 10.0, 21.0, 1.0, drafted=0)
    (line,) = winner_lines([base, model, lookup, mod, chain])
    assert line == (
        "ngram-mod k=8 wins agentic: 1.31x the target alone (13.1 vs 10.0 t/s), 62% of passes drafted, mean "
        "acceptance length 4.10, each step (a verify of up to 9) takes 1.60 target-only steps and yields 2.10 tokens; "
        "ngram-mod+model k=8 also wins at 1.10x: 97% of passes drafted, mean acceptance length 2.60, each step (a "
        "verify of up to 9) takes 2.00 target-only steps and yields 2.20 tokens; "
        "ngram k=4 never drafted (no proposal on any pass), so it ran as the target alone: its 1.00x is the spread "
        "between runs of the same work; "
        "model k=2 loses at 0.80x: 98% of passes drafted, mean acceptance length 2.40, each step (a verify of up to "
        "3) takes 1.60 target-only steps and yields 1.28 tokens."
    )
    # nothing beats the target alone: it wins, and each setting says why not
    (line,) = winner_lines([base, model, lookup])
    assert line.startswith("The target alone wins agentic (10.0 t/s): no setting beats it; ngram k=4 never drafted")
    assert "model k=2 loses at 0.80x: 98% of passes drafted" in line and " wins at" not in line
    (v,) = verdicts([base, model, lookup])
    assert v.winner == TARGET_ALONE and v.speedup == 1.0
    assert [o[:2] for o in v.outcomes] == [("ngram k=4", "never drafted"), ("model k=2", "loses")]
    # a setting that never drafted did the target alone's work: however fast its runs were, it does not win
    idle = summ("ngram-mod", 4, 15.3, 10.0, 13.0, 1.0, drafted=0)
    (line,) = winner_lines([base, idle, model])
    assert line.startswith("The target alone wins agentic (10.0 t/s): no setting beats it; ngram-mod k=4 never "
                           "drafted (no proposal on any pass), so it ran as the target alone: its 1.53x is the spread")
    (line,) = winner_lines([base, idle, mod])
    assert line.startswith("ngram-mod k=8 wins agentic: 1.31x") and "ngram-mod k=4 never drafted" in line


def test_per_category_and_temperature_in_the_report_and_the_exports():
    rows = []
    for cat, tps_mod in (("agentic", 14.0), ("writing", 9.0), (OVERALL, 11.5)):
        for t in (0.0, 0.8):
            rows += [summ(BASELINE, 0, 10.0, 10.0, 20.0, 1.0, category=cat, temp=t),
                     summ("ngram-mod", 8, tps_mod, 10.0, 30.0, 2.0, category=cat, temp=t)]
    lines = report_lines(rows)
    assert lines[0].startswith("ngram-mod k=8 wins agentic at temp 0: 1.40x")
    assert lines[1].startswith("ngram-mod k=8 wins agentic at temp 0.8: 1.40x")
    assert lines[2].startswith("The target alone wins writing at temp 0 (10.0 t/s)")
    assert lines[4].startswith("ngram-mod k=8 wins overall at temp 0: 1.15x")
    doc = to_json([], rows, lines, {}, {})
    assert [(w["category"], w["temperature"], w["winner"]) for w in doc["winners"]][:3] == [
        ("agentic", 0.0, "ngram-mod k=8"), ("agentic", 0.8, "ngram-mod k=8"), ("writing", 0.0, TARGET_ALONE)]
    assert doc["winners"][2]["settings"] == [{"label": "ngram-mod k=8", "outcome": "loses", "speedup": 0.9}]
    md = to_markdown(rows)
    assert f"- {lines[0]}" in md.splitlines()
    # no baseline (a deployment without --baseline-url): no speedup, so no winner is named
    assert verdicts(rows, has_baseline=False) == [] and to_json([], rows, [], {}, {}, False)["winners"] == []


pos = st.floats(min_value=0.5, max_value=200.0, allow_nan=False)


@st.composite
def groups(draw):
    """A target alone and one to five settings with random figures."""
    base_tps, base_ms = draw(pos), draw(st.floats(2.0, 200.0))
    base = summ(BASELINE, 0, base_tps, base_tps, base_ms, 1.0)
    names = draw(st.lists(st.sampled_from(["model", "ngram", "ngram-mod", "ngram-mod,model", "suffix", "x,y,z"]),
                          min_size=1, max_size=5, unique=True))
    spec = []
    for n in names:
        passes = draw(st.integers(1, 500))
        spec.append(summ(n, draw(st.integers(1, 16)), draw(pos), base_tps, base_ms * draw(st.floats(0.5, 4.0)),
                         draw(st.floats(1.0, 9.0)), passes=passes, drafted=draw(st.integers(0, passes)),
                         mal=draw(st.floats(1.0, 9.0))))
    return base, spec


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups())
def test_every_claim_matches_its_numbers(g):
    base, spec = g
    (line,) = winner_lines([base, *spec])
    by_label = {s.label: s for s in spec}
    drafted = [s for s in spec if s.n_drafted > 0]
    best = max((float(f"{s.speedup:.2f}") for s in drafted), default=0.0)
    clauses = line.rstrip(".").split("; ")
    head = clauses[0]
    m = re.match(r"(.+?) wins agentic: (\d+\.\d\d)x the target alone", head)
    if m:
        assert float(m.group(2)) == best > 1.0 and by_label[m.group(1)].speedup == max(s.speedup for s in drafted)
        judged = [(m.group(1), "wins", head)]
    else:
        assert head.startswith("The target alone wins agentic") and best <= 1.0
        judged = []
    for c in clauses[1:]:
        m = re.match(r"(.+?) never drafted \(no proposal on any pass\), so it ran as the target alone: its "
                     r"(\d+\.\d\d)x is the spread between runs of the same work$", c)
        if m:
            assert by_label[m.group(1)].passes_drafted == 0
            assert float(m.group(2)) == float(f"{by_label[m.group(1)].speedup:.2f}")
            judged.append((m.group(1), "never", c))
            continue
        m = re.match(r"(.+?) (also wins|loses|ties) at (\d+\.\d\d)x: ", c)
        assert m, c
        printed = float(m.group(3))
        assert m.group(2) == ("also wins" if printed > 1.0 else "loses" if printed < 1.0 else "ties"), c
        assert printed <= best and printed == float(f"{by_label[m.group(1)].speedup:.2f}")
        judged.append((m.group(1), m.group(2), c))
    assert sorted(lb for lb, _, _ in judged) == sorted(by_label)  # every setting, once
    for label, word, c in judged:
        s = by_label[label]
        if word == "never":
            continue
        assert s.passes_drafted > 0
        assert f"{s.passes_drafted / s.n_passes:.0%} of passes drafted" in c
        assert f"mean acceptance length {s.mean_accepted_tokens:.2f}" in c
        assert (f"a verify of up to {s.setting.k + 1}) takes {s.pass_ms / base.pass_ms:.2f} target-only steps and "
                f"yields {s.tokens_per_pass:.2f} tokens") in c


def test_a_server_setting_has_no_cost_it_cannot_know():
    base = replace(summ(BASELINE, 0, 10.0, 10.0, 0.0, 1.0), pass_ms=0.0)
    dep = replace(summ("server", 0, 12.0, 10.0, 0.0, 1.5), setting=Setting("server", 0, 0.0, name="http://h:1"))
    (line,) = winner_lines([base, dep])
    assert line == ("http://h:1 wins agentic: 1.20x the target alone (12.0 vs 10.0 t/s), 60% of passes drafted, "
                    "mean acceptance length 2.00.")
    # llama-server without --metrics: its drafted and accepted tokens, but no count of its drafting steps
    quiet = replace(dep, passes_drafted=0, n_drafted=40, acceptance_rate=0.25, mean_accepted_tokens=0.0)
    (line,) = winner_lines([base, quiet])
    assert line == "http://h:1 wins agentic: 1.20x the target alone (12.0 vs 10.0 t/s), 25% of its 40 drafted tokens "\
                   "accepted."
