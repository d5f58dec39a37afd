"""OpenMP's wait policy chosen for the machine's load before llama.cpp loads (spectui.engine.llama.omp): PASSIVE when
other processes keep the cores busy at launch and the user set no policy, the user's own value otherwise, and
the choice said in the run's start event, its summary, its JSON and its trace. The rule on given loads; then a
real process under real busy processes (started and ended here by process id) and a real run's JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spectui.contract.event_json import from_dict, to_dict
from spectui.contract.events import RunStarted
from spectui.engine.llama import omp

REPO = Path(__file__).resolve().parents[2]


def test_busy_cores_at_launch_make_waiting_threads_sleep():
    env: dict[str, str] = {}
    said = omp.choose(others=lambda: 1.5, environ=env)
    assert env["OMP_WAIT_POLICY"] == "PASSIVE"
    assert said.startswith("PASSIVE (set by spectui: other processes kept 1.5 cores busy at launch")


def test_a_quiet_machine_keeps_openmps_default():
    env: dict[str, str] = {}
    assert omp.choose(others=lambda: omp.BUSY_OTHERS_CORES - 0.1, environ=env) == ""
    assert "OMP_WAIT_POLICY" not in env
    unknown: dict[str, str] = {}  # no /proc/stat: -1, nothing known to be busy
    assert omp.choose(others=lambda: -1.0, environ=unknown) == "" and unknown == {}


def test_the_users_own_policy_is_kept_and_said():
    env = {"OMP_WAIT_POLICY": "ACTIVE"}
    asked = []
    said = omp.choose(others=lambda: asked.append(1) or 3.0, environ=env)
    assert said == "ACTIVE (from the environment)" and env == {"OMP_WAIT_POLICY": "ACTIVE"}
    assert asked == []  # not even measured
    hostile = {"OMP_WAIT_POLICY": "x" * 500}
    assert len(omp.choose(others=lambda: 0.0, environ=hostile)) < 80  # a bounded line, whatever the value


def test_the_choice_travels_in_the_start_event_and_old_traces_read():
    start = RunStarted(threads=2, wait_policy="PASSIVE (set by spectui: ...)")
    assert from_dict(json.loads(json.dumps(to_dict(start)))) == start
    old = to_dict(RunStarted(threads=2))
    del old["wait_policy"]  # a trace from before the field
    assert from_dict(old).wait_policy == ""


def _hogs(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def _end(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.kill()
    for p in procs:
        p.wait(timeout=10)


def _env_without_policy() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"} | {"NO_COLOR": "1"}


@pytest.mark.slow
@pytest.mark.timing
def test_a_busy_machine_gets_passive_in_a_real_process_and_its_run_says_so(tiny_target):
    script = ("from spectui.engine.llama import omp; omp.mark_start(); "
              "from spectui.engine.llama.llama_lib import llama; llama(); "
              "import os; print(os.environ.get('OMP_WAIT_POLICY', '-'), '|', omp.chosen())")
    hogs = _hogs(3)  # three busy processes on this machine's cores (the benchmark's --load 3)
    try:
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=120,
                           env=_env_without_policy())
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("PASSIVE | PASSIVE (set by spectui: other processes kept"), r.stdout
        run = subprocess.run([sys.executable, "-m", "spectui", "--target", str(tiny_target), "--drafter", "ngram",
                              "--headless", "--json", "-t", "1", "-n", "8"], capture_output=True, text=True,
                             cwd=REPO, timeout=300, env=_env_without_policy())
    finally:
        _end(hogs)
    assert run.returncode == 0, run.stderr
    d = json.loads(run.stdout)
    assert d["wait_policy"].startswith("PASSIVE (set by spectui") and d["start"]["wait_policy"] == d["wait_policy"]
    text = subprocess.run([sys.executable, "-m", "spectui", "--target", str(tiny_target), "--drafter", "ngram",
                           "--headless", "-t", "1", "-n", "4"], capture_output=True, text=True, cwd=REPO,
                          timeout=300, env=_env_without_policy() | {"OMP_WAIT_POLICY": "ACTIVE"})
    assert text.returncode == 0, text.stderr
    assert "openmp wait policy     ACTIVE (from the environment)" in text.stdout
