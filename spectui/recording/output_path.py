"""Every file the race writes goes through ``output_path`` (one place to switch to the project's output
helper, spectui/outputs.py, once it is on main): a path that is one of the command's inputs is refused."""

from __future__ import annotations

import os
from typing import Iterable

from ..contract.errors import SpectuiError


def _same(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def output_path(path: str | os.PathLike, inputs: Iterable[str | os.PathLike] = ()) -> str:
    """``path``, checked: never one of ``inputs`` (no command writes over what it reads), its folder exists."""
    p = os.fspath(path)
    for src in inputs:
        if _same(p, os.fspath(src)):
            raise SpectuiError(f"{p} is one of the inputs; write the output to another file")
    folder = os.path.dirname(os.path.abspath(p))
    if not os.path.isdir(folder):
        raise SpectuiError(f"cannot write {p}: no folder {folder}")
    if os.path.isdir(p):
        raise SpectuiError(f"cannot write {p}: it is a folder")
    return p
