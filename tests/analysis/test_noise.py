"""The near-tie threshold as measured noise (spectui.analysis.measured.noise) and the rule that judges against it
(spectui.analysis.lossless.check, the bench's equal outputs): thresholds by k, the cache, and where outputs
part and at what margin, in the report's words. A parting with a margin above the measured noise is reported
unequal, one within it a near tie."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
from greedy_checks import emitted_ids

from spectui.analysis.lossless import UNMEASURED_MARGIN, check, first_near_tie, margins_of
from spectui.analysis.measured import noise as N
from spectui.analysis.measured.cachefile import CacheError
from spectui.analysis.stats import compute
from spectui.bench.aggregate import OVERALL, BenchRow, aggregate
from spectui.bench.datasets import Prompt
from spectui.bench.plan import BASELINE, Setting
from spectui.bench.report import report_lines
from spectui.contract.control import RunControl
from spectui.contract.events import PassEvent, Settings
from spectui.engine.probes.noise import BatchNoise

PROMPT = "the hash map handles collisions"


def _result(gaps: dict[int, float], abs_: dict[int, float] | None = None) -> N.NoiseResult:
    """A NoiseResult with the given gap changes by batch size (for the pure rules)."""
    abs_ = abs_ or {b: g / 2 for b, g in gaps.items()}
    return N.NoiseResult(
        target_path="/m/t.gguf", target_name="t", backend="CPU", n_gpu_layers=0, threads=2, machine={},
        batches=tuple(BatchNoise(b, abs_[b], g, 63, 0, 0) for b, g in sorted(gaps.items())), n_tokens=64,
        prompt_tokens=16, min_margin=0.02,
    )


# ---------------------------------------------------------------- the threshold by k


def test_threshold_is_the_largest_gap_change_of_the_batches_a_k_uses():
    # as measured on the Qwen pair (CPU): batches of 2 and 3 bit-identical, 4 and up another kernel
    r = _result({2: 0.0, 3: 0.0, 4: 1.1, 5: 1.05, 9: 1.15}, {2: 0.0, 3: 0.0, 4: 0.63, 5: 0.58, 9: 0.72})
    assert r.threshold(0) == 0.0 and r.threshold(1) == 0.0 and r.threshold(2) == 0.0
    assert r.threshold(3) == 1.1 and r.threshold(4) == 1.1 and r.threshold(8) == 1.15
    assert r.threshold(20) == 1.15  # past the largest batch measured: every batch measured
    assert r.max_abs(3) == 0.63 and r.max_abs(8) == 0.72
    assert r.exact_up_to() == 2
    line = r.summary_line()
    assert "largest logit difference 0.72" in line and "largest change of a gap to the top token 1.15" in line
    assert "bit-identical at k <= 2" in line and "2 threads" in line and "k = 1..8" in line
    assert _result({2: 0.0, 3: 0.0}).summary_line().endswith("bit-identical (every logit equal)")
    assert _result({2: 0.0, 3: 0.0}).threshold(2) == 0.0
    assert len(r.lines()) == 1 + len(r.batches)


def test_round_trip_and_malformed_cache_records():
    r = _result({2: 0.001, 3: 0.002})
    back = N.NoiseResult.from_dict(json.loads(json.dumps(r.to_dict())))
    assert back == r
    for bad in ({}, {**r.to_dict(), "version": 99}, {**r.to_dict(), "batches": []},
                {**r.to_dict(), "batches": [{**r.to_dict()["batches"][0], "max_gap": -1}]},
                {**r.to_dict(), "batches": list(reversed(r.to_dict()["batches"]))}):
        with pytest.raises(CacheError):
            N.NoiseResult.from_dict(bad)


def test_cached_or_measure_on_the_tiny_target(make_engine, tiny_target, tmp_path):
    eng = make_engine(tiny_target, threads=1)
    warnings = []
    first = N.cached_or_measure(eng, directory=tmp_path, warn=warnings.append)
    assert not first.cached and first.cache_file and first.key and first.backend == "CPU"
    assert [b.batch for b in first.batches] == list(range(2, 10)) and first.threshold(8) > 0
    again = N.cached_or_measure(eng, directory=tmp_path, warn=warnings.append)
    assert again.cached and again.batches == first.batches and warnings == []
    # another thread count is another key (another file)
    eng2 = make_engine(tiny_target, threads=2)
    assert N.cache_key(eng2)[1] != N.cache_key(eng)[1]
    # a corrupt file: one line, measured again, written again
    path = tmp_path / f"{first.key}.json"
    path.write_text("{not json", encoding="utf-8")
    third = N.cached_or_measure(eng, directory=tmp_path, warn=warnings.append)
    assert not third.cached and third.batches == first.batches
    assert len(warnings) == 1 and "corrupt" in warnings[0] and "\n" not in warnings[0]
    assert json.loads(path.read_text())["result"]["batches"][0]["batch"] == 2
    refreshed = N.cached_or_measure(eng, directory=tmp_path, refresh=True)
    assert not refreshed.cached


# ---------------------------------------------------------------- the rule


def test_check_judges_the_parting_against_the_noise():
    ref = [5, 6, 7, 8, 9]
    margins = [0.5, 0.3, 0.02, 0.9, 0.4]
    same = check(ref, ref, margins, 0.05)
    assert same.equal and not same.parted and same.checked == 5 and same.describe() == ""
    assert same.near_tie == 2  # the reference's first near tie, as before
    parted = [5, 6, 1, 2, 3]  # parts at step 2, margin 0.02
    below = check(parted, ref, margins, 0.05)
    assert below.equal and below.at_near_tie and below.first_difference == 2 and below.checked == 3
    assert below.margin == 0.02 and "within the noise 0.05: a near tie" in below.describe()
    above = check(parted, ref, margins, 0.01)
    assert not above.equal and not above.at_near_tie and "above the noise 0.01: unequal" in above.describe()
    at = check(parted, ref, margins, 0.02)  # at the noise: within it
    assert at.equal
    # bit-identical kernels (noise 0): any parting is a real inequality
    assert not check(parted, ref, [0.0, 0.0, 0.0, 0.0, 0.0], 0.0).equal
    assert first_near_tie([0.0, 0.1], 0.0) == 2
    # a parting past the first near tie is judged too (formerly not): above the noise, unequal
    late = check([5, 6, 7, 1, 9], ref, margins, 0.05)
    assert not late.equal and late.first_difference == 3 and late.near_tie == 2
    # no margin known for the parting step: not excused
    assert not check([1], [2], [], 0.05).equal
    assert math.isclose(check(ref, ref, margins).threshold, UNMEASURED_MARGIN)


# ---------------------------------------------------------------- the bench's words


def _run(engine, settings, n=32, prompt=PROMPT):
    return list(engine.run(prompt, RunControl(settings), n))


def _tokens(events):
    """(ids, texts) of a run's emitted tokens."""
    toks = [t for ev in events if isinstance(ev, PassEvent) for t in ev.emitted]
    return [t.id for t in toks], [t.text for t in toks]


