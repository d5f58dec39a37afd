"""Prompt sets for ``spectui bench``: Spec-Bench JSONL, SPEED-Bench Parquet, plain text, or the built-in set.

- Spec-Bench (``question.jsonl``): one JSON object per line with ``question_id``, ``category`` and ``turns``
  (a list of user messages; ``turns[0]`` is the prompt, the others follow the model's own answers).
- SPEED-Bench (its "qualitative" split): Parquet with the same fields plus ``sub_category``; read with pyarrow.
- Plain text: one prompt per non-empty line, all in one category named after the file (``notes.txt`` ->
  ``notes``); question ids are the line numbers.
- ``builtin``: ``spectui/data/bench-prompts.jsonl`` (Spec-Bench's format), prompts written for this project in
  six categories that span the range: code, code_edit, writing, summarization, qa, math.
- ``agentic``: ``spectui/data/agentic.jsonl`` (Spec-Bench's format), multi-turn sessions of a coding agent
  written for this project, category "agentic": tool calls as JSON, whole files read, written, re-read and
  written again with one change, the same call repeated with the same arguments, so that later turns repeat
  earlier ones and the model's own earlier answers. It runs every turn unless ``--turns`` says otherwise
  (:func:`turns_for`).

Selection (:func:`select`): ``--categories`` keeps the named ones (each must exist in the set),
``--per-category N`` the first N of each category by question id (a deterministic subset), ``--limit`` the
first N prompts overall. Every fault is a :class:`SpectuiError` (one line, exit 2).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..contract.bounded import Budget, BudgetExceeded, WorkFailed, call_bounded
from ..contract.errors import SpectuiError
from ..contract.outputs import missing
from ..contract.text import visible_line

BUILTIN = "builtin"
BUILTIN_PATH = Path(__file__).resolve().parent.parent / "data" / "bench-prompts.jsonl"
AGENTIC = "agentic"
AGENTIC_PATH = BUILTIN_PATH.with_name("agentic.jsonl")
NAMED = {BUILTIN: BUILTIN_PATH, AGENTIC: AGENTIC_PATH}  # the sets spectui ships, by --prompts name
MULTI_TURN = (AGENTIC,)  # the shipped sets whose point is their later turns: every turn runs by default
FORMAT_JSONL = "spec-bench jsonl"
FORMAT_PARQUET = "speed-bench parquet"
FORMAT_TEXT = "text"
PARQUET_MAGIC = b"PAR1"
REQUIRED = ("question_id", "category", "turns")


@dataclass(frozen=True)
class Prompt:
    """One question: its id as the file gives it, its category, and its turns (user messages)."""

    question_id: int | str
    category: str
    turns: tuple[str, ...]
    sub_category: str = ""

    @property
    def key(self) -> tuple:
        """Sort key: numeric ids by value, others as text (numbers first)."""
        q = self.question_id
        return (0, q, "") if isinstance(q, int) else (1, 0, str(q))


@dataclass(frozen=True)
class PromptSet:
    source: str  # "builtin" or the path given
    format: str  # FORMAT_*
    prompts: tuple[Prompt, ...]

    @property
    def categories(self) -> list[str]:
        """Categories in order of first appearance."""
        out: list[str] = []
        for p in self.prompts:
            if p.category not in out:
                out.append(p.category)
        return out

    def __len__(self) -> int:
        return len(self.prompts)


# Limits on a prompt file (docs/untrusted-input.md): a dataset is a stranger's file. Past one: one line, exit 2.
MAX_PROMPT_FILE_BYTES = 32 << 20  # Spec-Bench's question.jsonl is about 0.5 MB
MAX_PROMPT_LINE_BYTES = 1 << 20  # one JSON record or one text prompt
MAX_PROMPTS = 100_000
# A Parquet file is read by a child process under this budget (docs/untrusted-input.md): within the limits above
# a set takes a second or two and tens of MB; the prompts come back as JSON (32 MiB of text, escapes included).
PARQUET_BUDGET = Budget(seconds=60.0, memory_bytes=1 << 30, output_bytes=4 * MAX_PROMPT_FILE_BYTES)
_PAST = {
    "time": f"took longer than {PARQUET_BUDGET.seconds:g} s (the limit on reading a Parquet prompt set)",
    "memory": f"needed more than {PARQUET_BUDGET.memory_bytes >> 30} GiB of memory (the limit on reading a Parquet "
              "prompt set)",
    "output": f"gave more than {PARQUET_BUDGET.output_bytes >> 20} MiB of prompts (the limit on reading a Parquet "
              "prompt set)",
}


def _read_bounded(path: Path, spec: str) -> bytes:
    """At most MAX_PROMPT_FILE_BYTES of the file (a device or a pipe too: /dev/zero is refused, not read)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_PROMPT_FILE_BYTES + 1)
    except OSError as exc:
        raise SpectuiError(f"--prompts: cannot read {spec}: {exc.strerror or exc}") from None
    if len(data) > MAX_PROMPT_FILE_BYTES:
        raise SpectuiError(f"--prompts: {spec} is larger than {MAX_PROMPT_FILE_BYTES >> 20} MiB: not a prompt set "
                           "spectui reads (limits: docs/untrusted-input.md)")
    return data


