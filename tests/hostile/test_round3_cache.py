"""The third hostile-input report (../shared/reports/bad-input-2026-12-06.md), its cache-folder rows, by id, as a
real process (``python -m spectui probe``) on the tiny models: a cache folder that cannot be a folder (a file
where ``$XDG_CACHE_HOME``, ``$XDG_CACHE_HOME/spectui`` or ``$HOME`` should be) and a relative
``XDG_CACHE_HOME``. The measurement still runs and prints, with one warning line that names the file in the way
and says it was not cached (docs/untrusted-input.md); a relative ``XDG_CACHE_HOME`` is ignored, as the XDG
base-directory specification says: the cache goes to ``~/.cache``. In-process, the same folders through the
measurement cache itself: a run's start reads nothing from them and says nothing; a measurement warns once.
The fast lane runs the probe-folder row in the test's process (tests/in_process.py), the full suite both ways."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from in_process import both_ways, spectui_in_process

REPO = Path(__file__).resolve().parents[2]
ARGS = ("-t", "1", "-c", "256", "--max-batch", "2", "--repeats", "1")


def probe(target, env: dict, cwd=None, drop=()) -> subprocess.CompletedProcess:
    """``spectui probe`` on the target alone (the tiny draft is the target's size: a warning of its own)."""
    e = dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1")
    e.update(env)
    for name in drop:
        e.pop(name, None)
    return subprocess.run([sys.executable, "-m", "spectui", "probe", "--target", str(target), *ARGS],
                          stdin=subprocess.DEVNULL, capture_output=True, env=e, timeout=300, cwd=cwd)


def probe_in_process(target, env: dict) -> subprocess.CompletedProcess:
    """``probe`` above in this process (tests/in_process.py), its output bytes as the process's."""
    return spectui_in_process("probe", "--target", str(target), *ARGS, env={"NO_COLOR": "1", **env}, text=False)


run_probe = both_ways(probe, probe_in_process)  # in this process in the fast lane, both ways in the full suite


def warning_line(err: bytes) -> str:
    lines = [ln for ln in err.decode("utf-8", "replace").splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("spectui: warning: ") and "Traceback" not in lines[0]
    return lines[0]


def measured_and_printed(r: subprocess.CompletedProcess) -> str:
    """The probe's figures printed, exit 0, no ``cache:`` line (nothing was kept); the one warning line."""
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    assert "verify cost by batch size" in out and "target decode, 1 token" in out
    assert "\ncache: " not in out
    line = warning_line(r.stderr)
    assert "corrupt" not in line and line.endswith(": the probe was measured, not cached")
    return line


def a_file(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("not a folder\n")
    return path


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
@pytest.mark.parametrize("case", ["F-cache-isfile", "F-cache-spectui-isfile", "F-home-file"])
def test_a_cache_folder_that_is_a_file_is_named_and_the_probe_still_prints(tiny_target, tmp_path,
                                                                           case):
    if case == "F-cache-isfile":  # XDG_CACHE_HOME itself is a file
        blocker = a_file(tmp_path / "fs" / "cachefile")
        env, drop, folder = {"XDG_CACHE_HOME": str(blocker)}, (), blocker / "spectui" / "probe"
    elif case == "F-cache-spectui-isfile":  # $XDG_CACHE_HOME/spectui is a file
        blocker = a_file(tmp_path / "fs" / "c2" / "spectui")
        env, drop, folder = {"XDG_CACHE_HOME": str(blocker.parent)}, (), blocker / "probe"
    else:  # HOME is a file (the report's HOME=/etc/passwd), XDG_CACHE_HOME unset
        blocker = a_file(tmp_path / "passwd")
        env, drop, folder = {"HOME": str(blocker)}, ("XDG_CACHE_HOME",), blocker / ".cache" / "spectui" / "probe"
    for _ in range(2):  # and again: nothing was cached, so measured again, the same one line
        line = measured_and_printed(probe(tiny_target, env, drop=drop))
        assert f"the cache folder {folder} is not a folder ({blocker} is a file)" in line
    assert blocker.read_text() == "not a folder\n"  # the file in the way: untouched


def test_a_probe_cache_folder_that_is_a_file(tiny_target, tmp_path, run_probe):
    """The last step of the same row: $XDG_CACHE_HOME/spectui/probe itself a file."""
    blocker = a_file(tmp_path / "xdg" / "spectui" / "probe")
    line = measured_and_printed(run_probe(tiny_target, {"XDG_CACHE_HOME": str(tmp_path / "xdg")}))
    assert f"the cache folder {blocker} is a file, not a folder" in line
    assert blocker.read_text() == "not a folder\n"


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_F_cache_rel_a_relative_xdg_cache_home_is_ignored(tiny_target, tmp_path):
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    r = probe(tiny_target, {"XDG_CACHE_HOME": "relcache", "HOME": str(home)}, cwd=work)
    assert r.returncode == 0, r.stderr
    assert not (work / "relcache").exists()  # nothing under the current folder
    line = warning_line(r.stderr)
    assert "XDG_CACHE_HOME (relcache) is not an absolute path: ignored" in line and "~/.cache" in line
    cached = next(ln for ln in r.stdout.decode().splitlines() if ln.startswith("cache: "))
    assert cached.startswith(f"cache: {home.resolve() / '.cache' / 'spectui' / 'probe'}/")
    (cache,) = (home / ".cache" / "spectui" / "probe").glob("*.json")
    data = json.loads(cache.read_text())
    data["result"]["others_cpu"] = 0.0  # quiet, so the cache is kept whatever the load is now (as test_probe)
    cache.write_text(json.dumps(data))
    again = probe(tiny_target, {"XDG_CACHE_HOME": "relcache", "HOME": str(home)}, cwd=work)
    assert again.returncode == 0 and "(cached, measured" in again.stdout.decode()  # read back from ~/.cache
    assert warning_line(again.stderr) == line


def test_in_process_a_runs_start_reads_nothing_and_a_measurement_warns_once(make_engine, tiny_target, tmp_path):
    from spectui.analysis.measured import noise
    from spectui.analysis.measured import probe as pr

    blocker = a_file(tmp_path / "cachefile")
    engine = make_engine(tiny_target)
    warned: list[str] = []
    assert pr.cached_only(engine, max_batch=2, directory=blocker / "probe", warn=warned.append) == (None, True)
    assert warned == []  # nothing to read there, nothing measured: nothing to say
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        res = noise.cached_or_measure(engine, max_batch=2, n_tokens=8, directory=blocker / "noise",
                                      warn=warned.append)
    assert not res.cached and res.cache_file == "" and res.batches and warned == []
    lines = err.getvalue().splitlines()
    assert lines == [f"spectui: warning: the cache folder {blocker / 'noise'} is not a folder ({blocker} is a file): "
                     "the noise was measured, not cached"]
    assert json.dumps(res.report())  # the figures are all there
