"""TraceWriter(background=True): the trace is encoded and written on a writer thread, with the same bytes,
the same per-line flush (a SIGKILL leaves every written line readable), save_to and errors as before."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spectui.recording.trace import TraceError, TraceWriter, read_trace, synthetic_run

ROOT = Path(__file__).resolve().parents[2]


def _write(path: Path, background: bool, n: int = 40) -> None:
    with TraceWriter(path, background=background) as w:
        for ev in synthetic_run(n):
            w.write(ev)


def test_same_bytes_as_the_engine_thread_writer(tmp_path):
    a, b = tmp_path / "sync.jsonl", tmp_path / "bg.jsonl"
    _write(a, False)
    _write(b, True)
    la, lb = a.read_text().splitlines(), b.read_text().splitlines()
    assert len(la) == len(lb) == 1 + len(list(synthetic_run(40)))  # the header, then one line per event
    assert la[1:] == lb[1:]
    ta, tb = read_trace(a), read_trace(b)
    assert ta.events == tb.events and not tb.warnings


def test_gzip_and_save_to_see_every_queued_event(tmp_path):
    path = tmp_path / "bg.jsonl.gz"
    w = TraceWriter(path, background=True)
    events = list(synthetic_run(30))
    for ev in events[:20]:
        w.write(ev)
    n = w.save_to(tmp_path / "copy.jsonl")  # waits for the queue to drain
    assert n == 20
    assert read_trace(tmp_path / "copy.jsonl").events == events[:20]
    for ev in events[20:]:
        w.write(ev)
    w.close()
    assert read_trace(path).events == events


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_write_error_reaches_the_caller():
    w = TraceWriter("/dev/full", background=True)
    events = list(synthetic_run(3))
    w.write(events[0])
    with pytest.raises(TraceError, match="cannot write trace /dev/full: No space left"):
        w.flush()
    with pytest.raises(TraceError, match="No space left"):
        w.write(events[1])
    w.close()  # already told: closes quietly
    w2 = TraceWriter("/dev/full", background=True)
    w2.write(events[0])
    with pytest.raises(TraceError, match="No space left"):
        w2.close()  # nobody was told yet: close says it


_WRITER = """
import sys, time
sys.path.insert(0, {root!r})
from spectui.recording.trace import TraceWriter, synthetic_run
w = TraceWriter(sys.argv[1], background=True)
for i, ev in enumerate(synthetic_run(1000)):
    w.write(ev)
    time.sleep(0.002)
time.sleep(60)
"""


def test_sigkill_leaves_every_written_line_readable(tmp_path):
    path = tmp_path / "killed.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", _WRITER.format(root=str(ROOT)), str(path)])
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if path.exists() and path.read_bytes().count(b"\n") >= 30:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the writer did not get 30 lines out")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    t = read_trace(path)
    assert len(t.events) >= 29
    # every complete line after the header is an event (a line cut by the kill would be a warning)
    assert len(t.events) == path.read_bytes().count(b"\n") - 1


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_with_a_gate_lines_wait_for_it_and_flush_does_not(tmp_path):
    """TraceWriter.gate (Engine.decoding): each line is encoded while the gate is set (the models decode, the
    loop holds no GIL), or after gate_timeout; flush, save_to and close write everything at once."""
    import threading  # noqa: PLC0415

    path = tmp_path / "gated.jsonl"
    events = list(synthetic_run(8))
    gate = threading.Event()
    w = TraceWriter(path, background=True)
    w.gate, w.gate_timeout = gate, 60.0  # no line can go by the timeout within this test
    for ev in events[:3]:
        w.write(ev)
    time.sleep(0.3)
    assert _lines(path) == 0  # all three wait for the gate (the file is created at the first line)
    gate.set()
    deadline = time.monotonic() + 30
    while _lines(path) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _lines(path) == 4  # the header and the three events
    gate.clear()
    for ev in events[3:6]:
        w.write(ev)
    w.flush()  # does not wait for the gate
    assert read_trace(path).events == events[:6]
    for ev in events[6:]:
        w.write(ev)
    w.close()
    assert read_trace(path).events == events
