"""``spectui bench --url URL [--url ...] [--baseline-url URL]``: the same prompts against a deployment.

Each prompt (each turn, the second after the server's own first answer) is one OpenAI chat completion,
``POST /v1/chat/completions`` with ``"stream": true``, ``max_tokens`` = -n, the temperature and seed asked,
one request at a time (``--concurrency N``: N in flight). The server applies its own chat template. Every
request is a stream of the attach face's events (``RequestStarted``, ``RequestChunk``..., ``RequestEnded``) and
becomes one row from what the server says:

- llama-server: the last chunk's ``timings`` (``draft_n``, ``draft_n_accepted``, ``predicted_n``,
  ``predicted_ms``, ``predicted_per_second``: the tokens/s it reports), and the request's ``/metrics`` delta
  (``llamacpp:spec_decode_num_drafts_total`` etc., scraped before and after the request, once the server has
  counted it) for the verify steps and the acceptance by position.
- vLLM: the ``/metrics`` delta of ``vllm:spec_decode_*`` per request (``attach.metrics`` /
  ``analysis.attach_stats.engine_window``), the tokens from ``usage``; tokens/s measured on the client (tokens
  after the first / time from the first to the last chunk).

The numbers of a row, as a ``StatsSnapshot`` (the same fields the engine's rows have): drafted and accepted
tokens, verify steps with a draft (``passes_drafted``, the /metrics ``num_drafts`` delta), acceptance by
position (vLLM's: accepted at position i / steps), decode tokens/s, TTFT (client: request sent -> first
content chunk), decode steps = decode tokens - accepted. With ``--concurrency`` > 1 the /metrics deltas mix
requests, so rows keep only the per-request ``timings`` (llama-server) and the report says so.

The baseline is ``--baseline-url`` (the same target without speculation); without it there is no speedup.
A request that fails (a server that died, an HTTP error) stops the bench: the rows done are kept and the
report says where it stopped (exit 1).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Iterator, Sequence

from ..analysis.attach_stats import OK, engine_window, sum_windows
from ..analysis.stats import PositionStat, StatsSnapshot
from ..attach.metrics import BadCounters
from ..attach.metrics import parse as parse_metrics
from ..attach.request import openai_model, read_stream, server_float, server_int
from ..attach.scraper import (
    USER_AGENT,
    Deadline,
    FetchError,
    abort_all,
    base_url,
    check_scheme,
    http_get,
)
from ..contract.errors import NeverAnswered, SpectuiError
from ..contract.events import (
    KIND_LLAMA_SERVER,
    REQ_ERROR,
    REQ_LENGTH,
    REQ_STOP,
    RequestChunk,
    RequestEnded,
    RequestStarted,
)
from ..engine.files.chat import chat_messages
from .aggregate import BenchRow
from .datasets import PromptSet
from .plan import BASELINE, BenchOptions, Setting, make_jobs, parse_temps
from .runner import BenchResult
from .timings import timing_problems, timings_note

SETTLE_S = 5.0  # how long to wait for llama-server to count a finished request in /metrics


@dataclass
class Deployment:
    url: str
    root: str
    kind: str  # KIND_LLAMA_SERVER, KIND_VLLM, ... or "" (no /metrics)
    model: str
    metrics: bool  # /metrics answers with Prometheus text
    problems: list = field(default_factory=list)  # impossible counters seen (named in the report's notes)
    timing_problems: list = field(default_factory=list)  # per request: what its timings had impossible


def probe_deployment(url: str, timeout: float) -> Deployment:
    """What answers at ``url``: its /metrics kind (if any) and model id. A bad URL is SpectuiError (exit 2); a
    server that does not answer (down, a certificate not trusted, an HTTP error) is NeverAnswered (exit 1, the
    line attach says)."""
    from ..attach.urls import check_url  # noqa: PLC0415

    try:
        check_url(url)  # "[::1", credentials, a bad port: one line before any request
    except SpectuiError as exc:
        raise SpectuiError(f"--url: {str(exc).removeprefix('attach: ')}") from None
    root = base_url(url)
    try:
        check_scheme(root)
    except FetchError as exc:
        raise SpectuiError(f"--url {url}: {exc}") from None
    kind, metrics, problems = "", False, []
    try:
        text, ctype, _ = http_get(root + "/metrics", min(timeout, 10.0))
        if "html" not in ctype.lower():
            kind = parse_metrics(text).kind
            metrics = True
    except BadCounters as exc:  # metrics all the same: each scrape is checked again (and named in the notes)
        kind, metrics, problems = exc.kind, True, [str(exc)]
    except (FetchError, ValueError):
        pass
    try:
        _, models_type, _ = http_get(root + "/v1/models", min(timeout, 10.0))
    except FetchError as exc:
        raise NeverAnswered(f"{url} never answered: {exc}") from None
    if "html" in models_type.lower():
        raise SpectuiError(f"--url {url}: no OpenAI API at {root}/v1/models (got an HTML page: a web UI?)")
    return Deployment(url, root, kind, openai_model(root, min(timeout, 10.0)), metrics, problems)


def scrape_counters(dep: Deployment, timeout: float):
    """The deployment's engines' counters now (None when /metrics does not answer)."""
    if not dep.metrics:
        return None
    try:
        text, _, _ = http_get(dep.root + "/metrics", timeout)
        return parse_metrics(text)
    except BadCounters as exc:  # accepted > drafted, a NaN count: named, its figures left out
        if str(exc) not in dep.problems:
            dep.problems.append(str(exc))
        return None
    except (FetchError, ValueError):
        return None


def counters_delta(dep: Deployment, before, after):
    """The summed window from ``before`` to ``after`` (analysis.attach_stats.engine_window), None when either is
    missing or another engine answers (not a delta)."""
    if before is None or after is None or before.kind != after.kind:
        return None
    prev = {e.engine: e for e in before.engines}
    wins = [engine_window(dep.url, after.kind, e, prev.get(e.engine), 1.0) for e in after.engines]
    return sum_windows(wins)


def chat_request(dep: Deployment, messages: list[dict], n_predict: int, temperature: float, seed: int,
                 timeout: float) -> Iterator[RequestStarted | RequestChunk | RequestEnded]:
    """One streaming chat completion as attach events (``t``: seconds since the request was sent).

    Args:
        dep: the deployment (``probe_deployment``: its root URL, kind and model).
        messages: the chat so far (``engine.files.chat.chat_messages``).
        timeout: seconds for the whole request and its stream, not per read (``--timeout``).

    Returns:
        RequestStarted, a RequestChunk per content chunk, then one RequestEnded: its reason is an error (one
        line naming the URL: HTTP status, a refused connection, a broken or early-closed stream, the
        deadline) or how the reply finished, with the server's own timings where it sends them.
    """
    t0 = time.monotonic()
    body = {"messages": messages, "max_tokens": n_predict, "stream": True, "temperature": temperature,
            "seed": seed, "stream_options": {"include_usage": True}}
    if dep.model:
        body["model"] = dep.model
    if dep.kind == KIND_LLAMA_SERVER:
        body["cache_prompt"] = False  # every request measured the same way
    yield RequestStarted(url=dep.url, t=0.0, api="chat", prompt=messages[-1]["content"], n_predict=n_predict)
    req = urllib.request.Request(  # noqa: S310 - http(s) checked in probe_deployment
        dep.root + "/v1/chat/completions", data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Accept": "text/event-stream", "User-Agent": USER_AGENT})
    deadline = Deadline(timeout)  # the whole request and its stream, not per read (--timeout)
    deadline.__enter__()
    try:
        yield from read_stream(req, deadline, _Reply(t0, dep.timing_problems), timeout, where=f"{dep.url}: ")
    finally:
        deadline.cancel()


class _Reply:
    """What one streamed chat reply has said so far: its last timings and usage, its content chunks, how it
    finished."""

    def __init__(self, t0: float, problems: list | None = None) -> None:
        self.t0 = t0
        self.problems = problems if problems is not None else []  # each request's impossible timings
        self.last: dict = {}
        self.n_chunks = 0
        self.finish = ""

    def ended(self, reason: str, error: str = "") -> RequestEnded:
        timings = self.last.get("timings")
        impossible = timing_problems(timings)
        self.problems.append(impossible)
        timings = {} if impossible else timings or {}  # an impossible figure: none of its timings believed
        usage = self.last.get("usage") if isinstance(self.last.get("usage"), dict) else {}
        n = usage.get("completion_tokens", timings.get("predicted_n", self.n_chunks))
        return RequestEnded(
            t=time.monotonic() - self.t0, reason=reason, error=error,
            n_tokens=int(n) if isinstance(n, int) else self.n_chunks,
            draft_n=server_int(timings.get("draft_n", -1)),
            draft_n_accepted=server_int(timings.get("draft_n_accepted", -1)),
            prompt_ms=server_float(timings.get("prompt_ms", -1.0)),
            predicted_ms=server_float(timings.get("predicted_ms", -1.0)),
            predicted_n=server_int(timings.get("predicted_n", -1)),
            prompt_n=server_int(usage.get("prompt_tokens", timings.get("prompt_n", -1))),
        )

    def take(self, msg: dict) -> tuple[RequestChunk | None, bool]:
        """One JSON chunk of the stream: its content as a RequestChunk (None when it has none); never the last
        (the stream's ``[DONE]`` ends it)."""
        self.last.update({k: v for k, v in msg.items() if k in ("timings", "usage")})
        texts = []
        for c in msg.get("choices") or []:
            text = (c.get("delta") or {}).get("content") or ""
            if text:
                texts.append(text)
            fr = c.get("finish_reason")
            if fr:
                self.finish = REQ_LENGTH if fr == "length" else REQ_STOP
        self.n_chunks += len(texts)
        chunk = RequestChunk(t=time.monotonic() - self.t0, text="".join(texts), n_tokens=len(texts)) if texts else None
        return chunk, False


def request_stats(events: Sequence, window=None) -> StatsSnapshot:
    """A request's events (and its /metrics window) as the statistics a row keeps."""
    chunks = [e for e in events if isinstance(e, RequestChunk)]
    end = next(e for e in events if isinstance(e, RequestEnded))
    n = end.n_tokens if end.n_tokens > 0 else len(chunks)
    ttft_ms = chunks[0].t * 1000.0 if chunks else None  # no token came: no time to first token
    if end.predicted_ms > 0 and end.predicted_n > 1:
        # llama-server: its own generation time (from the first token on) and count
        decode_ms = end.predicted_ms * (end.predicted_n - 1) / end.predicted_n
        decode_tokens = end.predicted_n - 1
    else:
        decode_ms = (chunks[-1].t - chunks[0].t) * 1000.0 if len(chunks) > 1 else 0.0
        decode_tokens = max(n - 1, 0)
    drafted = accepted = steps = 0
    per_pos: tuple[PositionStat, ...] = ()
    if window is not None and window.status == OK:
        drafted, accepted, steps = int(window.draft_tokens), int(window.accepted), int(window.drafts)
        per_pos = tuple(PositionStat(i + 1, steps, int(a)) for i, a in enumerate(window.accepted_per_pos))
    elif end.draft_n >= 0:
        drafted, accepted = end.draft_n, max(end.draft_n_accepted, 0)
    n_passes = max(decode_tokens - accepted, 0)
    return StatsSnapshot(
        n_passes=n_passes, n_emitted=n, n_drafted=drafted, n_accepted=accepted, passes_drafted=steps,
        acceptance_rate=accepted / drafted if drafted else 0.0,
        mean_acceptance_length=1.0 + accepted / steps if steps else 0.0,
        tokens_per_pass=decode_tokens / n_passes if n_passes else 0.0,
        acceptance_by_position=per_pos, ttft_ms=ttft_ms,
        tokens_per_second=1000.0 * decode_tokens / decode_ms if decode_ms > 0 else 0.0,
        decode_wall_ms=decode_ms, stop_reason=end.reason,
    )


def server_bench(ps: PromptSet, o: BenchOptions, *, concurrency: int, on_job=None) -> tuple[BenchResult, dict, bool]:
    """Run the prompts against the deployments.

    Args:
        ps: the prompt set; each prompt's turns go as chat messages (the deployment's own chat template).
        o: the bench's options: ``urls``, the deployments with speculation (one setting each); ``baseline_url``,
            the same target without; ``temp``, comma-separated temperatures; -n, the seed, the repeats, the
            turns, the system message, the timeout.
        concurrency: requests in flight (1: /metrics deltas per request).
        on_job: ``(index, job, n_jobs, prompts)`` as each job starts (progress).

    Returns:
        (the result, its params for the exports, whether a baseline ran).

    Raises:
        SpectuiError: a bad option or a URL that is no OpenAI-compatible deployment, before any request.
    """
    if concurrency < 1:
        raise SpectuiError(f"--concurrency must be at least 1, not {concurrency}")
    if o.chat is False:
        raise SpectuiError("--no-chat is for local models: a deployment applies its own chat template")
    urls, baseline_url, timeout_s, turns, system = list(o.urls), o.baseline_url, o.timeout_s, o.turns, o.system
    temps = parse_temps(o.temp)
    deps = {u: probe_deployment(u, timeout_s) for u in urls}
    base_dep = probe_deployment(baseline_url, timeout_s) if baseline_url else None
    settings: list[Setting] = []
    for t in temps:
        if base_dep is not None:
            settings.append(Setting(BASELINE, 0, t, name=base_dep.url))
        settings.extend(Setting("server", 0, t, name=u) for u in urls)
    dep_of = {s: (base_dep if s.is_baseline else deps[s.name]) for s in settings}
    jobs = make_jobs(len(ps.prompts), settings, o.repeat)
    n_turns = (lambda p: len(p.turns)) if turns == "all" else (lambda p: 1)

    def one_job(ji: int):
        job = jobs[ji]
        p = ps.prompts[job.prompt_index]
        return _server_job(dep_of[job.setting], p, job, n_turns(p), o, metrics=concurrency == 1)

    res = _run_jobs(jobs, ps, one_job, concurrency, on_job)
    notes = _server_notes(deps, base_dep, concurrency)
    kinds = {u: (d.kind or "no /metrics") for u, d in deps.items()}
    params = {"mode": "server", "urls": urls, "baseline_url": baseline_url, "kinds": kinds, "prompts": ps.source,
              "format": ps.format, "n_prompts": len(ps.prompts), "categories": ps.categories, "turns": turns,
              "system": system, "n_predict": o.n_predict, "temperatures": temps, "seed": o.seed, "repeat": o.repeat,
              "concurrency": concurrency, "notes": notes}
    return res, params, base_dep is not None


def _server_job(dep: Deployment, p, job, n_turns: int, o: BenchOptions, *, metrics: bool) -> tuple[list[BenchRow], str]:
    """One job's turns against its deployment: (rows, "" or the first request's error). ``metrics``: one
    request at a time, so the /metrics delta around each request is its own."""
    s = job.setting
    rows, answers = [], []
    for t in range(n_turns):
        before = scrape_counters(dep, 10.0) if metrics else None
        events = list(chat_request(dep, chat_messages(p.turns[: t + 1], answers, o.system), o.n_predict,
                                   s.temperature, o.seed, o.timeout_s))
        end = events[-1]
        if end.reason == REQ_ERROR:
            return rows, end.error
        window = None
        if before is not None:
            after = _settled(dep, before, end)
            window = counters_delta(dep, before, after)
        text = "".join(e.text for e in events if isinstance(e, RequestChunk))
        rows.append(BenchRow(p, t, s, job.repeat, request_stats(events, window), text=text, source=dep.url))
        answers.append(text)
    return rows, ""


def _run_jobs(jobs, ps: PromptSet, one_job, concurrency: int, on_job) -> BenchResult:
    """Every job, one at a time (stopping at the first failed request) or ``concurrency`` in flight; a signal
    ends the requests under way and the result says where it stopped."""
    res = BenchResult(jobs_total=len(jobs))
    try:
        if concurrency == 1:
            for ji in range(len(jobs)):
                if on_job is not None:
                    on_job(ji, jobs[ji], len(jobs), ps.prompts)
                rows, err = one_job(ji)
                res.rows.extend(rows)
                if err:
                    res.status, res.stopped_at = f"failed: {err}", _where(jobs, ps, ji)
                    break
                res.jobs_done += 1
        else:
            with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="spectui-bench") as pool:
                try:
                    for ji, (rows, err) in enumerate(pool.map(one_job, range(len(jobs)))):
                        if on_job is not None:
                            on_job(ji, jobs[ji], len(jobs), ps.prompts)
                        res.rows.extend(rows)
                        if err and not res.status.startswith("failed"):
                            res.status, res.stopped_at = f"failed: {err}", _where(jobs, ps, ji)
                        if not err:
                            res.jobs_done += 1
                except KeyboardInterrupt:  # a signal: end the requests under way, or the pool's shutdown
                    abort_all()            # waits for each server (up to --timeout) before the bench stops
                    raise
    except KeyboardInterrupt:
        res.status, res.stopped_at = "interrupted", _where(jobs, ps, res.jobs_done)
    return res


