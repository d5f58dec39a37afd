"""The third hostile-input report (../shared/reports/bad-input-2026-12-06.md), its rows in what spectui reads
from a server: attach's /metrics (A-gzip_ok, A-gzip_multi, A-chunkneg, A-cl_two, A-flipengine), bench --url
(BU-sse_esc, N-bench-https, N-1000-bench-urls) and serve's static files (S-trav-deep). Each page is served
byte for byte by a real server on 127.0.0.1 (``RawServer``: one canned HTTP response per connection, in
turn), started and stopped here, and read by the command as a real process (the rows that take the ``cli`` fixture:
in the test's process in the fast lane, tests/in_process.py).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("prometheus_client")

from fake_servers import vllm_metrics
from in_process import both_ways, spectui_in_process
from servers import free_port

from spectui.attach.scraper import MAX_BYTES, Scraper

REPO = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"

LLAMA_PAGE = (
    "# TYPE llamacpp:spec_decode_num_drafts_total counter\nllamacpp:spec_decode_num_drafts_total 30\n"
    "# TYPE llamacpp:spec_decode_num_draft_tokens_total counter\nllamacpp:spec_decode_num_draft_tokens_total 90\n"
    "# TYPE llamacpp:spec_decode_num_accepted_tokens_total counter\n"
    "llamacpp:spec_decode_num_accepted_tokens_total 60\n"
    "# TYPE llamacpp:tokens_predicted_total counter\nllamacpp:tokens_predicted_total 200\n"
)


def vllm_page_unlabelled(drafts: int, draft_tokens: int, accepted: int, generated: int) -> str:
    """vLLM's counters with no ``engine`` label (one engine): the key llama-server's counters have too."""
    return "\n".join(line.replace('{engine="0",model_name="m"}', "")
                     for line in vllm_metrics(drafts, draft_tokens, accepted, generated).splitlines()) + "\n"


def response(body: bytes, *headers: str, status: str = "200 OK") -> bytes:
    head = [f"HTTP/1.1 {status}", "Content-Type: text/plain; version=0.0.4", "Connection: close", *headers]
    if not any(h.lower().startswith(("content-length:", "transfer-encoding:")) for h in headers):
        head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def _read_request(conn: socket.socket) -> str:
    """The request's path, its head and body read (Content-Length): a reply sent over unread bytes may be reset."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return ""
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head.split(b" ", 2)[1].decode("ascii", "replace") if head.count(b" ") >= 2 else ""


class RawServer:
    """Answers each connection on 127.0.0.1 with the next of ``replies`` (bytes, sent as they are), in turn;
    a path in ``by_path`` (llama-server's /slots) always gets its own reply, out of turn."""

    def __init__(self, replies: list[bytes], tls: ssl.SSLContext | None = None,
                 by_path: dict[str, bytes] | None = None) -> None:
        self.replies = replies
        self.by_path = by_path or {}
        self.served = 0
        self.sock = socket.socket()
        self.sock.bind((HOST, 0))
        self.sock.listen(16)
        self.url = f"{'https' if tls else 'http'}://{HOST}:{self.sock.getsockname()[1]}"
        self.tls = tls
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            try:
                if self.tls is not None:
                    conn = self.tls.wrap_socket(conn, server_side=True)
                conn.settimeout(5)
                path = _read_request(conn)
                if path in self.by_path:
                    conn.sendall(self.by_path[path])
                    continue
                conn.sendall(self.replies[self.served % len(self.replies)])
                self.served += 1
            except OSError:  # the client refused the certificate, or went away
                pass
            finally:
                conn.close()

    def stop(self) -> None:
        self._stop.set()
        self.sock.close()


@pytest.fixture
def serve_raw():
    made: list[RawServer] = []

    def start(replies: list[bytes], tls: ssl.SSLContext | None = None, by_path=None) -> RawServer:
        made.append(RawServer(replies, tls, by_path))
        return made[-1]

    yield start
    for srv in made:
        srv.stop()


def spectui(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "spectui", *args], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, env=env, timeout=timeout)


