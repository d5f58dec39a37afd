"""Request mode: one streaming completion, timed on the client, as attach events.

- llama-server: ``POST /completion`` with ``"stream": true, "timings_per_token": true`` (every chunk
  then carries ``timings.draft_n`` / ``draft_n_accepted`` so far: llama.cpp tools/server
  server-context.cpp) and, when asked, ``"speculative.n_max"``.
- SGLang: its native ``POST /generate`` (``"text"``, ``"sampling_params"``, ``"stream": true``), whose chunks
  carry ``meta_info`` with the request's speculative figures and acceptance histogram (``sglang.py``); the
  chunk's ``text`` is the whole text so far (or, with ``--incremental-streaming-output``, the new part).
- Anything else (vLLM): OpenAI ``POST /v1/completions`` with ``"stream": true`` and
  ``stream_options.include_usage``; vLLM started with ``--per-request-spec-decode-metrics`` puts
  ``metrics.speculative_decoding`` (``num_draft_tokens``, ``num_accepted_draft_tokens``,
  ``num_spec_steps``, ``acceptance_histogram``) in the last chunk.

A per-request histogram (vLLM, SGLang) gives the request's acceptance by draft position
(``RequestEnded.accepted_per_pos``).

``stream_completion(...)`` yields ``RequestStarted``, ``RequestChunk``... and always a final
``RequestEnded`` (a server that dies mid-stream, an HTTP error or a malformed stream end it with
reason "error" and one line); it never raises for network trouble.
"""

from __future__ import annotations

import http.client
import json
import math
import threading
import time
import urllib.error
import urllib.request
from typing import Any, Callable, Iterator

from ..contract.events import (
    KIND_LLAMA_SERVER,
    KIND_SGLANG,
    REQ_ERROR,
    REQ_LENGTH,
    REQ_STOP,
    REQ_STOPPED,
    RequestChunk,
    RequestEnded,
    RequestStarted,
)
from .dialect import count_list, positions_from_histogram
from .scraper import USER_AGENT, Deadline, FetchError, base_url, check_scheme, describe_error, http_get, open_url
from .sglang import request_spec

API_COMPLETION = "completion"
API_OPENAI = "openai"
API_SGLANG = "generate"  # SGLang's native /generate


def openai_model(root: str, timeout: float) -> str:
    """The first model id of /v1/models ("" when the server does not say)."""
    try:
        text, _, _ = http_get(root + "/v1/models", timeout)
        return str(json.loads(text)["data"][0]["id"])
    except (FetchError, ValueError, KeyError, IndexError, TypeError):
        return ""


def build_request(kind: str, prompt: str, n_predict: int, draft_max: int, model: str = "") -> tuple[str, str, dict]:
    """(api, path, JSON body) for a greedy streaming completion."""
    if kind == KIND_LLAMA_SERVER:
        body: dict[str, Any] = {
            "prompt": prompt,
            "n_predict": n_predict,
            "stream": True,
            "timings_per_token": True,
            "temperature": 0.0,
            "cache_prompt": False,  # every request measured the same way
        }
        if draft_max >= 0:
            body["speculative.n_max"] = draft_max
        return API_COMPLETION, "/completion", body
    if kind == KIND_SGLANG:
        body = {"text": prompt, "stream": True, "sampling_params": {"max_new_tokens": n_predict, "temperature": 0.0}}
        return API_SGLANG, "/generate", body
    body = {
        "prompt": prompt,
        "max_tokens": n_predict,
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0.0,
    }
    if model:
        body["model"] = model
    return API_OPENAI, "/v1/completions", body


# Limits on a streamed completion (docs/untrusted-input.md): past one, the request ends with that one line.
MAX_SSE_LINE_BYTES = 1 << 20  # one line of the event stream (a chunk's JSON)
MAX_STREAM_BYTES = 256 << 20  # the whole stream
MAX_STREAM_EVENTS = 1_000_000  # data: payloads


