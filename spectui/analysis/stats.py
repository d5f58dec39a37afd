"""Statistics computed from events alone, with vLLM's and llama.cpp's definitions.

Definitions (identical for a live run and a replayed trace, because both are the same events):

- ``n_drafted``: draft tokens proposed, summed over passes. ``n_accepted``: drafts accepted.
- acceptance rate = n_accepted / n_drafted  (llama.cpp's ``accept``, vLLM's draft acceptance rate).
- mean acceptance length = 1 + n_accepted / (passes that drafted at least one token)  (vLLM: the
  tokens one verify pass yields on average, counting the target's own token).
- acceptance at position i (1-based) = passes whose draft i was accepted / passes that drafted
  position i.  Drafts after the first rejection count as drafted and not accepted (as in vLLM).
- TTFT = wall time of the prefill pass (pass 0): the first token comes from prompt evaluation, which
  speculation cannot shorten.
- decode tokens/s = tokens emitted after the first / wall time of the passes after the prefill (the
  figure llama.cpp prints as "decoded ... t/s"). Windowed TPS uses the last ``window`` passes.
- ITL (inter-token latency) per emitted token = wall time of its pass / tokens that pass emitted:
  a pass that yields 3 tokens in 150 ms contributes three ITLs of 50 ms. The prefill token is excluded
  (its latency is the TTFT). p50/p95 are nearest-rank percentiles over all such tokens.
- draft cost ratio c = draft time per drafted token / target single-token decode time; the target
  single-token time is the mean verify time of k = 0 passes when there are any, else the start event's
  calibration ``target_decode_ms``.
- verify time by k: mean verify ms of passes that verified k drafts (batch of k + 1 tokens).
- contention: other processes' CPU use on this run's cores (``PassEvent.others_cpu``, wall-weighted
  over the last ``window`` passes). The run is *contended* while that is at least
  ``CONTENDED_CORES`` and the windowed tokens/s is below ``CONTENDED_FRACTION`` of the best windowed
  tokens/s seen without contention since the settings last changed (or while there is no such
  reference yet). llama.cpp's OpenMP threads wait for each other at every layer, so one busy core
  can cut a 2-thread run's speed several times over; this says so instead of blaming speculation.
- acceptance by draft confidence: drafts the target judged (accepted or the first rejected; discarded
  drafts were never judged) grouped by q, the draft's probability for the token it drafted
  (``DraftToken.prob``: at the temperature in force, temperature 0 reporting the temperature-1 softmax),
  into ``CONFIDENCE_EDGES`` buckets; rate = accepted / judged. An n-gram draft is a point mass (q = 1).
- drafting continues at position i = passes that drafted position i / passes that asked for at least i
  drafts and drafted the i - 1 before it (1.0 without --draft-p-min for the draft model; below 1 where
  the draft stopped for confidence or the n-gram drafter had a shorter match). The cost model uses it.
- pipelined passes (``--pipeline``, ``PassEvent.pipeline``): the hit rate = passes after which the block
  drafted during their verify was the next pass's drafts (every draft accepted and the target's token the
  draft's guess) / pipelined passes; waste = speculative tokens thrown away / (those + the drafts of
  pipelined passes); overlap share = the draft thread's drafting during the target's verifies / the verify
  time of pipelined passes; hidden drafting = 1 - the loop's wait for drafts / the draft thread's drafting.
  In a pipelined pass ``Timing.draft_ms`` is the loop's wait; the draft cost ratio c counts the draft
  thread's own drafting (``PipeInfo.draft_busy_ms``) there.

Per drafter (a chain, or the ``d`` key mid-run): the same counts for the passes each drafter proposed
(``drafter_stats``; ``StatsSnapshot.by_drafter``).

``RunStats`` is an incremental accumulator, so the TUI, a streaming replay and the headless summary
all use the same code. Exact ITL percentiles need every token's ITL: they are kept in a compact
``array('d')`` (8 bytes per token); token ids and texts are kept only with ``keep_tokens=True`` (the
JSON summary needs them, the text summary does not).
"""

from __future__ import annotations

from array import array
from collections import deque
from dataclasses import dataclass, field
from typing import Iterable

