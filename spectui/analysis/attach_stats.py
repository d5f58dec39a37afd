"""Statistics of an attach session: counter deltas between scrapes -> what the faces show.

``AttachStats().update(event)`` per event; ``.snapshot()`` gives a frozen ``AttachSnapshot``. Every
number attach prints (headless line, JSON, later the TUI) comes from here.

Definitions (vLLM's, vllm/v1/spec_decode/metrics.py; llama-server's log line is the same):
- acceptance by position i = delta accepted_per_pos[i] / delta num_drafts
- acceptance rate = delta accepted / delta draft tokens
- mean acceptance length = 1 + delta accepted / delta drafts (counts the target's own token)
- drafted / accepted tokens/s = delta draft tokens / dt, delta accepted / dt (dt between the scrapes)
- TTFT / ITL p50 and p95 from the histogram bucket deltas over the window, with Prometheus
  ``histogram_quantile``'s rule: rank = q * observations, the first bucket whose cumulative count
  reaches the rank, linear interpolation inside it (lower edge 0 for the first bucket); a rank in the
  +Inf bucket gives the largest finite bound.

Two windows per engine: the last interval (between consecutive scrapes) and the whole session (since
the baseline). Any counter going backwards, or a new server start time, is a reset: that scrape
becomes the new baseline and the window says "reset" instead of showing negative rates.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field, replace
from typing import Any

from ..contract.events import (
    AttachStarted,
    EngineCounters,
    Histogram,
    MetricsScraped,
    RequestChunk,
    RequestEnded,
    RequestStarted,
)
from .quantiles import interpolated_quantile

# Status of one engine's window.
OK = "ok"  # drafts happened in the window
IDLE = "idle"  # speculation on, nothing drafted in the window (no finished request, for llama-server)
BASELINE = "baseline"  # first scrape of this engine: nothing to compare yet
RESET = "reset"  # a counter went backwards, the server restarted, another engine answers: new baseline
NO_SPEC = "no speculation"  # the server publishes no speculative decoding counters / says it is off
ERROR = "error"  # the scrape failed (Window.error says why)


def histogram_quantile(q: float, h: Histogram | None) -> float | None:
    """Prometheus' histogram_quantile on one (delta) histogram; None without observations."""
    if h is None or h.count <= 0:
        return None
    rank = q * h.count
    lower, below = 0.0, 0.0
    for b in h.buckets:
        if b.count >= rank:
            if b.le <= 0:
                return b.le
            return lower + (b.le - lower) * (rank - below) / (b.count - below)
        lower, below = b.le, b.count
    return h.buckets[-1].le if h.buckets else None  # rank in the +Inf bucket


def histogram_delta(cur: Histogram | None, prev: Histogram | None) -> Histogram | None:
    if cur is None:
        return None
    if prev is None:
        return cur
    before = {b.le: b.count for b in prev.buckets}
    buckets = tuple(type(b)(b.le, b.count - before.get(b.le, 0.0)) for b in cur.buckets)
    return Histogram(buckets, cur.count - prev.count, cur.sum - prev.sum)


@dataclass(frozen=True)
class Window:
    """One engine (or the sum over engines) between two scrapes."""

    url: str
    engine: str = ""  # vLLM engine label; "*" for the sum over all engines
    kind: str = ""
    status: str = BASELINE
    error: str = ""
    dt: float = 0.0  # seconds between the two scrapes
    drafts: float = 0.0
    draft_tokens: float = 0.0
    accepted: float = 0.0
    accepted_per_pos: tuple[float, ...] = ()
    acceptance_by_pos: tuple[float, ...] = ()
    acceptance_rate: float | None = None
    mean_acceptance_length: float | None = None
    drafted_tps: float | None = None
    accepted_tps: float | None = None
    generated: float | None = None  # tokens generated in the window (all requests)
    generated_tps: float | None = None
    ttft_p50: float | None = None  # seconds
    ttft_p95: float | None = None
    ttft_n: float = 0.0  # observations in the window
    itl_p50: float | None = None
    itl_p95: float | None = None
    itl_n: float = 0.0
    accept_length: float | None = None  # SGLang gauge (current value, not a delta)
    accept_rate: float | None = None  # SGLang gauge (current value, not a delta)
    gauges_only: bool = False  # the engine publishes gauges, no counters (SGLang): the rates are its gauges'
    drafts_derived: bool = False
    ttft_hist: Histogram | None = None  # the window's bucket deltas (what the quantiles come from)
    itl_hist: Histogram | None = None

    @property
    def label(self) -> str:
        return self.url + (f" engine={self.engine}" if self.engine not in ("", "*") else "")

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k not in ("ttft_hist", "itl_hist")}
        d["accepted_per_pos"] = list(self.accepted_per_pos)
        d["acceptance_by_pos"] = list(self.acceptance_by_pos)
        return d


