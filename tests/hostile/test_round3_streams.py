"""The third hostile-input report (../shared/reports/bad-input-2026-12-06.md), its rows on closed streams and
traces lost: C-replay-headless, C-replay-json, C-explain, C-demo-headless, C-race, C-run-headless, C-run-json,
C-bench, C-probe, C-both-closed, C-cast-stdout, F-two-recorders2, G-parent-deleted. Each runs the command as
a real process (``python -m spectui``) under a shell that closes its stdout (``>&-``) or stderr as the report
did, on the tiny models (tests/tinymodels.py) and the packaged demo traces.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from waits import wait_until

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "spectui" / "data"
DEMO = str(DATA / "demo-trace.jsonl.gz")
CLOSED = "spectui: error: cannot write to standard output: it is closed"


def closed(*args, close: str = ">&-", timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m spectui ARGS`` with its stdout closed (``close``: the shell's redirections), stderr caught."""
    env = dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1")
    argv = [sys.executable, "-m", "spectui", *map(str, args)]
    return subprocess.run(["sh", "-c", f'exec "$@" {close}', "sh", *argv], stdin=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, env=env, timeout=timeout, cwd=REPO)


def spectui(*args) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1")
    return subprocess.Popen([sys.executable, "-m", "spectui", *map(str, args)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)


def one_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


@pytest.mark.parametrize("args", [
    ["replay", "--headless", DEMO],
    ["replay", "--json", DEMO],
    ["replay", "--explain", "3", DEMO],
    ["demo", "--headless", "--act", "2"],
    ["race", "--headless", DATA / "race-lookup.jsonl.gz", DATA / "race-draft.jsonl.gz"],
    ["--help"],
], ids=["C-replay-headless", "C-replay-json", "C-explain", "C-demo-headless", "C-race", "help"])
def test_a_closed_stdout_is_one_line_and_status_2(args):
    r = closed(*args)
    assert r.returncode == 2 and one_line(r.stderr) == CLOSED


@pytest.mark.parametrize("args", [
    ["--headless", "-p", "x", "-n", "4"],
    ["--json", "-p", "x", "-n", "4"],
    ["bench", "-n", "4", "--limit", "1"],
    ["probe", "--repeats", "1", "--max-batch", "2"],
], ids=["C-run-headless", "C-run-json", "C-bench", "C-probe"])
def test_a_closed_stdout_is_refused_before_the_models_load(args, tiny_target, tiny_draft_noisy, tmp_path):
    sub = args[:1] if args[0] in ("bench", "probe") else []
    r = closed(*sub, "-m", tiny_target, "-md", tiny_draft_noisy, *args[len(sub):])
    # one line and nothing else: no model loaded (its warnings), nothing measured or cached
    assert r.returncode == 2 and one_line(r.stderr) == CLOSED


def test_c_both_closed_the_same_status_silently():
    r = closed("replay", "--headless", DEMO, close=">&- 2>&-")
    assert r.returncode == 2 and r.stderr == ""


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_c_cast_stdout_is_refused_before_rendering_and_a_file_still_works(tmp_path):
    t0 = time.monotonic()
    r = closed("cast", DEMO, "-o", "/dev/stdout", "--cols", "40", "--rows", "10")
    took = time.monotonic() - t0
    assert r.returncode == 2 and one_line(r.stderr) == (
        "spectui: error: cannot write cast /dev/stdout: standard output is closed")
    assert took < 8, took  # refused at the check: rendering this trace took 12 s in the report
    link = tmp_path / "out.cast"  # a link the user named, to the closed stdout: the same
    link.symlink_to("/dev/stdout")
    r = closed("cast", DEMO, "-o", link, "--cols", "40", "--rows", "10")
    assert r.returncode == 2 and "standard output is closed" in one_line(r.stderr)
    out = tmp_path / "d.cast"  # cast writes nothing on stdout: a file is written with stdout closed
    r = closed("cast", DATA / "race-lookup.jsonl.gz", "-o", out, "--cols", "40", "--rows", "10")
    assert r.returncode == 0 and one_line(r.stderr).startswith(f"wrote {out}")
    assert json.loads(out.read_text().splitlines()[0])["width"] == 40


def test_no_file_takes_a_closed_stdouts_number(tmp_path):
    """With descriptor 1 closed, a file spectui opens would be descriptor 1, and what C code prints to
    standard output would land in it: the entry point opens /dev/null there first."""
    probe = ("import os, spectui.cli; fd = os.open(os.devnull, os.O_RDONLY); "
             "os.write(2, str(fd).encode() + b' ' + os.readlink('/proc/self/fd/1').encode())")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    r = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", sys.executable, "-c", probe], stderr=subprocess.PIPE,
                       text=True, env=env, timeout=60)
    fd, where = r.stderr.split()
    assert int(fd) > 2 and where == "/dev/null", r.stderr