def _row(prompt, setting, events, near_tie=None, tokens=None):
    """The bench's row of a real run; ``tokens`` (ids, texts): another run's output in its place."""
    ids, pieces = tokens if tokens is not None else _tokens(events)
    margins = None
    if setting.is_baseline:
        m = margins_of(events)
        margins = tuple(m) if m is not None else None
    return BenchRow(prompt, 0, setting, 0, compute(events), tuple(ids), "".join(pieces), margins,
                    pieces=tuple(pieces), near_tie=near_tie)


def test_report_says_where_outputs_part_and_at_what_margin(make_engine, tiny_target, tiny_draft_noisy):
    """Rows from real runs: the target alone (the baseline), speculation at k = 2 (equal token for token), and,
    standing for speculation that changed the output, the noisy draft model's own greedy text (it parts from
    the target's at a step whose margin is far above the target's measured noise: unequal); the same text judged
    against a noise above that margin is a near tie."""
    eng = make_engine(tiny_target, tiny_draft_noisy, inspect_top=1)
    other = make_engine(tiny_draft_noisy, inspect_top=1)
    noise = N.measure(eng)
    base_s, spec_s = Setting(BASELINE, 0, 0.0), Setting("model", 2, 0.0)
    base_ev = _run(eng, Settings(draft_max=0, drafter="none"))
    spec_ev = _run(eng, Settings(draft_max=2, drafter="model"))
    other_ev = _run(other, Settings(draft_max=0, drafter="none"))
    other_ids, other_pieces = _tokens(other_ev)
    margins = margins_of(base_ev)
    c = check(other_ids, emitted_ids(base_ev), margins, noise.threshold(2))
    assert c.parted and c.margin > noise.threshold(2)  # the fixture models' fact the test stands on
    rows = []
    for qid, near_tie in ((1, noise.threshold(2)), (2, noise.threshold(2)), (3, c.margin * 2)):
        p = Prompt(qid, "free", (PROMPT,))
        rows.append(_row(p, base_s, base_ev))
        if qid == 1:
            rows.append(_row(p, spec_s, spec_ev, near_tie))
        else:
            rows.append(_row(p, spec_s, spec_ev, near_tie, tokens=(other_ids, other_pieces)))
    summ = {(s.category, s.setting.label): s for s in aggregate(rows)}
    ov = summ[(OVERALL, "model k=2")]
    assert (ov.compared, ov.equal) == (3, 2) and len(ov.unequal) == 1 and len(ov.near_ties) == 1
    at = c.first_difference
    assert ov.unequal[0].startswith(f"q2 turn 1 rep 1: parts at token {at + 1} ")
    assert f"baseline margin {c.margin:.3g} above the noise {noise.threshold(2):.3g}" in ov.unequal[0]
    assert ov.near_ties[0].startswith(f"q3 turn 1 rep 1: parts at token {at + 1} ")
    assert f"within the noise {2 * c.margin:.3g}" in ov.near_ties[0]
    base_piece = _tokens(base_ev)[1][at]
    assert f"({base_piece!r} / {other_pieces[at]!r})" in ov.unequal[0]
    lines = report_lines(aggregate(rows))
    eq = next(ln for ln in lines if ln.startswith("Equal outputs (temp 0): "))
    assert eq.startswith("Equal outputs (temp 0): 2 of 3 speculative runs equal their baseline: 1 token for token, "
                         "1 up to a parting at a near tie")
    assert f"model k=2 {2 * c.margin:.3g}" in eq  # the noise its runs were judged against (the largest)
    assert any(ln.startswith("Parted at a near tie (numerics, not speculation) - model k=2: q3 ") for ln in lines)
    bad = next(ln for ln in lines if ln.startswith("Unequal: "))
    assert bad.startswith("Unequal: 1 run parted from the baseline at a margin above the noise, a real inequality"
                          " - model k=2: q2 turn 1 rep 1")