def _counters_back(cur: EngineCounters, prev: EngineCounters) -> bool:
    pairs = [
        (cur.num_drafts, prev.num_drafts),
        (cur.num_draft_tokens, prev.num_draft_tokens),
        (cur.num_accepted_tokens, prev.num_accepted_tokens),
        (cur.generated_tokens, prev.generated_tokens),
    ]
    before = {p.position: p.accepted for p in prev.accepted_per_pos}
    pairs += [(p.accepted, before.get(p.position, 0.0)) for p in cur.accepted_per_pos]
    for hc, hp in ((cur.ttft, prev.ttft), (cur.itl, prev.itl)):
        if hc is not None and hp is not None:
            pairs.append((hc.count, hp.count))
    return any(c < p for c, p in pairs if c >= 0 and p >= 0)


def engine_window(
    url: str, kind: str, cur: EngineCounters, prev: EngineCounters | None, dt: float, speculation: str = ""
) -> Window:
    """The window from ``prev`` to ``cur`` (prev None: a baseline)."""
    spec_off = not cur.speculation or speculation == "none"
    accept_length = cur.accept_length if cur.accept_length >= 0 else None
    accept_rate = cur.accept_rate if cur.accept_rate >= 0 else None
    gauges_only = cur.speculation and cur.num_draft_tokens < 0 and cur.num_accepted_tokens < 0
    if prev is None:
        return Window(url, cur.engine, kind, NO_SPEC if spec_off else BASELINE, accept_length=accept_length,
                      accept_rate=accept_rate, gauges_only=gauges_only)
    ttft = histogram_delta(cur.ttft, prev.ttft)
    itl = histogram_delta(cur.itl, prev.itl)
    generated = None
    if min(cur.generated_tokens, prev.generated_tokens) >= 0:
        generated = cur.generated_tokens - prev.generated_tokens
    common = dict(
        dt=dt,
        generated=generated,
        generated_tps=generated / dt if generated is not None and dt > 0 else None,
        ttft_p50=histogram_quantile(0.5, ttft),
        ttft_p95=histogram_quantile(0.95, ttft),
        ttft_n=ttft.count if ttft else 0.0,
        itl_p50=histogram_quantile(0.5, itl),
        itl_p95=histogram_quantile(0.95, itl),
        itl_n=itl.count if itl else 0.0,
        accept_length=accept_length,
        accept_rate=accept_rate,
        gauges_only=gauges_only,
        drafts_derived=cur.drafts_derived,
        ttft_hist=ttft,
        itl_hist=itl,
    )
    if spec_off:
        return Window(url, cur.engine, kind, NO_SPEC, **common)
    if gauges_only:  # SGLang: its gauges are the window (the last batches' figures, set by the server)
        reported = (accept_length or 0.0) > 0 or (accept_rate or 0.0) > 0
        return Window(url, cur.engine, kind, OK if reported else IDLE, acceptance_rate=accept_rate,
                      mean_acceptance_length=accept_length if reported else None, **common)
    drafts = max(cur.num_drafts - prev.num_drafts, 0.0) if min(cur.num_drafts, prev.num_drafts) >= 0 else 0.0
    draft_tokens = max(cur.num_draft_tokens - prev.num_draft_tokens, 0.0) if cur.num_draft_tokens >= 0 else 0.0
    accepted = max(cur.num_accepted_tokens - prev.num_accepted_tokens, 0.0) if cur.num_accepted_tokens >= 0 else 0.0
    before = {p.position: p.accepted for p in prev.accepted_per_pos}
    per_pos = tuple(p.accepted - before.get(p.position, 0.0) for p in cur.accepted_per_pos)
    return Window(
        url,
        cur.engine,
        kind,
        OK if drafts > 0 or draft_tokens > 0 else IDLE,
        drafts=drafts,
        draft_tokens=draft_tokens,
        accepted=accepted,
        accepted_per_pos=per_pos,
        **_rates(drafts, draft_tokens, accepted, per_pos, dt),
        **common,
    )


def _rates(drafts: float, draft_tokens: float, accepted: float, per_pos: tuple[float, ...], dt: float) -> dict:
    return dict(
        acceptance_by_pos=tuple(c / drafts for c in per_pos) if drafts > 0 else (),
        acceptance_rate=accepted / draft_tokens if draft_tokens > 0 else None,
        mean_acceptance_length=1.0 + accepted / drafts if drafts > 0 else None,
        drafted_tps=draft_tokens / dt if dt > 0 else None,
        accepted_tps=accepted / dt if dt > 0 else None,
    )


