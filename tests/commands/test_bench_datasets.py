"""spectui bench's prompt sets: Spec-Bench JSONL, SPEED-Bench Parquet, plain text and the built-in set, in small
files the tests write; selection (--categories, --per-category, --limit) and the faults (one line, exit 2)."""

from __future__ import annotations

import json

import pytest

from spectui.bench.datasets import (
    AGENTIC,
    BUILTIN,
    FORMAT_JSONL,
    FORMAT_PARQUET,
    FORMAT_TEXT,
    load_prompts,
    parse_categories,
    select,
    turns_for,
)
from spectui.contract.errors import SpectuiError

SPEC_BENCH = [
    {"question_id": 81, "category": "writing", "turns": ["Write a haiku about rain.", "Now one about snow."]},
    {"question_id": 3, "category": "math", "turns": ["What is 2 + 2?"]},
    {"question_id": 1, "category": "math", "turns": ["What is 7 * 6?"]},
    {"question_id": 2, "category": "math", "turns": ["What is 9 - 4?"]},
    {"question_id": 82, "category": "writing", "turns": ["Write a limerick."]},
]


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_spec_bench_jsonl(tmp_path):
    ps = load_prompts(str(write_jsonl(tmp_path / "question.jsonl", SPEC_BENCH)))
    assert ps.format == FORMAT_JSONL and len(ps) == 5
    assert ps.categories == ["writing", "math"]
    assert ps.prompts[0].turns == ("Write a haiku about rain.", "Now one about snow.")
    assert ps.prompts[0].question_id == 81


def test_speed_bench_parquet(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table({
        "question_id": ["c-1", "c-2", "w-1"],
        "category": ["coding", "coding", "writing"],
        "sub_category": ["python", "rust", "essay"],
        "turns": [["Write fizzbuzz."], ["Write a linked list."], ["An essay on tea."]],
        "source": ["x", "y", "z"],  # SPEED-Bench has more columns; they are ignored
    })
    path = tmp_path / "qualitative.parquet"
    pq.write_table(table, path)
    ps = load_prompts(str(path))
    assert ps.format == FORMAT_PARQUET and len(ps) == 3
    assert ps.categories == ["coding", "writing"]
    assert ps.prompts[1].sub_category == "rust" and ps.prompts[1].turns == ("Write a linked list.",)


def test_parquet_without_the_fields(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "other.parquet"
    pq.write_table(pa.table({"text": ["hello"]}), path)
    with pytest.raises(SpectuiError, match="lacks the column"):
        load_prompts(str(path))


def test_plain_text(tmp_path):
    path = tmp_path / "my-prompts.txt"
    path.write_text("first prompt\n\n  second prompt  \nthird\n", encoding="utf-8")
    ps = load_prompts(str(path))
    assert ps.format == FORMAT_TEXT and ps.categories == ["my-prompts"]
    assert [p.turns[0] for p in ps.prompts] == ["first prompt", "second prompt", "third"]
    assert [p.question_id for p in ps.prompts] == [1, 3, 4]  # line numbers


def test_builtin_set():
    ps = load_prompts(BUILTIN)
    assert ps.categories == ["code", "code_edit", "writing", "summarization", "qa", "math"]
    for cat in ps.categories:
        n = sum(1 for p in ps.prompts if p.category == cat)
        assert 3 <= n <= 4, cat
    edits = [p for p in ps.prompts if p.category == "code_edit"]
    assert all("```" in p.turns[0] for p in edits)  # the code to edit is in the prompt
    assert any(len(p.turns) == 2 for p in ps.prompts)  # multi-turn prompts exist
    assert len({p.question_id for p in ps.prompts}) == len(ps)


def _longest_common(a: str, b: str) -> int:
    from difflib import SequenceMatcher

    return SequenceMatcher(None, a, b, autojunk=False).find_longest_match(0, len(a), 0, len(b)).size


def test_agentic_set():
    """The agentic sessions load through the bench's own checks (the same reader as any Spec-Bench file), every
    turn of them runs by default, and their later turns repeat earlier ones: the same tool call with the same JSON
    arguments, the file written before, asked again whole with one change."""
    ps = load_prompts(AGENTIC)
    assert ps.source == AGENTIC and ps.format == FORMAT_JSONL and ps.categories == ["agentic"]
    assert 6 <= len(ps) <= 10 and len({p.question_id for p in ps.prompts}) == len(ps)
    assert all(3 <= len(p.turns) <= 5 and all(t.strip() for t in p.turns) for p in ps.prompts)
    assert select(ps, ["agentic"], per_category=2).prompts == ps.prompts[:2]
    assert turns_for(None, ps.source) == "all" and turns_for(None, BUILTIN) == "first"
    assert turns_for("first", ps.source) == "first"  # --turns as given wins
    for p in ps.prompts:
        assert '{"tool": NAME, "args": {...}}' in p.turns[0]  # tool calls as one JSON object
        later = p.turns[1:]
        assert any("write_file" in t and ("whole" in t or "same" in t) for t in p.turns), p.question_id
        assert any("same arguments" in t or "exactly as" in t or "as before" in t for t in later), p.question_id
        # a later turn repeats an earlier one verbatim (a tool call's JSON arguments, a file)
        assert max(_longest_common(a, b) for j, b in enumerate(p.turns) for a in p.turns[:j]) >= 40, p.question_id
    # the set as a file given by path reads the same
    from spectui.bench.datasets import AGENTIC_PATH

    assert load_prompts(str(AGENTIC_PATH)).prompts == ps.prompts


def test_selection(tmp_path):
    ps = load_prompts(str(write_jsonl(tmp_path / "q.jsonl", SPEC_BENCH)))
    sub = select(ps, ["math"], per_category=2)
    assert [p.question_id for p in sub.prompts] == [1, 2]  # first N by question id, not file order
    assert [p.question_id for p in select(ps, per_category=1).prompts] == [81, 1]
    assert len(select(ps, limit=3)) == 3
    assert [p.category for p in select(ps, parse_categories("math,writing")).prompts][:2] == ["writing", "writing"]
    assert select(ps, per_category=2).prompts == select(ps, per_category=2).prompts  # deterministic


@pytest.mark.parametrize("content, match", [
    (b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", "neither"),
    (b'{"question_id": 1, "category": "x"}\n', "lacks turns"),
    (b'{"question_id": 1, "category": "x", "turns": []}\n', "non-empty list"),
    (b'{"question_id": 1, "category": "x", "turns": ["a"]}\n{oops\n', "line 2 is not JSON"),
    (b"\n\n  \n", "holds no prompts"),
])
def test_bad_files(tmp_path, content, match):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    with pytest.raises(SpectuiError, match=match) as exc:
        load_prompts(str(path))
    assert "\n" not in str(exc.value)


def test_named_parquet_that_is_not(tmp_path):
    path = tmp_path / "fake.parquet"
    path.write_text("question_id,category\n", encoding="utf-8")
    with pytest.raises(SpectuiError, match="not a Parquet file"):
        load_prompts(str(path))


def test_missing_category_and_empty_selection(tmp_path):
    ps = load_prompts(str(write_jsonl(tmp_path / "q.jsonl", SPEC_BENCH)))
    with pytest.raises(SpectuiError, match="has no category rag"):
        select(ps, ["math", "rag"])
    with pytest.raises(SpectuiError, match="--per-category must be at least 1"):
        select(ps, per_category=0)
    with pytest.raises(SpectuiError, match="not found"):
        load_prompts(str(tmp_path / "absent.jsonl"))
