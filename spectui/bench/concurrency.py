"""``spectui bench --url URL --baseline-url URL --concurrency 1,2,4,8,16``: where speculation stops paying on a
served engine, measured.

For each concurrency c (in the order given) and each deployment (the baseline first, then the one with
speculation), ``max(prompts, 2 c)`` streaming chat completions (the prompts cycled) are sent with c in flight
(``server.chat_request``: the same requests as the one-at-a-time bench). Per level:

- aggregate output tokens/s: every request's completion tokens / the level's wall time (first request sent to
  the last one ended);
- per request: ITL (its time from the first to the last content chunk / chunks - 1, on the client) and TTFT
  (request sent -> first content chunk); the level gives p50 and p95 over its requests;
- acceptance: drafted and accepted tokens from each request's own ``timings`` (llama-server), else from the
  deployment's ``/metrics`` delta over the level (vLLM; the level is the only traffic), accepted / drafted;
- drafted tokens per output token: when it falls to under a third of the lowest level's, the server switched
  speculation off by itself at that concurrency (vLLM's ``num_speculative_tokens_per_batch_size`` with k = 0, or
  the older ``disable_by_batch_size``), and the report says so;
- speedup: the level's aggregate tokens/s over the baseline's at the same concurrency.

The measured knee is the first concurrency whose speedup is at most 1.0 (``analysis.batch_knee.knee_of``);
with ``--knee-probe FILE`` (``spectui probe --batched --json`` on the same machine and pair) the predicted
speedup at each concurrency (the probe's curve at B = c, with the acceptance measured at that level) and the
predicted knee are printed beside the measured ones.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

from ..analysis.knee import knee_text as kt
from ..analysis.measured import batch_knee as bk
from ..analysis.measured.cachefile import CacheError
from ..analysis.quantiles import interpolated_quantile
from ..contract.errors import SpectuiError
from ..contract.events import REQ_ERROR, RequestChunk, RequestEnded
from ..engine.files.chat import chat_messages
from .datasets import PromptSet
from .plan import BenchOptions, parse_temps
from .server import Deployment, chat_request, counters_delta, probe_deployment, scrape_counters
from .server_shape import load_steps, predict_on_steps, prediction_lines, server_shape

MAX_LEVEL = 256
# drafted tokens per output token under this share of the lowest level's: speculation was off (not all off: a level's
# first and last requests run with fewer beside them, below the server's threshold, and draft there)
OFF_SHARE = 1 / 3


def parse_concurrency(value) -> tuple[int, ...]:
    """'1,2,4' -> (1, 2, 4); an int -> (n,). One-line errors."""
    if isinstance(value, int):
        items = [value]
    else:
        try:
            items = [int(x) for x in str(value).split(",") if x.strip()]
        except ValueError:
            raise SpectuiError(f"--concurrency must be comma-separated numbers, not {value!r}") from None
    if not items:
        raise SpectuiError("--concurrency needs at least one number")
    for c in items:
        if not 1 <= c <= MAX_LEVEL:
            raise SpectuiError(f"--concurrency must be between 1 and {MAX_LEVEL}, not {c}")
    if len(set(items)) != len(items):
        raise SpectuiError(f"--concurrency lists a number twice: {value}")
    return tuple(items)


@dataclass
class Level:
    concurrency: int
    url: str
    role: str  # "baseline" or "speculation"
    n_requests: int = 0
    output_tokens: int = 0
    wall_s: float = 0.0
    tokens_per_second: float = 0.0
    itl_ms_p50: float | None = None
    itl_ms_p95: float | None = None
    ttft_ms_p50: float | None = None
    ttft_ms_p95: float | None = None
    drafted: int = 0
    accepted: int = 0
    acceptance: float | None = None  # accepted / drafted (None: nothing drafted)
    acceptance_source: str = ""  # "timings" or "metrics"
    error: str = ""
    drafts: int = 0  # verify steps with a draft (the deployment's /metrics delta; 0: not published)
    prompt_each: list[int] = field(default_factory=list)  # each request's prompt tokens, in order (-1: not said)
    output_each: list[int] = field(default_factory=list)  # each request's output tokens, in order

    @property
    def drafts_per_token(self) -> float:
        return self.drafted / self.output_tokens if self.output_tokens else 0.0


@dataclass
class Sweep:
    levels: list[int]
    spec: list[Level] = field(default_factory=list)
    base: list[Level] = field(default_factory=list)
    status: str = "done"
    notes: list[str] = field(default_factory=list)
    shape: object = None  # the speculating server's slots and prompts' tokens (bench.server_shape.ServerShape)

    def speedups(self) -> dict[int, float]:
        base = {lv.concurrency: lv for lv in self.base}
        return {lv.concurrency: lv.tokens_per_second / base[lv.concurrency].tokens_per_second
                for lv in self.spec if lv.concurrency in base and base[lv.concurrency].tokens_per_second > 0}

    def drafted_nothing(self) -> bool:
        """The speculating deployment drafted no token at any level (a lookup that found no match, a server
        without speculation): its "speedup" is then run-to-run spread, not speculation's."""
        return bool(self.spec) and all(lv.drafted == 0 for lv in self.spec)

    def switched_off(self) -> list[int]:
        """Levels at which the server drafted (almost) nothing although it drafted at the lowest level."""
        if not self.spec:
            return []
        first = min(self.spec, key=lambda lv: lv.concurrency)
        ref = first.drafts_per_token
        if ref <= 0:
            return []
        return [lv.concurrency for lv in self.spec if lv is not first and lv.drafts_per_token < OFF_SHARE * ref]