def histogram_sum(hists: list[Histogram | None]) -> Histogram | None:
    """Bucket-wise sum of histograms with the same bounds (engines of one deployment); None otherwise."""
    hs = [h for h in hists if h is not None]
    if not hs or any(tuple(b.le for b in h.buckets) != tuple(b.le for b in hs[0].buckets) for h in hs):
        return None
    buckets = tuple(type(b)(b.le, sum(h.buckets[i].count for h in hs)) for i, b in enumerate(hs[0].buckets))
    return Histogram(buckets, sum(h.count for h in hs), sum(h.sum for h in hs))


def sum_windows(windows: list[Window]) -> Window:
    """All engines that had a comparable window (ok / idle / no speculation), summed; rates recomputed
    from the sums, quantiles from the summed bucket deltas (when the engines share bucket bounds)."""
    lat = [w for w in windows if w.status in (OK, IDLE, NO_SPEC)]
    ttft = histogram_sum([w.ttft_hist for w in lat])
    itl = histogram_sum([w.itl_hist for w in lat])
    latency = dict(
        ttft_p50=histogram_quantile(0.5, ttft), ttft_p95=histogram_quantile(0.95, ttft),
        ttft_n=ttft.count if ttft else 0.0, ttft_hist=ttft,
        itl_p50=histogram_quantile(0.5, itl), itl_p95=histogram_quantile(0.95, itl),
        itl_n=itl.count if itl else 0.0, itl_hist=itl,
    )
    parts = [w for w in windows if w.status in (OK, IDLE)]
    if not parts:
        statuses = {w.status for w in windows}
        status = statuses.pop() if len(statuses) == 1 else BASELINE
        return Window("*", "*", "", status, error="no engine answered" if status == ERROR else "", **latency)
    drafts = sum(w.drafts for w in parts)
    draft_tokens = sum(w.draft_tokens for w in parts)
    accepted = sum(w.accepted for w in parts)
    n_pos = max(len(w.accepted_per_pos) for w in parts)
    per_pos = tuple(sum(w.accepted_per_pos[i] for w in parts if i < len(w.accepted_per_pos)) for i in range(n_pos))
    dt = max(w.dt for w in parts)
    gen = [w.generated for w in parts if w.generated is not None]
    return Window(
        "*",
        "*",
        "",
        OK if drafts > 0 or draft_tokens > 0 else IDLE,
        dt=dt,
        drafts=drafts,
        draft_tokens=draft_tokens,
        accepted=accepted,
        accepted_per_pos=per_pos,
        generated=sum(gen) if gen else None,
        generated_tps=sum(gen) / dt if gen and dt > 0 else None,
        **_rates(drafts, draft_tokens, accepted, per_pos, dt),
        **latency,
    )


@dataclass
class _EngineState:
    base: EngineCounters  # baseline of the session window
    base_t: float
    prev: EngineCounters
    prev_t: float
    resets: int = 0
    kind: str = ""  # the engine that answered (another at the same URL: its counters are not these; reset)


@dataclass(frozen=True)
class RequestView:
    """Request mode: what the client measured, and the server's own figures where it gave them."""

    url: str = ""
    running: bool = False
    text: str = ""
    n_chunks: int = 0
    n_tokens: int = 0
    ttft_s: float | None = None  # request sent -> first content chunk
    itl_p50_s: float | None = None  # between consecutive content chunks (divided by tokens per chunk)
    itl_p95_s: float | None = None
    draft_n: int = -1
    draft_n_accepted: int = -1
    acceptance_rate: float | None = None
    spec_steps: int = -1
    mean_acceptance_length: float | None = None
    reason: str = ""
    error: str = ""
    server_predicted_ms: float = -1.0
    server_predicted_n: int = -1
    accepted_per_pos: tuple[int, ...] = ()  # from the engine's per-request histogram (vLLM, SGLang)
    flag: str = ""  # LOW / HIGH: an outlier against the deployment's acceptance (outlier())
    flag_words: str = ""  # what it means, in the screen's words

    @property
    def acceptance_by_pos(self) -> tuple[float, ...]:
        """Position i accepted in this share of the request's verify steps (the counters' definition)."""
        if self.spec_steps <= 0:
            return ()
        return tuple(c / self.spec_steps for c in self.accepted_per_pos)

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["accepted_per_pos"] = list(self.accepted_per_pos)
        d["acceptance_by_pos"] = list(self.acceptance_by_pos)
        return d


