"""The docs cannot go stale: the site builds strictly, and every name the docs give is real.

- ``mkdocs build --strict`` (mkdocs.yml, docs/) into a temporary folder: a broken link, a missing anchor or a
  page missing from the nav fails the README's test command; the generated option tables
  (scripts/docs_hooks.py) list every option of every command.
- Every repository file path (``spectui/...``, ``tests/...``, ``benchmarks/...``, ``scripts/...``, ``docs/...``,
  ``demos/...``, ``themes/...``, ``.ci/...``) that any tracked file names exists: the whole text of the docs,
  pyproject.toml, .ci/run, the shell scripts, the themes and the styles, and the docstrings and comments of
  every Python file (its code's strings are data: a test's missing file, an f-string); so does every file a
  package's docstring names beside it (``run/``, ``serve.py`` in spectui/tui/__init__.py).
- Every dotted module path (``spectui.`` and names: a module, then attributes) that README.md, docs/*.md or a
  docstring in spectui/, tests/ or benchmarks/ names exists.
- Every ``spectui ...`` command line in README.md and docs/*.md uses options its command has.
- README's exit-status table is spectui/contract/exitcodes.py's.
"""

from __future__ import annotations

import ast
import glob
import io
import json
import os
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# A repository path: one of the top-level folders, then path characters; `*` and `<name>` are globs.
PATH_RE = re.compile(r"(?<![\w./~$-])(?:spectui|tests|benchmarks|scripts|docs|demos|themes|\.ci)/"
                     r"[\w./*<>{},-]*[\w*>}/]")
# A dotted module path: spectui.a.b (not inside a file path, not a quoted name such as the schema "spectui.trace").
MODULE_RE = re.compile(r"(?<![\w./\"'-])spectui(?:\.[A-Za-z_]\w*)+")
# Paths the docs name that a fresh checkout does not have: made by a script, git-ignored.
MADE_BY_SCRIPTS = {"benchmarks/gpu/carry": "benchmarks/gpu/prepare.sh fills it (git-ignored)",
                   "spectui/themes": "themes/ inside the installed package (pyproject's force-include)",
                   "demos/knee.cast": "demos/record_knee.py -o writes it (docs/batch-knee.md's recipe)"}
# Dotted names that are not module paths.
NOT_MODULES = {"spectui.trace": "the trace schema's name (recording/trace.py SCHEMA)"}
FILE_SUFFIXES = {"tcss", "py", "md", "toml", "jsonl", "gz", "json", "cast", "svg", "png", "yml"}