def one_error(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def scrape(url: str) -> object:
    (ev,) = Scraper([url], timeout=5.0).scrape_all()
    return ev


def in_process(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """``spectui`` above in this process (tests/in_process.py)."""
    return spectui_in_process(*args, env={"NO_COLOR": "1"})


cli = both_ways(spectui, in_process)  # exit status and lines only: in this process in the fast lane


def attach(url: str, count: str = "2", run=spectui) -> subprocess.CompletedProcess:
    return run("attach", url, "--headless", "--count", count, "--interval", "0.3", "--timeout", "5")


# ------------------------------------------------------------------ /metrics bodies


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_a_gzip_ok_a_gzip_encoded_page_is_read(serve_raw):
    srv = serve_raw([response(gzip.compress(LLAMA_PAGE.encode()), "Content-Encoding: gzip")])
    ev = scrape(srv.url)
    assert ev.error == "" and ev.kind == "llama-server" and ev.engines[0].num_drafts == 30
    r = attach(srv.url)
    assert r.returncode == 0, r.stderr
    assert "llama-server" in r.stdout and "invalid metric name" not in r.stdout + r.stderr


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_a_gzip_multi_two_layers_are_read_and_a_false_header_is_named(serve_raw):
    twice = gzip.compress(gzip.compress(LLAMA_PAGE.encode()))
    ev = scrape(serve_raw([response(twice, "Content-Encoding: gzip, gzip")]).url)
    assert ev.error == "" and ev.engines[0].num_drafts == 30
    once = gzip.compress(LLAMA_PAGE.encode())  # says gzip twice, is gzip once
    srv = serve_raw([response(once, "Content-Encoding: gzip, gzip")])
    assert "not gzip data as its Content-Encoding says" in scrape(srv.url).error
    r = attach(srv.url)
    assert r.returncode == 1 and "not gzip data as its Content-Encoding says" in one_error(r.stderr)
    assert "\\x1f" not in r.stdout + r.stderr  # no binary garbage quoted as a metric name


def test_a_gzip_bomb_and_an_encoding_spectui_does_not_decode_are_refused(serve_raw):
    bomb = gzip.compress(b"0" * (MAX_BYTES + 1024), compresslevel=9)  # 17 MB of zeros in ~17 KB
    assert len(bomb) < 100_000
    ev = scrape(serve_raw([response(bomb, "Content-Encoding: gzip")]).url)
    assert "inflates past 16 MiB" in ev.error
    ev = scrape(serve_raw([response(b"\x0b\x02\x80hello", "Content-Encoding: br")]).url)
    assert "Content-Encoding: br" in ev.error and "does not decode" in ev.error


def test_a_chunkneg_a_negative_chunk_size_is_a_malformed_body_not_unreachable(serve_raw, cli):
    body = b"-5\r\nhello\r\n0\r\n\r\n"
    srv = serve_raw([response(body, "Transfer-Encoding: chunked")])
    ev = scrape(srv.url)
    assert "malformed chunked body" in ev.error and "unreachable" not in ev.error, ev.error
    r = attach(srv.url, count="1", run=cli)
    assert r.returncode == 1 and "malformed chunked body" in one_error(r.stderr)


def test_a_cl_two_conflicting_content_lengths_are_refused(serve_raw, cli):
    page = LLAMA_PAGE.encode()
    srv = serve_raw([response(page, "Content-Length: 5", f"Content-Length: {len(page)}")])
    ev = scrape(srv.url)
    assert f"2 different Content-Length headers (5 and {len(page)})" in ev.error and "malformed" in ev.error
    r = attach(srv.url, count="1", run=cli)
    assert r.returncode == 1 and "Content-Length" in one_error(r.stderr)
    # the same length twice is one length (RFC 9112): read
    same = serve_raw([response(page, f"Content-Length: {len(page)}", f"Content-Length: {len(page)}")])
    assert scrape(same.url).error == ""


def test_a_flipengine_another_engine_at_the_url_is_a_reset_not_a_delta(serve_raw, cli):
    vllm = vllm_page_unlabelled(100, 300, 250, 900).encode()  # every vLLM counter above llama-server's
    slots = response(b'[{"id": 0, "speculative": true}]', "Content-Type: application/json")
    srv = serve_raw([response(LLAMA_PAGE.encode()), response(vllm)], by_path={"/slots": slots})
    r = attach(srv.url, count="3", run=cli)  # llama-server, vLLM, llama-server, vLLM
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("t=")]
    assert len(lines) == 4 and "[vllm]" in lines[1] and "[vllm]" in lines[3], r.stdout
    assert "another engine answers; new baseline" in lines[1] and "new baseline" in lines[3], r.stdout
    # never a delta across the two: vLLM's 100 drafts less llama-server's 30 ("drafts 70")
    assert "drafts 70" not in r.stdout and "accept" not in r.stdout, r.stdout


# ------------------------------------------------------------------ bench --url


def sse(obj) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def chat_stream(timings: dict) -> bytes:
    chunks = [sse({"choices": [{"index": 0, "delta": {"content": t}, "finish_reason": None}]})
              for t in ("Hel", "lo", " \x1b]0;T\x07x")]
    chunks.append(sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}], "timings": timings}))
    body = b"".join(chunks) + b"data: [DONE]\n\n"
    return response(body, "Content-Type: text/event-stream")


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_bu_sse_esc_impossible_request_timings_are_named_and_left_out(serve_raw, tmp_path):
    models = response(b'{"data": [{"id": "m"}]}', "Content-Type: application/json")
    metrics = response(b"", status="404 Not Found")
    bad = {"draft_n": -5, "draft_n_accepted": 99, "predicted_n": 4242.5, "predicted_ms": 10.0}
    # bench asks /metrics, /v1/models (twice: the API, the model id), then the completion
    srv = serve_raw([metrics, models, models, chat_stream(bad).replace(b"4242.5", b"1e400")])  # JSON's own 1e400
    out = tmp_path / "b.json"
    r = spectui("bench", "--url", srv.url, "--limit", "1", "-n", "4", "--timeout", "8", "--json", "-o", str(out))
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    notes = " ".join(data["params"]["notes"])
    assert "impossible request timings (draft_n -5, predicted_n inf)" in notes, notes
    run = data["runs"][0]
    assert run["n_drafted"] == 0 and run["n_accepted"] == 0  # nothing of the server's counts averaged in
    assert "\x1b" not in r.stdout + r.stderr
    # accepted above drafted (each a count on its own) is impossible too
    srv = serve_raw([metrics, models, models, chat_stream({"draft_n": 5, "draft_n_accepted": 99})])
    r = spectui("bench", "--url", srv.url, "--limit", "1", "-n", "4", "--timeout", "8", "--json", "-o", str(out))
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    assert "draft_n_accepted 99 > draft_n 5" in " ".join(data["params"]["notes"])
    assert data["runs"][0]["n_drafted"] == 0 and data["runs"][0]["n_accepted"] == 0


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_n_1000_bench_urls_a_server_that_is_down_fails_as_attach_says_it():
    down = f"http://{HOST}:{free_port()}"
    a = spectui("attach", down, "--headless", "--count", "1", "--interval", "0.2", "--timeout", "2")
    b = spectui("bench", "--url", down, "--limit", "1", "-n", "4", "--timeout", "2")
    assert a.returncode == b.returncode == 1, (a.stderr, b.stderr)
    assert one_error(b.stderr) == one_error(a.stderr).replace("spectui: attach:", "spectui: bench:")
    assert f"{down} never answered: connection refused" in one_error(b.stderr)
    urls = [arg for i in range(1, 1001) for arg in ("--url", f"http://{HOST}:{20000 + i}")]  # the report's 1000
    many = spectui("bench", *urls, "--limit", "1", "-n", "4", "--timeout", "1")
    assert many.returncode == 1 and "never answered" in one_error(many.stderr)


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command for a self-signed certificate")
def test_n_bench_https_a_self_signed_certificate_fails_as_attach_says_it(serve_raw, tmp_path):
    key, cert = tmp_path / "k.pem", tmp_path / "c.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-subj", "/CN=127.0.0.1", "-days", "1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    srv = serve_raw([response(LLAMA_PAGE.encode())], tls=tls)
    a = spectui("attach", srv.url, "--headless", "--count", "1", "--interval", "0.2", "--timeout", "3")
    b = spectui("bench", "--url", srv.url, "--limit", "1", "-n", "4", "--timeout", "3")
    assert a.returncode == b.returncode == 1, (a.stderr, b.stderr)
    line = one_error(b.stderr)
    assert line.startswith(f"spectui: bench: {srv.url} never answered:") and "CERTIFICATE_VERIFY_FAILED" in line
    assert line == one_error(a.stderr).replace("spectui: attach:", "spectui: bench:")


# ------------------------------------------------------------------ serve


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_s_trav_deep_a_3000_segment_static_path_is_404_not_500():
    from serve_probe import Serve  # a real `spectui serve demo` on a free port, stopped by its pid

    paths = ["/static/" + "a/" * 3000 + "x", "/static/" + "b" * 300]
    with Serve("demo") as srv:
        for path in paths:
            with socket.create_connection((HOST, srv.port), timeout=10) as s:
                s.sendall(f"GET {path} HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n".encode())
                got = b""
                while chunk := s.recv(65536):
                    got += chunk
            assert got.split(b"\r\n", 1)[0] == b"HTTP/1.1 404 Not Found", (len(path), got[:200])
        time.sleep(0.3)  # serve's log lines, if any, are read
        log = srv.stderr()
    assert "File name too long" not in log and "site-packages" not in log and "Error handling" not in log, log
