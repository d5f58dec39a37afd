"""``spectui attach`` on the three dialects at once (issue 36), over real HTTP on 127.0.0.1: a real llama-server
(the vendored llama.cpp, tiny GGUF pair, ``-md --spec-type draft-simple``), an endpoint writing vLLM's /metrics
(its counters and per-position series through prometheus_client, as vllm/v1/spec_decode/metrics.py declares
them; the real CPU vLLM and its per-request histograms: test_attach_vllm.py) and one speaking SGLang's format
(tests/attach/sglang_format.py: SGLang does not install here). Each prompt goes to each engine (``-p ... --each``):
per-request acceptance with the outliers flagged, acceptance by position side by side, in the headless face and
the TUI."""

from __future__ import annotations

import http.server
import json
import threading
import time

import pytest

pytest.importorskip("prometheus_client")

from prometheus_client import CollectorRegistry, Counter, generate_latest
from servers import SKIP_REASON, LlamaServer, llama_server_binary
from sglang_format import SGLangFormatServer

from spectui.analysis.attach_stats import HIGH, OK
from spectui.attach.session import AttachSession
from spectui.text.attach import HeadlessFace
from spectui.views.attach_positions import FROM_COUNTERS, FROM_REQUESTS, position_columns

BINARY = llama_server_binary()
HOST = "127.0.0.1"
PROMPTS = ["the hash map key value table", "bucket chain probe slot list node"]


class VLLMFormatServer:
    """vLLM's spec-decode counters (engine 0, k = 3): every POST /v1/completions adds 10 verify steps whose
    drafts were accepted up to positions 3, 3, 2, 2, 2, 1, 1, 0, 0, 0 and streams 4 tokens; its response carries
    vLLM's per-request ``metrics.speculative_decoding`` with that histogram ([3, 2, 3, 2])."""

    HIST = [3, 2, 3, 2]

    def __init__(self) -> None:
        reg = CollectorRegistry()
        lab = ["model_name", "engine"]
        c = {n: Counter(f"vllm:spec_decode_num_{n}", n, lab, registry=reg)
             for n in ("drafts", "draft_tokens", "accepted_tokens")}
        pp = Counter("vllm:spec_decode_num_accepted_tokens_per_pos", "p", lab + ["position"], registry=reg)
        gen = Counter("vllm:generation_tokens", "g", lab, registry=reg)
        for i in range(3):
            pp.labels("tiny", "0", str(i)).inc(0)
        for n in c.values():
            n.labels("tiny", "0").inc(0)
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                if self.path == "/v1/models":
                    body = json.dumps({"data": [{"id": "tiny"}]}).encode()
                else:
                    body = generate_latest(reg)
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                hist = server.HIST
                for n_acc, count in enumerate(hist):
                    c["drafts"].labels("tiny", "0").inc(count)
                    c["draft_tokens"].labels("tiny", "0").inc(3 * count)
                    c["accepted_tokens"].labels("tiny", "0").inc(n_acc * count)
                    for pos in range(n_acc):
                        pp.labels("tiny", "0", str(pos)).inc(count)
                gen.labels("tiny", "0").inc(4)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for w in ("a", "b", "c"):
                    self.wfile.write(b"data: " + json.dumps({"choices": [{"text": w}]}).encode() + b"\n\n")
                steps, acc = sum(hist), sum(i * x for i, x in enumerate(hist))
                last = {"choices": [{"text": "d", "finish_reason": "length"}],
                        "metrics": {"speculative_decoding": {"acceptance_histogram": hist, "num_spec_steps": steps,
                                                             "num_accepted_draft_tokens": acc,
                                                             "num_draft_tokens": 3 * steps}}}
                self.wfile.write(b"data: " + json.dumps(last).encode() + b"\n\ndata: [DONE]\n\n")
                self.wfile.flush()

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer((HOST, 0), Handler)
        self.url = f"http://{HOST}:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def run_session(urls, prompts, n_predict=16):
    out = []
    face_text = []

    class Sink:
        def write(self, s):
            face_text.append(s)

        def flush(self):
            pass

    face = HeadlessFace(Sink())
    session = AttachSession(urls, interval=0.3, timeout=3.0, prompt=prompts, each=True, n_predict=n_predict)

    def sink(ev):
        out.append(ev)
        face(ev)

    session.run(sink)
    return session, out, "".join(face_text)


def sglang_answers():
    # request 1: steady (histogram 2, 2, 3, 3 of k = 3: 15 of 30 drafts), request 2: every draft accepted
    return [(["x"] * 20, [2, 2, 3, 3]), (["y"] * 24, [0, 0, 0, 6])]