# Per-request outliers (docs/attach.md): acceptance far below the deployment's or far above it both mean
# something about the request, not about the server.
LOW, HIGH = "low", "high"
LOW_FLOOR = 0.10  # under this share of drafts accepted, a request is low whatever the others do
HIGH_CEILING = 0.95  # over it, high whatever the others do
FLAG_WORDS = {
    LOW: "low: the drafter guesses this text badly; each verify pays for drafts thrown away "
         "(a shorter k, or no speculation, for requests like it)",
    HIGH: "high: text the drafter can copy (repetition, the prompt quoted back, boilerplate) or a loop; "
          "check the output; a longer k pays on requests like it",
}


def outlier(rate: float | None, reference: float | None) -> str:
    """LOW, HIGH or "" for one request's acceptance against the deployment's ``reference`` (the median of its
    requests, or its counters' acceptance): low under half the reference (or under LOW_FLOOR), high where it
    misses a draft less than a third as often as the reference does (or over HIGH_CEILING)."""
    if rate is None:
        return ""
    if rate < LOW_FLOOR or (reference is not None and rate < reference / 2):
        return LOW
    if rate > HIGH_CEILING or (reference is not None and rate > reference and 1 - rate < (1 - reference) / 3):
        return HIGH
    return ""


@dataclass(frozen=True)
class AttachSnapshot:
    t: float = 0.0
    interval: list[Window] = field(default_factory=list)  # latest window per engine (errors included)
    interval_sum: Window | None = None
    session: list[Window] = field(default_factory=list)  # since each engine's baseline
    session_sum: Window | None = None
    request: RequestView | None = None
    requests: tuple[RequestView, ...] = ()  # every request that ended, in order, outliers flagged


