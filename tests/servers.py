"""Real servers for the attach tests, on 127.0.0.1 only, started and stopped by PID.

- ``llama_server_binary()``: the llama-server built by scripts/build-llama-server.sh
  (``SPECTUI_LLAMA_SERVER_BIN``: the binary or its folder; else the newest in
  ~/.cache/spectui/llama-server/*/), or None.
- ``LlamaServer(binary, args, log)``: starts it on a free port, waits (bounded) for /health, and
  ``stop()`` / ``kill()`` end exactly that process (its own session, so nothing else is touched).
- ``spec_and_baseline(binary, target, draft, logs, slots=1, ctx=2048)``: two LlamaServers as one context
  manager, (spec, base): the target with its draft (``--spec-type draft-simple``, ``--spec-draft-n-max 3``)
  and the target alone as the baseline, both ``--metrics``, ``-np slots``, one thread each; both stopped on leaving.
- ``raw_metrics(url)``: the server's ``llamacpp:`` counters from /metrics, read with a regular expression
  (not spectui's parser): name -> value.
- ``StaticServer(body, content_type)``: a tiny http.server answering every GET with one fixed page
  (an HTML page where /metrics should be, an error status).
- ``SilentServer()``: accepts connections and never answers (timeouts).
"""

from __future__ import annotations

import contextlib
import http.server
import os
import re
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

HOST = "127.0.0.1"
CACHE = Path(os.environ.get("SPECTUI_LLAMA_SERVER_CACHE", Path.home() / ".cache" / "spectui" / "llama-server"))
SKIP_REASON = (
    "llama-server not built: run scripts/build-llama-server.sh (or set SPECTUI_LLAMA_SERVER_BIN)"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def llama_server_binary() -> Path | None:
    env = os.environ.get("SPECTUI_LLAMA_SERVER_BIN")
    if env:
        p = Path(env)
        p = p / "llama-server" if p.is_dir() else p
        return p if p.is_file() and os.access(p, os.X_OK) else None
    found = [p for p in CACHE.glob("*/llama-server") if os.access(p, os.X_OK)]
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


class LlamaServer:
    def __init__(self, binary: Path, args: list[str], log: Path, port: int | None = None, ready_s: float = 120.0):
        self.port = port or free_port()
        self.url = f"http://{HOST}:{self.port}"
        self.log = log
        self.argv = [str(binary), *args, "--host", HOST, "--port", str(self.port)]
        self._log_fh = open(log, "ab")
        self.proc = subprocess.Popen(self.argv, stdout=self._log_fh, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            self._wait_ready(ready_s)
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, ready_s: float) -> None:
        deadline = time.monotonic() + ready_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama-server exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"llama-server not ready after {ready_s:.0f} s:\n{self.log_tail()}")

    def log_tail(self, n: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def kill(self) -> None:
        """SIGKILL this server (a crash, as the client sees it)."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log_fh.close()


THREADS = ["-t", "1", "-tb", "1", "-td", "1"]  # one thread for each of the server's pools


@contextlib.contextmanager
def spec_and_baseline(binary: Path, target: Path, draft: Path, logs: Path, slots: int = 1, ctx: int = 2048):
    """(spec, base): the target with its draft and the target alone, both running while the block runs."""
    common = ["--metrics", "-c", str(ctx), "-np", str(slots), "--no-warmup", *THREADS]
    spec = LlamaServer(binary, ["-m", str(target), "-md", str(draft), "--spec-type", "draft-simple",
                                "--spec-draft-n-max", "3", *common], logs / "spec.log")
    try:
        base = LlamaServer(binary, ["-m", str(target), *common], logs / "base.log")
    except BaseException:
        spec.stop()
        raise
    try:
        yield spec, base
    finally:
        spec.stop()
        base.stop()


def raw_metrics(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url + "/metrics", timeout=5) as r:
        text = r.read().decode()
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"^(llamacpp:[a-z_]+) (\S+)$", text, re.M)}


class StaticServer:
    """Every GET answers ``body`` with ``status`` and ``content_type``."""

    def __init__(self, body: str, content_type: str = "text/html", status: int = 200):
        page = body.encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer((HOST, 0), Handler)
        self.url = f"http://{HOST}:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class SilentServer:
    """Accepts TCP connections and never answers (a hung server)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind((HOST, 0))
        self.sock.listen(16)
        self.url = f"http://{HOST}:{self.sock.getsockname()[1]}"

    def stop(self) -> None:
        self.sock.close()