def _check_count(prompts: tuple, spec: str) -> tuple:
    if len(prompts) > MAX_PROMPTS:
        raise SpectuiError(f"--prompts: {spec} holds more than {MAX_PROMPTS} prompts (limits: docs/untrusted-input.md)")
    return prompts


def _check_lines(text: str, spec: str) -> None:
    if len(text) <= MAX_PROMPT_LINE_BYTES:
        return
    for n, line in enumerate(text.split("\n"), 1):
        if len(line) > MAX_PROMPT_LINE_BYTES:
            raise SpectuiError(f"--prompts: {spec} line {n} is longer than {MAX_PROMPT_LINE_BYTES >> 20} MiB "
                               "(limits: docs/untrusted-input.md)")
        if n > MAX_PROMPTS * 10:
            raise SpectuiError(f"--prompts: {spec} has more than {MAX_PROMPTS * 10} lines "
                               "(limits: docs/untrusted-input.md)")


def turns_for(turns: str | None, source: str) -> str:
    """--turns as given, or, when it was not: "all" for a shipped multi-turn set (``agentic``), else "first"."""
    if turns is not None:
        return turns
    return "all" if source in MULTI_TURN else "first"


def load_prompts(spec: str = BUILTIN) -> PromptSet:
    """Read a prompt set: a shipped one by name (``builtin``, ``agentic``) or a file in one of the three formats
    (detected from its bytes)."""
    if spec in NAMED:
        return PromptSet(spec, FORMAT_JSONL, _read_jsonl(NAMED[spec].read_text(encoding="utf-8"), spec))
    path = Path(spec)
    if not path.exists():
        why = missing(path)  # a loop of symbolic links is not "not found"
        raise SpectuiError(f"--prompts: file not found: {spec} (or use --prompts builtin or agentic)"
                           if why == "file not found" else f"--prompts: {spec}: {why}")
    if path.is_dir():
        raise SpectuiError(f"--prompts: {spec} is a directory, not a prompt file")
    data = _read_bounded(path, spec)
    if data[:4] == PARQUET_MAGIC:
        prompts = _check_count(_read_parquet(data, spec), spec)
        fmt = FORMAT_PARQUET
    else:
        if path.suffix.lower() == ".parquet":
            raise SpectuiError(f"--prompts: {spec} is named .parquet but is not a Parquet file (no PAR1 magic)")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise SpectuiError(
                f"--prompts: {spec} is neither Spec-Bench JSONL, SPEED-Bench Parquet nor UTF-8 text"
            ) from None
        _check_lines(text, spec)
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        if first.startswith("{") or path.suffix.lower() in (".jsonl", ".json"):
            prompts = _check_count(_read_jsonl(text, spec), spec)
            fmt = FORMAT_JSONL
        else:
            prompts = _check_count(_read_text(text, path), spec)
            fmt = FORMAT_TEXT
    if not prompts:
        raise SpectuiError(f"--prompts: {spec} holds no prompts")
    return PromptSet(spec, fmt, prompts)


def _record(obj, where: str) -> Prompt:
    if not isinstance(obj, dict):
        raise SpectuiError(f"--prompts: {where} is not a JSON object (Spec-Bench: question_id, category, turns)")
    missing = [k for k in REQUIRED if k not in obj]
    if missing:
        raise SpectuiError(
            f"--prompts: {where} lacks {', '.join(missing)}: not Spec-Bench JSONL (question_id, category, turns)"
        )
    qid, cat, turns = obj["question_id"], obj["category"], obj["turns"]
    if isinstance(qid, bool) or not isinstance(qid, (int, str)):
        raise SpectuiError(f"--prompts: {where}: question_id must be an integer or a string")
    if not isinstance(cat, str) or not cat.strip():
        raise SpectuiError(f"--prompts: {where}: category must be a non-empty string")
    if isinstance(turns, str):
        turns = [turns]
    turns = list(turns) if turns is not None and not isinstance(turns, (dict, int, float)) else None
    if not turns or not all(isinstance(t, str) for t in turns):
        raise SpectuiError(f"--prompts: {where}: turns must be a non-empty list of strings")
    if not turns[0].strip():
        raise SpectuiError(f"--prompts: {where}: the first turn is empty")
    sub = obj.get("sub_category") or ""
    # a category is a label the table, the notes and the TUI show: one safe line (the turns go to the model as
    # they are)
    return Prompt(qid, visible_line(cat.strip()), tuple(turns), visible_line(str(sub)))


