"""The package's modules meet through declared interfaces only, read from the source with ast:

- no module reads another's private members: an attribute whose name starts with ``_`` (dunders excepted) is
  touched only on ``self``, ``cls`` or ``super()`` (also through ``getattr`` / ``setattr`` / ``hasattr`` /
  ``delattr`` with a constant name), and no private name is imported from another module. The few internals
  of the standard library and of third-party packages that have no public spelling are listed in ``ALLOWED``,
  each with its reason;
- no import loop among spectui's modules, imports inside functions and under ``TYPE_CHECKING`` included (a
  package's own ``__init__``, which Python imports first anyway, is not an edge).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import spectui

PACKAGE = Path(spectui.__file__).parent
ROOT = PACKAGE.parent

# (file, private name) -> why it has no public spelling
ALLOWED = {
    ("spectui/commands/cast.py", "_exit"): "os._exit: the standard library's only exit that skips cleanup "
                                           "(a cast ends without running Textual's atexit work)",
    ("spectui/tui/shared/terminal.py", "_exit"): "os._exit: the standard library's only exit that skips cleanup "
                                                 "(a lost terminal must not hang in atexit handlers)",
    ("spectui/commands/serve.py", "_exit"): "os._exit: serve ends without the interpreter's teardown of the modules "
                                            "it loaded once everything it started has ended",
    ("spectui/serve/session.py", "_exit"): "os._exit: the only exit for a forked child before exec",
    ("spectui/contract/bounded.py", "_exit"): "os._exit: the only exit for a forked child (a chat template's "
                                                 "render): no atexit, no flush of the parent's buffers",
    ("spectui/commands/serve.py", "_protected_args"): "click >= 8.2 keeps the subcommand's arguments only in "
                                                      "Context._protected_args (protected_args is deprecated)",
    ("spectui/engine/llama/devices.py", "_ggml"): "llama_cpp ships libggml's bindings only as the module "
                                                  "llama_cpp._ggml (the device registry functions live there)",
    ("spectui/engine/llama/llama_lib.py", "_lib"): "llama_cpp.llama_cpp._lib: the bindings' CDLL of libllama, "
                                             "which they expose under no other name",
    ("spectui/engine/llama/llama_lib.py", "_handle"): "ctypes.CDLL._handle: the loaded library's handle "
                                                      "(no public name)",
    ("spectui/engine/llama/llama_lib.py", "_name"): "ctypes.CDLL._name: the loaded library's path (no public name)",
    ("spectui/tui/shared/panel.py", "_cache"): "Textual 8's LRU line cache of a Widget: KeepLines reuses it "
                                               "(pinned by tests/tui/test_textual_internals.py)",
    ("spectui/tui/shared/panel.py", "_dirty_lines"): "Textual 8's dirty-line set of a Widget: KeepLines reads it "
                                                     "(pinned by tests/tui/test_textual_internals.py)",
}
ATTR_FUNCS = ("getattr", "setattr", "hasattr", "delattr")


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _own(node: ast.expr) -> bool:
    """``self``, ``cls`` or ``super()``: an object's own members."""
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def private_reads(source: str) -> list[tuple[int, str, str]]:
    """(line, private name, the expression) for every private member touched on another object or imported."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and _private(node.attr) and not _own(node.value):
            out.append((node.lineno, node.attr, ast.unparse(node)))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ATTR_FUNCS
              and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
              and isinstance(node.args[1].value, str) and _private(node.args[1].value)
              and not _own(node.args[0])):
            out.append((node.lineno, node.args[1].value, ast.unparse(node)))
        elif isinstance(node, ast.ImportFrom):
            out += [(node.lineno, a.name, f"from {'.' * node.level}{node.module or ''} import {a.name}")
                    for a in node.names if _private(a.name)]
    return out


def _modules(package: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package's __init__) for every module under ``package``."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        init = parts[-1] == "__init__"
        out[".".join(parts[:-1] if init else parts)] = (path, init)
    return out


def import_graph(package: Path) -> dict[str, set[str]]:
    """module -> the package's modules it imports (every import statement, wherever it is in the file)."""
    mods = _modules(package)
    graph: dict[str, set[str]] = {}
    for name, (path, init) in mods.items():
        here = name.split(".") if init else name.split(".")[:-1]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name in mods)
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(here[:len(here) - node.level + 1] + [node.module or ""]) if node.level else node.module
                base = (base or "").strip(".")
                subs = {f"{base}.{a.name}" for a in node.names} & mods.keys()
                deps.update(subs)
                if len(subs) < len(node.names) and base in mods:  # names from the module itself
                    deps.add(base)
        deps.discard(name)
        graph[name] = deps
    return graph


def import_loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    loops = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                loops.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return loops


def test_the_measures_find_what_they_should(tmp_path):
    src = ("import os\nfrom .m import _hidden, shown\n\n\nclass A:\n    def f(self, other):\n"
           "        self._mine = super()._base() + cls._c\n        other._theirs = getattr(other, '_x', None)\n"
           "        return os._exit, self.__dict__, getattr(self, '_own')\n")
    assert private_reads(src) == [(2, "_hidden", "from .m import _hidden"), (8, "_theirs", "other._theirs"),
                                  (8, "_x", "getattr(other, '_x', None)"), (9, "_exit", "os._exit")]
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import A\n")
    (pkg / "a.py").write_text("def A():\n    from .sub import b  # lazy\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..a import A\n")
    (pkg / "c.py").write_text("from . import a\n")
    graph = import_graph(pkg)
    assert graph["pkg"] == {"pkg.a"} and graph["pkg.c"] == {"pkg.a"} and graph["pkg.sub.b"] == {"pkg.a"}
    assert import_loops(graph) == [["pkg.a", "pkg.sub.b"]]


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_no_module_reads_another_modules_private_members():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for line, name, expr in private_reads(path.read_text(encoding="utf-8")):
            if (rel, name) not in ALLOWED:
                found.append(f"{rel}:{line}: {expr}")
    assert not found, "private members read across objects or modules (give them a public name):\n" + \
        "\n".join(found)


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_every_allowed_private_read_is_still_there():
    """The allow-list names only what the code still does (a stale entry would hide a new read later)."""
    seen = {(path.relative_to(ROOT).as_posix(), name)
            for path in PACKAGE.rglob("*.py") for _, name, _ in private_reads(path.read_text(encoding="utf-8"))}
    assert set(ALLOWED) <= seen, sorted(set(ALLOWED) - seen)


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_no_import_loop_lazy_imports_included():
    loops = import_loops(import_graph(PACKAGE))
    assert not loops, f"modules that import each other (move what they share into its own module): {loops}"


def hand_written_error_lines(root: Path = PACKAGE) -> list[str]:
    """``path:line`` of every string (or f-string) outside contract/errors.py that starts a ``spectui: error:``
    line itself instead of going through ``contract.errors`` (fail / echo_error: the one escaping rule)."""
    out = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).as_posix() == "contract/errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            first = node.values[0] if isinstance(node, ast.JoinedStr) and node.values else node
            if isinstance(first, ast.Constant) and isinstance(first.value, str) and \
                    first.value.startswith("spectui: error:"):
                out.append(f"{path.relative_to(root).as_posix()}:{node.lineno}")
    return sorted(set(out))


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_every_error_line_goes_through_the_one_rule(tmp_path):
    (tmp_path / "m.py").write_text('import click\nclick.echo(f"spectui: error: {x}", err=True)\n')
    assert hand_written_error_lines(tmp_path) == ["m.py:2"]
    assert hand_written_error_lines() == []
