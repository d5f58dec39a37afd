"""attach against bad URLs: refused port, unresolvable host, a hung server, an HTML page, an HTTP error.
Each is one line for that URL while the others keep going; nothing raises. Real sockets on 127.0.0.1
(tests/servers.py), no mocks. Also: the attach events' JSON form and --record."""

from __future__ import annotations

import gzip
import io
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("prometheus_client")

from click.testing import CliRunner
from servers import SilentServer, StaticServer, free_port
from waits import catches, wait_until

from spectui.attach.request import stream_completion
from spectui.attach.scraper import Scraper, base_url
from spectui.commands.attach import attach_cmd
from spectui.contract import event_json
from spectui.contract import events as aev
from spectui.text.attach import HeadlessFace

LLAMA_LIKE = (
    "# HELP llamacpp:spec_decode_num_drafts_total Speculative: Total speculative decoding verification steps\n"
    "# TYPE llamacpp:spec_decode_num_drafts_total counter\n"
    "llamacpp:spec_decode_num_drafts_total 0\n"
)


@pytest.fixture
def html():
    s = StaticServer("<!DOCTYPE html>\n<html><head><title>llama.cpp</title></head><body>UI</body></html>")
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def silent():
    s = SilentServer()
    try:
        yield s
    finally:
        s.stop()


def test_base_url():
    assert base_url("127.0.0.1:8080") == "http://127.0.0.1:8080"
    assert base_url("http://h:1/metrics") == "http://h:1"
    assert base_url("https://h/v/metrics/") == "https://h/v"


def test_each_bad_url_is_one_line_and_others_go_on(html, silent):
    good = StaticServer(LLAMA_LIKE, "text/plain; version=0.0.4")
    not_found = StaticServer('{"error":{"code":501,"message":"This server does not support metrics endpoint. '
                             'Start it with `--metrics`","type":"not_supported_error"}}', "application/json", 501)
    refused = f"http://127.0.0.1:{free_port()}"
    try:
        urls = [good.url, refused, html.url, silent.url, "http://no-such-host.invalid:1", not_found.url]
        s = Scraper(urls, timeout=0.5)
        try:
            by_url = {ev.url: ev for ev in s.scrape_all()}
        finally:
            s.close()
        assert by_url[good.url].error == "" and by_url[good.url].kind == aev.KIND_LLAMA_SERVER
        assert "connection refused" in by_url[refused].error
        assert "HTML" in by_url[html.url].error
        assert "timed out after 0.5 s" in by_url[silent.url].error
        assert "resolve" in by_url["http://no-such-host.invalid:1"].error or "unreachable" in by_url[
            "http://no-such-host.invalid:1"].error
        assert by_url[not_found.url].error.startswith("HTTP 501") and "--metrics" in by_url[not_found.url].error
        for ev in by_url.values():
            assert "\n" not in ev.error
    finally:
        good.stop()
        not_found.stop()


def test_cli_headless_lines_and_json(html):
    refused = f"http://127.0.0.1:{free_port()}"
    r = CliRunner().invoke(attach_cmd, [html.url, refused, "--interval", "0.1", "--count", "2", "--headless"])
    assert r.exit_code == 1, r.output  # issue 17: URLs that never answered are a failed session
    lines = r.output.splitlines()
    assert sum("not Prometheus metrics: got an HTML" in ln for ln in lines if ln.startswith("t=")) == 3
    assert sum("connection refused" in ln for ln in lines if ln.startswith("t=")) == 3  # baseline + 2 intervals
    summary = lines[lines.index(next(ln for ln in lines if ln.startswith("since start"))):]
    assert any("refused" in ln for ln in summary) and any("HTML" in ln for ln in summary)
    r = CliRunner().invoke(attach_cmd, [refused, "--interval", "0.1", "--count", "1", "--json"])
    assert r.exit_code == 1, r.output
    assert "never answered: connection refused" in r.stderr
    objs = [json.loads(ln) for ln in r.output.splitlines() if ln.startswith("{")]
    assert objs[0]["what"] == "interval" and objs[0]["engines"][0]["status"] == "error"
    assert objs[-1]["what"] == "session"


def test_request_to_refused_and_html_ends_with_one_line(html):
    evs = list(stream_completion(f"http://127.0.0.1:{free_port()}", aev.KIND_LLAMA_SERVER, "hi", 4, timeout=2))
    assert isinstance(evs[0], aev.RequestStarted) and isinstance(evs[-1], aev.RequestEnded)
    assert evs[-1].reason == aev.REQ_ERROR and "connection refused" in evs[-1].error
    evs = list(stream_completion(html.url, aev.KIND_VLLM, "hi", 4, timeout=2))
    assert evs[-1].reason == aev.REQ_ERROR and evs[-1].error


def test_request_to_hung_server_times_out(silent):
    evs = list(stream_completion(silent.url, aev.KIND_LLAMA_SERVER, "hi", 4, timeout=0.5))
    assert evs[-1].reason == aev.REQ_ERROR and "timed out" in evs[-1].error


