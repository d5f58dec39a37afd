"""An endpoint that speaks SGLang's wire format, for the tests (SGLang cannot be installed on a CPU-only machine,
so no real SGLang server runs here): /metrics with the gauges its SchedulerMetricsCollector declares
(``sglang:spec_accept_length``, ``sglang:spec_accept_rate``, labels as collector.py sets them, written by
prometheus_client as SGLang's are) and the tokenizer's ``sglang:generation_tokens_total``, and a streaming
``POST /generate`` whose chunks carry SGLang's ``meta_info`` (tokenizer_manager.py: ``spec_verify_ct``, the
accepted / proposed drafts, ``spec_accept_histogram``; the chunk's ``text`` is the whole text so far).

Each request answers the next of ``answers``: (text tokens, histogram), the histogram's entry n the verify steps
that accepted exactly n of the ``k`` drafted tokens. The gauges follow what it served.
"""

from __future__ import annotations

import http.server
import json
import threading

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

HOST = "127.0.0.1"
LABELS = ["model_name", "engine_type", "tp_rank", "pp_rank", "moe_ep_rank"]


class SGLangFormatServer:
    def __init__(self, answers: list[tuple[list[str], list[int]]], k: int = 3) -> None:
        self.answers = list(answers)
        self.k = k
        self.served = 0
        self.lock = threading.Lock()
        reg = CollectorRegistry()
        self.reg = reg
        self.length = Gauge("sglang:spec_accept_length", "The average acceptance length of speculative decoding.",
                            LABELS, registry=reg, multiprocess_mode="mostrecent")
        self.rate = Gauge("sglang:spec_accept_rate", "The average acceptance rate of speculative decoding "
                          "(`accepted tokens / total draft tokens` in batch).", LABELS, registry=reg,
                          multiprocess_mode="mostrecent")
        self.gen = Counter("sglang:generation_tokens", "Number of generation tokens processed.", ["model_name"],
                           registry=reg)
        lv = ["tiny", "unified", "0", "0", "0"]
        self.length.labels(*lv).set(0.0)
        self.rate.labels(*lv).set(0.0)
        self.gen.labels("tiny").inc(0)
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):  # noqa: N802
                if self.path != "/metrics":
                    self.send_error(404)
                    return
                body = generate_latest(server.reg)
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):  # noqa: N802
                n = int(self.headers.get("Content-Length") or 0)
                json.loads(self.rfile.read(n) or b"{}")
                if self.path != "/generate":
                    self.send_error(404)
                    return
                with server.lock:
                    words, hist = server.answers[server.served % len(server.answers)]
                    server.served += 1
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                steps = sum(hist)
                accepted = sum(i * c for i, c in enumerate(hist))
                text = ""
                for i, w in enumerate(words):
                    text += w
                    last = i == len(words) - 1
                    meta = {"id": "r", "prompt_tokens": 7, "completion_tokens": i + 1,
                            "finish_reason": {"type": "length", "length": len(words)} if last else None}
                    if last:  # SGLang's spec figures for the request (tokenizer_manager.py)
                        meta.update(spec_verify_ct=steps, spec_num_correct_drafts=accepted,
                                    spec_num_proposed_drafts=steps * server.k, spec_accepted_drafts=accepted,
                                    spec_proposed_drafts=steps * server.k,
                                    spec_accept_rate=accepted / (steps * server.k),
                                    spec_accept_length=len(words) / steps, spec_correct_drafts_histogram=hist,
                                    spec_accept_histogram=hist)
                    self.wfile.write(b"data: " + json.dumps({"text": text, "meta_info": meta}).encode() + b"\n\n")
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                lv = ["tiny", "unified", "0", "0", "0"]
                server.length.labels(*lv).set(1 + accepted / steps)
                server.rate.labels(*lv).set(accepted / (steps * server.k))
                server.gen.labels("tiny").inc(len(words))

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer((HOST, 0), Handler)
        self.url = f"http://{HOST}:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