def _sse_data(resp: Any) -> Iterator[str]:
    """The ``data:`` payloads of a server-sent event stream, one per event, within the limits above."""
    data: list[str] = []
    total = events = 0
    while True:
        raw = resp.readline(MAX_SSE_LINE_BYTES + 1)
        if len(raw) > MAX_SSE_LINE_BYTES:
            raise StreamError(f"a stream line longer than {MAX_SSE_LINE_BYTES >> 20} MiB: not a completion stream")
        total += len(raw)
        if total > MAX_STREAM_BYTES:
            raise StreamError(f"a stream longer than {MAX_STREAM_BYTES >> 20} MiB: not a completion stream")
        if not raw:
            if data:
                yield "\n".join(data)
            return
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not line:
            if data:
                events += 1
                if events > MAX_STREAM_EVENTS:
                    raise StreamError(f"more than {MAX_STREAM_EVENTS} events in one stream")
                yield "\n".join(data)
                data = []
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())
        elif line.startswith("error:"):  # llama-server's way of failing mid-stream
            yield json.dumps({"error": line[6:].strip()})


CLOSED_EARLY = "the server closed the stream before the end of the completion"
NOT_THE_API = "is the URL the server's API, not a web page?"


class StreamError(Exception):
    """A streamed chunk that is not JSON, or the server's own error object: the request's one-line error."""


class JsonStream:
    """The JSON objects of a streamed completion (server-sent events: OpenAI's and llama-server's), in order,
    up to ``data: [DONE]`` (``done`` is then True) or the end of the stream. A payload that is not JSON, or
    one that carries the server's ``error`` (also llama-server's ``error:`` line), raises StreamError with
    the one-line message; a JSON value that is not an object is passed over. Request mode
    (``stream_completion``) and ``spectui bench --url`` (``spectui.bench.server``) read their streams so."""

    def __init__(self, resp: Any) -> None:
        self.resp = resp
        self.done = False

    def __iter__(self) -> Iterator[dict]:
        for payload in _sse_data(self.resp):
            if payload == "[DONE]":
                self.done = True
                return
            try:
                msg = json.loads(payload)
            except ValueError:
                raise StreamError(f"malformed stream chunk: {payload[:80]!r}") from None
            if not isinstance(msg, dict):
                continue
            if "error" in msg:
                err = msg["error"]
                text = err.get("message", str(err)) if isinstance(err, dict) else str(err)
                raise StreamError(f"server error: {text[:160]}")
            yield msg


class _Received:
    """What one streamed completion has received so far: the tokens counted, the server's last counts
    (``timings``, ``metrics``, ``usage``, ``tokens_predicted``, SGLang's ``meta_info``), how it finished; the
    events made of them."""

    def __init__(self, api: str, clock: Callable[[], float], t0: float) -> None:
        self.api = api
        self.clock = clock
        self.t0 = t0
        self.n_tokens = 0
        self.last: dict[str, Any] = {}
        self.finish = ""
        self.sglang = _SGLangText()

    def ended(self, reason: str, error: str = "") -> RequestEnded:
        """The request's RequestEnded, with the server's own counts where it sent them."""
        last = self.last
        if self.api == API_SGLANG:
            return _sglang_ended(last.get("meta_info"), self.clock() - self.t0, reason, error, self.n_tokens)
        timings = last.get("timings") or {}
        spec = (last.get("metrics") or {}).get("speculative_decoding") or {}
        spec = spec if isinstance(spec, dict) else {}
        usage = last.get("usage") or {}
        server_n = last.get("tokens_predicted", usage.get("completion_tokens", -1))
        hist = count_list(spec.get("acceptance_histogram"))
        steps = server_int(spec.get("num_spec_steps", -1))
        return RequestEnded(
            t=self.clock() - self.t0,
            reason=reason,
            error=error,
            n_tokens=server_n if isinstance(server_n, int) and server_n >= 0 and not error else self.n_tokens,
            draft_n=server_int(timings.get("draft_n", spec.get("num_draft_tokens", -1))),
            draft_n_accepted=server_int(timings.get("draft_n_accepted", spec.get("num_accepted_draft_tokens", -1))),
            spec_steps=steps,
            accepted_per_pos=positions_from_histogram(hist) if hist and sum(hist) == steps else (),
            prompt_n=server_int(timings.get("prompt_n", usage.get("prompt_tokens", -1))),
            prompt_ms=server_float(timings.get("prompt_ms", -1.0)),
            predicted_ms=server_float(timings.get("predicted_ms", -1.0)),
            predicted_n=server_int(timings.get("predicted_n", -1)),
        )

    def take(self, msg: dict) -> tuple[RequestChunk | None, bool]:
        """One JSON chunk of the stream: its RequestChunk (None when it brings no token) and whether it is the
        completion's last (llama-server's ``stop``)."""
        now = self.clock() - self.t0
        text, n, finish_now = self.sglang.chunk(msg) if self.api == API_SGLANG else _chunk_text(msg, self.api)
        predicted = msg.get("tokens_predicted")
        if isinstance(predicted, int) and self.api == API_COMPLETION:
            # llama-server holds back tokens (an incomplete UTF-8 character, a possible stop string) and sends
            # them in one later chunk whose `tokens` lists only the last: its running count tokens_predicted is
            # what says how many arrived.
            n = max(predicted - self.n_tokens, 0)
        self.finish = finish_now or self.finish
        self.last.update({k: v for k, v in msg.items()
                          if k in ("timings", "metrics", "usage", "tokens_predicted", "meta_info")})
        chunk = None
        if text or n:
            self.n_tokens += n
            timings = msg.get("timings") or {}
            chunk = RequestChunk(
                t=now,
                text=text,
                n_tokens=n,
                draft_n=server_int(timings.get("draft_n", -1)) if timings else -1,
                draft_n_accepted=server_int(timings.get("draft_n_accepted", -1)) if timings else -1,
            )
        if self.api == API_COMPLETION and msg.get("stop"):
            self.finish = REQ_LENGTH if msg.get("stop_type") == "limit" else REQ_STOP
            return chunk, True
        return chunk, False


