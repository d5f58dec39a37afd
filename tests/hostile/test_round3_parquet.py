"""The third hostile-input report (../shared/reports/bad-input-2026-12-06.md), its ``--prompts`` rows, by id:
Parquet prompt sets under the JSONL limits (spectui.bench.parquet: the prompt count from the footer, one
row's text and all of it before each row group is decoded) and JSONL nested deeper than Python's parser
reads. Each case is a real ``python -m spectui bench`` on the tiny models, its peak memory its own
(tests/hostile/peak_rss.py), on small files built here.

Before (the report, 2-core AMD EPYC): P-prompt200m.parquet 8.6 GB, killed at 95 s; P-dict2g.parquet 6.2 GB,
killed at 95 s; P-rows10m.parquet 5.2 GB and 72 s before the prompt limit spoke; P-deep.jsonl and
P-deep_obj.jsonl a RecursionError traceback, status 1.
"""

from __future__ import annotations

import numpy as np
import pytest
from peak_rss import run_peak

from spectui.bench.datasets import MAX_PROMPT_FILE_BYTES, MAX_PROMPT_LINE_BYTES, MAX_PROMPTS, load_prompts
from spectui.contract.errors import SpectuiError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

MB = 1 << 20


def one_line(err: bytes) -> str:
    lines = [ln for ln in err.decode("utf-8", "replace").splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("spectui: error: --prompts: ") and "Traceback" not in lines[0]
    return lines[0]


@pytest.fixture
def bench(tiny_target, tiny_draft_noisy, record_property):
    def run(path, timeout: float = 60):
        rc, secs, mb, out, err = run_peak("bench", "-m", tiny_target, "-md", tiny_draft_noisy, "-n", "4",
                                          "--limit", "2", "-t", "1", "--prompts", path, timeout=timeout)
        line = one_line(err)
        assert rc == 2, (rc, line)
        record_property("seconds", round(secs, 2))  # --junitxml
        record_property("peak_mb", round(mb, 1))
        return line, secs, mb
    return run


def same(n: int, text: str):
    """``n`` rows of one dictionary-encoded value (what makes a tiny file decode to gigabytes)."""
    return pa.DictionaryArray.from_arrays(np.zeros(n, dtype=np.int32), pa.array([text]))


def turns_of(values, n: int):
    return pa.ListArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32)), values)


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_P_prompt200m_parquet(tmp_path, bench):
    path = tmp_path / "prompt200m.parquet"
    size = 200 * MB  # one string of 200 MB of NULs, made without a Python string of it
    prompt = pa.StringArray.from_buffers(1, pa.array([0, size], pa.int32()).buffers()[1], pa.py_buffer(bytes(size)))
    pq.write_table(pa.table({"question_id": [1], "category": ["c"], "turns": turns_of(prompt, 1)}), path,
                   compression="zstd", use_dictionary=False)  # the same footer either way; this writes faster
    assert path.stat().st_size < 64 << 10  # 7.5 KB
    line, secs, mb = bench(path)
    assert "a prompt longer than 1 MiB, nothing decoded" in line, line
    assert mb < 200 and secs < 30, (mb, secs)  # was 8.6 GB, killed at 95 s


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_P_dict2g_parquet(tmp_path, bench):
    """2000 rows of one 1 MiB turn in one dictionary page: 6 KB of file, 1 MB uncompressed in the footer,
    2 GB decoded; only the decoded sizes (the dictionary's entry sizes, taken by the indices) tell."""
    path = tmp_path / "dict2g.parquet"
    n = 2000
    pq.write_table(pa.table({"question_id": np.arange(n), "category": same(n, "c"),
                             "turns": turns_of(same(n, "B" * MB), n)}), path, compression="zstd",
                   dictionary_pagesize_limit=8 * MB)
    assert path.stat().st_size < 64 << 10
    line, secs, mb = bench(path)
    assert "row 1 is longer than 1 MiB (1,048,59" in line and "(limits: docs/untrusted-input.md)" in line, line
    assert mb < 250 and secs < 30, (mb, secs)  # was 6.2 GB, killed at 95 s


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_footer_total_is_checked_before_decoding(tmp_path, bench):
    """What pyarrow wrote for the report's P-dict2g (its dictionary fell back to plain pages): rows under
    1 MiB each, but more than 32 MiB uncompressed in the footer: refused before any row group is read."""
    path = tmp_path / "plain.parquet"
    n = 80
    pq.write_table(pa.table({"question_id": np.arange(n), "category": same(n, "c"),
                             "turns": [["B" * (MB // 2)]] * n}), path, compression="zstd", use_dictionary=False)
    line, secs, mb = bench(path)
    assert "holds more than 32 MiB of prompt text uncompressed (from its footer, nothing decoded)" in line, line
    assert mb < 200, mb


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_P_rows10m_parquet(tmp_path, bench):
    path = tmp_path / "rows10m.parquet"
    n = 10_000_000
    pq.write_table(pa.table({"question_id": np.arange(n), "category": same(n, "c"),
                             "turns": turns_of(same(n, "x"), n)}), path, compression="zstd")
    line, secs, mb = bench(path)
    assert f"holds 10,000,000 rows, more than {MAX_PROMPTS:,} prompts (from its footer, nothing decoded)" in line
    assert mb < 200 and secs < 20, (mb, secs)  # was 5.2 GB and 72 s


def test_whole_set_limit_while_decoding(tmp_path):
    """Each row under 1 MiB and each row group's footer small (one dictionary page), but the decoded rows
    pass 32 MiB in all: refused at the row group that passes it, before it is decoded."""
    path = tmp_path / "many.parquet"
    n = 100
    pq.write_table(pa.table({"question_id": np.arange(n), "category": same(n, "c"),
                             "turns": turns_of(same(n, "C" * (MB // 2)), n)}), path, row_group_size=10,
                   dictionary_pagesize_limit=2 * MB)
    with pytest.raises(SpectuiError, match=rf"more than {MAX_PROMPT_FILE_BYTES >> 20} MiB of prompt text \(row 70"):
        load_prompts(str(path))


def test_a_column_of_another_type_is_one_line(tmp_path):
    path = tmp_path / "struct.parquet"
    pq.write_table(pa.table({"question_id": [1], "category": ["c"], "turns": [{"a": "x"}]}), path)
    with pytest.raises(SpectuiError, match="the column turns is struct"):
        load_prompts(str(path))


def test_parquet_under_the_limits_still_reads(tmp_path):
    path = tmp_path / "ok.parquet"
    n = 20  # 20 MiB in all
    big = "d" * (MAX_PROMPT_LINE_BYTES - 100)
    pq.write_table(pa.table({"question_id": np.arange(n), "category": same(n, "c"), "sub_category": same(n, "s"),
                             "turns": turns_of(same(n, big), n)}), path, dictionary_pagesize_limit=2 * MB)
    ps = load_prompts(str(path))
    assert len(ps) == n and ps.prompts[-1].turns == (big,) and ps.prompts[0].sub_category == "s"


@pytest.mark.parametrize("inner, close", [("[", "]"), ('{"a":', "}")], ids=["P-deep.jsonl", "P-deep_obj.jsonl"])
def test_P_deep_jsonl(tmp_path, bench, inner, close):
    depth = 100_000 if inner == "[" else 50_000
    path = tmp_path / "deep.jsonl"
    path.write_text('{"question_id":1,"category":"c","turns":' + inner * depth + ("1" if close == "}" else "")
                    + close * depth + "}\n")
    line, secs, mb = bench(path)
    assert "line 1 nests its JSON deeper than Python's parser reads" in line, line  # was a RecursionError traceback
