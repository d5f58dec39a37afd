"""Cost model: predicted tokens/s by draft length k, from measured times and acceptance, plus advice.

For a draft length k asked for (k = 0 is the target alone):

- drafting may stop before k (llama.cpp's ``--draft-p-min``: the draft model's confidence fell below P;
  an n-gram drafter's match shorter than k). c_i is the *continuation* rate at position i: the chance
  that a pass drafts position i given it asked for at least i drafts and drafted the i - 1 before it.
  The drafted length L of a pass asked for k has reach_i = P(L >= i) = prod_{j<=i} c_j (reach_0 = 1),
  P(L = l) = reach_l - reach_{l+1} for l < k, P(L = k) = reach_k, and expected drafted length
  D(k) = E[L] = sum_{i=1..k} reach_i. Without --draft-p-min a model drafter always drafts k: every
  c_i = 1, D(k) = k, and every formula below reduces to the textbook one.
- expected tokens per pass  E(k) = 1 + sum_{i=1..k} prod_{j<=i} c_j * a_j, where a_j is the *conditional*
  acceptance of draft j (the chance that draft j is accepted given it was drafted and drafts 1..j-1
  were accepted). With c = 1 and a constant rate a this is Leviathan et al.'s (1 - a^(k+1)) / (1 - a).
- time per pass  T(k) = draft_ms_fixed + D(k) * draft_ms_per_token + E[verify_ms(L)] + other_ms_per_pass
  (no drafting term at k = 0), where verify_ms(l) is the target's decode of a batch of l + 1 tokens,
  E[verify_ms(L)] = sum_{l=0..k} P(L = l) * verify_ms(l) (verify_ms(k) when c = 1), and
  other_ms_per_pass is the loop's own bookkeeping (acceptance test, rollback, detokenising; 0 in the
  textbook formula, measured here because the prediction is checked against measured tokens/s). A pass
  stopped for confidence also decoded the position it refused; that decode is not modelled apart: it is
  part of the measured fixed draft cost.
- tokens/s  TPS(k) = 1000 * E(k) / T(k).

Where the numbers come from (each figure says whether it was measured or extrapolated):

- acceptance: ``StatsSnapshot.acceptance_by_position`` gives r_i = passes whose draft i was accepted /
  passes that drafted position i (vLLM's definition), i.e. the chance that the first i drafts were all
  accepted given draft i was made; so (prod_{j<=i} c_j) * r_i is the chance that a pass asked for at
  least i drafts has draft i accepted, the terms of E(k), as prod_{j<=i} a_j = r_i. The conditional rate
  is a_i = r_i / r_{i-1} (clamped to 0..1). Beyond the deepest measured position the conditional rate is
  held constant at the sample-weighted average of the conditional rates of the last ``TAIL_POSITIONS``
  measured positions ("last rate", not a fitted decay: on the Qwen pair the per-draft rate is nearly
  flat after the first two positions, and a fitted decay over a few noisy points extrapolates wildly).
- drafting continuation: ``StatsSnapshot.draft_continue_by_position`` gives c_i = passes that drafted
  position i / passes that asked for at least i drafts and drafted the i - 1 before it. Beyond the
  deepest measured position c is held constant like acceptance: the sample-weighted (passes asked)
  average of the last ``TAIL_POSITIONS`` measured positions; with nothing measured, c = 1 (every pass
  drafts the k asked for). ``continue_note`` says which.
- draft time: with the start event's back-to-back calibration, ``draft_ms_per_token`` is the lower of
  it and the run's mean per drafted token, and ``draft_ms_fixed`` = the run's draft ms per pass that
  asked for drafts (passes in ``draft_stops``; a pass that stopped before its first draft paid the draft
  model too) minus that slope times the drafts per such pass; without a calibration, the run's mean per
  drafted token and no fixed part. A run drafted by block drafters alone (``block_cost``) pays one draft
  pass whatever k: nothing per token, and ``draft_ms_fixed`` = its draft ms per such pass.
- verify time (``analysis.verify_time``): measured means by batch size (the snapshot's ``verify_ms_by_k``,
  the target's single
  decode ``target_decode_ms`` for k = 0, and any figures measured on demand and passed in as
  ``verify_ms_by_k``). Gaps between measured sizes are interpolated linearly between the neighbours;
  sizes beyond the largest measured one are extrapolated along a least-squares line fitted to all
  measured points (slope floored at 0), anchored at the largest measured size. With a single measured
  size, verify time is assumed flat (the textbook "verification costs one pass"), and the note says so.
- the hardware's curve: when a measured verify-ms-by-batch curve is given (``curve``, {k: ms} for
  batches of k + 1 tokens, from ``spectui probe``), it replaces the interpolation and the straight-line
  extrapolation: sizes the run has not measured take the curve's value, scaled by the ratio of what the
  run measured to what the curve says at the sizes both know (the curve gives the shape, the run its
  level under the current load and context length; not clamped: a run's in-loop decode can cost several
  times the probe's on a tiny model, and only the shape keeps the verdict).
  Sizes beyond the curve are extrapolated from the curve alone.

Imports nothing of the UI.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping, Sequence

from ...contract.draft_length import K_MAX
from ..stats import StatsSnapshot
from .block_cost import block_drafted, draft_unit
from .verify_time import SRC_CURVE, SRC_RUN, verify_sources
from .wording import LOSES, WINS, outcome

TAIL_POSITIONS = 3  # conditional rates averaged for the extrapolated tail



@dataclass(frozen=True)
class Prediction:
    """Predicted throughput for k = 0..k_max (every tuple is indexed by k, or by position - 1)."""

    k_max: int
    tps_by_k: tuple[float, ...]  # predicted tokens/s, index k
    tokens_per_pass_by_k: tuple[float, ...]  # E(k)
    ms_per_pass_by_k: tuple[float, ...]  # T(k)
    speedup_by_k: tuple[float, ...]  # TPS(k) / TPS(0)
    verify_ms_by_k: tuple[float, ...]  # verify time used for a batch of k + 1 tokens
    verify_measured_by_k: tuple[bool, ...]  # True = measured, False = interpolated / extrapolated
    verify_note: str  # how the unmeasured verify times were obtained
    acceptance_by_position: tuple[float, ...]  # conditional rate a_i used, positions 1..k_max
    reach_by_position: tuple[float, ...]  # prod_{j<=i} a_j: chance draft i is accepted (vLLM per-position)
    acceptance_measured_by_position: tuple[bool, ...]
    acceptance_note: str  # how positions beyond the deepest measured one were filled in
    draft_ms_per_token: float
    target_decode_ms: float  # verify_ms(0): one target decode
    other_ms_per_pass: float
    best_k: int
    current_k: int | None
    advice: str
    ready: bool = True  # False when there were no timings to predict from
    draft_ms_fixed: float = 0.0  # drafting k tokens costs draft_ms_fixed + k * draft_ms_per_token
    verify_source_by_k: tuple[str, ...] = ()  # SRC_RUN / SRC_CURVE / SRC_INTERPOLATED / SRC_EXTRAPOLATED
    # drafting that stops before k (--draft-p-min, short n-gram matches); see the module docstring
    drafted_per_pass_by_k: tuple[float, ...] = ()  # D(k) = E[L]: drafts made by a pass asked for k
    verify_ms_expected_by_k: tuple[float, ...] = ()  # E[verify_ms(L)] for a pass asked for k
    continue_by_position: tuple[float, ...] = ()  # c_i used, positions 1..k_max
    continue_measured_by_position: tuple[bool, ...] = ()
    continue_note: str = ""  # how positions beyond the deepest measured one were filled in
    draft_stop_cause: str = ""  # why drafting stopped early in the run: "p_min", "no_match" or ""

    def drafted(self, k: int) -> float:
        """D(k): the drafts a pass asked for k makes on average (k when drafting never stops early, or for a k past
        the k_max predicted: -k 32 is a draft length, the prediction stops at K_MAX)."""
        by_k = self.drafted_per_pass_by_k
        return by_k[k] if 0 <= k < len(by_k) else float(k)

    def stops_early(self, k: int) -> bool:
        """True when a pass asked for k drafts visibly fewer on average (D(k) < k - 0.05)."""
        return self.drafted(k) < k - 0.05

    @property
    def baseline_tps(self) -> float:
        return self.tps_by_k[0] if self.tps_by_k else 0.0

    @property
    def best_tps(self) -> float:
        return self.tps_by_k[self.best_k] if self.tps_by_k else 0.0

    def describe_k(self, k: int) -> str:
        """One line about draft length k (used by the sweep report and the TUI tooltip)."""
        if self.verify_source_by_k:
            src = {SRC_RUN: "measured", SRC_CURVE: "from the probe's curve"}.get(
                self.verify_source_by_k[k], self.verify_source_by_k[k])
        else:
            src = "measured" if self.verify_measured_by_k[k] else "extrapolated"
        if self.stops_early(k):  # the verify batch varies with the drafted length: its expected cost
            verify = (f"drafts {self.drafted(k):.2f} on average, verify {self.verify_ms_expected_by_k[k]:.0f} ms "
                      f"expected, {self.verify_ms_by_k[k]:.0f} ms at full length {src}")
        else:
            verify = f"verify {self.verify_ms_by_k[k]:.0f} ms {src}"
        return (
            f"k={k}: {self.tokens_per_pass_by_k[k]:.2f} tokens/pass in {self.ms_per_pass_by_k[k]:.0f} ms "
            f"({verify}) -> {self.tps_by_k[k]:.2f} t/s, "
            f"{self.speedup_by_k[k]:.2f}x"
        )


# ---------------------------------------------------------------- pure pieces


def expected_tokens_per_pass(rates: Sequence[float], k: int) -> float:
    """1 + sum_{i=1..k} prod_{j<=i} a_j for conditional per-position rates a_1.. (len >= k)."""
    if k > len(rates):
        raise ValueError(f"need {k} per-position rates, got {len(rates)}")
    total, reach = 1.0, 1.0
    for a in rates[:k]:
        reach *= a
        total += reach
    return total


def leviathan(a: float, k: int) -> float:
    """Expected tokens per pass with a constant per-draft acceptance a: (1 - a^(k+1)) / (1 - a).

    Args:
        a: the per-draft acceptance, 0..1.
        k: the draft length.

    Returns:
        Leviathan et al.'s expected tokens per pass (k + 1 at a = 1).
    """
    if a >= 1.0:
        return float(k + 1)
    return (1.0 - a ** (k + 1)) / (1.0 - a)


def break_even_acceptance(ratio: float, k: int) -> float | None:
    """Leviathan's inverse: the constant per-draft acceptance a with leviathan(a, k) == ratio.

    Args:
        ratio: what a k-draft pass costs, in target decodes.
        k: the draft length.

    Returns:
        The acceptance the pass needs to break even: 0 when ratio <= 1 (any accepted draft pays), None when
        even a = 1 (k + 1 tokens) is not enough.
    """
    if ratio <= 1.0:
        return 0.0
    if ratio > k + 1:
        return None
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if leviathan(mid, k) < ratio:
            lo = mid
        else:
            hi = mid
    return hi


def conditional_rates(position_counts: Sequence[tuple[int, int]]) -> tuple[list[float], list[float]]:
    """From (drafted, accepted) per position (vLLM counting) to conditional rates and their weights.

    Returns (a_i, w_i) for the measured positions (drafted > 0, stopping at the first unmeasured one),
    with w_i the effective sample count of a_i (passes that reached position i with all before accepted).
    """
    rates: list[float] = []
    weights: list[float] = []
    prev_reach = 1.0
    for drafted, accepted in position_counts:
        if drafted <= 0:
            break
        reach = accepted / drafted
        if prev_reach <= 0.0:
            a = 0.0
            w = 0.0
        else:
            a = min(1.0, reach / prev_reach)
            w = drafted * prev_reach
        rates.append(a)
        weights.append(w)
        prev_reach = reach
    return rates, weights


# what fill() says of each kind of per-position rate: (the value with nothing measured, measured everywhere,
# nothing measured, held beyond the deepest measured position)
_FILL_WORDS = {
    "acceptance": (0.0, "acceptance measured at all positions 1..{n}",
                   "no drafts measured yet: acceptance assumed 0",
                   "acceptance measured at positions 1..{d}; beyond {d} the per-draft rate is held at {tail:.0%}"),
    "continuation": (1.0, "drafting continuation measured at all positions 1..{n}",
                     "no drafting measured yet: every pass assumed to draft the k asked for",
                     "drafting continuation measured at positions 1..{d}; beyond {d} it is held at {tail:.0%}"),
}


def fill(kind: str, rates: Sequence[float], weights: Sequence[float], n: int) -> tuple[list[float], list[bool], str]:
    """Extend measured per-position rates to n positions (see the module docstring): ``kind`` "acceptance"
    (conditional acceptance a_i; nothing measured: 0) or "continuation" (drafting continuation c_i, clamped to
    [0, 1]; nothing measured: 1). Beyond the deepest measured position: the sample-weighted mean of the last
    ``TAIL_POSITIONS``. Returns (the n rates, which were measured, a note that says so)."""
    empty, everywhere, nothing, held = _FILL_WORDS[kind]
    values = [min(1.0, max(0.0, float(c))) for c in rates] if kind == "continuation" else list(rates)
    d = len(values)
    out = values[:n]
    flags = [True] * len(out) + [False] * (n - len(out))
    if d >= n:
        return out, flags, everywhere.format(n=n)
    if not d:
        return out + [empty] * n, flags, nothing
    tail_v = values[-TAIL_POSITIONS:]
    tail_w = list(weights[-TAIL_POSITIONS:])
    wsum = sum(tail_w)
    tail = sum(v * w for v, w in zip(tail_v, tail_w)) / wsum if wsum > 0 else tail_v[-1]
    note = held.format(d=d, tail=tail) + f" (weighted mean of the last {min(TAIL_POSITIONS, d)} measured positions)"
    return out + [tail] * (n - d), flags, note


def continuation_rates(stats: Sequence) -> tuple[list[float], list[float]]:
    """From ``StatsSnapshot.draft_continue_by_position`` (ContinueStat) to c_i and weights (passes asked),
    for the measured prefix (asked > 0)."""
    rates: list[float] = []
    weights: list[float] = []
    for c in stats:
        if c.asked <= 0:
            break
        rates.append(min(1.0, c.drafted / c.asked))
        weights.append(float(c.asked))
    return rates, weights


def drafted_length(cont: Sequence[float], k: int) -> tuple[float, list[float]]:
    """D(k) = E[L] and P(L = l) for l = 0..k, for a pass asked for k with continuation rates c_1.."""
    reach = [1.0]
    for c in cont[:k]:
        reach.append(reach[-1] * c)
    probs = [reach[i] - reach[i + 1] for i in range(k)] + [reach[k]]
    return sum(reach[1:]), probs


def predict_from(rates: Sequence[float], rate_weights: Sequence[float], verify_points: Mapping[int, float],
                 draft_ms_per_token: float, other_ms_per_pass: float = 0.0, *, k_max: int = K_MAX,
                 current_k: int | None = None, draft_ms_fixed: float = 0.0, curve: Mapping[int, float] | None = None,
                 continue_rates: Sequence[float] | None = None, continue_weights: Sequence[float] | None = None,
                 draft_stop_cause: str = "") -> Prediction:
    """The model itself, from plain numbers (``predict`` and the auto-k policy feed it).

    Args:
        rates: the measured per-position acceptance (vLLM's r_i, positions 1..), rate_weights their samples.
        verify_points: measured verify ms {k: ms} (a batch of k + 1 tokens).
        draft_ms_per_token, draft_ms_fixed: drafting k tokens costs ``draft_ms_fixed + k * draft_ms_per_token``
            (the fixed part: a pass's first draft decode beyond a back-to-back one; on the Qwen pair
            11.5 + 18.2 k ms); other_ms_per_pass: the loop's own bookkeeping.
        k_max: predict k = 0..k_max; current_k: the draft length in force, marked in the advice.
        curve: the hardware's measured verify ms by k, e.g. ``ProbeResult.curve``; it fills every k the run
            has not measured (see the module docstring).
        continue_rates: the measured continuation c_i of drafting (positions 1..), continue_weights their
            samples; None or empty: every pass drafts the k asked for.
        draft_stop_cause: why drafting stops early ("p_min", "no_match"), for the advice.

    Returns:
        The Prediction: tokens/s, tokens per pass and costs by k, the best k, where each figure came from, and
        the advice.
    """
    if k_max < 0:
        raise ValueError("k_max must be >= 0")
    a, a_meas, a_note = fill("acceptance", rates, rate_weights, k_max)
    v, v_src, v_note = verify_sources(verify_points, k_max, curve)
    v_meas = [src == SRC_RUN for src in v_src]
    d = max(0.0, float(draft_ms_per_token))
    other = max(0.0, float(other_ms_per_pass))
    cw = continue_weights if continue_weights is not None else [1.0] * len(continue_rates or ())
    c, c_meas, c_note = fill("continuation", continue_rates or (), cw, k_max)
    reach, yield_reach = _reaches(a, c)
    tpp = [1.0 + sum(yield_reach[:k]) for k in range(k_max + 1)]
    fixed = max(0.0, float(draft_ms_fixed))
    drafted, v_exp = _drafted_and_verify(c, v, k_max)
    ms = [(fixed + drafted[k] * d if k > 0 else 0.0) + v_exp[k] + other for k in range(k_max + 1)]
    ready = ms[0] > 0
    tps = [1000.0 * t / m if m > 0 else 0.0 for t, m in zip(tpp, ms)]
    base = tps[0]
    speed = [t / base if base > 0 else 0.0 for t in tps]
    # ties go to the shorter draft (less work, same speed)
    best = max(range(k_max + 1), key=lambda k: (round(tps[k], 9), -k)) if ready else 0
    pred = Prediction(
        k_max=k_max, current_k=current_k, best_k=best, ready=ready, advice="",
        # by k
        tps_by_k=tuple(tps), tokens_per_pass_by_k=tuple(tpp), ms_per_pass_by_k=tuple(ms), speedup_by_k=tuple(speed),
        verify_ms_by_k=tuple(v), verify_measured_by_k=tuple(v_meas), verify_source_by_k=tuple(v_src),
        verify_ms_expected_by_k=tuple(v_exp), drafted_per_pass_by_k=tuple(drafted), verify_note=v_note,
        # by draft position
        acceptance_by_position=tuple(a), reach_by_position=tuple(reach), acceptance_measured_by_position=tuple(a_meas),
        acceptance_note=a_note, continue_by_position=tuple(c), continue_measured_by_position=tuple(c_meas),
        continue_note=c_note,
        # costs
        draft_ms_per_token=d, draft_ms_fixed=fixed, target_decode_ms=v[0], other_ms_per_pass=other,
        draft_stop_cause=draft_stop_cause,
    )
    return _with_advice(pred, bool(rates))


def _reaches(a: Sequence[float], c: Sequence[float]) -> tuple[list[float], list[float]]:
    """By draft position: prod a_j, accepted given drafted (vLLM's per-position rate), and prod c_j * a_j,
    drafted and accepted."""
    reach: list[float] = []
    yield_reach: list[float] = []
    r = ry = 1.0
    for x, cx in zip(a, c):
        r *= x
        ry *= cx * x
        reach.append(r)
        yield_reach.append(ry)
    return reach, yield_reach


def _drafted_and_verify(c: Sequence[float], v: Sequence[float], k_max: int) -> tuple[list[float], list[float]]:
    """By k asked for: the expected drafted length D(k) and the expected verify ms E[verify_ms(L)]."""
    drafted: list[float] = []
    v_exp: list[float] = []
    for k in range(k_max + 1):
        dl, probs = drafted_length(c, k)
        drafted.append(dl)
        ev = 0.0
        for ln, pr in enumerate(probs):
            ev += pr * v[ln]
        v_exp.append(ev)
    return drafted, v_exp


def _with_advice(p: Prediction, have_rates: bool) -> Prediction:
    return replace(p, advice=advice(p, have_rates))


SPEEDUP_TIE = 0.005  # a predicted speedup within 0.5% of 1 is a tie (it prints as 1.00x or 0.99x / 1.01x)

_STOP_WHY = {"p_min": "--draft-p-min stops it early", "no_match": "the n-gram matches run short"}


def _drafts_clause(p: Prediction, k: int) -> str:
    """ " drafts 1.6 on average (--draft-p-min stops it early) and" when a pass asked for k drafts fewer;
    "" otherwise (never said when drafting always reaches k)."""
    if not p.stops_early(k):
        return ""
    why = _STOP_WHY.get(p.draft_stop_cause, "drafting stops early")
    return f" drafts {p.drafted(k):.1f} on average ({why}) and"


def advice(p: Prediction, have_rates: bool = True) -> str:
    """One plain sentence: what speculation costs here and which k wins (and, when drafting stops before
    the k asked for, how many drafts a pass of that k makes and why).

    Args:
        p: the prediction.
        have_rates: whether any acceptance was measured (else the sentence says to draft a few passes).

    Returns:
        The sentence (with no timings yet: that there is nothing to predict).
    """
    if not p.ready:
        return "no timings measured yet: nothing to predict"
    t0 = p.target_decode_ms
    unit, c, whatever = draft_unit(p.draft_ms_per_token, p.draft_ms_fixed, t0)  # a block drafter: its one pass
    if not have_rates or p.k_max == 0:
        return (
            f"one target decode takes {t0:.0f} ms; no drafts measured yet, so acceptance is unknown: "
            f"draft a few passes (k > 0) to see whether speculation pays"
        )
    ref = p.current_k if p.current_k else max(1, p.best_k)
    ref = min(ref, p.k_max)
    cur = ""
    if p.current_k is not None and p.current_k != p.best_k and 0 <= p.current_k <= p.k_max:
        cur = f" (current k = {p.current_k}: {p.speedup_by_k[p.current_k]:.2f}x)"
    a1 = p.acceptance_by_position[0]
    if p.best_k == 0:
        v = p.verify_ms_by_k[ref] / t0 if t0 else 0.0
        best_spec = max(p.speedup_by_k[1:], default=0.0)
        # "loses" only when every k > 0 is predicted below the target alone by more than the tie margin
        verdict = ("speculation loses here" if outcome(best_spec, 1.0, SPEEDUP_TIE) == LOSES else
                   f"speculation at best ties the target alone here ({best_spec:.2f}x)")
        return (
            f"verifying {ref + 1} tokens costs {v:.1f}x one decode and a draft {unit} costs {c:.1f}x{whatever}, "
            f"while a pass of k = {ref}{_drafts_clause(p, ref)} yields only "
            f"{p.tokens_per_pass_by_k[ref]:.2f} tokens: "
            f"{verdict}; best k = 0{cur}"
        )
    b = p.best_k
    pass_cost = p.ms_per_pass_by_k[b] / (p.ms_per_pass_by_k[0] or 1.0)
    gain = p.speedup_by_k[b]
    tail = (f"{gain:.2f}x the target alone" if outcome(gain, 1.0, SPEEDUP_TIE) == WINS else
            f"{gain:.2f}x the target alone, a tie within {SPEEDUP_TIE:.0%}")
    return (
        f"with {a1:.0%} acceptance at the first draft, a pass of k = {b}{_drafts_clause(p, b)} yields "
        f"{p.tokens_per_pass_by_k[b]:.2f} tokens for {pass_cost:.1f}x the time of one decode "
        f"(draft {unit} {c:.1f}x{whatever}): best k = {b}, {tail}{cur}"
    )


# ---------------------------------------------------------------- from statistics


def predict(
    snapshot: StatsSnapshot,
    k_max: int = K_MAX,
    verify_ms_by_k: Mapping[int, float] | None = None,
    *,
    current_k: int | None = None,
    draft_ms_per_token: float | None = None,
    curve: Mapping[int, float] | None = None,
) -> Prediction:
    """Predict tokens/s for k = 0..k_max from a statistics snapshot.

    Args:
        snapshot: the run's statistics (``RunStats.snapshot``, ``compute``); drafting that stops before k
            (--draft-p-min, short n-gram matches) comes from its continuation and draft stops.
        k_max: predict k = 0..k_max.
        verify_ms_by_k: extra measured verify times {k: ms} (e.g. from ``engine.measure_verify_ms``); they
            override the snapshot's means for the same k.
        current_k: the draft length in force (marked in the advice); when None, the most used k of the run.
        draft_ms_per_token: override (e.g. the start event's calibration ``draft_decode_ms`` before any
            draft was made).
        curve: the hardware's verify ms by k from ``spectui probe`` (``ProbeResult.curve``), used for every
            k the run has not measured instead of the straight-line extrapolation.

    Returns:
        The Prediction (``predict_from``).
    """
    points: dict[int, float] = {0: snapshot.target_decode_ms} if snapshot.target_decode_ms > 0 else {}
    points.update({int(k): float(ms) for k, ms, n in snapshot.verify_ms_by_k if n > 0 and ms > 0})
    if verify_ms_by_k:
        for k, ms in verify_ms_by_k.items():
            if ms and ms > 0:
                points[int(k)] = float(ms)
    counts = [(p.drafted, p.accepted) for p in snapshot.acceptance_by_position]
    rates, weights = conditional_rates(counts)
    c_rates, c_weights = continuation_rates(snapshot.draft_continue_by_position)
    stops = dict(snapshot.draft_stops)
    cause = max(("p_min", "no_match"), key=lambda s: stops.get(s, 0))
    cause = cause if stops.get(cause, 0) > 0 else ""
    # passes that asked for drafts (a pass that stopped before its first draft still paid the draft model)
    passes_asked = max(snapshot.passes_drafted, sum(stops.values()))
    fixed = 0.0
    if draft_ms_per_token is not None:
        d = draft_ms_per_token
    elif block_drafted(snapshot):  # one draft pass whatever k (a block drafter): priced by that pass
        d, fixed = 0.0, snapshot.draft_ms_total / passes_asked
    elif snapshot.draft_decode_ms > 0 and snapshot.passes_drafted and snapshot.n_drafted:
        # slope: a back-to-back draft decode (calibration); intercept: what the measured passes cost
        # beyond that (the first draft decode after a target pass is slower, and catches up accepted text)
        d = min(snapshot.draft_decode_ms, snapshot.draft_ms_per_token)
        per_pass = snapshot.draft_ms_total / passes_asked
        fixed = max(0.0, per_pass - d * snapshot.n_drafted / passes_asked)
    else:
        d = snapshot.draft_ms_per_token
    other = snapshot.other_ms_total / snapshot.n_passes if snapshot.n_passes else 0.0
    if current_k is None and snapshot.verify_ms_by_k:
        current_k = max(snapshot.verify_ms_by_k, key=lambda t: (t[2], t[0]))[0]
    return predict_from(rates, weights, points, d, other, k_max=k_max, current_k=current_k, draft_ms_fixed=fixed,
                        curve=curve, continue_rates=c_rates, continue_weights=c_weights, draft_stop_cause=cause)
