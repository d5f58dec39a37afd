"""OpenMP's wait policy, chosen for the machine's load before llama.cpp loads.

llama.cpp's CPU threads meet at a barrier after every layer, and OpenMP's threads spin while they wait. When
other processes keep the cores busy, a spinning thread holds a core the thread it waits for needs, and a pass
collapses: on a 2-core machine with three busy processes, a pass of the Qwen2.5-Coder 1.5B / 0.5B pair took
8.9 s spinning and 0.8 s with ``OMP_WAIT_POLICY=PASSIVE`` (waiting threads sleep), which costs about a third
on a quiet machine (docs/running.md, docs/measurements.md). So spectui takes the passive policy only when the
cores are busy at launch, and only when the user has not set ``OMP_WAIT_POLICY`` themselves.

libgomp reads the variable once, when it is loaded with llama.cpp's library, so the choice is made then
(``spectui.engine.llama.llama_lib.llama``) and holds for the process: the run records it (``RunStarted.wait_policy``)
and the summary says it. The load is measured from ``mark_start()`` (the CLI's start: spectui's own imports and
the models' headers take the time a sample needs, so it costs nothing) or over ``SAMPLE_S`` when nothing was
marked. No UI imports.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from ..cpu import OthersCpu

BUSY_OTHERS_CORES = 0.5  # other processes' busy cores at launch from which waiting threads sleep
SAMPLE_S = 0.3  # the shortest sample of the others' CPU
ENV = "OMP_WAIT_POLICY"

_sampler: OthersCpu | None = None
_started = 0.0
_chosen: str | None = None


def mark_start() -> None:
    """Start measuring the others' CPU now (the CLI calls it first thing)."""
    global _sampler, _started
    if _sampler is None:
        _sampler, _started = OthersCpu(), time.monotonic()


def _others_since_start() -> float:
    mark_start()
    left = SAMPLE_S - (time.monotonic() - _started)
    if left > 0:
        time.sleep(left)
    return _sampler.sample() if _sampler is not None else -1.0


def choose(others: Callable[[], float] | None = None, environ=None) -> str:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` when other processes keep the cores busy and the user set no policy; say
    what holds, in one line (``RunStarted.wait_policy``): "" for OpenMP's default (spinning) on a quiet
    machine. Decided once a process (libgomp reads the variable once).

    Args:
        others: other processes' busy cores now (default: /proc/stat since ``mark_start``; -1 where unknown).
        environ: the environment to read and set (default ``os.environ``; a test passes a dict).
    """
    global _chosen
    env = os.environ if environ is None else environ
    if _chosen is not None and environ is None:
        return _chosen
    if env.get(ENV):
        said = f"{env[ENV][:40]} (from the environment)"
    else:
        busy = (others or _others_since_start)()
        if busy >= BUSY_OTHERS_CORES:
            env[ENV] = "PASSIVE"
            said = (f"PASSIVE (set by spectui: other processes kept {busy:.1f} cores busy at launch, so llama.cpp's "
                    "waiting threads sleep instead of spinning)")
        else:
            said = ""
    if environ is None:
        _chosen = said
    return said


def chosen() -> str:
    """What ``choose`` said in this process ("" before llama.cpp loaded, or on a quiet machine)."""
    return _chosen or ""
