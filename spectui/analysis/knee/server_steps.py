"""The knee on the server's own batch shapes: llama-server's steps at concurrency c (``update_slots`` in
tools/server/server-context.cpp of the llama.cpp vendored in llama-cpp-python 0.3.36), replayed on this machine's
measured costs for the same requests the bench sends. docs/batch-knee.md ("Prediction on the server's own
steps") gives the rules this follows: the slot a request takes, what one step batches (every generating slot's
drafts, then new prompts up to ``N_BATCH``), its micro-batches (``split_equal``, at most ``N_UBATCH``), the draft
model's evaluation of the same batch, the sampled rows; and the prices: ``chunk(T) + excess(o)`` a target
micro-batch, a measured decode or verify at its own point, interpolated between measured sizes (``interp``) and
never dearer than a larger size (``monotone``). Expected values, no sampling: a slot gains ``leviathan(a, d)``
tokens a pass of d drafts, at the level's own acceptance. No Textual imports.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Sequence

from ...contract.errors import SpectuiError
from ..cost.costmodel import leviathan
from ..measured.step_costs import StepCosts

N_BATCH = 2048  # llama-server's default --batch-size (common.h n_batch)
N_UBATCH = 512  # llama-server's default --ubatch-size (common.h n_ubatch)
SIMILARITY = 0.1  # llama-server's default --slot-prompt-similarity
CLIENT_GAP_MS = 2.0  # a finished request's client sends its next one this much later (loopback HTTP)
MAX_STEPS = 2_000_000


# ---------------------------------------------------------------- interpolation


def interp(points: Sequence[tuple[float, float]], x: float) -> float:
    """Piecewise linear through ``points`` (x ascending); beyond the ends along the nearest two points, never
    below 0."""
    xs = [p[0] for p in points]
    if len(points) == 1:
        return points[0][1] * (x / xs[0] if xs[0] else 1.0)
    i = bisect.bisect_left(xs, x)
    i = min(max(i, 1), len(points) - 1)
    (x0, y0), (x1, y1) = points[i - 1], points[i]
    y = y0 + (y1 - y0) * (x - x0) / (x1 - x0) if x1 != x0 else y0
    return max(0.0, y)


def monotone(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """A cost that cannot fall as the work grows, read from measurements that a busy machine only slows: each
    point at most what any larger size cost (the running minimum from the largest), so one slowed sample
    does not make a small step dearer than a large one."""
    out: list[tuple[float, float]] = []
    low = float("inf")
    for x, y in sorted(points, reverse=True):
        low = min(low, y)
        out.append((x, low))
    return out[::-1]


@dataclass(frozen=True)
class MicroBatch:
    seqs: int  # sequences in it
    tokens: int  # all its tokens
    outputs: int  # rows with logits


class ServerCosts:
    """What one micro-batch costs on this machine (ms), from the batched curve and the step costs."""

    def __init__(self, curve, steps: StepCosts) -> None:
        self.curve = curve
        self.steps = steps
        # chunk(T): a 1-token decode is the first point (one row of logits, like a chunk's last)
        self._chunk_t = monotone([(1.0, curve.plain(1))] + [(float(c), ms) for c, ms in
                                                            zip(steps.chunks, steps.target_chunk_ms) if c > 1])
        self._chunk_d = monotone([(1.0, curve.draft_step(1))] + [(float(c), ms) for c, ms in
                                                                 zip(steps.chunks, steps.draft_chunk_ms) if c > 1]
                                 ) if curve.has_draft and steps.draft_chunk_ms else []
        ex: dict[int, list[float]] = {}
        uniform: dict[tuple[int, int], float] = {}
        rows = {1: list(curve.plain_ms)} | {k + 1: list(curve.verify_ms[k]) for k in curve.ks}
        for n, row in rows.items():
            for b, ms in monotone(list(zip(map(float, curve.seqs), row))):
                uniform[(int(b), n)] = ms
        for (b, n), ms in uniform.items():
            ex.setdefault(b * n, []).append(ms - interp(self._chunk_t, b * n))
        self._excess = [(1.0, 0.0)] + sorted((float(o), max(0.0, sum(v) / len(v))) for o, v in ex.items() if o > 1)
        self._uniform = uniform
        self._draft_gen = monotone([(float(b), curve.draft_step(b)) for b in curve.seqs]) if curve.has_draft else []

    @property
    def has_draft(self) -> bool:
        return bool(self._chunk_d)

    def target(self, mb: MicroBatch) -> float:
        if mb.tokens == mb.outputs and mb.tokens % mb.seqs == 0:  # a decode / verify step: its measured point
            n = mb.tokens // mb.seqs
            row = [(float(b), self._uniform[(b, n)]) for b in self.curve.seqs if (b, n) in self._uniform]
            if row and (mb.seqs, n) in self._uniform:
                return self._uniform[(mb.seqs, n)]
            if len(row) >= 2:
                return interp(row, mb.seqs)
        return interp(self._chunk_t, mb.tokens) + interp(self._excess, mb.outputs)

    def draft_eval(self, mb: MicroBatch) -> float:
        """The draft model evaluating a micro-batch of the target's (one row of logits)."""
        return interp(self._chunk_d, mb.tokens) if self._chunk_d else 0.0

    def draft_gen(self, seqs: int) -> float:
        """One draft step of ``seqs`` slots, one token each."""
        return interp(self._draft_gen, seqs) if self._draft_gen else 0.0

    @property
    def sample_ms(self) -> float:
        return self.steps.sample_ms