def run_level(dep: Deployment, ps: PromptSet, c: int, *, n_predict: int, temperature: float, seed: int,
              system: str | None, timeout_s: float, role: str) -> Level:
    n = max(len(ps.prompts), 2 * c)
    before = scrape_counters(dep, 10.0)
    t0 = time.monotonic()

    def one(i: int):
        p = ps.prompts[i % len(ps.prompts)]
        return list(chat_request(dep, chat_messages(p.turns[:1], [], system), n_predict, temperature, seed,
                                 timeout_s))

    with ThreadPoolExecutor(max_workers=c, thread_name_prefix="spectui-bench-c") as pool:
        results = list(pool.map(one, range(n)))
    wall = time.monotonic() - t0
    lv = Level(c, dep.url, role, n_requests=n, wall_s=wall)
    itl, ttft = [], []
    timed_drafts = False
    for events in results:
        end = events[-1]
        if not isinstance(end, RequestEnded) or end.reason == REQ_ERROR:
            lv.error = getattr(end, "error", "") or "a request failed"
            continue
        chunks = [e for e in events if isinstance(e, RequestChunk)]
        lv.output_tokens += end.n_tokens if end.n_tokens > 0 else len(chunks)
        lv.prompt_each.append(end.prompt_n)
        lv.output_each.append(end.n_tokens if end.n_tokens > 0 else len(chunks))
        if chunks:
            ttft.append(chunks[0].t * 1000.0)
        if len(chunks) > 1:
            itl.append((chunks[-1].t - chunks[0].t) * 1000.0 / (len(chunks) - 1))
        if end.draft_n >= 0:
            timed_drafts = True
            lv.drafted += end.draft_n
            lv.accepted += max(end.draft_n_accepted, 0)
    if role != "baseline":
        time.sleep(0.5)  # the engine counts a request once it is done
        win = counters_delta(dep, before, scrape_counters(dep, 10.0))
        lv.drafts = int(win.drafts) if win is not None else 0  # the verify steps: the server's steps' shape
        if not timed_drafts and win is not None and win.draft_tokens > 0:
            lv.drafted, lv.accepted, lv.acceptance_source = int(win.draft_tokens), int(win.accepted), "metrics"
    if timed_drafts:
        lv.acceptance_source = "timings"
    lv.acceptance = lv.accepted / lv.drafted if lv.drafted else None
    lv.tokens_per_second = lv.output_tokens / wall if wall > 0 else 0.0
    lv.itl_ms_p50, lv.itl_ms_p95 = interpolated_quantile(itl, 0.5), interpolated_quantile(itl, 0.95)
    lv.ttft_ms_p50, lv.ttft_ms_p95 = interpolated_quantile(ttft, 0.5), interpolated_quantile(ttft, 0.95)
    return lv


def sweep(ps: PromptSet, o: BenchOptions, levels, on_level=None) -> Sweep:
    """Each level of ``levels`` against ``o.urls[0]`` (and ``o.baseline_url``): ``on_level(c, url, role)`` as each
    starts; a failure or an interrupt ends the sweep with the levels done."""
    url, baseline_url, system, timeout_s = o.urls[0], o.baseline_url, o.system, o.timeout_s
    temps = parse_temps(o.temp)
    if len(temps) != 1:
        raise SpectuiError("--concurrency with several levels takes one --temp")
    dep = probe_deployment(url, timeout_s)
    base = probe_deployment(baseline_url, timeout_s) if baseline_url else None
    res = Sweep(list(levels))
    res.shape = server_shape(dep, ps, system, timeout_s)  # for the prediction on the server's own steps
    try:
        for c in levels:
            for d, role, out in ((base, "baseline", res.base), (dep, "speculation", res.spec)):
                if d is None:
                    continue
                if on_level is not None:
                    on_level(c, d.url, role)
                lv = run_level(d, ps, c, n_predict=o.n_predict, temperature=temps[0], seed=o.seed, system=system,
                               timeout_s=timeout_s, role=role)
                out.append(lv)
                if lv.error:
                    res.status = f"failed: {lv.error}"
                    return res
    except KeyboardInterrupt:
        res.status = "interrupted"
    return res


