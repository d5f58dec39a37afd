"""The bench report's words against its numbers: random summaries through the sentence builder; "wins" only when
the speedup printed is above 1.00x, "target only is best" otherwise, "more than" / "less than" as the tokens per
step compare with the break-even; no speedup without a baseline."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from spectui.bench.aggregate import Range, Summary
from spectui.bench.plan import BASELINE, Setting
from spectui.bench.report import category_lines
from spectui.text.bench import table_rows


def summary(setting: Setting, tps: float, base_tps: float, pass_ms: float, tpp: float, acc: float) -> Summary:
    sp = tps / base_tps if base_tps and not setting.is_baseline else 1.0
    return Summary(
        category="code", setting=setting, runs=2, prompts=2,
        mean_accepted_tokens=0.0 if setting.is_baseline else 1 + tpp,
        acceptance_rate=acc, acceptance_by_position=(acc,), n_drafted=10, n_accepted=int(10 * acc), passes_drafted=5,
        tokens_per_second=tps, baseline_tokens_per_second=base_tps, speedup=sp,
        speedup_range=Range(sp * 0.9, sp, sp * 1.1, 2) if not setting.is_baseline else Range(),
        ttft_ms=50.0, tokens_per_pass=tpp, pass_ms=pass_ms, draft_ms_per_pass=1.0, verify_ms=pass_ms - 1.0,
    )


pos = st.floats(min_value=0.5, max_value=200.0, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(base_tps=pos, spec_tps=pos, base_ms=st.floats(2.0, 200.0), ratio=st.floats(0.5, 4.0),
       tpp=st.floats(1.0, 4.0), acc=st.floats(0.0, 1.0))
def test_words_match_numbers(base_tps, spec_tps, base_ms, ratio, tpp, acc):
    base = summary(Setting(BASELINE, 0, 0.0), base_tps, base_tps, base_ms, 1.0, 0.0)
    spec = summary(Setting("model", 2, 0.0), spec_tps, base_tps, base_ms * ratio, tpp, acc)
    (line,) = category_lines([base, spec])
    printed = float(re.search(r"(\d+\.\d\d)x", line).group(1))
    assert printed == float(f"{spec.speedup:.2f}")
    if printed > 1.0:
        assert "model k=2 wins" in line and "target only is best" not in line
    else:
        assert "target only is best" in line and "wins" not in line
        assert ("loses" in line) == (printed < 1.0) and ("breaks even" in line) == (printed == 1.0)
    r = spec.pass_ms / base.pass_ms
    m = re.search(r"it got (\d+\.\d\d) \((more than|less than|exactly) that", line)
    assert m is not None
    assert m.group(2) == ("more than" if tpp > r else "less than" if tpp < r else "exactly")
    if r > 3:
        assert "cannot break even at this k" in line


def test_no_baseline_no_speedup():
    spec = summary(Setting("server", 0, 0.0, name="http://127.0.0.1:1"), 20.0, 0.0, 10.0, 1.5, 0.4)
    (line,) = category_lines([spec], has_baseline=False)
    assert "no baseline measured, so no speedup" in line and "x" not in line.split(":", 1)[1].replace("http", "")
    row = table_rows([spec], has_baseline=False)[0]
    assert row[9] == "-"  # the speedup column