from ..contract.events import ACCEPTED, REJECTED, Event, PassEvent, RunEnded, RunStarted, SettingsChanged
from .drafter_stats import ByDrafter, DrafterStat
from .quantiles import percentile
from .rates import mean_acceptance_length
from .tree_stats import TreeCounts, TreeStats

CONTENDED_CORES = 0.5  # other processes using at least this many of the run's cores ...
CONTENDED_FRACTION = 0.6  # ... while tokens/s is below this fraction of the run's own uncontended rate


@dataclass(frozen=True)
class PositionStat:
    position: int  # 1-based draft position
    drafted: int
    accepted: int

    @property
    def rate(self) -> float:
        return self.accepted / self.drafted if self.drafted else 0.0


def pooled_rates(snapshots: Iterable[StatsSnapshot]) -> tuple[float, ...]:
    """Acceptance by draft position over several runs: per position, the accepted drafts of every run over
    the drafted ones (pooled, not a mean of the runs' rates: a run that drafted more weighs more), positions
    1.. in order; 0.0 where a position had no draft (a sweep's cell, a bench row group)."""
    pos: dict[int, list[int]] = {}
    for s in snapshots:
        for p in s.acceptance_by_position:
            slot = pos.setdefault(p.position, [0, 0])
            slot[0] += p.drafted
            slot[1] += p.accepted
    return tuple(a / d if d else 0.0 for _, (d, a) in sorted(pos.items()))


CONFIDENCE_EDGES = (0.3, 0.5, 0.7, 0.9)  # q buckets: <0.3, 0.3-0.5, 0.5-0.7, 0.7-0.9, >=0.9


def confidence_bucket(q: float) -> int:
    """Index of q's bucket (0 .. len(CONFIDENCE_EDGES)); each bucket includes its lower edge."""
    i = 0
    while i < len(CONFIDENCE_EDGES) and q >= CONFIDENCE_EDGES[i]:
        i += 1
    return i


def confidence_label(i: int) -> str:
    edges = CONFIDENCE_EDGES
    if i == 0:
        return f"<{edges[0]:g}"
    if i == len(edges):
        return f">={edges[-1]:g}"
    return f"{edges[i - 1]:g}-{edges[i]:g}"


@dataclass(frozen=True)
class ConfidenceBucket:
    label: str  # "<0.3", "0.3-0.5", ..., ">=0.9"
    lo: float
    hi: float  # exclusive (1.0 for the last bucket, which includes q = 1)
    judged: int  # drafts in the bucket the target judged (accepted + rejected)
    accepted: int

    @property
    def rate(self) -> float:
        return self.accepted / self.judged if self.judged else 0.0


@dataclass(frozen=True)
class ContinueStat:
    position: int  # 1-based draft position
    asked: int  # passes that asked for >= position drafts and drafted position - 1
    drafted: int  # ... of which drafted this position

    @property
    def rate(self) -> float:
        return self.drafted / self.asked if self.asked else 1.0


@dataclass(frozen=True)
class PipelineStats:
    """The pipelined passes of a run (see the module docstring); sums over those passes."""

    passes: int = 0
    hits: int = 0  # the block drafted during the pass's verify was the next pass's drafts
    overlapped: int = 0  # passes whose drafts were drafted during the previous verify
    drafted: int = 0  # drafts of pipelined passes
    thrown: int = 0  # speculative tokens thrown away
    thrown_by: tuple[tuple[str, int], ...] = ()  # (PipeInfo.thrown_why, tokens)
    overlap_ms: float = 0.0
    verify_ms: float = 0.0
    wait_ms: float = 0.0  # the loop's wait for drafts (Timing.draft_ms of pipelined passes)
    busy_ms: float = 0.0  # the draft thread's drafting for them
    cut_wait_ms: float = 0.0  # the loop's waits for the draft thread to stop after a miss

    @property
    def hit_rate(self) -> float | None:
        return self.hits / self.passes if self.passes else None

    @property
    def waste(self) -> float | None:
        n = self.thrown + self.drafted
        return self.thrown / n if n else None

    @property
    def overlap_share(self) -> float | None:
        return self.overlap_ms / self.verify_ms if self.verify_ms > 0 else None

    @property
    def hidden_share(self) -> float | None:
        return max(0.0, 1.0 - self.wait_ms / self.busy_ms) if self.busy_ms > 0 else None