def test_a_vllm_and_an_sglang_format_endpoint_side_by_side():
    vllm, sgl = VLLMFormatServer(), SGLangFormatServer(sglang_answers())
    try:
        session, evs, text = run_session([vllm.url, sgl.url], PROMPTS)
        assert session.failure() == "", session.failure()
        snap = session.stats.snapshot()
        reqs = snap.requests
        assert [r.url for r in reqs] == [vllm.url, vllm.url, sgl.url, sgl.url]  # each prompt to each engine
        # vLLM's per-request histogram [3, 2, 3, 2]: position 0 accepted in 7 of 10 steps, 1 in 5, 2 in 2
        assert reqs[0].accepted_per_pos == (7, 5, 2) and reqs[0].acceptance_by_pos == pytest.approx((0.7, 0.5, 0.2))
        # SGLang's: request 1 [2, 2, 3, 3] -> 8, 6, 3 of 10; request 2 all accepted
        assert reqs[2].accepted_per_pos == (8, 6, 3) and reqs[3].acceptance_rate == 1.0
        assert reqs[3].flag == HIGH and "copy" in reqs[3].flag_words  # every draft accepted: flagged
        cols = {c.label: c for c in position_columns(snap)}
        assert cols["vllm"].source == FROM_COUNTERS and cols["vllm"].rates == pytest.approx((0.7, 0.5, 0.2))
        # SGLang has no per-position metric: its column is its requests' histograms, 8+0 / 10+6 ... summed
        assert cols["sglang"].source == FROM_REQUESTS and cols["sglang"].n_requests == 2
        assert cols["sglang"].rates == pytest.approx(((8 + 6) / 16, (6 + 6) / 16, (3 + 6) / 16))
        sg = next(w for w in snap.interval if w.url == sgl.url and w.gauges_only)
        assert sg.status == OK and sg.acceptance_rate == pytest.approx(1.0)  # its gauges: the last request's
        assert "outlier, high" in text and "-- request 2 to" in text and "by pos [0.70 0.50 0.20]" in text
    finally:
        vllm.stop()
        sgl.stop()


async def test_the_tui_draws_them_side_by_side():
    from spectui.tui.attach.acceptance import AttachAcceptance
    from spectui.tui.attach.app import AttachApp
    from spectui.tui.attach.request import AttachRequest

    vllm, sgl = VLLMFormatServer(), SGLangFormatServer(sglang_answers())
    try:
        session = AttachSession([vllm.url, sgl.url], interval=0.3, timeout=3.0, prompt=PROMPTS, each=True,
                                n_predict=16)
        app = AttachApp(session=session, request_mode=True)
        async with app.run_test(size=(100, 32)) as pilot:
            deadline = time.monotonic() + 60
            while app.state.end is None and time.monotonic() < deadline:
                await pilot.pause(0.1)
            await pilot.pause()
            app.paint()
            await pilot.pause()
            acc = app.screen.query_one(AttachAcceptance).render().plain
            assert "vllm" in acc and "sglang*" in acc and "70.0%" in acc and "87.5%" in acc, acc
            assert "from 2 requests' histograms" in acc
            req = app.screen.query_one(AttachRequest).render().plain
            assert "#4 accept 100.0%" in req and "high:" in req, req
            await pilot.press("q")
    finally:
        vllm.stop()
        sgl.stop()


@pytest.mark.skipif(BINARY is None, reason=SKIP_REASON)
@pytest.mark.timeout(300)
@pytest.mark.slow
def test_a_real_llama_server_beside_them(tiny_target, tiny_draft_noisy, tmp_path):
    args = ["-m", str(tiny_target), "-md", str(tiny_draft_noisy), "--spec-type", "draft-simple",
            "--spec-draft-n-max", "3", "--metrics", "-c", "2048", "-np", "1", "--no-warmup", "-t", "1", "-tb", "1",
            "-td", "1"]
    llama = LlamaServer(BINARY, args, tmp_path / "server.log")
    vllm, sgl = VLLMFormatServer(), SGLangFormatServer(sglang_answers())
    try:
        session, evs, text = run_session([llama.url, vllm.url, sgl.url], PROMPTS, n_predict=24)
        assert session.failure() == "", session.failure()
        snap = session.stats.snapshot()
        lreqs = [r for r in snap.requests if r.url == llama.url]
        assert len(lreqs) == 2 and all(r.draft_n > 0 for r in lreqs)  # llama-server's timings, per request
        assert all(r.accepted_per_pos == () for r in lreqs)  # llama-server gives no per-request positions
        cols = {c.label: c for c in position_columns(snap)}
        assert set(cols) == {"llama", "vllm", "sglang"}
        lw = next(w for w in snap.session if w.url == llama.url)
        assert cols["llama"].rates == pytest.approx(lw.acceptance_by_pos) and len(lw.acceptance_by_pos) == 3
        assert lw.draft_tokens == sum(r.draft_n for r in lreqs)  # the counters include both requests
        assert "[llama-server]" in text and "[vllm]" in text and "[sglang]" in text
    finally:
        llama.stop()
        vllm.stop()
        sgl.stop()