# ---------------------------------------------------------------- prediction beside the measurement


def load_knee_probe(path: str) -> tuple[bk.BatchCurve, str | None]:
    """(curve, drafter) from a ``spectui probe --batched --json`` file (at most 16 MiB); its step costs, for the
    prediction on the server's own steps, are ``server_shape.load_steps``'."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(16 * 1024 * 1024 + 1)
    except OSError as exc:
        raise SpectuiError(f"--knee-probe: cannot read {path} ({exc.strerror or exc})") from None
    if len(raw) > 16 * 1024 * 1024:
        raise SpectuiError(f"--knee-probe: {path} is larger than 16 MiB")
    try:
        doc = json.loads(raw.decode("utf-8").strip().splitlines()[-1])
        b = doc["batched"]
        curve = bk.BatchCurve.from_dict(b["curve"])
    except (UnicodeDecodeError, json.JSONDecodeError, IndexError, KeyError, TypeError, CacheError):
        raise SpectuiError(f"--knee-probe: {path} is not `spectui probe --batched --json` output") from None
    pred = b.get("prediction") or {}
    return curve, pred.get("drafter")


def predicted(curve: bk.BatchCurve, res: Sweep, k: int, drafter: str | None) -> dict[int, float]:
    """Predicted speedup at each measured concurrency the curve has, with that level's measured acceptance."""
    k = min(curve.ks, key=lambda x: (abs(x - k), x))
    drafter = drafter or (bk.DRAFTER_MODEL if curve.has_draft else bk.DRAFTER_LOOKUP)
    out = {}
    for lv in res.spec:
        if lv.concurrency in curve.seqs and lv.acceptance is not None:
            # accepted / drafted of fixed-k passes is (E - 1) / k: the rate whose expectation is that E
            a = bk.acceptance_from_tokens_per_pass(1.0 + k * lv.acceptance, k)
            out[lv.concurrency] = bk.speedup(curve, lv.concurrency, k, a, drafter)
    return out


# ---------------------------------------------------------------- report


def _f(x, fmt: str) -> str:
    """``x`` in ``fmt`` ('>8.2f'), or '-' in the same width when there is none."""
    if x is not None:
        return format(x, fmt)
    width = int("".join(ch for ch in fmt.split(".", maxsplit=1)[0] if ch.isdigit()) or 0)
    return "-".rjust(width) if fmt.startswith(">") else "-".ljust(width)


def report_lines(res: Sweep, pred: dict[int, float] | None = None) -> list[str]:
    sp = res.speedups()
    base = {lv.concurrency: lv for lv in res.base}
    lines = [" conc  baseline tok/s  spec tok/s  speedup" + ("  predicted" if pred else "")
             + "  ITL p50/p95 ms  TTFT p50/p95 ms  acceptance  drafts/token"]
    for lv in res.spec:
        b = base.get(lv.concurrency)
        s = sp.get(lv.concurrency)
        row = (f"{lv.concurrency:>5}  {_f(b.tokens_per_second if b else None, '>14.1f')}  "
               f"{lv.tokens_per_second:>10.1f}  {_f(s, '>6.2f') + ('x' if s is not None else ' ')}")
        if pred:
            p = pred.get(lv.concurrency)
            row += f"  {_f(p, '>8.2f') + ('x' if p is not None else ' ')}"
        row += (f"  {_f(lv.itl_ms_p50, '>6.1f')}/{_f(lv.itl_ms_p95, '<6.1f')}  "
                f"{_f(lv.ttft_ms_p50, '>7.1f')}/{_f(lv.ttft_ms_p95, '<7.1f')}  "
                f"{_f(lv.acceptance, '>10.2f')}  {lv.drafts_per_token:>12.2f}")
        lines.append(row)
    if sp and res.drafted_nothing():
        lines.append("measured: no knee: the speculating deployment drafted no token at any level, so its "
                     "speedups are this machine's run-to-run spread, not speculation's (a prompt lookup that "
                     "found no match in these prompts, or a server started without speculation)")
    elif sp:
        cs = [c for c in res.levels if c in sp]
        m = bk.knee_of(cs, [sp[c] for c in cs])
        lines.append(f"measured: speculation {m.words(cs[-1], 'concurrency')}")
        if pred:
            pc = [c for c in cs if c in pred]
            if pc:
                p = bk.knee_of(pc, [pred[c] for c in pc])
                lines.append("predicted (spectui probe --batched on this machine): speculation "
                             f"{p.words(pc[-1], 'concurrency')}")
    elif not res.base:
        lines.append("No baseline: give --baseline-url (the same target without speculation) for the speedup "
                     "and the knee.")
    off = res.switched_off()
    if off:
        first = min(res.spec, key=lambda lv: lv.concurrency)
        lines.append(f"The server switched speculation off by itself at concurrency {', '.join(map(str, off))}: "
                     f"it drafted {first.drafts_per_token:.2f} tokens per output token at concurrency "
                     f"{first.concurrency} and under {OFF_SHARE * first.drafts_per_token:.2f} there (vLLM's "
                     "num_speculative_tokens_per_batch_size with k = 0 does this, as disable_by_batch_size did).")
    lines.append("ITL: a request's first-to-last content chunk time / (chunks - 1) on the client; TTFT: request "
                 "sent to first content chunk; tokens/s: all requests' output tokens / the level's wall time.")
    if res.status != "done":
        lines.append(f"The sweep stopped: {kt.safe_text(res.status, 300)}.")
    return lines