# ------------------------------------------------------------------ traces


def start_seed(trace: Path) -> int:
    for line in trace.read_text().splitlines():
        obj = json.loads(line)
        if obj.get("type") == "start":
            return obj["settings"]["seed"]
    raise AssertionError(f"{trace}: no start event")


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_f_two_recorders2_the_second_run_is_refused_and_the_first_trace_kept(tiny_target, tiny_draft_noisy,
                                                                              tmp_path):
    same = tmp_path / "same.jsonl"
    run = ["-m", tiny_target, "-md", tiny_draft_noisy, "--headless", "-p", "the hash map", "-t", "1",
           "--record", same]
    first = spectui(*run, "-c", "4096", "-n", "4000", "-s", "1")  # runs until this test stops it
    try:
        wait_until(same.exists, 60, "the first run's trace")  # its models loaded, its run under way
        second = spectui(*run, "-n", "400", "-s", "2")
        out2, err2 = second.communicate(timeout=60)
        assert first.poll() is None  # refused while the first still records
        first.send_signal(signal.SIGINT)  # a clean stop: the first trace complete
        out1, err1 = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert second.returncode == 2 and out2 == ""
    assert one_line(err2) == (f"spectui: error: refusing to write the trace {same}: another spectui (pid "
                              f"{first.pid}) is writing this trace now: two commands never write one file")
    assert first.returncode == 130, err1
    assert start_seed(same) == 1 and json.loads(same.read_text().splitlines()[-1])["type"] == "end"
    third = spectui(*run, "-n", "4", "-s", "3")  # the claim ends with the run that held it
    _, err3 = third.communicate(timeout=120)
    assert third.returncode == 0, err3
    assert start_seed(same) == 3


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_g_parent_deleted_a_trace_whose_folder_went_is_an_error(tiny_target, tiny_draft_noisy, tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    trace = gone / "r.jsonl"
    p = spectui("-m", tiny_target, "-md", tiny_draft_noisy, "--headless", "-p", "the hash map", "-t", "1", "-s", "1",
                "-n", "1500", "--record", trace)
    try:
        wait_until(trace.exists, 60, "the trace")
        shutil.rmtree(gone)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 2, err
    last = [ln for ln in err.splitlines() if ln.strip()][-1]
    assert last.startswith(f"spectui: error: cannot write trace {trace}: it was deleted, with its folder {gone}, "
                           "while it was written: what it held is lost (") and last.endswith(" events recorded)"), err
    assert "Traceback" not in err and not gone.exists()


def test_a_trace_deleted_or_replaced_under_its_writer_is_an_error_at_close(tmp_path):
    """The same check without a folder going: the file alone deleted, or another file renamed onto its path."""
    from spectui.contract import events as ev
    from spectui.recording.schema import TraceError
    from spectui.recording.writer import TraceWriter

    for what, then in (("it was deleted while", lambda p: p.unlink()),
                       ("another file took its path", lambda p: (tmp_path / "other").replace(p))):
        path = tmp_path / "t.jsonl"
        (tmp_path / "other").write_text("")
        writer = TraceWriter(path)
        writer.write(ev.RunEnded())
        then(path)
        with pytest.raises(TraceError, match=what):
            writer.close()
    writer = TraceWriter(tmp_path / "kept.jsonl")  # left alone: no error, and the claim is let go
    writer.write(ev.RunEnded())
    writer.close()
    TraceWriter(tmp_path / "kept.jsonl").close()
