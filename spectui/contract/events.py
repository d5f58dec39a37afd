"""The engine's event stream: plain, immutable, typed records. Their JSON form (``to_dict`` /
``from_dict``, type-checked) is in :mod:`spectui.contract.event_json`.

Everything downstream (the TUI, traces, replay, summaries, sweeps) consumes exactly these events, so a live run
and a replayed trace are indistinguishable. This module imports nothing of the UI.

One run is: ``RunStarted``, then one ``PassEvent`` per draft/verify pass (pass 0 is the prefill pass
that emits the first token), ``SettingsChanged`` whenever a setting changed between passes, and
finally ``RunEnded``. One attach session (``spectui attach``: a serving engine watched over HTTP) is
``AttachStarted``, ``MetricsScraped`` per URL per interval, in request mode ``RequestStarted``,
``RequestChunk``... ``RequestEnded``, and ``AttachEnded`` last (see the attach section below).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal, Union

from .draft_length import DEFAULT_DRAFT_MAX
from .judged import Judged

# Verdict of one drafted token.
ACCEPTED = "accepted"  # the target agreed (greedy) or the acceptance test passed (sampling)
REJECTED = "rejected"  # the first draft the target refused; the target's own token replaces it
DISCARDED = "discarded"  # drafted after the first rejection: never usable, thrown away

# Kind of the token the target itself contributes in a pass.
CORRECTION = "correction"  # replaces the first rejected draft
BONUS = "bonus"  # every draft was accepted: the verify pass yields one more token for free
PLAIN = "plain"  # no drafts this pass (k = 0, or the drafter proposed nothing, or prefill)

# Why a run stopped.
STOP_EOG = "eog"  # end-of-generation token
STOP_N_PREDICT = "n_predict"  # reached -n/--n-predict
STOP_CTX_FULL = "ctx_full"  # the context window is full
STOP_USER = "stopped"  # stopped by the user (q, Ctrl+C, SIGTERM/SIGHUP, restart)
STOP_ERROR = "error"  # an error inside the engine; RunEnded.error says which

# A drafter's name (spectui.engine.drafters: each drafter names itself; a trace may carry any name that reads as
# one, so a trace of a newer drafter still replays): lower-case letters, digits, "-" and "_", at most 32; a chain
# is up to 8 of them joined by commas ("ngram-mod,model": spectui.engine.drafters.chain).
CHAIN_SEPARATOR = ","  # joins a chain's drafters in Settings.drafter
DRAFTER_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}(,[a-z0-9][a-z0-9_-]{0,31}){0,7}")


def is_drafter_name(value: object) -> bool:
    """``value`` reads as a drafter's name (``DRAFTER_NAME``)."""
    return type(value) is str and DRAFTER_NAME.fullmatch(value) is not None
AUTO_MODES = ("cost", "schedule")  # running cost model / HF-style +2 / -1 schedule


@dataclass(frozen=True)
class Settings:
    """The knobs in force for one pass. Changed between passes, never during one."""

    draft_max: int = DEFAULT_DRAFT_MAX  # k: how many tokens to draft per pass (0 = speculation off)
    temperature: float = 0.0
    drafter: str = "model"  # a drafter's name (spectui.engine.drafters.names())
    seed: int = 0
    auto: str | None = None  # None (fixed k) or one of AUTO_MODES
    # llama.cpp's --draft-p-min: stop drafting in a pass once the draft model's confidence (the top
    # probability among its 10 best tokens at temperature 1, llama.cpp's draft sampler) falls below this;
    # 0 = off. --draft-min: never stop for confidence before this many drafts.
    draft_p_min: float = 0.0
    draft_min: int = 0
    # --pipeline: the draft model drafts the next block on its own thread and cores while the target verifies
    # this one (engine/run/pipeline.py, docs/pipeline.md); passes with another drafter, or k = 0, run as before
    pipeline: bool = False