def to_json(res: Sweep, pred: dict[int, float] | None, params: dict) -> dict:
    sp = res.speedups()
    return {"schema": "spectui.bench", "concurrency_sweep": {
        "params": params, "status": res.status,
        "levels": [dict(asdict(lv), speedup=sp.get(lv.concurrency),
                        predicted_speedup=(pred or {}).get(lv.concurrency),
                        drafts_per_token=lv.drafts_per_token) for lv in res.spec],
        "baseline": [asdict(lv) for lv in res.base],
        "switched_off_at": res.switched_off(),
        "median_speedup": statistics.median(sp.values()) if sp else None,
    }}


def sweep_main(ps: PromptSet, o: BenchOptions, levels, draft_max: int, write_json, out) -> int:
    """The whole concurrency sweep: check, run, print, write ``--json``. Returns the exit status.

    ``draft_max`` is the deployment's draft length, as the user gave it (``-k``, parsed by
    ``contract.draft_length.parse_k``): the --knee-probe prediction reads its curve there."""
    urls, baseline_url, knee_probe, n_predict = list(o.urls), o.baseline_url, o.knee_probe, o.n_predict
    if len(urls) != 1:
        raise SpectuiError("--concurrency with several levels takes one --url (and --baseline-url)")
    curve = drafter = steps = None
    if knee_probe:
        curve, drafter = load_knee_probe(knee_probe)  # before any request: a bad file costs nothing
        steps = load_steps(knee_probe)
    res = sweep(ps, o, levels)
    pred = decode_only = predicted(curve, res, draft_max, drafter) if curve is not None else None
    on_steps = predict_on_steps(curve, steps, res, draft_max, drafter, len(ps.prompts)) if steps else {}
    if on_steps:  # the prediction on the server's own steps is the one beside the measurement
        pred = {c: p.speedup for c, p in on_steps.items()}
    lines = [f"spectui bench: {urls[0]} against {baseline_url or 'no baseline'}, concurrency "
             f"{','.join(map(str, levels))}, -n {n_predict}, {len(ps.prompts)} prompts ({ps.source})"]
    lines += report_lines(res, pred)
    lines += prediction_lines(on_steps, res)
    if on_steps:
        lines.append(f"predicted on the server's own steps (analysis.server_steps) from {knee_probe} and each "
                     "level's measured acceptance; decode steps alone (the curve at B = c): "
                     + ", ".join(f"{c}: {x:.2f}x" for c, x in sorted((decode_only or {}).items())))
    elif pred is not None:
        lines.append(f"predicted with the probe's curve at k = {min(curve.ks, key=lambda x: (abs(x - draft_max), x))} "
                     f"(-k {draft_max}) and each level's measured acceptance ({knee_probe})")
    params = {"url": urls[0], "baseline_url": baseline_url, "levels": list(levels), "n_predict": n_predict,
              "temperature": o.temp, "seed": o.seed, "prompts": ps.source, "n_prompts": len(ps.prompts),
              "knee_probe": knee_probe, "k": draft_max}
    json_out = o.json_out
    if json_out:
        doc = to_json(res, pred, params)
        doc["concurrency_sweep"]["predicted_on_steps"] = {str(c): asdict(p) | {"speedup": p.speedup}
                                                          for c, p in on_steps.items()}
        doc["concurrency_sweep"]["predicted_decode_only"] = {str(c): x for c, x in (decode_only or {}).items()}
        write_json(json_out, json.dumps(doc) + "\n")
    dest = out if json_out != "-" else sys.stderr
    for ln in lines:
        dest.write(ln + "\n")
    dest.flush()
    if res.status == "interrupted":
        return 130
    return 0 if res.status == "done" else 1
