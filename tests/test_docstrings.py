"""Where a maintainer starts, the docstring says how to call it, as Textual's do: the public entry points of
the analysis layer and of the commands have an ``Args:`` section (when they take arguments) and a
``Returns:`` section (when they return something), and every name an ``Args:`` section gives is one of the
function's parameters (a renamed parameter cannot leave its old name behind)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "spectui"

# What the layers above call (the faces, the commands, the benchmarks), by module and qualified name.
ENTRY_POINTS = {
    "analysis/stats.py": ["compute", "RunStats.update", "RunStats.snapshot"],
    "analysis/cost/costmodel.py": ["predict", "predict_from", "advice", "leviathan", "break_even_acceptance"],
    "analysis/cost/draft_policy.py": ["make_policy"],
    "analysis/measured/probe.py": ["measure", "cached_or_measure", "render"],
    "analysis/measured/probe_verdict.py": ["analyse"],
    "analysis/measured/noise.py": ["measure", "cached_or_measure"],
    "analysis/measured/head_cost.py": ["cached_or_measure", "render"],
    "analysis/lossless.py": ["check"],
    "analysis/attach_stats.py": ["AttachStats.update", "AttachStats.snapshot"],
    "analysis/cost/wording.py": ["trend", "outcome", "moved"],
    "commands/__init__.py": ["command"],
    "commands/bench.py": ["bench_main"],
    "commands/sweep.py": ["sweep_main"],
    "commands/common.py": ["resolve_prompt", "plan_drafting", "load_engine"],
    "commands/replay.py": ["explain_pass"],
    "commands/cast.py": ["render_cast", "write_asciicast"],
    "contract/draft_length.py": ["parse_ks"],
    "race/spec.py": ["parse_spec"],
    "text/run.py": ["summary_text", "summary_dict"],
    "bench/runner.py": ["run_bench"],
    "bench/server.py": ["chat_request", "server_bench"],
}


def functions(path: Path) -> dict[str, ast.FunctionDef]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        out.update({f"{cls.name}.{m.name}": m for m in cls.body if isinstance(m, ast.FunctionDef)})
    return out


def parameters(fn: ast.FunctionDef) -> set[str]:
    a = fn.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    names += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
    return {n for n in names if n not in ("self", "cls")}


def section(doc: str, title: str) -> str | None:
    """The text of a Google-style section (``Args:``), up to the next section or the end."""
    m = re.search(rf"^\s*{title}:\s*$(.*?)(?=^\s*(?:Args|Returns|Raises|Yields|Example|Note)s?:\s*$|\Z)", doc,
                  flags=re.M | re.S)
    return m.group(1) if m else None


def named_in_args(text: str) -> set[str]:
    """The parameter names an Args section gives: each entry's names before its colon ("a, b: ...")."""
    indents = [len(ln) - len(ln.lstrip()) for ln in text.splitlines() if ln.strip()]
    first = min(indents) if indents else 0
    names = set()
    for ln in text.splitlines():
        if ln.strip() and len(ln) - len(ln.lstrip()) == first:
            for chunk in re.split(r";\s*", ln.strip()):  # "a: ...; b: ..." gives two entries on one line
                m = re.match(r"^([\w, ]+):\s", chunk + " ")
                if m:
                    names |= {n.strip() for n in m.group(1).split(",") if n.strip()}
    return names


CASES = [(mod, name) for mod, names in ENTRY_POINTS.items() for name in names]


@pytest.mark.parametrize("module, name", CASES, ids=[f"{m}:{n}" for m, n in CASES])
def test_entry_point_says_how_to_call_it(module, name):
    fn = functions(PACKAGE / module).get(name)
    assert fn is not None, f"spectui/{module} has no {name}"
    doc = ast.get_docstring(fn) or ""
    params = parameters(fn)
    if params:
        args = section(doc, "Args")
        assert args is not None, f"{name}: no Args: section"
        unknown = named_in_args(args) - params
        assert not unknown, f"{name}: Args names {sorted(unknown)}, not parameters of it ({sorted(params)})"
        assert named_in_args(args), f"{name}: an Args: section that names no parameter"
    returns_value = fn.returns is None or ast.unparse(fn.returns) != "None"
    if returns_value and not isinstance(fn, ast.AsyncFunctionDef):
        assert section(doc, "Returns") is not None, f"{name}: no Returns: section"


def test_the_sections_are_read_as_they_are_written():
    doc = ("Summary.\n\nArgs:\n    a, b: the two; c: a third.\n        d: a continuation, not an entry\n\n"
           "Returns:\n    x\n")
    assert named_in_args(section(doc, "Args")) == {"a", "b", "c"}
    assert section(doc, "Returns").strip() == "x"
