"""The helpers the fast lane stands on: tiny models built once per run for every pytest-xdist worker
(tinymodels.shared_model), waits on what a test waits for (waits.py), and ``timing`` tests run alone under
xdist (run_alone.py)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import tinymodels
from waits import Started, catches, cpu_seconds, wait_until

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def test_a_shared_model_is_built_once_and_is_the_model_build_model_writes(tmp_path):
    a = tinymodels.shared_model(tmp_path, "t.gguf", seed=0, name="tiny-target")
    stamp = a.stat().st_mtime_ns
    b = tinymodels.shared_model(tmp_path, "t.gguf", seed=0, name="tiny-target")
    assert a == b and a.name == "t.gguf" and b.stat().st_mtime_ns == stamp  # found, not built again
    direct = tinymodels.build_model(tmp_path / "direct.gguf", seed=0, name="tiny-target")
    assert a.read_bytes() == direct.read_bytes()
    other = tinymodels.shared_model(tmp_path, "t.gguf", seed=0, noise=0.1, name="tiny-target")
    assert other != a and other.name == "t.gguf"  # other arguments, another folder: never the same path
    assert other.read_bytes() != a.read_bytes()
    assert not [p for p in tmp_path.rglob("*.part")]


def test_a_shared_folder_is_built_once_whole_and_per_key(tmp_path):
    builds: list[Path] = []

    def build(d: Path) -> None:
        builds.append(d)
        d.mkdir()
        (d / "m.txt").write_text(f"build {len(builds)}")

    a = tinymodels.shared_folder(tmp_path, "spec", b"one", build)
    b = tinymodels.shared_folder(tmp_path, "spec", b"one", build)
    assert a == b and a.name.startswith("spec-") and len(builds) == 1  # found, not built again
    assert (a / "m.txt").read_text() == "build 1" and builds[0] != a  # built aside, renamed into place
    other = tinymodels.shared_folder(tmp_path, "spec", b"two", build)
    assert other != a and (other / "m.txt").read_text() == "build 2"  # another key, another folder
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".part")]


_BUILD = """
import sys
sys.path.insert(0, sys.argv[2])
import tinymodels
print(tinymodels.shared_model(sys.argv[1], "m.gguf", seed=3, name="raced"), flush=True)
"""


def test_processes_asking_at_once_get_one_whole_model(tmp_path):
    procs = [subprocess.Popen([sys.executable, "-c", _BUILD, str(tmp_path), str(HERE)], stdout=subprocess.PIPE,
                              text=True) for _ in range(4)]
    paths = {p.communicate(timeout=120)[0].strip() for p in procs}
    assert all(p.returncode == 0 for p in procs)
    assert len(paths) == 1
    built = Path(paths.pop())
    assert built.read_bytes() == tinymodels.build_model(tmp_path / "direct.gguf", seed=3, name="raced").read_bytes()
    assert [p.name for p in built.parent.iterdir() if not p.name.endswith(".lock")] == ["m.gguf"]


_HANDLER = """
import signal, sys, time
print("before", flush=True)
time.sleep(0.3)
signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
signal.signal(signal.SIGHUP, lambda *a: sys.exit(129))
print("ready", flush=True)
while True:
    time.sleep(0.01)
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="catches() reads /proc (Linux)")
def test_a_started_process_is_signalled_once_its_handler_is_in():
    proc = Started([sys.executable, "-c", _HANDLER])
    wait_until(lambda: "before" in proc.printed(), what="the first line")
    wait_until(proc.stopped_by_its_handler, what="the handlers")
    assert catches(proc.pid, signal.SIGTERM, signal.SIGHUP) and not catches(proc.pid, signal.SIGUSR1)
    wait_until(lambda: cpu_seconds(proc.pid) > 0, what="its CPU time (clock ticks)")
    wait_until(lambda: "ready" in proc.printed(), what="the second line")
    out, err = proc.stop_with(signal.SIGTERM)
    assert proc.returncode == 143 and out == "before\nready\n" and err == ""
    assert proc not in Started.running


def test_a_wait_that_times_out_names_what_it_waited_for():
    with pytest.raises(AssertionError, match="the impossible"):
        wait_until(lambda: False, timeout=0.1, what="the impossible")


_TESTS = """
import json, time, pytest

def rec(name, log):
    t0 = time.monotonic(); time.sleep(0.2); t1 = time.monotonic()
    with open(log, "a") as f:
        f.write(json.dumps([name, t0, t1]) + "\\n")

@pytest.mark.parametrize("i", range(24))
def test_plain(i):
    rec(f"plain{i}", LOG)

@pytest.mark.timing
@pytest.mark.parametrize("i", range(3))
def test_timed(i):
    rec(f"timing{i}", LOG)
"""


@pytest.mark.slow  # starts pytest-xdist workers
def test_timing_tests_run_alone_under_xdist(tmp_path):
    log = tmp_path / "log.jsonl"
    (tmp_path / "conftest.py").write_text(f"import sys\nsys.path.insert(0, {str(HERE)!r})\n"
                                          "pytest_plugins = ['run_alone']\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    timing: wall-clock\n")
    (tmp_path / "test_x.py").write_text(f"LOG = {str(log)!r}\n" + textwrap.dedent(_TESTS))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "3", str(tmp_path)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(rows) == 27
    plain = [(a, b) for name, a, b in rows if name.startswith("plain")]
    assert any(a2 < b1 and a1 < b2 for i, (a1, b1) in enumerate(plain) for a2, b2 in plain[i + 1:])  # in parallel
    for name, a, b in rows:
        if name.startswith("timing"):
            assert not [m for m, c, d in rows if m != name and c < b and a < d], name  # nothing beside it
    # and first (collected last here): while they wait for the tests beside them, no worker starts another
    assert max(b for name, a, b in rows if name.startswith("timing")) < max(a for a, _ in plain)