def test_report_without_a_measured_noise_says_so(make_engine, tiny_target):
    eng = make_engine(tiny_target, inspect_top=1)
    ev = _run(eng, Settings(draft_max=0, drafter="none"), n=12)
    spec = _run(eng, Settings(draft_max=2, drafter="ngram"), n=12)
    p = Prompt(1, "free", (PROMPT,))
    rows = [_row(p, Setting(BASELINE, 0, 0.0), ev), _row(p, Setting("ngram", 2, 0.0), spec)]
    lines = report_lines(aggregate(rows))
    eq = next(ln for ln in lines if ln.startswith("Equal outputs"))
    assert "1 of 1" in eq and f"ngram k=2 not measured ({UNMEASURED_MARGIN:g} assumed)" in eq
    assert not any(ln.startswith("Unequal") for ln in lines)
    # a measured noise of 0 (bit-identical kernels) is said so
    rows[1] = replace(rows[1], near_tie=0.0)
    eq0 = next(ln for ln in report_lines(aggregate(rows)) if ln.startswith("Equal outputs"))
    assert "ngram k=2 0 (bit-identical)" in eq0


def test_a_small_context_measures_fewer_tokens(make_engine, tiny_target, tmp_path):
    """-c too small for the prompt and 64 tokens: as many as fit are measured; none fitting is a one-line error
    (the bench then judges against the unmeasured threshold and says so)."""
    from spectui.contract.errors import SpectuiError  # noqa: PLC0415
    from spectui.contract.prompt import DEFAULT_PROMPT  # noqa: PLC0415

    eng = make_engine(tiny_target, n_ctx=48)
    room = 48 - len(eng.tokenize(DEFAULT_PROMPT))
    assert N.fitting_tokens(eng) == room < 64
    r = N.cached_or_measure(eng, directory=tmp_path)
    assert r.n_tokens == room and r.batches[0].rows == room - 1
    tight = make_engine(tiny_target, n_ctx=len(eng.tokenize(DEFAULT_PROMPT)) + 4)
    with pytest.raises(SpectuiError, match="at least 8 tokens"):
        N.cached_or_measure(tight, directory=tmp_path)