def test_event_json_round_trip_and_checks():
    hist = aev.Histogram((aev.Bucket(0.1, 1.0), aev.Bucket(0.5, 3.0)), 4.0, 0.9)
    eng = aev.EngineCounters(engine="1", model="m", speculation=True, num_drafts=3, num_draft_tokens=9,
                             num_accepted_tokens=5, accepted_per_pos=(aev.PositionCount(0, 3), aev.PositionCount(1, 2)),
                             ttft=hist, itl=None)
    evs = [
        aev.AttachStarted(started_at=1.5, targets=(aev.Target("http://a"),), interval=0.5, prompt="p", n_predict=3),
        aev.MetricsScraped(url="http://a", t=0.5, kind=aev.KIND_VLLM, engines=(eng,)),
        aev.MetricsScraped(url="http://b", t=0.5, error="connection refused"),
        aev.RequestStarted(url="http://a", t=0.6, api="completion", prompt="p", n_predict=3, draft_max=2),
        aev.RequestChunk(t=0.7, text="x", draft_n=3, draft_n_accepted=2),
        aev.RequestEnded(t=0.8, reason=aev.REQ_ERROR, error="stream broken"),
        aev.AttachEnded(t=1.0),
    ]
    for ev in evs:
        d = json.loads(json.dumps(event_json.to_dict(ev)))
        assert event_json.from_dict(d) == ev
    with pytest.raises(event_json.EventFormatError, match="num_drafts"):
        d = event_json.to_dict(evs[1])
        d["engines"][0]["num_drafts"] = "3"
        event_json.from_dict(d)
    with pytest.raises(event_json.EventFormatError, match="one of"):
        event_json.from_dict(dict(event_json.to_dict(evs[5]), reason="exploded"))
    with pytest.raises(event_json.EventFormatError, match="unknown event type"):
        event_json.from_dict({"type": "scrape_v9"})
    # every attach event is one of the project's event types (the same reader reads a trace of them)
    assert {cls: name for name, cls in aev.EVENT_TYPES.items()}.keys() >= set(aev.ATTACH_EVENT_TYPES)


def test_record_writes_a_trace(tmp_path, html):
    out = tmp_path / "attach.jsonl.gz"
    r = CliRunner().invoke(attach_cmd, [html.url, "--interval", "0.1", "--count", "2", "--headless",
                                        "--record", str(out)])
    assert r.exit_code == 1, r.output  # an HTML page where /metrics should be: a failed session (issue 17)
    lines = gzip.open(out, "rt").read().splitlines()
    header = json.loads(lines[0])
    assert header["schema"] == "spectui.trace" and header["version"] == 3
    assert header["attach"]["targets"] == [html.url] and header["attach"]["interval"] == 0.1
    evs = [event_json.from_dict(json.loads(ln)) for ln in lines[1:]]
    assert isinstance(evs[0], aev.AttachStarted) and isinstance(evs[-1], aev.AttachEnded)
    scrapes = [e for e in evs if isinstance(e, aev.MetricsScraped)]
    assert len(scrapes) == 3 and all("HTML" in e.error for e in scrapes)
    # the recorded events through the same headless face print what the live run printed
    buf = io.StringIO()
    face = HeadlessFace(buf)
    for ev in evs:
        face(ev)
    # (stdout: the face's lines; the exit status's one-line reason is on stderr)
    assert buf.getvalue() == r.stdout.split("running --headless\n", 1)[-1]
    assert r.stderr.strip().endswith("never answered: not Prometheus metrics: got an HTML page")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_stops_cleanly(html, tmp_path, sig):
    """Ctrl+C (SIGINT) or SIGTERM: the session summary is printed, exit 128 + N (issue 17: 130, 143), the trace
    ends with AttachEnded."""
    out = tmp_path / "t.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "spectui", "attach", html.url, "--interval", "0.1", "--headless",
                             "--record", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[2])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not out.exists() or out.stat().st_size < 200):
            time.sleep(0.1)
        wait_until(lambda: catches(proc.pid, signal.SIGTERM, signal.SIGHUP) is not False, what="its SignalStop")
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + sig, stderr
    assert "since start" in stdout and "Traceback" not in stderr
    last = json.loads(out.read_text().splitlines()[-1])
    assert last["type"] == "attach_end" and last["reason"] == "stopped"


@pytest.mark.slow  # waits out a hung request
def test_ctrl_c_during_a_hung_request(silent, tmp_path):
    """Request mode against a server that never answers: Ctrl+C ends the request as "stopped"."""
    out = tmp_path / "t.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "spectui", "attach", silent.url, "-p", "hi", "--interval", "0.2",
                             "--headless", "--record", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=Path(__file__).resolve().parents[2])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not out.exists() or "request_start" not in out.read_text()):
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr  # Ctrl+C: 128 + SIGINT (issue 17)
    evs = [json.loads(ln) for ln in out.read_text().splitlines()[1:]]
    ends = [e for e in evs if e["type"] == "request_end"]
    assert len(ends) == 1 and ends[0]["reason"] == "stopped"
    assert evs[-1]["type"] == "attach_end"
    assert "timed out" in stdout  # the hung scrape, one line in the session summary


def test_attach_lines_go_through_the_one_escaping_rule(capsys):
    """The command's error and failure lines (contract.errors.echo_error): a server's text shows its control
    characters as escapes, on one line."""
    from spectui.contract.errors import SpectuiError, echo_error

    echo_error("http://h:1 never answered: \x1b]0;pwned\x07\nnext", topic="attach")
    echo_error(SpectuiError("cannot write /dev/full: \x1b[2J"))
    assert capsys.readouterr().err.splitlines() == [
        "spectui: attach: http://h:1 never answered: \\x1b]0;pwned\\x07\\nnext",
        "spectui: error: cannot write /dev/full: \\x1b[2J",
    ]
