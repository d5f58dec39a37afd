"""Hostile HTTP servers on 127.0.0.1 for the tests and benchmarks/hostile_cases.py: real sockets
(http.server in a thread), each misbehaving one way. ``FakeServer(mode)`` starts one on a free port;
``.url``, ``.stop()``; ``.requests`` counts what it was asked, ``.posts`` the POSTs among them.

Modes:
- ``ok``: vLLM-like /metrics (counters grow with each request), /v1/models, streamed /v1/completions and
  /v1/chat/completions, /slots.
- ``html``: every path answers an HTML page (a web UI, not the API).
- ``err500``: /metrics is an HTTP 500 whose JSON error message holds OSC 0.
- ``redirect``: every path redirects to itself.
- ``drip``: the response trickles out one byte every ``drip_s`` seconds, forever (status line included).
- ``nan``, ``inf``, ``neg``: a speculative counter is NaN, +Inf, -5; ``accgtdraft``: accepted > drafted.
- ``esc_label``: a Prometheus label value (engine=) holding OSC 52 and CSI 6n.
- ``nonhttp``: raw bytes (NUL, CR, 0xff), not HTTP.
- ``endless``: /metrics ok, but a completion streams one line that never ends.
- ``slow_stream``: a completion that sends one chunk a second for a minute.
- ``esc_stream``: a completion whose text holds OSC 0 / OSC 52 / CSI 2J / CSI 6n.
- ``surrogate_stream``: a completion whose text is the JSON escape "\\ud800" (a lone surrogate).
- ``redirect_away``: every path (GET and POST) redirects to another origin, in turn: 127.0.0.2 on the same
  port, the same host with ``user:pw@``, and a scheme-relative ``//elsewhere.invalid``.
- ``short_body``: /metrics says a Content-Length 1,000 bytes more than it sends, cut mid-line, then closes.
"""

from __future__ import annotations

import http.server
import json
import socket
import threading
import time

HOST = "127.0.0.1"
ESC_TEXT = "\x1b]0;PWNED-TITLE\x07\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\x1b[6n\x9b31m\u202eevil"


def vllm_metrics(drafts: float, draft_tokens: float, accepted: float, generated: float, engine: str = "0") -> str:
    def fmt(v: float) -> str:
        if v != v:
            return "NaN"
        if v in (float("inf"), float("-inf")):
            return "+Inf" if v > 0 else "-Inf"
        return repr(float(v))

    lab = '{engine="%s",model_name="m"}' % engine.replace("\\", "\\\\").replace('"', '\\"')
    return (
        "# TYPE vllm:spec_decode_num_drafts counter\n"
        f"vllm:spec_decode_num_drafts_total{lab} {fmt(drafts)}\n"
        "# TYPE vllm:spec_decode_num_draft_tokens counter\n"
        f"vllm:spec_decode_num_draft_tokens_total{lab} {fmt(draft_tokens)}\n"
        "# TYPE vllm:spec_decode_num_accepted_tokens counter\n"
        f"vllm:spec_decode_num_accepted_tokens_total{lab} {fmt(accepted)}\n"
        "# TYPE vllm:generation_tokens counter\n"
        f"vllm:generation_tokens_total{lab} {fmt(generated)}\n"
    )


def _sse(obj) -> bytes:
    return b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n\n"