@dataclass(frozen=True)
class StatsSnapshot:
    """A frozen view of the statistics after some prefix of the event stream."""

    n_passes: int = 0  # passes after the prefill pass
    n_emitted: int = 0  # all emitted tokens, the prefill token included
    n_drafted: int = 0
    n_accepted: int = 0
    passes_drafted: int = 0
    acceptance_rate: float = 0.0
    mean_acceptance_length: float = 0.0
    tokens_per_pass: float = 0.0  # emitted per decode pass (prefill excluded)
    acceptance_by_position: tuple[PositionStat, ...] = ()
    ttft_ms: float | None = None  # None: no first token (yet): the run never evaluated its prompt
    tokens_per_second: float = 0.0  # decode TPS over the whole run so far
    tokens_per_second_window: float = 0.0
    itl_ms_p50: float = 0.0
    itl_ms_p95: float = 0.0
    draft_ms_total: float = 0.0  # totals over decode passes (prefill excluded: that is TTFT)
    verify_ms_total: float = 0.0
    other_ms_total: float = 0.0
    decode_wall_ms: float = 0.0  # wall of all passes after prefill
    draft_ms_per_token: float = 0.0
    target_decode_ms: float = 0.0  # single-token target decode (k=0 passes or calibration)
    draft_decode_ms: float = 0.0  # single-token draft decode, back to back (start event's calibration)
    draft_cost_ratio: float = 0.0  # c
    verify_ms_by_k: tuple[tuple[int, float, int], ...] = ()  # (k, mean ms, count)
    n_ctx_used: int = 0
    n_ctx: int = 0
    elapsed_s: float = 0.0
    stop_reason: str = ""
    # Contention: other processes took this run's cores (see ``RunStats.contention``). ``contention`` is
    # a one-line explanation while it lasts ("" otherwise); ``contended_passes`` counts such passes.
    others_cpu: float = -1.0  # cores other processes used, recent passes (-1 = not measured)
    contention: str = ""
    contended_passes: int = 0
    contention_peak_others: float = 0.0  # most cores other processes took in a contended window
    contention_low_tps: float = 0.0  # slowest windowed tokens/s while contended
    confidence: tuple[ConfidenceBucket, ...] = ()  # acceptance by draft confidence, every bucket
    draft_continue_by_position: tuple[ContinueStat, ...] = ()
    draft_stops: tuple[tuple[str, int], ...] = ()  # (PassEvent.draft_stop, passes), passes that asked k > 0
    pipeline: PipelineStats | None = None  # None: no pipelined pass
    by_drafter: tuple[DrafterStat, ...] = ()  # per drafter that drafted (drafter_stats.py)
    tree: TreeStats | None = None  # the tree passes' nodes and acceptance by depth (tree_stats.py); None: none