class AttachStats:
    def __init__(self) -> None:
        self.t = 0.0
        self.engines: dict[tuple[str, str], _EngineState] = {}
        self.interval: dict[tuple[str, str], Window] = {}
        self.session: dict[tuple[str, str], Window] = {}
        self.process_start: dict[str, float] = {}
        self.order: list[tuple[str, str]] = []
        # request mode
        self._req_url = ""
        self._req_running = False
        self._req_t0 = 0.0
        self._req_text: list[str] = []
        self._req_times: list[tuple[float, int]] = []  # (arrival, tokens in chunk)
        self._req_last: dict[str, Any] = {}
        self._req_end: RequestEnded | None = None
        self._has_request = False
        self._ended: list[RequestView] = []  # every request that ended (request mode, several prompts)

    @property
    def request_running(self) -> bool:
        return self._req_running

    def _key(self, key: tuple[str, str]) -> None:
        if key not in self.order:
            self.order.append(key)

    def update(self, ev: Any) -> None:
        """Take one event of an attach session, in order (live, or a recorded attach trace).

        Args:
            ev: a scrape (its counters' deltas make the windows), a request's start, chunk or end; the rest
                is ignored.
        """
        if isinstance(ev, MetricsScraped):
            self._scrape(ev)
        elif isinstance(ev, RequestStarted):
            self._has_request, self._req_running, self._req_url, self._req_t0 = True, True, ev.url, ev.t
            self._req_text, self._req_times, self._req_last, self._req_end = [], [], {}, None
        elif isinstance(ev, RequestChunk):
            self._req_text.append(ev.text)
            self._req_times.append((ev.t, ev.n_tokens))
            if ev.draft_n >= 0:
                self._req_last = {"draft_n": ev.draft_n, "draft_n_accepted": ev.draft_n_accepted}
        elif isinstance(ev, RequestEnded):
            self._req_running, self._req_end = False, ev
            view = self._request_view()
            if view is not None:
                self._ended.append(view)
        elif isinstance(ev, AttachStarted):
            self.t = 0.0
        if hasattr(ev, "t"):
            self.t = max(self.t, ev.t)

    def _scrape(self, ev: MetricsScraped) -> None:
        url = ev.url
        if ev.error:
            for key in [k for k in self.order if k[0] == url] or [(url, "")]:
                self._key(key)
                self.interval[key] = Window(url, key[1], ev.kind, ERROR, error=ev.error)
                if key not in self.session:  # never answered: the session says why
                    self.session[key] = self.interval[key]
            return
        restarted = (
            ev.process_start > 0 and url in self.process_start and ev.process_start != self.process_start[url]
        )
        if ev.process_start > 0:
            self.process_start[url] = ev.process_start
        engines = {c.engine for c in ev.engines}
        for key in [k for k in self.order if k[0] == url and k[1] not in engines and k not in self.engines]:
            self.order.remove(key)  # an error line kept for a URL that now answers with other engine labels
            self.interval.pop(key, None)
            self.session.pop(key, None)
        for c in ev.engines:
            key = (url, c.engine)
            self._key(key)
            st = self.engines.get(key)
            if st is None:
                self.engines[key] = _EngineState(c, ev.t, c, ev.t, kind=ev.kind)
                self.interval[key] = engine_window(url, ev.kind, c, None, 0.0, ev.speculation)
                self.session[key] = self.interval[key]
                continue
            if restarted or st.kind != ev.kind or _counters_back(c, st.prev):
                st.resets += 1
                st.base, st.base_t, st.prev, st.prev_t, st.kind = c, ev.t, c, ev.t, ev.kind
                w = engine_window(url, ev.kind, c, None, 0.0, ev.speculation)
                self.interval[key] = Window(url, c.engine, ev.kind, RESET if w.status != NO_SPEC else NO_SPEC)
                self.session[key] = self.interval[key]
                continue
            self.interval[key] = engine_window(url, ev.kind, c, st.prev, ev.t - st.prev_t, ev.speculation)
            self.session[key] = engine_window(url, ev.kind, c, st.base, ev.t - st.base_t, ev.speculation)
            st.prev, st.prev_t = c, ev.t

    def _request_view(self) -> RequestView | None:
        if not self._has_request:
            return None
        times = self._req_times
        itl: list[float] = []
        for (t0, _), (t1, n) in zip(times, times[1:]):
            itl.extend([(t1 - t0) / max(n, 1)] * max(n, 1))
        end = self._req_end
        draft_n = end.draft_n if end is not None and end.draft_n >= 0 else self._req_last.get("draft_n", -1)
        acc = (
            end.draft_n_accepted
            if end is not None and end.draft_n_accepted >= 0
            else self._req_last.get("draft_n_accepted", -1)
        )
        steps = end.spec_steps if end is not None else -1
        n_tokens = sum(n for _, n in times)
        if end is not None and end.n_tokens > 0:
            n_tokens = end.n_tokens
        return RequestView(
            url=self._req_url,
            running=self._req_running,
            text="".join(self._req_text),
            n_chunks=len(times),
            n_tokens=n_tokens,
            ttft_s=times[0][0] - self._req_t0 if times else None,
            itl_p50_s=interpolated_quantile(itl, 0.5),
            itl_p95_s=interpolated_quantile(itl, 0.95),
            draft_n=draft_n,
            draft_n_accepted=acc,
            acceptance_rate=acc / draft_n if draft_n > 0 and acc >= 0 else None,
            spec_steps=steps,
            mean_acceptance_length=1 + acc / steps if steps > 0 and acc >= 0 else None,
            reason=end.reason if end is not None else "",
            error=end.error if end is not None else "",
            server_predicted_ms=end.predicted_ms if end is not None else -1.0,
            server_predicted_n=end.predicted_n if end is not None else -1,
            accepted_per_pos=end.accepted_per_pos if end is not None else (),
        )

    def _flagged(self) -> tuple[RequestView, ...]:
        """The ended requests, each flagged against its deployment: the median acceptance of that URL's
        requests when there are three or more, else the URL's own counters since attach started."""
        by_url: dict[str, list[float]] = {}
        for r in self._ended:
            if r.acceptance_rate is not None:
                by_url.setdefault(r.url, []).append(r.acceptance_rate)
        session = {w.url: w.acceptance_rate for k, w in self.session.items() if w.acceptance_rate is not None}
        out = []
        for r in self._ended:
            rates = by_url.get(r.url, [])
            ref = statistics.median(rates) if len(rates) >= 3 else session.get(r.url)
            flag = outlier(r.acceptance_rate, ref)
            out.append(replace(r, flag=flag, flag_words=FLAG_WORDS.get(flag, "")))
        return tuple(out)

    def snapshot(self) -> AttachSnapshot:
        """The figures so far, immutable: per engine the last interval's window and the session's.

        Returns:
            An AttachSnapshot: the attach TUI, the headless lines and the JSON all read this one.
        """
        interval = [self.interval[k] for k in self.order if k in self.interval]
        session = [self.session[k] for k in self.order if k in self.session]
        return AttachSnapshot(
            t=self.t,
            interval=interval,
            interval_sum=sum_windows(interval) if len(interval) > 1 else None,
            session=session,
            session_sum=sum_windows(session) if len(session) > 1 else None,
            request=self._request_view(),
            requests=self._flagged(),
        )