Events = Iterator[RequestStarted | RequestChunk | RequestEnded]


def stream_completion(
    url: str,
    kind: str,
    prompt: str,
    n_predict: int,
    *,
    draft_max: int = -1,
    timeout: float = 600.0,  # the whole request, its stream included (not per read)
    clock: Callable[[], float] = time.monotonic,
    t0: float | None = None,
    stop: threading.Event | None = None,
) -> Events:
    """Send one streaming completion and yield its events (``t`` in seconds since ``t0``).

    Args:
        url: the server (checked: ``attach.urls``); its API root is ``base_url(url)``.
        kind: what the server is (``KIND_LLAMA_SERVER``: its /completion; ``KIND_SGLANG``: its /generate;
            else OpenAI's /v1/completions).
        prompt: the prompt, sent as it is (greedy: temperature 0).
        n_predict: tokens to generate at most.
        draft_max: llama-server's ``speculative.n_max`` for this request (-1: not sent).
        timeout: seconds the whole request and its stream may take.
        clock: the clock the events' times are read on.
        t0: the time ``t`` counts from (default: now).
        stop: set it to end the request early (its RequestEnded then says "stopped").

    Returns:
        An iterator of RequestStarted, RequestChunk... and always a last RequestEnded; network trouble, an HTTP
        error or a malformed stream end it with reason "error" and one line (it never raises for them).
    """
    t0 = clock() if t0 is None else t0
    root = base_url(url)
    model = openai_model(root, min(timeout, 5.0)) if kind not in (KIND_LLAMA_SERVER, KIND_SGLANG) else ""
    api, path, body = build_request(kind, prompt, n_predict, draft_max, model)
    yield RequestStarted(url=url, t=clock() - t0, api=api, prompt=prompt, n_predict=n_predict, draft_max=draft_max)
    got = _Received(api, clock, t0)
    req = urllib.request.Request(  # noqa: S310 - http(s) checked
        root + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Accept": "text/event-stream", "User-Agent": USER_AGENT},
    )
    try:
        check_scheme(root)
    except FetchError as exc:
        yield got.ended(REQ_ERROR, str(exc))
        return
    deadline = Deadline(timeout)  # the whole request and its stream, not per read
    deadline.__enter__()
    try:
        yield from read_stream(req, deadline, got, timeout, stop)
    finally:
        deadline.cancel()