@dataclass(frozen=True)
class ModelInfo:
    path: str
    name: str = ""
    size_bytes: int = 0
    quantization: str = ""
    n_params: int = 0
    n_vocab: int = 0
    vocab_type: str = ""
    architecture: str = ""
    n_ctx_train: int = 0
    # Where the model runs (recorded so a replay says what hardware produced it).
    backend: str = ""  # llama.cpp backend of the offloaded layers ("CUDA", "Metal", "Vulkan"), or "CPU"
    device: str = ""  # device description as the backend reports it ("" when unknown)
    n_layer: int = 0  # repeating layers in the model
    n_gpu_layers: int = 0  # layers offloaded to the device (0 = all on the CPU)


@dataclass(frozen=True)
class HeadInfo:
    """What drafts when the drafter is an EAGLE-3 head or the target's own MTP layers (``RunStarted.head``;
    None for a separate draft model, ngram, or a trace from before this field)."""

    kind: str = ""  # the head drafter's name (spectui.engine.drafters.head_names())
    path: str = ""  # the head's file: the EAGLE-3 draft GGUF, or the target that carries the MTP layers
    n_heads: int = 1  # MTP: the NextN blocks in the file; EAGLE-3: 1
    chained: bool = False  # MTP: one NextN block per draft position (n_heads > 1); else one head repeats
    target_layers: tuple[int, ...] = ()  # EAGLE-3: the target layers whose hidden states it reads


@dataclass(frozen=True)
class MachineProbe:
    """This machine's measured cost of the run's target (``spectui probe``), handed to the engine with the
    run and recorded in its ``RunStarted``: auto k, the faces and a replay read the same curve from here."""

    verify_ms_by_batch: tuple[float, ...] = ()  # index b - 1: one target decode of a b-token batch
    summary: str = ""  # the figures in one line (ProbeResult.summary_line)
    report_json: str = ""  # the whole `spectui probe --json` object (ProbeResult.report), as JSON text

    @property
    def curve(self) -> dict[int, float]:
        """Verify ms by draft length k (a batch of k + 1 tokens): the cost model's ``curve``."""
        return {b - 1: ms for b, ms in enumerate(self.verify_ms_by_batch, start=1) if ms > 0}


@dataclass(frozen=True)
class Token:
    """One token: its id, the exact text it adds to the output, and a probability.

    ``text`` comes from UTF-8-safe incremental decoding, so a multi-byte character split over two
    tokens shows up whole on the token that completes it (the first token's text is then "").
    ``prob`` is the probability of this token under the model that produced it (draft q for drafts,
    target p for the target token), at the temperature in force (temperature 0 reports the
    temperature-1 softmax, so the number stays informative).
    """

    id: int
    text: str
    prob: float = 0.0


@dataclass(frozen=True)
class DraftToken(Token):
    verdict: str = ACCEPTED  # ACCEPTED / REJECTED / DISCARDED
    target_prob: float = 0.0  # p(x) under the target for this draft (0 when not evaluated)


@dataclass(frozen=True)
class TreeNode(Token):  # PassEvent.tree: q (prob), parent (-1: the root), target p; ACCEPTED / REJECTED / DISCARDED
    parent: int = -1
    verdict: str = DISCARDED
    target_prob: float = 0.0
    judged: Judged | None = None  # T > 0, a judged node: its acceptance test (None: never judged, T = 0, older trace)


@dataclass(frozen=True)
class TargetToken(Token):
    kind: str = PLAIN  # CORRECTION / BONUS / PLAIN


@dataclass(frozen=True)
class Candidate:
    """One of a model's top candidates at one position: id, the token's own text (its piece, decoded on
    its own, so a partial UTF-8 byte shows as U+FFFD) and its probability at the temperature in force
    (temperature 0: the temperature-1 softmax, as ``Token.prob``)."""

    id: int
    text: str
    prob: float


@dataclass(frozen=True)
class Inspection:
    """What one verified position knew: row ``position`` of the verify batch (position i predicts the token
    after draft i; position k, after the last draft, gives the bonus). Recorded when ``--inspect-top N`` > 0.

    - ``target_top``: the target's N best tokens, best first (p at the pass's temperature).
    - ``draft_top``: the draft's N best at drafted positions (q; the n-gram drafter is a point mass, one
      candidate with q = 1); empty at the bonus position.
    - ``margin``: the target's top-two logit margin (logit units, temperature-free): below
      ``NEAR_TIE_MARGIN`` a batched verify may round the argmax differently from a one-token decode.
    - ``accept_p``: min(1, p(x)/q(x)) for a judged draft at T > 0, ``u`` the uniform it was tested with
      (-1 when none was drawn: accept_p was 1, or T = 0, or the draft was never judged).
    - ``residual_top``: at a T > 0 rejection, the top of norm(max(0, p - q)) the correction was drawn from.
    """

    position: int
    target_top: tuple[Candidate, ...] = ()
    draft_top: tuple[Candidate, ...] = ()
    margin: float = 0.0
    accept_p: float = -1.0
    u: float = -1.0
    residual_top: tuple[Candidate, ...] = ()


