"""Every network wait has a deadline and every signal is heard (issue 26, part 3). Real servers on 127.0.0.1
(tests/hostile/fake_servers.py): one that drips a byte every 0.2 s, one whose stream never ends a line, one
that streams slowly, one that answers HTML. ``--timeout`` bounds a whole scrape, request or stream, not
each read; --count / --duration always end; SIGINT / SIGTERM / SIGHUP end attach within a second."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fake_servers import FakeServer
from in_process import both_ways, spectui_in_process
from waits import catches, wait_until

from spectui.attach.request import stream_completion
from spectui.attach.scraper import Deadline, FetchError, Scraper, http_get
from spectui.contract.events import KIND_VLLM, REQ_ERROR

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def drip():
    s = FakeServer("drip", drip_s=0.2)
    yield s
    s.stop()


def test_a_drip_is_cut_at_the_timeout_as_a_whole(drip):
    t0 = time.monotonic()
    with pytest.raises(FetchError, match="timed out after 1 s"):
        http_get(drip.url + "/metrics", 1.0)
    assert time.monotonic() - t0 < 1.8  # per read it would never end: a byte every 0.2 s


def test_scrape_all_ends_at_the_timeout_and_hears_stop(drip):
    s = Scraper([drip.url], timeout=0.6)
    try:
        t0 = time.monotonic()
        (ev,) = s.scrape_all()
        assert "timed out after 0.6 s" in ev.error and time.monotonic() - t0 < 1.5
        stop = threading.Event()
        threading.Timer(0.2, stop.set).start()
        s.timeout = 30.0  # a long timeout: the stop event ends the wait
        t0 = time.monotonic()
        (ev,) = s.scrape_all(stop)
        assert ev.error and time.monotonic() - t0 < 1.0
    finally:
        s.close()


def test_deadline_wakes_a_blocked_read(drip):
    d = Deadline(0.3)
    import socket

    sock = socket.create_connection(("127.0.0.1", int(drip.url.rsplit(":", 1)[1])))
    sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    with d:
        d.add(sock)
        t0 = time.monotonic()
        while sock.recv(1):  # one byte each 0.2 s, until the deadline shuts the socket
            pass
    assert d.fired and 0.25 < time.monotonic() - t0 < 1.0
    sock.close()


def test_a_slow_stream_ends_at_the_request_timeout():
    srv = FakeServer("slow_stream")
    try:
        t0 = time.monotonic()
        evs = list(stream_completion(srv.url, KIND_VLLM, "hi", 8, timeout=2.0))
        assert evs[-1].reason == REQ_ERROR and "timed out after 2 s (the whole request)" in evs[-1].error
        assert 1.9 < time.monotonic() - t0 < 3.5
        assert any(getattr(e, "text", "") == "tick" for e in evs)  # what came before is kept
    finally:
        srv.stop()


def test_an_html_page_in_request_mode_says_so():
    srv = FakeServer("html")
    try:
        evs = list(stream_completion(srv.url, KIND_VLLM, "hi", 8, timeout=5.0))
        assert "got an HTML page" in evs[-1].error
    finally:
        srv.stop()


def spectui(*args: str, **kw) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen([sys.executable, "-m", "spectui", *args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, **kw)


def _process(*args: str) -> subprocess.CompletedProcess:
    p = spectui(*args)
    out, err = p.communicate(timeout=30)
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def _in_process(*args: str) -> subprocess.CompletedProcess:
    return spectui_in_process(*args, text=False)


cli = both_ways(_process, _in_process)  # no signal: in this process in the fast lane (tests/in_process.py)


def in_its_work(p: subprocess.Popen, asked, what: str) -> None:
    """Until the server was asked (``asked()``) and the command's own stop catches SIGTERM and SIGHUP."""
    wait_until(lambda: asked() and catches(p.pid, signal.SIGTERM, signal.SIGHUP) is not False, 60, what)


@pytest.mark.parametrize("args", [["--count", "3", "--interval", "0.5"],
                                  pytest.param(["--duration", "3"], marks=pytest.mark.slow)])
def test_count_and_duration_end_the_session_on_a_drip(drip, args, cli):
    t0 = time.monotonic()
    r = cli("attach", drip.url, "--headless", *args)
    assert r.returncode == 1 and "timed out after" in r.stderr.decode() and time.monotonic() - t0 < 8


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_signals_end_attach_within_a_second_whatever_the_server(drip, tmp_path, signum):
    rec = tmp_path / "drip.jsonl"
    p = spectui("attach", drip.url, "--headless", "--interval", "0.5", "--timeout", "30", "--record", str(rec))
    # in its baseline scrape: the drip answers nothing whole for 30 s
    in_its_work(p, lambda: drip.requests >= 1, "attach in its baseline scrape")
    t0 = time.monotonic()
    p.send_signal(signum)
    out, err = p.communicate(timeout=30)
    took = time.monotonic() - t0
    assert p.returncode == 128 + signum, err
    assert took < 1.0, took
    last = json.loads(rec.read_text().strip().splitlines()[-1])
    assert last["type"] == "attach_end"  # the trace is complete


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_bench_on_a_drip_ends_with_its_timeout(drip):
    t0 = time.monotonic()
    p = spectui("bench", "--url", drip.url, "--limit", "1", "-n", "8", "--timeout", "1")
    out, err = p.communicate(timeout=60)
    # a server that never answered is a failed bench (1), as attach says it on the same drip (above), not bad usage
    assert p.returncode == 1 and "timed out after 1 s" in err.decode() and time.monotonic() - t0 < 10
    assert f"spectui: bench: {drip.url} never answered: timed out after 1 s" in err.decode()


@pytest.mark.parametrize("concurrency", [pytest.param("1", marks=pytest.mark.slow), "2"])  # fast lane: 2
def test_a_signal_ends_bench_within_a_second_mid_request(concurrency):
    srv = FakeServer("slow_stream")  # a chunk a second for a minute
    try:
        p = spectui("bench", "--url", srv.url, "--limit", "2", "-n", "64", "--timeout", "120",
                    "--concurrency", concurrency)
        in_its_work(p, lambda: srv.posts >= 1, "bench mid-request")
        t0 = time.monotonic()
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60)
        took = time.monotonic() - t0
        assert p.returncode == 143, err
        assert took < 1.0, took
    finally:
        srv.stop()