def docstrings() -> list[tuple[Path, str]]:
    out = []
    for p in sorted(p for folder in ("spectui", "tests", "benchmarks") for p in (ROOT / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node, clean=False)
                if doc:
                    out.append((p, doc))
    return out


def named_texts() -> list[tuple[Path, str]]:
    return [(p, p.read_text(encoding="utf-8")) for p in DOCS] + docstrings()


# Tracked files read as prose: the whole text, or (Python) the docstrings and comments. Data, pictures and
# recordings (.svg snapshots, .cast, .gz, .jsonl, .png) are not prose.
PROSE_SUFFIXES = {".md", ".toml", ".yml", ".sh", ".tcss", ".py", ""}


def tracked_files() -> list[Path]:
    """Every file git tracks here (a tree without git: the files under the top-level folders and the root)."""
    r = subprocess.run(["git", "ls-files", "-z"], capture_output=True, cwd=ROOT, timeout=60)
    if r.returncode == 0 and r.stdout:
        return [ROOT / p for p in r.stdout.decode().split("\0") if p]
    return [p for p in ROOT.rglob("*") if p.is_file() and ".git" not in p.parts and ".venv" not in p.parts]


def python_prose(text: str) -> str:
    """A Python file's docstrings and comments, one after the other."""
    parts = [doc for node in ast.walk(ast.parse(text)) if isinstance(node, (
        ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) for doc in [ast.get_docstring(
            node, clean=False)] if doc]
    parts += [tok.string for tok in tokenize.generate_tokens(io.StringIO(text).readline)
              if tok.type == tokenize.COMMENT]
    return "\n".join(parts)


def prose_texts() -> list[tuple[Path, str]]:
    out = []
    for p in tracked_files():
        if p.suffix not in PROSE_SUFFIXES or not p.is_file():
            continue
        text = p.read_text(encoding="utf-8")
        out.append((p, python_prose(text) if p.suffix == ".py" else text))
    return out


def _expand(path: str) -> list[str]:
    """``a/{b,c}/d`` -> ``a/b/d``, ``a/c/d``; ``<name>`` -> ``*``."""
    path = re.sub(r"<[^>]*>", "*", path)
    m = re.search(r"\{([^{}]*)\}", path)
    if not m:
        return [path]
    return [x for alt in m.group(1).split(",") for x in _expand(path[:m.start()] + alt + path[m.end():])]


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_every_file_path_named_exists():
    texts = prose_texts()
    assert {ROOT / "pyproject.toml", ROOT / ".ci" / "run", ROOT / "scripts" / "install.sh"} <= {p for p, _ in texts}
    missing = []
    for src, text in texts:
        for raw in PATH_RE.findall(text):
            path = raw.rstrip("/.,")
            if path in MADE_BY_SCRIPTS:
                continue
            for p in _expand(path):
                if not (glob.glob(str(ROOT / p)) if "*" in p else (ROOT / p).exists()):
                    missing.append(f"{src.relative_to(ROOT)}: {raw}")
    assert not missing, "paths named that do not exist:\n" + "\n".join(sorted(set(missing)))


def test_every_file_a_package_names_beside_it_exists():
    """A package's docstring names its parts by their own names (``run/``, ``plan.py``): they are there."""
    missing, named = [], 0
    for init in sorted((ROOT / "spectui").rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")), clean=False) or ""
        for name in re.findall(r"(?<![\w./-])([\w-]+(?:\.py|\.tcss|/))(?![\w/.-])", doc):
            named += 1
            if not (init.parent / name).exists():
                missing.append(f"{init.relative_to(ROOT)}: {name}")
    assert named > 10, named  # the packages do name their parts
    assert not missing, "files a package names that are not beside it:\n" + "\n".join(missing)


def _module_names() -> dict[str, list[str]]:
    names: dict[str, list[str]] = {}
    for src, text in named_texts():
        for name in MODULE_RE.findall(text):
            if name in NOT_MODULES or name.rsplit(".", 1)[-1] in FILE_SUFFIXES:
                continue
            names.setdefault(name, []).append(str(src.relative_to(ROOT)))
    return names


# Run in a fresh interpreter (the faces import Textual, the engine llama.cpp; this test process stays clean):
# for each dotted name, import its longest importable prefix, then getattr the rest.
_RESOLVE = r"""
import importlib, json, sys
bad = {}
for name in json.loads(sys.stdin.read()):
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError as exc:
            if exc.name and not ".".join(parts[:i]).startswith(exc.name):
                bad[name] = f"importing it fails: {exc}"
                break
            continue
        except Exception as exc:
            bad[name] = f"importing it fails: {type(exc).__name__}: {exc}"
            break
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                bad[name] = f"{'.'.join(parts[:i])} has no {attr!r}"
                break
            obj = getattr(obj, attr)
        break
    else:
        bad[name] = "no such module"
print(json.dumps(bad))
"""


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_every_module_path_named_imports():
    names = _module_names()
    assert "spectui.analysis.stats" in names  # the scan reads the docs (a regex that matches nothing proves nothing)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", _RESOLVE], input=json.dumps(sorted(names)), capture_output=True,
                       text=True, cwd=ROOT, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    bad = json.loads(r.stdout.strip().splitlines()[-1])
    assert not bad, "module paths named that do not exist:\n" + "\n".join(
        f"{n} ({', '.join(sorted(set(names[n])))}): {why}" for n, why in sorted(bad.items()))


def _hooks():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import docs_hooks  # noqa: PLC0415
    finally:
        sys.path.pop(0)
    return docs_hooks


def _command_lines() -> list[tuple[str, str]]:
    """``spectui ...`` command lines of README.md and docs/*.md: code-block lines and inline code spans."""
    out = []
    for p in DOCS:
        text = p.read_text(encoding="utf-8")
        spans = re.findall(r"`((?:\.venv/bin/)?spectui [^`\n]*)`", text)
        lines = [ln.strip() for ln in text.splitlines() if ln.startswith("    ") and "spectui " in ln]
        for s in spans + lines:
            m = re.search(r"(?:^|\s)(?:\S*/)?spectui(?=\s)", s)
            if m:
                out.append((p.name, s[m.end():]))
    return out


def test_command_lines_in_the_docs_use_real_options():
    hooks = _hooks()
    cmds = hooks.commands()
    known = {name: set(hooks.option_names(c)) | {"-h", "--help"} for name, c in cmds.items()}
    known["spectui"] |= {"--version"}
    lines = _command_lines()
    assert len(lines) > 30, lines  # the docs are full of examples: a scan that finds none is broken
    wrong = []
    while lines:
        page, rest = lines.pop()
        for inner in re.findall(r"\$\(\s*(?:\S*/)?spectui\s([^()]*)\)", rest):  # $(spectui ...): its own command
            lines.append((page, inner))
        rest = re.sub(r"\$\([^()]*\)", "X", rest)
        rest = re.sub(r"\s#\s.*$", "", rest)  # a comment
        rest = re.sub(r"\"[^\"]*\"|'[^']*'", "", rest)  # quoted values
        if ": " in rest:  # a message spectui prints ("spectui demo needs a terminal: ..."), not a command line
            continue
        words = rest.split()
        cmd = "spectui"
        if words and words[0] in cmds:
            cmd = words.pop(0)
        allowed = set(known[cmd])
        if cmd == "serve":  # serve's own options and the served command's
            allowed |= next((known[w] for w in words if w in cmds and w != "spectui"), known["spectui"])
        for w in words:
            for flag in re.findall(r"(?:^|[\[(|])(--?[A-Za-z][\w-]*)", w):
                if flag not in allowed:
                    wrong.append(f"{page}: spectui {'' if cmd == 'spectui' else cmd + ' '}... {flag}  ({rest.strip()})")
    assert not wrong, "options the commands do not have:\n" + "\n".join(sorted(set(wrong)))


def test_readme_exit_status_table_is_exitcodes():
    from spectui.contract import exitcodes  # noqa: PLC0415

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Exit statuses", 1)[1].split("\n## ", 1)[0]
    statuses = {int(m) for m in re.findall(r"^\| (\d+) \|", section, flags=re.M)}
    assert statuses == {exitcodes.OK, exitcodes.FAILED, exitcodes.USAGE, exitcodes.SIGINT_STATUS,
                        exitcodes.SIGTERM_STATUS, exitcodes.SIGHUP_STATUS}


@pytest.mark.slow
def test_docs_site_builds_strictly_with_every_option(tmp_path):
    pytest.importorskip("mkdocs", reason="the test extra installs mkdocs (bash scripts/install.sh --test)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               NO_MKDOCS_2_WARNING="1")
    site = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)], cwd=ROOT,
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, f"mkdocs build --strict failed:\n{r.stdout}\n{r.stderr}"
    assert (site / "index.html").exists()
    # The generated tables: every command under its heading, every spelling of every option in its table.
    page = (site / "options" / "index.html").read_text(encoding="utf-8")
    hooks = _hooks()
    for name, cmd in hooks.commands().items():
        head = "spectui" if name == "spectui" else f"spectui {name}"
        assert f'id="{head.replace(" ", "-")}"' in page, f"no table for {head}"
        for opt in hooks.option_names(cmd):
            assert f"<code>{opt}</code>" in page, f"{head}: {opt} is not in the generated table"


def test_the_drafters_table_is_the_drafters_own_specs():
    """``<!-- drafters -->`` (docs/running.md) becomes one row per drafter module, from its SPEC."""
    import sys

    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import docs_hooks
    finally:
        sys.path.pop(0)
    from spectui.engine.drafters import specs

    page = docs_hooks.on_page_markdown("before\n<!-- drafters -->\nafter", None, None, None)
    rows = [r for r in page.split("\n") if r.startswith("| `")]
    assert [r.split("`")[1] for r in rows] == [s.name for s in specs()]
    for r, s in zip(rows, specs()):
        assert s.summary in r and s.shape in r and (s.spec_type in r if s.spec_type else "(none)" in r)
    assert "<!-- drafters -->" in (ROOT / "docs" / "running.md").read_text()
