"""No dead unit in the package: every function, method, class and property in spectui/ (and in the benchmark,
demo and helper scripts) is used somewhere in the repository: by the package, a test, a benchmark, a demo or
a script. Measured with vulture (static: a name that nothing mentions is dead). What frameworks call by name
is listed below, each with the reason; anything else vulture reports fails this test: remove it, or use it."""

from __future__ import annotations

from pathlib import Path

import pytest

vulture = pytest.importorskip("vulture", reason="vulture is in the test extras: bash scripts/install.sh --test")

ROOT = Path(__file__).resolve().parent.parent
CHECKED = ("spectui", "benchmarks", "demos", "scripts")  # what must have no dead unit
SCANNED = (*CHECKED, "tests")  # where a use counts
UNITS = ("function", "method", "class", "property")

# Names that are called by name from outside the code vulture reads, with the reason.
CALLED_BY_NAME = {
    "on_*": "Textual message handlers (on_mount, on_resize, on_<widget>_<message>): dispatched by name",
    "action_*": "Textual actions: named by BINDINGS and key presses",
    "get_default_screen": "Textual App hook",
    "get_theme_variable_defaults": "Textual App hook (the spectui-* CSS variables of every theme)",
    "check_action": "Textual hook: whether a binding is shown and active",
    "render_line": "Textual ScrollView/Line API hook",
    "is_headless": "overrides Textual App.is_headless (capture.py's app draws with no terminal)",
    "http_open": "urllib.request handler method, called for http:// by protocol name",
    "https_open": "urllib.request handler method, called for https:// by protocol name",
    "redirect_request": "urllib.request.HTTPRedirectHandler hook, called for each redirect",
    "get_metavar": "click ParamType hook: --help asks it (contract.params' GpuLayers)",
    "show": "click ClickException hook: click's main prints a usage error with it (contract.params)",
    "writable": "overrides io.RawIOBase.writable (the io machinery asks a raw stream whether it writes)",
    "_open_app_process": "overrides textual_serve's AppService._open_app_process (spectui serve), called by it",
}
# Decorators whose functions are used by name from elsewhere.
DECORATED = {
    "@command": "a command (spectui.commands.command): spectui.cli imports it by its 'module:attr' name",
}


def dead_units(root: Path = ROOT) -> list[str]:
    """``path:line: unused <kind> 'name'`` for every dead unit under ``root``'s CHECKED folders."""
    v = vulture.Vulture(ignore_names=list(CALLED_BY_NAME), ignore_decorators=list(DECORATED))
    v.scavenge([str(root / p) for p in SCANNED if (root / p).is_dir()])
    out = []
    for item in v.get_unused_code(min_confidence=60):
        path = Path(item.filename).resolve().relative_to(root.resolve())
        if item.typ in UNITS and path.parts[0] in CHECKED:
            out.append(f"{path}:{item.first_lineno}: unused {item.typ} {item.name!r}")
    return sorted(out)


def test_the_check_finds_a_dead_function(tmp_path):
    """The measure itself: a function nothing calls is reported; one a test calls, and a Textual action, are
    not."""
    (tmp_path / "spectui").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "spectui" / "m.py").write_text(
        "def used():\n    return 1\n\n\ndef dead():\n    return 2\n\n\nclass A:\n    def action_go(self):\n"
        "        pass\n")
    (tmp_path / "tests" / "test_m.py").write_text("from spectui.m import A, used\n\nused()\nA()\n")
    assert dead_units(tmp_path) == ["spectui/m.py:5: unused function 'dead'"]


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_no_dead_function_method_class_or_property():
    dead = dead_units()
    assert not dead, "dead code (remove it; or, if a framework calls it by name, add it with the reason):\n" + \
        "\n".join(dead)
