"""Theme files: one TOML file per theme in ``themes/`` (repo) or ``spectui/themes`` (installed wheel).

Loading and listing do not import Textual; ``textual_theme()`` turns a loaded theme into a Textual
``Theme`` whose app variables (``spectui-accepted``, ``-rejected``, ``-target``, ``-pending``) the
widgets read from ``app.theme_variables``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tomllib

from ...contract.errors import SpectuiError

DEFAULT_THEME = "dark"
# Fallbacks: used as CSS variable defaults so every theme (also Textual's built-ins) has them.
VARIABLE_DEFAULTS = {
    "spectui-accepted": "#5FD38D",
    "spectui-rejected": "#FF6B6B",
    "spectui-target": "#4EA1FF",
    "spectui-pending": "#8A8F98",
}
_COLOUR_KEYS = ("primary", "secondary", "warning", "error", "success", "accent", "foreground", "background",
                "surface", "panel", "boost")


def theme_dirs() -> list[Path]:
    """Where themes live: the installed package's ``spectui/themes`` first, then the repo's ``themes/``."""
    pkg = Path(__file__).resolve().parents[2]  # spectui/
    return [d for d in (pkg / "themes", pkg.parent / "themes") if d.is_dir()]


def available_themes() -> dict[str, Path]:
    """Theme name -> file (the first directory that has a name wins)."""
    found: dict[str, Path] = {}
    for d in theme_dirs():
        for f in sorted(d.glob("*.toml")):
            found.setdefault(f.stem, f)
    return found


def load_theme_data(name: str | None) -> dict[str, Any]:
    """The parsed theme file for ``name`` (None = default). Unknown name -> SpectuiError listing the others."""
    name = name or DEFAULT_THEME
    themes = available_themes()
    path = themes.get(name)
    if path is None:
        listing = ", ".join(sorted(themes)) or "none found (themes/ folder missing)"
        raise SpectuiError(f"unknown theme {name!r}; available themes: {listing}")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SpectuiError(f"theme file {path} is not valid TOML: {exc}") from exc
    if not isinstance(data.get("primary"), str):
        raise SpectuiError(f"theme file {path} has no 'primary' colour")
    data["name"] = name
    variables = dict(VARIABLE_DEFAULTS)
    variables.update({str(k): str(v) for k, v in (data.get("variables") or {}).items()})
    data["variables"] = variables
    return data


def check_theme(name: str | None) -> str:
    """Validate a theme name early (before the app takes the screen); returns the resolved name."""
    return load_theme_data(name)["name"]


def textual_theme(name: str | None):
    """A Textual ``Theme`` for the theme file ``name``."""
    from textual.theme import Theme  # noqa: PLC0415 - lazy: the theme checks run without Textual

    data = load_theme_data(name)
    kwargs = {k: data[k] for k in _COLOUR_KEYS if isinstance(data.get(k), str)}
    return Theme(name=data["name"], dark=bool(data.get("dark", True)), variables=data["variables"], **kwargs)