# Why drafting stopped in a pass (PassEvent.draft_stop).
DRAFT_STOP_K = "k"  # drafted the k asked for
DRAFT_STOP_P_MIN = "p_min"  # the draft's confidence fell below --draft-p-min
DRAFT_STOP_NO_MATCH = "no_match"  # the drafter had nothing (n-gram: no match; or a shorter match than k)
DRAFT_STOP_NONE = ""  # no drafting this pass (k = 0, prefill, or no drafter)
DRAFT_STOPS = (DRAFT_STOP_K, DRAFT_STOP_P_MIN, DRAFT_STOP_NO_MATCH, DRAFT_STOP_NONE)

# The top-two logit margin below which greedy verification may legitimately differ from the target's own
# one-token greedy run (batched kernels round differently): the threshold of the losslessness tests.
NEAR_TIE_MARGIN = 0.1


@dataclass(frozen=True)
class Timing:
    """Milliseconds spent in one pass, measured with time.perf_counter()."""

    draft_ms: float = 0.0  # drafter work (draft-model decodes and sampling, or n-gram lookup)
    verify_ms: float = 0.0  # the target's llama_decode over [last token + drafts]
    other_ms: float = 0.0  # everything else: acceptance test, rollback, detokenising, bookkeeping
    wall_ms: float = 0.0  # whole pass = draft + verify + other
    t_end: float = 0.0  # seconds since the run started, at the end of this pass


# Why a pipelined pass threw away speculative tokens (PipeInfo.thrown_why).
SPEC_REJECTED = "rejected"  # a draft of the block being verified was rejected: the block followed a dead end
SPEC_GUESS = "guess"  # every draft held, but the target's own token was not the draft's guess
SPEC_CHANGED = "changed"  # the settings (k, temperature, drafter, p-min, pipeline) changed between passes
SPEC_END = "end"  # the run ended (end of generation, n_predict, a stop) with a block drafted ahead
SPEC_NONE = ""
SPEC_WHYS = (SPEC_REJECTED, SPEC_GUESS, SPEC_CHANGED, SPEC_END, SPEC_NONE)


@dataclass(frozen=True)
class PipeInfo:
    """A pipelined pass (``PassEvent.pipeline``; None for a sequential pass and traces from before the mode).
    While the target verified this pass's drafts, the draft model went on drafting on its own thread as if
    every draft were accepted: the guess of the target's next token, then the next pass's drafts after it."""

    overlapped: bool = False  # this pass's drafts were drafted during the previous pass's verify (a hit)
    guess: int = -1  # the draft's guess of this pass's target token (-1: none made)
    hit: bool = False  # every draft held and the target's token was the guess: the next drafts are ready
    thrown: tuple[Token, ...] = ()  # speculative tokens thrown away when this pass was decided
    thrown_why: str = SPEC_NONE  # one of SPEC_WHYS
    overlap_ms: float = 0.0  # the draft thread drafting while the target verified this pass
    draft_busy_ms: float = 0.0  # the draft thread's own time for this pass's drafts (hidden or not)
    cut_wait_ms: float = 0.0  # the loop waited for the draft thread to stop after a miss (its decode ends)


