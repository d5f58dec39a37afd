"""Outputs (issue 26, part 4): a symlink output is written to what it names and never replaced itself; the
export paths of one command are checked against each other before any work; one failed export keeps the
table and the others; /dev/full is one line. Real files, links and a real local server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_servers import FakeServer
from in_process import both_ways, spectui_in_process

from spectui.contract.outputs import CAST, TRACE, OutputError, atomic_write, check_distinct, check_output
from spectui.recording.trace import TraceWriter, synthetic_run, write_trace

REPO = Path(__file__).resolve().parents[2]


def spectui(*args: str, stdout=subprocess.PIPE, cwd=None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "spectui", *args], stdin=subprocess.DEVNULL, stdout=stdout,
                          stderr=subprocess.PIPE, env=env, cwd=cwd, timeout=120)


def in_process(*args: str) -> subprocess.CompletedProcess:
    """``spectui`` above in this process (tests/in_process.py), its output bytes as the process's."""
    return spectui_in_process(*args, text=False)


cli = both_ways(spectui, in_process)  # exit status and lines only: in this process in the fast lane


def test_a_link_to_a_file_is_written_through_its_real_path(tmp_path):
    real = tmp_path / "real.cast"
    link = tmp_path / "link.cast"
    link.symlink_to(real)
    out = check_output(link, CAST)
    assert out.real == os.path.realpath(link) and not out.stream
    with out.atomic_write() as fh:
        fh.write('{"version": 2, "width": 1, "height": 1}\n')
    assert link.is_symlink() and os.readlink(link) == str(real)  # the link itself kept
    assert real.read_text().startswith('{"version": 2')
    # a dangling link: the file it names is created, the link kept
    dangling = tmp_path / "dangling.jsonl"
    dangling.symlink_to(tmp_path / "later.jsonl")
    with TraceWriter(dangling) as w:
        for ev in synthetic_run(2):
            w.write(ev)
    assert dangling.is_symlink() and (tmp_path / "later.jsonl").read_text().startswith('{"schema":"spectui.trace"')


def test_a_link_to_what_is_not_ours_is_refused_without_force(tmp_path):
    precious = tmp_path / "notes.txt"
    precious.write_text("mine\n")
    link = tmp_path / "out.cast"
    link.symlink_to(precious)
    with pytest.raises(OutputError, match="not a spectui cast"):
        check_output(link, CAST)
    assert precious.read_text() == "mine\n"


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_dev_stdout_redirected_to_a_file(tmp_path):
    """`cast T -o L > F` with L -> /proc/self/fd/1 (what /dev/stdout is): F gets the cast, L stays a link."""
    trace = tmp_path / "t.jsonl"
    write_trace(trace, synthetic_run(3))
    link = tmp_path / "my_stdout"
    link.symlink_to("/proc/self/fd/1")
    target = tmp_path / "redirect.out"
    with open(target, "wb") as fh:
        r = spectui("cast", str(trace), "-o", str(link), "--speed", "8", stdout=fh)
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and os.readlink(link) == "/proc/self/fd/1"
    assert json.loads(target.read_text().split("\n", 1)[0])["version"] == 2


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_dev_stdout_on_a_pipe_is_written_in_place(tmp_path):
    trace = tmp_path / "t.jsonl"
    write_trace(trace, synthetic_run(3))
    r = spectui("cast", str(trace), "-o", "/dev/stdout", "--speed", "8")
    assert r.returncode == 0 and json.loads(r.stdout.decode().split("\n", 1)[0])["version"] == 2


def test_check_distinct(tmp_path):
    a = tmp_path / "a.json"
    check_distinct([("--json", a), ("--csv", tmp_path / "b.csv"), ("--markdown", "-"), ("--x", None)])
    with pytest.raises(OutputError, match="--json and --csv both name"):
        check_distinct([("--json", a), ("--csv", a)])
    a.write_text("{}")
    link = tmp_path / "link.json"
    link.symlink_to(a)
    with pytest.raises(OutputError, match="--json and --markdown both name"):
        check_distinct([("--json", a), ("--markdown", link)])
    hard = tmp_path / "hard.json"
    os.link(a, hard)
    with pytest.raises(OutputError, match="both name"):
        check_distinct([("--csv", hard), ("--json", a)])


@pytest.fixture(scope="module")
def ok_server():
    s = FakeServer("ok")
    yield s
    s.stop()


@pytest.mark.parametrize("force", [False, True])
def test_bench_exports_to_one_path_refused_before_any_work(tmp_path, ok_server, force, cli):
    x = tmp_path / "x.json"
    before = ok_server.requests
    r = cli("bench", "--url", ok_server.url, "-n", "4", "--limit", "1", "--json", str(x), "--csv", str(x),
            *(["--force"] if force else []))
    assert r.returncode == 2 and b"--json and --csv both name" in r.stderr
    assert not x.exists() and ok_server.requests == before  # nothing asked of the server


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_one_failed_export_keeps_the_table_and_the_others(tmp_path, ok_server):
    md = tmp_path / "ok.md"
    csv = tmp_path / "ok.csv"
    r = spectui("bench", "--url", ok_server.url, "-n", "4", "--limit", "1", "--json", "/dev/full",
                "--markdown", str(md), "--csv", str(csv))
    err = r.stderr.decode()
    assert r.returncode == 2 and "Traceback" not in err
    assert [ln for ln in err.splitlines() if ln.startswith("spectui: error:")] == [
        "spectui: error: cannot write bench JSON report /dev/full: No space left on device"]
    assert md.read_text().startswith("<!--") and csv.read_text().startswith("category") or csv.stat().st_size
    assert "overall" in r.stdout.decode().lower()  # the table


def test_attach_record_to_dev_full_is_one_line(ok_server, cli):
    r = cli("attach", ok_server.url, "--headless", "--count", "2", "--interval", "0.5", "--record", "/dev/full")
    err = r.stderr.decode()
    assert r.returncode == 2 and "Traceback" not in err and "No space left on device" in err
    assert len([ln for ln in err.splitlines() if ln.strip()]) == 1


def test_atomic_write_to_dev_full_is_an_output_error():
    with pytest.raises(OutputError, match="No space left on device"):
        with atomic_write("/dev/full", TRACE) as fh:
            fh.write("x" * 100000)