@dataclass
class RunStats:
    window: int = 20
    keep_tokens: bool = True
    start: RunStarted | None = None
    end: RunEnded | None = None
    n_passes: int = 0
    n_emitted: int = 0
    n_drafted: int = 0
    n_accepted: int = 0
    passes_drafted: int = 0
    pos_drafted: list[int] = field(default_factory=list)
    pos_accepted: list[int] = field(default_factory=list)
    ttft_ms: float | None = None  # the prefill pass's wall time; None until it comes (a run that never started)
    decode_tokens: int = 0
    decode_wall_ms: float = 0.0
    draft_ms: float = 0.0
    verify_ms: float = 0.0
    other_ms: float = 0.0
    itl_ms: array = field(default_factory=lambda: array("d"))
    verify_by_k: dict[int, list[float]] = field(default_factory=dict)  # k -> [sum_ms, count]
    recent: deque = field(default_factory=lambda: deque(maxlen=20))  # (tokens, wall_ms)
    by_drafter: ByDrafter = field(default_factory=ByDrafter)
    n_ctx_used: int = 0
    elapsed_s: float = 0.0
    tokens: array = field(default_factory=lambda: array("q"))
    text_parts: list[str] = field(default_factory=list)
    last_draft_max: int | None = None  # draft length asked for in the latest decode pass (settings in force)
    recent_others: deque = field(default_factory=lambda: deque(maxlen=20))  # (others_cpu, wall_ms), measured only
    best_uncontended_tps: float = 0.0  # reference rate since the last settings change
    contended_passes: int = 0
    contention_low_tps: float = 0.0  # slowest windowed tokens/s seen while contended
    contention_max_others: float = 0.0
    conf_judged: list[int] = field(default_factory=lambda: [0] * (len(CONFIDENCE_EDGES) + 1))
    conf_accepted: list[int] = field(default_factory=lambda: [0] * (len(CONFIDENCE_EDGES) + 1))
    pos_asked: list[int] = field(default_factory=list)  # position i+1: asked >= i+1 and drafted i
    draft_stop_counts: dict[str, int] = field(default_factory=dict)
    draft_work_ms: float = 0.0  # drafting itself (c): Timing.draft_ms, or the draft thread's in pipelined passes
    pipe: dict[str, float] = field(default_factory=dict)  # PipelineStats' sums
    pipe_thrown: dict[str, int] = field(default_factory=dict)
    trees: TreeCounts = field(default_factory=TreeCounts)

    def __post_init__(self) -> None:
        self.recent = deque(maxlen=self.window)
        self.recent_others = deque(maxlen=self.window)

    # ------------------------------------------------------------ feeding
    def update(self, ev: Event) -> None:
        """Take one event of a run, in order (a live run's, a replayed trace's, a benchmark's).

        Args:
            ev: any event; passes, the start and the end count, a settings change resets the contention
                reference (k or temperature moved the rate legitimately).
        """
        if isinstance(ev, PassEvent):
            self._pass(ev)
        elif isinstance(ev, RunStarted):
            self.start = ev
        elif isinstance(ev, RunEnded):
            self.end = ev
            self.elapsed_s = max(self.elapsed_s, ev.wall_s)
        elif isinstance(ev, SettingsChanged):
            self.best_uncontended_tps = 0.0  # k or temperature moved the rate legitimately: new reference

    def extend(self, events) -> "RunStats":
        for ev in events:
            self.update(ev)
        return self

    def _pass(self, ev: PassEvent) -> None:
        n_out = len(ev.emitted)
        self.n_emitted += n_out
        if self.keep_tokens:
            for t in ev.emitted:
                self.tokens.append(t.id)
                self.text_parts.append(t.text)
        self.n_ctx_used = ev.n_ctx_used
        self.elapsed_s = ev.timing.t_end
        if ev.prefill:
            self.ttft_ms = ev.timing.wall_ms
            return
        self._drafting(ev)
        self.verify_ms += ev.timing.verify_ms
        self.other_ms += ev.timing.other_ms
        self.n_passes += 1
        self.last_draft_max = ev.k if ev.settings.auto else ev.settings.draft_max
        self.decode_tokens += n_out
        self.decode_wall_ms += ev.timing.wall_ms
        self.recent.append((n_out, ev.timing.wall_ms))
        if n_out:
            per = ev.timing.wall_ms / n_out
            self.itl_ms.extend(array("d", (per,)) * n_out)
        nd = len(ev.drafts)
        acc = sum(1 for d in ev.drafts if d.verdict == ACCEPTED)
        self.n_drafted += len(ev.tree) or nd  # a tree pass drafted (and verified) every node
        self.n_accepted += acc
        if nd:
            self.passes_drafted += 1
        while len(self.pos_drafted) < nd:
            self.pos_drafted.append(0)
            self.pos_accepted.append(0)
        for i, d in enumerate(ev.drafts):
            self.pos_drafted[i] += 1
            if d.verdict == ACCEPTED:
                self.pos_accepted[i] += 1
            if d.verdict == ACCEPTED or d.verdict == REJECTED:
                b = confidence_bucket(d.prob)
                self.conf_judged[b] += 1
                if d.verdict == ACCEPTED:
                    self.conf_accepted[b] += 1
        if ev.k > 0:
            reach = min(ev.k, nd + 1)  # positions 1..reach were asked for with their predecessors drafted
            while len(self.pos_asked) < reach:
                self.pos_asked.append(0)
            for i in range(reach):
                self.pos_asked[i] += 1
            self.draft_stop_counts[ev.draft_stop] = self.draft_stop_counts.get(ev.draft_stop, 0) + 1
        slot = self.verify_by_k.setdefault(nd, [0.0, 0])
        slot[0] += ev.timing.verify_ms
        slot[1] += 1
        if ev.others_cpu >= 0.0:
            self.recent_others.append((ev.others_cpu, ev.timing.wall_ms))
            if self._contended():
                self.contended_passes += 1
                tps = self._window_tps()
                self.contention_low_tps = min(self.contention_low_tps or tps, tps)
                self.contention_max_others = max(self.contention_max_others, self._window_others())
            elif len(self.recent) >= min(self.window, 5):
                self.best_uncontended_tps = max(self.best_uncontended_tps, self._window_tps())

    def _drafting(self, ev: PassEvent) -> None:
        """A decode pass's drafting time: on its path (Timing.draft_ms), itself (c), and a pipelined pass's figures;
        the counts of the drafter that proposed it (``by_drafter``) and of its tree (``trees``)."""
        self.trees.add(ev)
        self.by_drafter.add(ev)
        self.draft_ms += ev.timing.draft_ms
        self.draft_work_ms += ev.timing.draft_ms if ev.pipeline is None else ev.pipeline.draft_busy_ms
        if ev.pipeline is not None:
            self._pipelined(ev)

    def _pipelined(self, ev: PassEvent) -> None:
        info, s = ev.pipeline, self.pipe
        if info.thrown:  # (also a sequential pass that threw a block away when the setting went off)
            self.pipe_thrown[info.thrown_why] = self.pipe_thrown.get(info.thrown_why, 0) + len(info.thrown)
        if not ev.settings.pipeline:
            return
        for key, v in (("passes", 1), ("hits", info.hit), ("overlapped", info.overlapped),
                       ("drafted", len(ev.drafts)), ("overlap_ms", info.overlap_ms),
                       ("verify_ms", ev.timing.verify_ms), ("wait_ms", ev.timing.draft_ms),
                       ("busy_ms", info.draft_busy_ms), ("cut_wait_ms", info.cut_wait_ms)):
            s[key] = s.get(key, 0) + v

    def pipeline(self) -> PipelineStats | None:
        """The pipelined passes' figures, None before the first."""
        s = self.pipe
        if not s and not self.pipe_thrown:
            return None
        return PipelineStats(
            passes=int(s.get("passes", 0)), hits=int(s.get("hits", 0)), overlapped=int(s.get("overlapped", 0)),
            drafted=int(s.get("drafted", 0)), thrown=sum(self.pipe_thrown.values()),
            thrown_by=tuple(sorted(self.pipe_thrown.items())), overlap_ms=s.get("overlap_ms", 0.0),
            verify_ms=s.get("verify_ms", 0.0), wait_ms=s.get("wait_ms", 0.0), busy_ms=s.get("busy_ms", 0.0),
            cut_wait_ms=s.get("cut_wait_ms", 0.0))

    def _window_tps(self) -> float:
        ms = sum(w for _, w in self.recent)
        return 1000.0 * sum(t for t, _ in self.recent) / ms if ms else 0.0

    def _window_others(self) -> float:
        ms = sum(w for _, w in self.recent_others)
        return sum(o * w for o, w in self.recent_others) / ms if ms else -1.0

    def _contended(self) -> bool:
        others = self._window_others()
        if others < CONTENDED_CORES:
            return False
        ref = self.best_uncontended_tps
        return ref <= 0.0 or self._window_tps() < CONTENDED_FRACTION * ref

    def contention(self) -> str:
        """One line while the run is contended, else ""."""
        if not self.recent_others or not self._contended():
            return ""
        others = self._window_others()
        threads = self.start.threads if self.start and self.start.threads else 0
        of = f" of this run's {threads}" if threads else ""
        msg = f"other processes keep {others:.1f}{of} cores busy"
        if self.best_uncontended_tps > 0:
            msg += f": {self._window_tps():.1f} t/s against {self.best_uncontended_tps:.1f} before"
        return msg + " (llama.cpp's threads wait for each other; see README: -t, OMP_WAIT_POLICY)"

    # ------------------------------------------------------------ reading
    @property
    def text(self) -> str:
        return "".join(self.text_parts)

    def target_decode_ms(self) -> float:
        k0 = self.verify_by_k.get(0)
        if k0 and k0[1]:
            return k0[0] / k0[1]
        return self.start.target_decode_ms if self.start else 0.0

    def snapshot(self) -> StatsSnapshot:
        """The statistics so far, immutable (vLLM's and llama.cpp's definitions: docs/statistics.md).

        Returns:
            A StatsSnapshot: the faces, the summary, the cost model and the exports all read this one.
        """
        tgt = self.target_decode_ms()
        dpt = self.draft_work_ms / self.n_drafted if self.n_drafted else 0.0
        win_tok = sum(t for t, _ in self.recent)
        win_ms = sum(w for _, w in self.recent)
        return StatsSnapshot(
            n_passes=self.n_passes,
            n_emitted=self.n_emitted,
            n_drafted=self.n_drafted,
            n_accepted=self.n_accepted,
            passes_drafted=self.passes_drafted,
            acceptance_rate=self.n_accepted / self.n_drafted if self.n_drafted else 0.0,
            mean_acceptance_length=mean_acceptance_length(self.n_accepted, self.passes_drafted),
            tokens_per_pass=self.decode_tokens / self.n_passes if self.n_passes else 0.0,
            acceptance_by_position=tuple(
                PositionStat(i + 1, d, a) for i, (d, a) in enumerate(zip(self.pos_drafted, self.pos_accepted))
            ),
            ttft_ms=self.ttft_ms,
            tokens_per_second=1000.0 * self.decode_tokens / self.decode_wall_ms if self.decode_wall_ms else 0.0,
            tokens_per_second_window=1000.0 * win_tok / win_ms if win_ms else 0.0,
            itl_ms_p50=percentile(self.itl_ms, 50),
            itl_ms_p95=percentile(self.itl_ms, 95),
            draft_ms_total=self.draft_ms,
            verify_ms_total=self.verify_ms,
            other_ms_total=self.other_ms,
            decode_wall_ms=self.decode_wall_ms,
            draft_ms_per_token=dpt,
            target_decode_ms=tgt,
            draft_decode_ms=self.start.draft_decode_ms if self.start else 0.0,
            draft_cost_ratio=dpt / tgt if (tgt and self.n_drafted) else 0.0,
            verify_ms_by_k=tuple(sorted((k, s / c, c) for k, (s, c) in self.verify_by_k.items() if c)),
            n_ctx_used=self.n_ctx_used,
            n_ctx=self.start.n_ctx if self.start else 0,
            elapsed_s=self.elapsed_s,
            stop_reason=self.end.reason if self.end else "",
            others_cpu=self._window_others() if self.recent_others else -1.0,
            contention=self.contention(),
            contended_passes=self.contended_passes,
            contention_peak_others=self.contention_max_others,
            contention_low_tps=self.contention_low_tps,
            confidence=self.confidence(),
            draft_continue_by_position=tuple(
                ContinueStat(i + 1, a, self.pos_drafted[i] if i < len(self.pos_drafted) else 0)
                for i, a in enumerate(self.pos_asked)
            ),
            draft_stops=tuple(sorted(self.draft_stop_counts.items())),
            pipeline=self.pipeline(), by_drafter=self.by_drafter.snapshot(), tree=self.trees.snapshot(),
        )

    def confidence(self) -> tuple[ConfidenceBucket, ...]:
        edges = (0.0, *CONFIDENCE_EDGES, 1.0)
        return tuple(
            ConfidenceBucket(confidence_label(i), edges[i], edges[i + 1], self.conf_judged[i], self.conf_accepted[i])
            for i in range(len(CONFIDENCE_EDGES) + 1)
        )


def compute(events) -> StatsSnapshot:
    """Statistics of a complete (or partial) event list.

    Args:
        events: a run's events in order (a trace's, a benchmark run's).

    Returns:
        ``RunStats().extend(events).snapshot()``.
    """
    return RunStats().extend(events).snapshot()