# ---------------------------------------------------------------- llama-server's micro-batches


@dataclass
class Segment:
    """One slot's tokens in a step's batch, in batch order."""

    seq: int
    tokens: int
    outputs_all: bool  # a generating slot: every row has logits
    output_last: bool = False  # a prompt that ends in this batch: its last row has logits
    used: int = 0


def split_equal(segments: list[Segment], n_ubatch: int = N_UBATCH) -> list[MicroBatch]:
    """llama.cpp's ``llama_batch_allocr::split_equal(n_ubatch, sequential=true)`` on whole segments: a micro-batch
    takes, scanning the batch in order, the next sequence whose id is one more than the last taken (the first
    one free), and the same number of tokens from each, until one runs out or n_ubatch would be passed."""
    out = []
    while True:
        cur: list[Segment] = []
        for s in segments:
            if s.used < s.tokens and (not cur or s.seq == cur[-1].seq + 1):
                cur.append(s)
        if not cur:
            return out
        n = len(cur)
        t = max(1, min(min(s.tokens - s.used for s in cur), n_ubatch // n))
        outputs = 0
        for s in cur:
            if s.outputs_all:
                outputs += t
            elif s.output_last and s.used + t == s.tokens:
                outputs += 1
            s.used += t
        out.append(MicroBatch(n, n * t, outputs))


def runs(seq_ids: Sequence[int]) -> list[int]:
    """Lengths of the runs of consecutive ids (sorted): the micro-batches of one token a sequence."""
    out: list[int] = []
    last = None
    for s in sorted(seq_ids):
        if last is not None and s == last + 1:
            out[-1] += 1
        else:
            out.append(1)
        last = s
    return out


# ---------------------------------------------------------------- the workload and the speculation


@dataclass(frozen=True)
class Workload:
    """A bench level: ``requests`` (prompt index, prompt tokens, output tokens) sent in order, ``concurrency``
    in flight, to a server with ``slots`` slots. ``prefix[i][j]``: tokens prompts i and j share at their start
    (the slot choice; None: unknown, taken as none shared)."""

    requests: tuple[tuple[int, int, int], ...]
    concurrency: int
    slots: int
    prefix: tuple[tuple[int, ...], ...] | None = None
    n_batch: int = N_BATCH
    n_ubatch: int = N_UBATCH

    def shared(self, i: int, j: int) -> int:
        if i == j:
            return 10**9  # the same prompt: all of it
        if self.prefix is None or i >= len(self.prefix) or j >= len(self.prefix[i]):
            return 0
        return self.prefix[i][j]


@dataclass(frozen=True)
class Speculation:
    """How the speculating server drafts: up to ``k`` tokens a pass, ``length`` of them (at most the slot's
    ``min(k, tokens left - 1)``; None: k) in a share ``share`` of its passes (1 for a draft model; prompt lookup
    drafts only where it finds a match), each accepted at the per-draft rate ``rate``. Which passes draft is
    spread evenly over each slot's passes (a fixed pattern, no sampling), so the steps mix drafting and plain
    slots as the server's do."""

    k: int
    rate: float
    draft_model: bool = True
    share: float = 1.0
    length: float | None = None

    def drafts(self, left: int, n_pass: int, slot: int) -> int:
        """Tokens drafted in a slot's ``n_pass``-th pass with ``left`` tokens to go."""
        cap = max(0, min(self.k, left - 1))
        if cap <= 0 or self.share <= 0:
            return 0
        if self.share < 1.0:
            phase = (slot * 0.6180339887) % 1.0  # slots out of step with each other
            if int((n_pass + 1) * self.share + phase) == int(n_pass * self.share + phase):
                return 0
        return min(cap, max(1, round(self.length if self.length is not None else self.k)))

    def gain(self, drafted: int) -> float:
        """Expected tokens of a pass with ``drafted`` drafts: leviathan(rate, drafted)."""
        return leviathan(self.rate, drafted) if drafted > 0 else 1.0


@dataclass
class _Slot:
    id: int
    state: str = "idle"  # idle, prompt, generating
    last_prompt: int | None = None
    t_last: float = -1.0
    request: int = -1
    prompt_left: int = 0
    made: float = 0.0  # output tokens so far (expected)
    target: int = 0
    arrived: float = 0.0
    client: int = -1
    passes: int = 0


@dataclass
class SimResult:
    wall_ms: float
    tokens: int
    steps: int
    micro_batches: int
    ttft_ms: list[float] = field(default_factory=list)
    ends_ms: list[float] = field(default_factory=list)

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / (self.wall_ms / 1000.0) if self.wall_ms > 0 else 0.0


def _take_slot(slots: list[_Slot], prompt: int, prompt_tokens: int, w: Workload) -> _Slot | None:
    best, best_sim = None, 0.0
    for s in slots:
        if s.state != "idle" or s.last_prompt is None:
            continue
        sim = min(w.shared(prompt, s.last_prompt), prompt_tokens) / max(prompt_tokens, 1)
        if sim > best_sim and sim > SIMILARITY:
            best, best_sim = s, sim
    if best is not None:
        return best
    t_last = None
    for s in slots:  # least recently used; ties: the last one (llama-server's `<=`)
        if s.state == "idle" and (t_last is None or s.t_last <= t_last):
            best, t_last = s, s.t_last
    return best


def simulate(costs: ServerCosts, w: Workload, spec: Speculation | None = None) -> SimResult:
    """One bench level on llama-server, step by step (the module's docstring): its wall time from the first
    request sent to the last one ended, tokens generated, steps and micro-batches, each request's TTFT."""
    if w.concurrency < 1 or w.slots < 1 or not w.requests:
        raise SpectuiError("a level needs requests, a concurrency and slots")
    if spec is not None and spec.draft_model and not costs.has_draft:
        raise SpectuiError("the draft model's costs were not measured (no --draft)")
    slots = [_Slot(i) for i in range(w.slots)]
    clients = _Clients(w)
    t = 0.0
    res = SimResult(0.0, 0, 0, 0)
    while clients.done < len(w.requests):
        clients.admit(slots, t)
        if not any(s.state != "idle" for s in slots):
            t = clients.arrivals[0][0]
            continue
        res.steps += 1
        if res.steps > MAX_STEPS:
            raise SpectuiError("the server simulation did not finish (a level of more steps than it can replay)")
        segments, gains, step_ms = _one_step(costs, w, spec, slots, res)
        t += step_ms
        _after_step(slots, segments, gains, t, res, clients)
    res.wall_ms = t
    return res


class _Clients:
    """The bench's clients: c requests in flight, each client sending its next request a moment after its last
    one ended, until the level's requests are all sent; ``done`` counts the ended ones."""

    def __init__(self, w: Workload) -> None:
        self.w = w
        self.arrivals: list[tuple[float, int, int]] = [(0.0, i, i) for i in range(min(w.concurrency,
                                                                                       len(w.requests)))]
        self.next_req = len(self.arrivals)
        self.done = 0

    def admit(self, slots: list[_Slot], t: float) -> None:
        """Requests that have arrived by ``t`` take free slots (tasks are taken between steps)."""
        self.arrivals.sort()
        while self.arrivals and self.arrivals[0][0] <= t:
            at, req, client = self.arrivals.pop(0)
            prompt, p_tok, n_out = self.w.requests[req]
            s = _take_slot(slots, prompt, p_tok, self.w)
            if s is None:
                self.arrivals.insert(0, (at, req, client))
                break
            s.state, s.request, s.prompt_left, s.made, s.target = "prompt", req, max(1, p_tok), 0.0, max(1, n_out)
            s.arrived, s.client, s.last_prompt, s.passes = at, client, prompt, 0

    def ended(self, s: _Slot, t: float) -> None:
        """``s``'s request ended at ``t``: its client sends the next request, if any is left."""
        self.done += 1
        if self.next_req < len(self.w.requests):
            self.arrivals.append((t + CLIENT_GAP_MS, self.next_req, s.client))
            self.next_req += 1


def _one_step(costs: ServerCosts, w: Workload, spec: Speculation | None, slots: list[_Slot],
              res: SimResult) -> tuple[list[Segment], dict[int, float], float]:
    """One ``update_slots``: the generating slots' tokens and drafts, then prompts up to n_batch; its cost
    (the draft steps, the target's micro-batches, the draft's evaluation of them, the rows sampled). Returns
    (its segments, each generating slot's expected tokens, its ms)."""
    segments: list[Segment] = []
    gains: dict[int, float] = {}
    drafting: list[tuple[int, int]] = []
    sampled = 0.0
    for s in (x for x in slots if x.state == "generating"):
        drafted = spec.drafts(s.target - int(s.made), s.passes, s.id) if spec is not None else 0
        s.passes += 1
        segments.append(Segment(s.id, 1 + drafted, outputs_all=True))
        gains[s.id] = spec.gain(drafted) if spec is not None else 1.0
        sampled += gains[s.id]
        if drafted > 0 and spec is not None and spec.draft_model:
            drafting.append((s.id, drafted))
    room = w.n_batch - sum(x.tokens for x in segments)
    for s in (x for x in slots if x.state == "prompt"):
        if room <= 0:
            break
        n = min(s.prompt_left, room)
        segments.append(Segment(s.id, n, outputs_all=False, output_last=n == s.prompt_left))
        room -= n
    step_ms = 0.0
    # the drafts first: k steps of one token a drafting slot, cut into runs of consecutive slot ids
    if drafting:
        for j in range(max(d for _, d in drafting)):
            ids = [sid for sid, d in drafting if d > j]
            step_ms += sum(costs.draft_gen(n) for n in runs(ids))
            sampled += len(ids)
    mbs = split_equal(segments, w.n_ubatch)
    res.micro_batches += len(mbs)
    step_ms += sum(costs.target(mb) for mb in mbs)
    if spec is not None and spec.draft_model:
        step_ms += sum(costs.draft_eval(mb) for mb in mbs)
    sampled += sum(1 for seg in segments if seg.output_last)
    return segments, gains, step_ms + sampled * costs.sample_ms


def _after_step(slots: list[_Slot], segments: list[Segment], gains: dict[int, float], t: float, res: SimResult,
                clients: _Clients) -> None:
    """What a step at ``t`` did to each slot: tokens made, a prompt done (its TTFT), a request ended."""
    for seg in segments:
        s = slots[seg.seq]
        if s.state == "generating":
            s.made += gains[s.id]
        elif seg.output_last:  # the prompt is done: its first token sampled now
            s.state, s.made, s.prompt_left = "generating", 1.0, 0
            res.ttft_ms.append(t - s.arrived)
        else:
            s.prompt_left -= seg.tokens
        if s.state == "generating" and s.made >= s.target:
            res.tokens += s.target
            res.ends_ms.append(t)
            s.state, s.t_last = "idle", t
            clients.ended(s, t)


# ---------------------------------------------------------------- a bench level, predicted


def speculation_of_level(k: int, drafted: int, accepted: int, drafts: int, output_tokens: int, n_requests: int,
                         draft_model: bool) -> Speculation | None:
    """The speculation a level measured: a pass drafting ``drafted / drafts`` tokens in ``drafts`` of its
    passes (every pass with a draft model), each at the rate whose expectation is its tokens a drafted pass.
    ``drafts`` < 1 (not published): every drafted pass a full k."""
    from ..measured.batch_knee import acceptance_from_tokens_per_pass  # noqa: PLC0415 - the one inverse

    if drafted <= 0 or k < 1:
        return None
    drafts = drafts if drafts > 0 else max(1, round(drafted / k))
    length = drafted / drafts
    rate = acceptance_from_tokens_per_pass(1.0 + accepted / drafts, max(1, round(length)))
    passes = max(drafts, output_tokens - n_requests - accepted)
    share = 1.0 if draft_model else min(1.0, drafts / passes)
    return Speculation(k, rate, draft_model, share, min(float(k), length))


@dataclass(frozen=True)
class LevelPrediction:
    concurrency: int
    base_tps: float
    spec_tps: float
    base_ttft_ms: float
    spec_ttft_ms: float
    micro_batches_per_step: float

    @property
    def speedup(self) -> float:
        return self.spec_tps / self.base_tps if self.base_tps > 0 else 0.0


def predict_level(costs: ServerCosts, w: Workload, spec: Speculation) -> LevelPrediction:
    base = simulate(costs, w, None)
    sp = simulate(costs, w, spec)
    med = lambda xs: sorted(xs)[len(xs) // 2] if xs else 0.0  # noqa: E731
    return LevelPrediction(w.concurrency, base.tokens_per_second, sp.tokens_per_second, med(base.ttft_ms),
                           med(sp.ttft_ms), sp.micro_batches / max(sp.steps, 1))