def _read_jsonl(text: str, where: str) -> tuple[Prompt, ...]:
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SpectuiError(
                f"--prompts: {where} line {n} is not JSON ({exc.msg}): neither Spec-Bench JSONL, "
                "SPEED-Bench Parquet nor a text file"
            ) from None
        except RecursionError:  # [[[[...]]]] 100,000 deep fits in a line; Python's parser stops near 1,000
            raise SpectuiError(
                f"--prompts: {where} line {n} nests its JSON deeper than Python's parser reads: not a Spec-Bench "
                "record (question_id, category, turns)"
            ) from None
        out.append(_record(obj, f"{where} line {n}"))
    return tuple(out)


def _read_parquet(data: bytes, spec: str) -> tuple[Prompt, ...]:
    """Its prompts, read within the JSONL limits (the prompt count from the footer, one row's text and all of
    it checked before each row group is decoded: spectui.bench.parquet), by a child process under
    PARQUET_BUDGET (spectui.contract.bounded), so a footer that lies about the sizes, or a decoder that meets
    one, costs at most that; the prompts come back as JSON."""

    def work() -> bytes:
        from .parquet import ParquetLimits, read_rows  # noqa: PLC0415 - pyarrow only in the reading child

        limits = ParquetLimits(rows=MAX_PROMPTS, row_bytes=MAX_PROMPT_LINE_BYTES, total_bytes=MAX_PROMPT_FILE_BYTES)
        rows = read_rows(data, spec, ("question_id", "category", "turns"), ("sub_category",), limits)
        prompts = [_record(r, f"{spec} row {i + 1}") for i, r in enumerate(rows)]
        out = [[p.question_id, p.category, list(p.turns), p.sub_category] for p in prompts]
        return json.dumps(out, ensure_ascii=False).encode("utf-8", "surrogatepass")

    try:
        answer = call_bounded(work, PARQUET_BUDGET)
    except BudgetExceeded as exc:
        raise SpectuiError(f"--prompts: reading {spec} {_PAST[exc.kind]} (limits: docs/untrusted-input.md)") from None
    except WorkFailed as exc:  # pyarrow raises several types for a broken file
        raise SpectuiError(f"--prompts: {spec} is not a readable Parquet file: {exc}") from None
    return tuple(Prompt(q, c, tuple(t), sub) for q, c, t, sub in json.loads(answer.decode("utf-8", "surrogatepass")))


def _read_text(text: str, path: Path) -> tuple[Prompt, ...]:
    cat = visible_line(path.stem or "prompts")
    return tuple(
        Prompt(n, cat, (line.strip(),)) for n, line in enumerate(text.splitlines(), 1) if line.strip()
    )


def parse_categories(value: str | None) -> list[str] | None:
    """"code,qa" -> ["code", "qa"]; None or "" -> None (all)."""
    if value is None:
        return None
    out = [c.strip() for c in str(value).split(",") if c.strip()]
    return out or None


def select(ps: PromptSet, categories: Sequence[str] | None = None, per_category: int | None = None,
           limit: int | None = None) -> PromptSet:
    """The prompts to run: the categories asked for (in the file's order), the first ``per_category`` of
    each by question id, at most ``limit`` overall."""
    if per_category is not None and per_category < 1:
        raise SpectuiError(f"--per-category must be at least 1, not {per_category}")
    if limit is not None and limit < 1:
        raise SpectuiError(f"--limit must be at least 1, not {limit}")
    have = ps.categories
    if categories:
        lacking = [c for c in categories if c not in have]
        if lacking:
            raise SpectuiError(
                f"--categories: {ps.source} has no category {', '.join(lacking)} (it has: {', '.join(have)})"
            )
        keep = [c for c in have if c in categories]
    else:
        keep = have
    out: list[Prompt] = []
    for cat in keep:
        ps_cat = [p for p in ps.prompts if p.category == cat]
        if per_category is not None:
            ps_cat = sorted(ps_cat, key=lambda p: p.key)[:per_category]
        out.extend(ps_cat)
    if limit is not None:
        out = out[:limit]
    if not out:
        raise SpectuiError(f"--prompts: no prompts left to run from {ps.source}")
    return PromptSet(ps.source, ps.format, tuple(out))