def _server_notes(deps: dict, base_dep: Deployment | None, concurrency: int) -> list[str]:
    """What the report says about what a server bench could not measure."""
    notes = []
    if base_dep is None:
        notes.append("No baseline: give --baseline-url (the same target served without speculation) for tokens/s "
                     "of the target alone and a speedup; none is estimated here.")
    if concurrency > 1:
        notes.append(f"--concurrency {concurrency}: /metrics deltas mix requests, so acceptance comes from each "
                     "request's own timings (llama-server) and verify steps are not attributed.")
    for dep in [*deps.values(), *([base_dep] if base_dep is not None else [])]:
        for problem in dep.problems:
            notes.append(f"{dep.url}: /metrics: {problem}: the server-side speculative figures are left out")
        if timings_note(dep.url, dep.timing_problems):
            notes.append(timings_note(dep.url, dep.timing_problems))
    return notes


def _settled(dep: Deployment, before, end: RequestEnded):
    """/metrics once this request is counted: llama-server adds a request when its slot is released, so poll
    (bounded) until the generated-token counter grew by the request's tokens."""
    deadline = time.monotonic() + SETTLE_S
    want = max(end.n_tokens, 1)
    gen0 = sum(e.generated_tokens for e in before.engines if e.generated_tokens >= 0)
    while True:
        after = scrape_counters(dep, 10.0)
        if after is None:
            return None
        gen = sum(e.generated_tokens for e in after.engines if e.generated_tokens >= 0)
        if gen - gen0 >= want or time.monotonic() > deadline:
            return after
        time.sleep(0.05)


def _where(jobs, ps: PromptSet, ji: int) -> str:
    if ji >= len(jobs):
        return "the end"
    job = jobs[ji]
    p = ps.prompts[job.prompt_index]
    return (f"job {ji + 1} of {len(jobs)}: prompt {job.prompt_index + 1} of {len(ps.prompts)} ({p.category} "
            f"q{p.question_id}) on {job.setting.label}, temp {job.setting.temperature:g}, repeat {job.repeat + 1}")