class FakeServer:
    def __init__(self, mode: str, drip_s: float = 0.3) -> None:
        self.mode = mode
        self.drip_s = drip_s
        self.requests = 0
        self.posts = 0  # completions asked for (a stream under way)
        self.n_done = 0  # completions served in full (the ok server's counters grow with them)
        self._stop = threading.Event()
        if mode == "nonhttp":
            self._raw_server()
            return
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802 - http.server's name
                server.requests += 1
                server.handle(self, "GET")

            def do_POST(self):  # noqa: N802
                server.requests += 1
                server.posts += 1
                n = int(self.headers.get("Content-Length") or 0)
                self.body = self.rfile.read(n) if n else b""
                server.handle(self, "POST")

        self.httpd = http.server.ThreadingHTTPServer((HOST, 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://{HOST}:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    # ------------------------------------------------------------------ plumbing
    def stop(self) -> None:
        self._stop.set()
        if self.mode == "nonhttp":
            self.sock.close()
            return
        self.httpd.shutdown()
        self.httpd.server_close()

    def _raw_server(self) -> None:
        self.sock = socket.socket()
        self.sock.bind((HOST, 0))
        self.sock.listen(16)
        self.url = f"http://{HOST}:{self.sock.getsockname()[1]}"

        def serve():
            while not self._stop.is_set():
                try:
                    conn, _ = self.sock.accept()
                except OSError:
                    return
                self.requests += 1
                try:
                    conn.recv(4096)
                    conn.sendall(b"\x00\r\xff\xfe garbage \x1b]0;X\x07 not http\r\n\r\n")
                finally:
                    conn.close()

        threading.Thread(target=serve, daemon=True).start()

    @staticmethod
    def send(h, status: int, body: bytes, ctype: str, extra: dict | None = None) -> None:
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(body)

    def stream(self, h, chunks) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Connection", "close")
        h.end_headers()
        try:
            for c in chunks:
                if self._stop.is_set():
                    return
                h.wfile.write(c)
                h.wfile.flush()
        except OSError:
            pass
        h.close_connection = True

    # ------------------------------------------------------------------ the modes
    def counters(self) -> tuple[float, float, float, float]:
        n = self.n_done
        return 10 + 4 * n, 20 + 8 * n, 12 + 5 * n, 40 + 4 * n

    def metrics_text(self) -> str:
        d, dt, a, g = self.counters()
        if self.mode == "nan":
            dt = float("nan")
        elif self.mode == "inf":
            a = float("inf")
        elif self.mode == "neg":
            d = -5.0
        elif self.mode == "accgtdraft":
            a = dt * 500
        return vllm_metrics(d, dt, a, g, engine=ESC_TEXT if self.mode == "esc_label" else "0")

    def completion_chunks(self, chat: bool, texts: list[str]):
        for t in texts:
            if chat:
                yield _sse({"choices": [{"index": 0, "delta": {"content": t}, "finish_reason": None}]})
            else:
                yield _sse({"choices": [{"index": 0, "text": t, "finish_reason": None}]})
        last = {"choices": [{"index": 0, ("delta" if chat else "text"): ({} if chat else ""),
                             "finish_reason": "length"}],
                "usage": {"prompt_tokens": 2, "completion_tokens": len(texts)}}
        self.n_done += 1
        yield _sse(last)
        yield _sse(b"[DONE]")

    def handle(self, h, method: str) -> None:
        mode, path = self.mode, h.path.split("?")[0]
        chat = path.endswith("/chat/completions")
        if mode == "drip":
            reply = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n" + vllm_metrics(1, 2, 1, 3).encode() * 1000
            try:
                for i in range(len(reply)):
                    if self._stop.wait(self.drip_s):
                        return
                    h.wfile.write(reply[i:i + 1])
                    h.wfile.flush()
            except OSError:
                pass
            h.close_connection = True
            return
        if mode == "html":
            return self.send(h, 200, b"<!DOCTYPE html>\n<html><body>a web UI</body></html>", "text/html")
        if mode == "redirect":
            return self.send(h, 302, b"", "text/plain", {"Location": h.path})
        if mode == "redirect_away":
            port = self.url.rsplit(":", 1)[1]
            away = [f"http://127.0.0.2:{port}{h.path}", f"http://user:pw@{HOST}:{port}{h.path}",
                    f"//elsewhere.invalid{h.path}"]
            return self.send(h, 302, b"", "text/plain", {"Location": away[(self.requests - 1) % len(away)]})
        if mode == "short_body" and path == "/metrics":
            body = self.metrics_text().encode()
            cut = body[: body.index(b"accepted") + 20]  # mid-line: "...num_accepte"
            h.send_response(200)
            h.send_header("Content-Type", "text/plain; version=0.0.4")
            h.send_header("Content-Length", str(len(body) + 1000))
            h.end_headers()
            h.wfile.write(cut)
            h.wfile.flush()
            h.close_connection = True
            return
        if mode == "err500":
            body = json.dumps({"error": {"code": 500, "message": ESC_TEXT + " internal\n boom"}}).encode()
            return self.send(h, 500, body, "application/json")
        if path == "/metrics":
            return self.send(h, 200, self.metrics_text().encode(), "text/plain; version=0.0.4")
        if path == "/v1/models":
            return self.send(h, 200, json.dumps({"data": [{"id": "m"}]}).encode(), "application/json")
        if path == "/slots":
            return self.send(h, 200, b'[{"id": 0, "speculative": true}]', "application/json")
        if method == "POST" and path in ("/v1/completions", "/v1/chat/completions", "/completion"):
            if mode == "endless":
                def endless():
                    yield b"data: {\"choices\": [{\"text\": \""
                    block = b"x" * 65536
                    while True:
                        yield block
                return self.stream(h, endless())
            if mode == "slow_stream":
                def slow():
                    for c in self.completion_chunks(chat, ["tick"] * 60):
                        yield c
                        if self._stop.wait(1.0):
                            return
                return self.stream(h, slow())
            if mode == "esc_stream":
                return self.stream(h, self.completion_chunks(chat, [ESC_TEXT, " and ", ESC_TEXT]))
            if mode == "surrogate_stream":
                raw = b'data: {"choices": [{"index": 0, "text": "a\\ud800b", "finish_reason": null}]}\n\n'
                return self.stream(h, [raw, *self.completion_chunks(chat, ["c"])])
            return self.stream(h, self.completion_chunks(chat, ["Hello", ",", " world", "!"]))
        return self.send(h, 404, b'{"error": {"message": "no such path"}}', "application/json")


def wait_listening(url: str, timeout: float = 5.0) -> None:
    host, port = url.rsplit(":", 1)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            socket.create_connection((HOST, int(port)), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
