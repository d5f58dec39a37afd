"""Tests marked ``timing`` (they measure wall-clock time: paces, paints per second, how much of a run its
passes' clocks cover) or ``alone`` (they read the whole log of a llama.cpp program, whose asynchronous logger
loses its last lines at exit when the machine is loaded) run alone under pytest-xdist: while one runs, no other
test of the same run does, so the run's other workers add no load to it. Serially (no xdist) this plugin does
nothing.

A writer-preferring lock over two files in a folder the xdist controller makes for the run (and removes at
its end): every test holds ``tests.lock`` shared while it runs (setup, call, teardown), a ``timing`` test holds
it exclusively. Each test first passes through ``turnstile.lock`` (exclusive: held only for that moment by
other tests, for its whole run by a ``timing`` test), so that a ``timing`` test waits for the tests already
running, never for ones that start after it. POSIX ``flock``; elsewhere tests are not kept apart.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

try:
    import fcntl
except ImportError:  # not POSIX
    fcntl = None

MARKS = ("timing", "alone")  # wall-clock measurements; programs whose output a loaded machine loses
_KEY = "spectui_lock_dir"


class _Locks:
    def __init__(self, folder: Path) -> None:
        self.turnstile = open(folder / "turnstile.lock", "a")  # held for the session  # noqa: SIM115
        self.tests = open(folder / "tests.lock", "a")  # noqa: SIM115

    def enter(self, alone: bool) -> None:
        fcntl.flock(self.turnstile, fcntl.LOCK_EX)
        fcntl.flock(self.tests, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(self.turnstile, fcntl.LOCK_UN)

    def leave(self, alone: bool) -> None:
        fcntl.flock(self.tests, fcntl.LOCK_UN)
        if alone:
            fcntl.flock(self.turnstile, fcntl.LOCK_UN)

    def close(self) -> None:
        self.turnstile.close()
        self.tests.close()


_locks: _Locks | None = None
_made: list[str] = []  # the controller's folder, removed at its end


def pytest_configure(config) -> None:
    global _locks
    folder = getattr(config, "workerinput", {}).get(_KEY)
    if folder and fcntl is not None:
        _locks = _Locks(Path(folder))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:  # pytest-xdist, in the controller: one folder for all its workers
    if not _made:
        _made.append(tempfile.mkdtemp(prefix="spectui-tests-"))
    node.workerinput[_KEY] = _made[0]


def _alone(item) -> bool:
    return any(item.get_closest_marker(m) is not None for m in MARKS)


def pytest_collection_modifyitems(config, items) -> None:
    """Under xdist, the ``timing`` tests first (each worker collects the same order; the first worker's first
    batch takes them): each waits only for the tests the other workers run at that moment, and there the other
    workers are at their first tests. Scattered through the run, each waited for whatever ran beside it (a
    vLLM test of a minute or two), while no new test started on any worker."""
    if getattr(config, "workerinput", {}).get(_KEY) and fcntl is not None:
        items.sort(key=lambda it: not _alone(it))  # stable: the rest keep their order


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if _locks is None:
        yield
        return
    alone = _alone(item)
    _locks.enter(alone)
    try:
        yield
    finally:
        _locks.leave(alone)


def pytest_unconfigure(config) -> None:
    global _locks
    if _locks is not None:
        _locks.close()
        _locks = None
    while _made:
        shutil.rmtree(_made.pop(), ignore_errors=True)