def read_stream(req: urllib.request.Request, deadline: Deadline, got, timeout: float,
                stop: threading.Event | None = None, where: str = "") -> Events:
    """The request sent and its stream read into events, RequestEnded last: request mode's
    (``stream_completion``) and ``spectui bench --url``'s (``bench.server.chat_request``). ``got`` turns each
    JSON chunk into its RequestChunk (``take(msg)``: the chunk or None, and whether it was the last) and says
    how the request ended (``ended(reason, error)``, ``finish``); ``where`` starts each error line (the URL a
    bench row names)."""
    def why(message: str) -> str:
        return deadline.why(where + message, where)

    try:
        resp = open_url(req, deadline)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        yield got.ended(REQ_ERROR, where + (deadline.message() if deadline.fired else describe_error(exc, timeout)))
        return
    except http.client.HTTPException as exc:
        yield got.ended(REQ_ERROR, where + (deadline.message() if deadline.fired
                                            else f"bad HTTP response: {type(exc).__name__}"))
        return
    ctype = (resp.headers.get("Content-Type") or "").lower()
    if "html" in ctype:  # a web UI, not the API: say so, not "the server closed the stream"
        resp.close()
        yield got.ended(REQ_ERROR, f"{where}not a completion stream: got an HTML page ({NOT_THE_API})")
        return
    try:
        with resp:
            stream = JsonStream(resp)
            for msg in stream:
                if stop is not None and stop.is_set():
                    yield got.ended(REQ_STOPPED)
                    return
                chunk, last = got.take(msg)
                if chunk is not None:
                    yield chunk
                if last:
                    break
            if not (stream.done or got.finish):  # the stream ended without its last chunk: the server went away
                yield got.ended(REQ_ERROR, why(CLOSED_EARLY))
                return
    except StreamError as exc:
        yield got.ended(REQ_ERROR, why(str(exc)))
        return
    except (OSError, http.client.HTTPException) as exc:
        yield got.ended(REQ_ERROR, why(f"stream broken: {describe_error(exc, timeout)}"))
        return
    yield got.ended(REQ_LENGTH if got.finish == REQ_LENGTH else REQ_STOP)


def server_int(v: Any, default: int = -1) -> int:
    """A server's count as an int; anything else (NaN, Inf, a string, a negative) is ``default`` (absent)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        return default
    return int(v)


def server_float(v: Any, default: float = -1.0) -> float:
    """A server's amount (ms) as a float; anything else (NaN, Inf, a string, a negative) is ``default`` (absent)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        return default
    return float(v)


def _sglang_ended(meta: Any, t: float, reason: str, error: str, n_tokens: int) -> RequestEnded:
    """SGLang's last ``meta_info``: its completion tokens and the request's speculative figures."""
    meta = meta if isinstance(meta, dict) else {}
    spec = request_spec(meta)
    server_n = server_int(meta.get("completion_tokens", -1))
    return RequestEnded(
        t=t, reason=reason, error=error, n_tokens=server_n if server_n >= 0 and not error else n_tokens,
        draft_n=spec.drafted, draft_n_accepted=spec.accepted, spec_steps=spec.verify_steps,
        accepted_per_pos=spec.accepted_per_pos, prompt_n=server_int(meta.get("prompt_tokens", -1)),
    )


class _SGLangText:
    """SGLang's streamed ``/generate`` chunks -> new text: a chunk's ``text`` is the whole text so far (the
    default) or only the new part (``--incremental-streaming-output``); ``meta_info.completion_tokens`` counts
    the tokens so far, ``meta_info.finish_reason`` ends it."""

    def __init__(self) -> None:
        self.text = ""
        self.tokens = 0

    def chunk(self, msg: dict) -> tuple[str, int, str]:
        meta = msg.get("meta_info") if isinstance(msg.get("meta_info"), dict) else {}
        raw = msg.get("text", "")
        raw = raw if isinstance(raw, str) else ""
        new = raw[len(self.text):] if raw.startswith(self.text) else raw
        self.text = raw if raw.startswith(self.text) else self.text + raw
        done = server_int(meta.get("completion_tokens", -1))
        n = max(done - self.tokens, 0) if done >= 0 else (1 if new else 0)
        self.tokens = max(self.tokens, done)
        fr = meta.get("finish_reason")
        kind = fr.get("type", "") if isinstance(fr, dict) else (fr if isinstance(fr, str) else "")
        finish = REQ_LENGTH if kind == "length" else (REQ_STOP if kind else "")
        return new, n, finish


def _chunk_text(msg: dict, api: str) -> tuple[str, int, str]:
    """(text, tokens in this chunk, finish reason or "")."""
    if api == API_COMPLETION:
        text = msg.get("content", "") or ""
        tokens = msg.get("tokens")
        n = len(tokens) if isinstance(tokens, list) else (1 if text else 0)
        return text, n, ""
    choices = msg.get("choices") or []
    if not choices:
        return "", 0, ""
    c = choices[0]
    text = c.get("text", "") or ""
    fr = c.get("finish_reason") or ""
    finish = REQ_LENGTH if fr == "length" else (REQ_STOP if fr else "")
    return text, (1 if text else 0), finish
