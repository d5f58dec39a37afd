"""A race's outcome from the traces alone: per lane the run's figures (``spectui.analysis.stats``, the definitions
every face uses), who finished first and by how much, and whether the lanes emitted the same tokens or
where they part. No Textual.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis.stats import RunStats, StatsSnapshot
from ..analysis.tree_stats import TreeStats
from .race_timeline import Lane, Race

TIE_S = 1e-6  # finish times closer than this are a tie


@dataclass(frozen=True)
class LaneResult:
    name: str
    label: str
    path: str
    tokens: int  # emitted, the prefill's token included
    seconds: float  # race time to the last token (decode time; with from_start: from the run's start)
    tokens_per_second: float  # decode tokens/s (spectui.analysis.stats)
    ttft_ms: float | None  # None: the lane's run had no first token
    acceptance_rate: float
    mean_acceptance_length: float
    tokens_per_pass: float
    drafted: int
    truncated: bool
    pass_ms: float = 0.0  # mean decode pass (draft + verify + the rest), prefill excluded
    tree: TreeStats | None = None  # the lane's tree passes (--drafter tree): nodes per pass, acceptance by depth


@dataclass(frozen=True)
class Divergence:
    same: bool  # the same tokens, the same number of them
    at: int  # the first token index (0-based) where they part; -1 when same, or one is a prefix of the other
    common: int  # tokens both emitted alike before parting (or the shorter length)
    texts: tuple[str, ...] = ()  # each lane's token at ``at`` ("" past a lane's end)

    def text(self, names: tuple[str, ...]) -> str:
        if self.same:
            return f"same {self.common} tokens"
        if self.at < 0:
            return f"same first {self.common} tokens, then one run stops sooner"
        shown = " vs ".join(f"{n} {t!r}" for n, t in zip(names, self.texts))
        return f"the tokens part at token {self.at + 1} ({shown}) after {self.common} alike"


@dataclass(frozen=True)
class Outcome:
    lanes: tuple[LaneResult, ...]
    winner: int  # lane index finishing first; -1 for a tie
    margin_s: float  # seconds between the first and the second finisher
    ratio: float  # second's time / first's time (1.0 for a tie)
    divergence: Divergence
    from_start: bool
    any_prompt: bool

    def verdict(self) -> str:
        """ "B finished first, 2.31 s sooner (1.84x)" or "a tie (A and B both 4.20 s)"."""
        if self.winner < 0:
            names = " and ".join(lane.name for lane in self.lanes)
            return f"a tie ({names}: {self.lanes[0].seconds:.2f} s)"
        w = self.lanes[self.winner]
        return f"{w.name} finished first, {self.margin_s:.2f} s sooner ({self.ratio:.2f}x)"


    def baseline(self) -> int:
        """The lane the others are explained against: one that drafted nothing (the target alone), else A."""
        return next((i for i, r in enumerate(self.lanes) if r.drafted == 0), 0)

    def why(self) -> list[str]:
        """Per lane against the baseline, from the numbers: tokens per pass against what a pass costs in
        baseline passes; their quotient is the speed-up (tokens/s ratio)."""
        b = self.lanes[self.baseline()]
        if b.pass_ms <= 0 or b.tokens_per_pass <= 0:
            return []
        out = []
        for r in self.lanes:
            if r is b or r.pass_ms <= 0:
                continue
            cost = r.pass_ms / b.pass_ms
            gain = (r.tokens_per_pass / b.tokens_per_pass) / cost
            verb = "wins" if gain > 1 else "loses"
            out.append(f"{r.name} {verb}, {gain:.2f}x {b.name}'s tokens/s: {r.tokens_per_pass:.2f} tokens a pass "
                       f"/ {b.tokens_per_pass:.2f}, each pass {cost:.2f}x {b.name}'s ({r.pass_ms:.0f} vs "
                       f"{b.pass_ms:.0f} ms)")
        return out


def lane_stats(lane: Lane) -> StatsSnapshot:
    if lane.digest is not None:  # read as a stream (race --headless)
        return lane.digest.stats
    return RunStats(keep_tokens=False).extend(lane.events).snapshot()


def lane_result(lane: Lane) -> LaneResult:
    s = lane_stats(lane)
    return LaneResult(
        name=lane.name, label=lane.label, path=lane.path, tokens=s.n_emitted, seconds=lane.finish_s,
        tokens_per_second=s.tokens_per_second, ttft_ms=s.ttft_ms, acceptance_rate=s.acceptance_rate,
        mean_acceptance_length=s.mean_acceptance_length, tokens_per_pass=s.tokens_per_pass,
        drafted=s.n_drafted, truncated=lane.truncated,
        pass_ms=s.decode_wall_ms / s.n_passes if s.n_passes else 0.0, tree=s.tree)


def divergence(lanes: list[Lane]) -> Divergence:
    ids = [lane.token_ids() for lane in lanes]
    n = min(len(x) for x in ids)
    at = next((i for i in range(n) if len({x[i] for x in ids}) > 1), -1)
    if at < 0:
        same = len({len(x) for x in ids}) == 1
        return Divergence(same=same, at=-1, common=n)
    texts = tuple(lane.token_texts()[at] for lane in lanes)
    return Divergence(same=False, at=at, common=at, texts=texts)


def outcome(race: Race) -> Outcome:
    results = tuple(lane_result(lane) for lane in race.lanes)
    order = sorted(range(len(results)), key=lambda i: results[i].seconds)
    first, second = results[order[0]], results[order[1]] if len(order) > 1 else results[order[0]]
    margin = second.seconds - first.seconds
    tie = margin < TIE_S
    ratio = second.seconds / first.seconds if first.seconds > 0 and not tie else 1.0
    return Outcome(lanes=results, winner=-1 if tie else order[0], margin_s=0.0 if tie else margin, ratio=ratio,
                   divergence=divergence(race.lanes), from_start=race.from_start, any_prompt=race.any_prompt)