@dataclass(frozen=True)
class RunStarted:
    type: Literal["start"] = "start"
    run_id: str = ""
    started_at: float = 0.0  # unix time
    target: ModelInfo = field(default_factory=lambda: ModelInfo(path=""))
    draft: ModelInfo | None = None
    prompt: str = ""
    prompt_tokens: int = 0
    n_predict: int = 128
    n_ctx: int = 0
    threads: int = 0
    settings: Settings = field(default_factory=Settings)
    # Single-token decode times measured at start (median of a few decodes, rolled back), used by the
    # cost model before any k = 0 pass has run. 0.0 when not measured.
    target_decode_ms: float = 0.0
    draft_decode_ms: float = 0.0
    replay: bool = False  # True when the stream comes from a trace rather than a live engine
    inspect_top: int = 0  # N of --inspect-top: candidates recorded per position (0 = no inspector data)
    probe: MachineProbe | None = None  # this machine's verify cost by batch size, when it was measured
    # The chat template the prompt was rendered with ("tokenizer.chat_template sha256:<12 hex>"), or "" when the
    # prompt is raw text (--no-chat, a model without a template, traces from before this field).
    chat_template: str = ""
    head: HeadInfo | None = None  # the EAGLE-3 head / MTP layers the run was loaded with (None: no head)
    # Where the row math ran (--sampling): "graph" (llama.cpp backend sampler chains: engine/run/graph_path.py) or
    # "cpu" (numpy on the loop's path; traces from before this field).
    sampling: str = "cpu"
    # The draft model's threads in sequential passes (-td; 0: as ``threads``, traces from before the field) and
    # the split of pipelined passes, (target, draft) threads (() when the run cannot pipeline: no draft model);
    # pipeline_choice: what --pipeline auto chose and why, in one line ("" when on or off was given).
    threads_draft: int = 0
    pipeline_threads: tuple[int, ...] = ()
    pipeline_choice: str = ""
    # OpenMP's wait policy for llama.cpp's threads and who chose it, in one line ("PASSIVE (set by spectui: ...)",
    # "... (from the environment)"); "" for OpenMP's default, spinning (a quiet machine; traces from before it).
    wait_policy: str = ""
    # A GPU the machine has that this llama.cpp build (CPU only) could not use, and how to rebuild, in one line
    # (engine/llama/devices.py, cpu_build_note); "" when the build offloads, no such GPU was seen, or an older trace.
    gpu_note: str = ""


@dataclass(frozen=True)
class PassEvent:
    type: Literal["pass"] = "pass"
    index: int = 0  # 0 = prefill pass (prompt eval, emits the first token)
    prefill: bool = False
    settings: Settings = field(default_factory=Settings)
    k: int = 0  # draft length asked for this pass (auto modes choose it)
    drafts: tuple[DraftToken, ...] = ()
    target: TargetToken | None = None  # None only when the run stopped inside the accepted drafts
    n_accepted: int = 0
    emitted: tuple[Token, ...] = ()  # accepted drafts then the target token, cut at EOG / n_predict
    timing: Timing = field(default_factory=Timing)
    n_ctx_used: int = 0  # target KV cells holding accepted context after this pass
    # CPU cores other processes kept busy during this pass (/proc/stat, on our CPUs); -1.0 when not measured
    others_cpu: float = -1.0
    # Drafting: len(drafts) is the k actually drafted (<= k); draft_stop says why it stopped (DRAFT_STOPS),
    # draft_stop_p the confidence that stopped it (p_min) or -1.
    draft_stop: str = DRAFT_STOP_NONE
    draft_stop_p: float = -1.0
    # The inspector's data, one per verified position (0..len(drafts)); empty when --inspect-top is 0
    inspect: tuple[Inspection, ...] = ()
    # A head drafted (HeadInfo): which one per draft, 0-based (chained MTP heads 0, 1, ..; one head 0, 0, ..); else ()
    draft_heads: tuple[int, ...] = ()
    # The drafter that proposed the drafts (in a chain, the member that drafted); "" without drafts / in old traces
    drafter: str = ""
    # A chain under auto k: the members left out of this pass (predicted below the target alone: cost/chain_cost.py)
    left_out: tuple[str, ...] = ()
    # A pipelined pass (--pipeline): what the draft thread did meanwhile. In such a pass Timing.draft_ms is the
    # loop's wait for the drafts (the part of drafting left on the pass's path); PipeInfo.draft_busy_ms the
    # drafting itself. None for a sequential pass.
    pipeline: PipeInfo | None = None
    # A tree pass: every node verified, in drafting order (``drafts``: the accepted path then the first child
    # refused after it, ``k``: the node budget); empty for a chain's pass and for traces from before this field.
    tree: tuple[TreeNode, ...] = ()


@dataclass(frozen=True)
class SettingsChanged:
    type: Literal["settings"] = "settings"
    before_pass: int = 0  # index of the first pass that uses the new settings
    old: Settings = field(default_factory=Settings)
    new: Settings = field(default_factory=Settings)
    t: float = 0.0  # seconds since the run started


@dataclass(frozen=True)
class RunEnded:
    type: Literal["end"] = "end"
    reason: str = STOP_N_PREDICT
    error: str = ""
    n_passes: int = 0
    n_emitted: int = 0
    n_drafted: int = 0
    n_accepted: int = 0
    wall_s: float = 0.0  # seconds from start to end


# ------------------------------------------------------------------ attach: observing a serving engine
# What ``spectui attach`` observes of llama-server / vLLM / SGLang: observations, not statistics. A scrape
# holds the server's raw cumulative counters and histogram buckets, a request chunk what arrived on the
# wire and when; spectui.analysis.attach_stats computes rates and quantiles from them, so a live attach and a
# replayed attach trace give the same numbers. One attach session is: ``AttachStarted``, then per interval
# one ``MetricsScraped`` per URL (also for a URL that failed: ``error`` says why, in one line), in request
# mode ``RequestStarted``, ``RequestChunk``... ``RequestEnded``, and finally ``AttachEnded``.

# What a URL turned out to be.
KIND_LLAMA_SERVER = "llama-server"
KIND_VLLM = "vllm"
KIND_SGLANG = "sglang"
KIND_PROMETHEUS = "prometheus"  # Prometheus text from something else: no speculative decoding metrics
KIND_UNKNOWN = ""  # not reached yet
KINDS = (KIND_LLAMA_SERVER, KIND_VLLM, KIND_SGLANG, KIND_PROMETHEUS, KIND_UNKNOWN)

# Why a streamed request ended.
REQ_STOP = "stop"  # the server ended it (end of generation, stop string)
REQ_LENGTH = "length"  # reached -n
REQ_ERROR = "error"  # connection lost, HTTP error, malformed stream: RequestEnded.error says which
REQ_STOPPED = "stopped"  # Ctrl+C
REQ_REASONS = (REQ_STOP, REQ_LENGTH, REQ_ERROR, REQ_STOPPED)


@dataclass(frozen=True)
class Target:
    """One watched server: the URL as given (its /metrics is scraped) and what it turned out to be."""

    url: str
    kind: str = KIND_UNKNOWN


@dataclass(frozen=True)
class Bucket:
    """One cumulative histogram bucket: observations <= ``le`` (seconds). +Inf is Histogram.count."""

    le: float
    count: float


@dataclass(frozen=True)
class Histogram:
    buckets: tuple[Bucket, ...] = ()  # finite upper bounds, ascending
    count: float = 0.0  # all observations (the +Inf bucket)
    sum: float = 0.0


@dataclass(frozen=True)
class PositionCount:
    """Drafts whose token at ``position`` (0 = first drafted token) was accepted, cumulative."""

    position: int
    accepted: float


@dataclass(frozen=True)
class EngineCounters:
    """One engine's cumulative counters at one scrape, as the server published them.

    ``engine`` is vLLM's ``engine`` label (data-parallel rank; SGLang's ``dp_rank``), "" for a
    single-engine server. Counters the server does not publish stay at -1.
    """

    engine: str = ""
    model: str = ""
    speculation: bool = False  # the server publishes speculative decoding counters (or SGLang's gauge)
    num_drafts: float = -1.0  # verify steps that had a draft
    num_draft_tokens: float = -1.0
    num_accepted_tokens: float = -1.0
    accepted_per_pos: tuple[PositionCount, ...] = ()
    drafts_derived: bool = False  # num_drafts = emitted - accepted (vLLM v0 had no drafts counter)
    generated_tokens: float = -1.0  # tokens the engine generated (all requests)
    ttft: Histogram | None = None  # the engine's own time-to-first-token histogram (seconds)
    itl: Histogram | None = None  # inter-token latency histogram (seconds)
    accept_length: float = -1.0  # SGLang's sglang:spec_accept_length gauge (mean tokens per verify)
    accept_rate: float = -1.0  # SGLang's sglang:spec_accept_rate gauge (accepted / drafted tokens)


@dataclass(frozen=True)
class AttachStarted:
    type: Literal["attach_start"] = "attach_start"
    started_at: float = 0.0  # unix time
    targets: tuple[Target, ...] = ()
    interval: float = 1.0  # seconds between scrapes
    prompt: str = ""  # request mode only
    n_predict: int = 0
    draft_max: int = -1  # per-request draft length asked for (-1: the server's own)


@dataclass(frozen=True)
class MetricsScraped:
    """One scrape of one URL's /metrics (``t``: seconds since attach started, at the response)."""

    type: Literal["scrape"] = "scrape"
    url: str = ""
    t: float = 0.0
    kind: str = KIND_UNKNOWN
    error: str = ""  # one line when the scrape failed ("" = it worked)
    process_start: float = 0.0  # the server's start time (unix) when it says; a change means a restart
    speculation: str = ""  # "on" / "none" when the server says (llama-server's /slots), else ""
    engines: tuple[EngineCounters, ...] = ()


@dataclass(frozen=True)
class RequestStarted:
    type: Literal["request_start"] = "request_start"
    url: str = ""
    t: float = 0.0
    api: str = ""  # "completion" (llama-server /completion) or "openai" (/v1/completions)
    prompt: str = ""
    n_predict: int = 0
    draft_max: int = -1  # speculative.n_max sent with the request (-1: not sent)


@dataclass(frozen=True)
class RequestChunk:
    """One streamed chunk, timed on arrival. ``draft_n`` / ``draft_n_accepted`` are the server's
    cumulative figures for this request when it sends them per chunk (llama-server
    ``timings_per_token``), else -1."""

    type: Literal["request_chunk"] = "request_chunk"
    t: float = 0.0
    text: str = ""
    n_tokens: int = 1
    draft_n: int = -1
    draft_n_accepted: int = -1


@dataclass(frozen=True)
class RequestEnded:
    """The server's own per-request figures where it gave them (-1 otherwise)."""

    type: Literal["request_end"] = "request_end"
    t: float = 0.0
    reason: str = REQ_STOP
    error: str = ""
    n_tokens: int = 0  # tokens received (server count when given, else chunks)
    draft_n: int = -1  # drafted tokens (llama-server timings.draft_n, vLLM num_draft_tokens)
    draft_n_accepted: int = -1
    spec_steps: int = -1  # verify steps with a draft (vLLM num_spec_steps, SGLang spec_verify_ct)
    # verify steps whose draft at position i was accepted, from the engine's per-request histogram (vLLM's
    # acceptance_histogram, SGLang's spec_accept_histogram); () where it gives none (llama-server)
    accepted_per_pos: tuple[int, ...] = ()
    prompt_n: int = -1  # prompt tokens the server evaluated (usage.prompt_tokens / timings.prompt_n)
    prompt_ms: float = -1.0  # server-side prompt time (llama-server timings.prompt_ms)
    predicted_ms: float = -1.0  # server-side generation time
    predicted_n: int = -1


@dataclass(frozen=True)
class AttachEnded:
    type: Literal["attach_end"] = "attach_end"
    t: float = 0.0
    reason: str = "stopped"  # "stopped" (Ctrl+C / SIGTERM), "done" (request mode finished), "error"
    error: str = ""


RunEvent = Union[RunStarted, PassEvent, SettingsChanged, RunEnded]
AttachEvent = Union[AttachStarted, MetricsScraped, RequestStarted, RequestChunk, RequestEnded, AttachEnded]
Event = Union[RunEvent, AttachEvent]
EVENT_TYPES: dict[str, type] = {
    "start": RunStarted, "pass": PassEvent, "settings": SettingsChanged, "end": RunEnded,
    "attach_start": AttachStarted, "scrape": MetricsScraped, "request_start": RequestStarted,
    "request_chunk": RequestChunk, "request_end": RequestEnded, "attach_end": AttachEnded,
}
ATTACH_EVENT_TYPES: tuple[type, ...] = (AttachStarted, MetricsScraped, RequestStarted, RequestChunk, RequestEnded,
                                        AttachEnded)

