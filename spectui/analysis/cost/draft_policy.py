"""Draft-length policies for ``--draft-max auto`` (mode "cost") and ``--draft-max schedule``.

The engine's loop, when ``settings.auto`` is set, calls ``policy.observe(event)`` for every event it emits and
``policy.choose(settings)`` before each pass; ``choose`` returns the k for that pass (0..32).

``cost`` (``CostPolicy``): keeps a running cost model built from the events it has seen and picks the k that
maximises predicted tokens/s (see :mod:`spectui.analysis.cost.costmodel`), k = 0 included when speculation loses.

- acceptance: the conditional acceptance of each draft position (accepted / reached with every earlier draft
  accepted), exponentially weighted per observation of that position (``ACC_DECAY``), so it follows a change of text
  within a few dozen passes; a weak prior (``PRIOR_RATE`` with weight ``PRIOR_WEIGHT``) keeps the first decisions
  sane. A position not seen for ``STALE_PASSES`` passes counts as unmeasured (the cost model then holds the last
  measured rate). A change of temperature or drafter resets acceptance and keeps the timings.
- drafting continuation (``--draft-p-min``, short n-gram matches): per position i, the chance that a pass that asked
  for at least i drafts and drafted the i - 1 before drafts position i, learned the same way (``ACC_DECAY`` per
  observation, ``STALE_PASSES``, ``MIN_WEIGHT``) with a weak prior of 1 (``PRIOR_WEIGHT``: drafting continues);
  beyond the deepest measured position the cost model holds the weighted mean of the last measured ones, as for
  acceptance, and assumes 1 before anything is measured. A change of drafter, ``draft_p_min`` or ``draft_min`` resets
  it (and only it, for the last two). A pass that asked for drafts and made none is not a k = 0 pass: its verify time
  counts for a batch of 1 (the k = 0 verify size), but the draft model caught up during it, so it is not a skipped
  pass for the catch-up accounting below, and its draft time teaches no per-token cost. Predictions use the measured
  continuation (``bound_prediction`` keeps c = 1: with every draft accepted, stopping early can only lower the best
  tokens/s, so that bound stays a bound).
- times: target verify ms per batch size k (EWMA), the k = 0 pass cost (target decode, plus whatever draft work the
  engine does in a k = 0 pass), draft ms per drafted token measured only on passes that follow a drafting pass (a
  pass right after k = 0 passes also pays the draft model's catch-up on the skipped text: a one-off cost, not the
  price of the next k), and the loop's other ms per pass. Before anything is measured it uses the start event's
  calibration (``target_decode_ms``, ``draft_decode_ms``).
- warm-up: the first ``WARMUP_PASSES`` decode passes draft ``WARMUP_K`` token(s): the cheapest way to measure the
  first position's acceptance and a second verify size besides k = 0 (deeper positions are extrapolated until
  measured; when k > 0 pays, the k + 1 probes measure them).
- leaving k > 0: k = 0 stops the flow of acceptance data, so the policy settles on k = 0 only when even an optimistic
  reading of acceptance (``OPTIMISM`` standard errors up) says speculation loses, and after at least ``MIN_EVIDENCE``
  first drafts (until then it explores with k = 1, the cheapest). When even drafts that are always accepted could not
  pay with the measured times (the case on a 2-core CPU: verifying 2 tokens plus one draft costs more than two plain
  decodes), it settles on k = 0 right after the warm-up: acceptance cannot change that verdict.
- re-probing: while at k = 0, one pass every ``probe_every`` passes drafts the last profitable k (or ``WARMUP_K``);
  the first comes after ``FIRST_PROBE`` passes, and each probe that confirms k = 0 doubles the interval (up to
  ``PROBE_MAX``), or stretches it further so that probes cost at most ``PROBE_BUDGET`` of the time (a probe's cost is
  measured: its wall time minus what a k = 0 pass takes for the tokens it yielded; it includes the draft model
  catching up on the text it skipped). When that catch-up alone costs more per skipped pass than the budget allows
  (the case on a 2-core CPU: a few ms per skipped token against an 85 ms decode), no interval fits the budget and the
  policy waits ``PROBE_MAX`` passes between probes. Before any probe is measured, the catch-up is estimated as
  ``CATCHUP_FRACTION`` of a draft decode per skipped token (measured on the Qwen pair: 85 ms to catch up 16 tokens
  against 21 ms per single draft decode). The interval resets when speculation starts paying again. While the model
  says k > 0, every ``PROBE_MIN`` passes one pass drafts k + 1 (deeper positions, the next verify size).

- the hardware's curve: when the target's verify cost by batch size was measured on this machine (``spectui probe``;
  the run records it in ``RunStarted.probe``, or ``make_policy(mode, curve)`` is handed one), the model uses it from
  the first pass for every batch size the run has not measured (scaled to the run's level: see
  :mod:`spectui.analysis.cost.costmodel`). When the curve says that even a per-draft acceptance of ``PLAUSIBLE_RATE``
  at every position cannot pay, the policy chooses k = 0 from the first pass on, with no warm-up and no re-probing
  (on the Qwen pair on 2 cores only k = 15 with 98.5% acceptance would break even); otherwise it proceeds as above,
  without needing passes to learn verify costs.
- cost of the policy itself: a prediction takes 0.2-0.5 ms, 1-2% of a 30 ms pass, so settled at k = 0 (no new
  acceptance) the model is consulted again only every ``CURVE_RECHECK`` passes or at a re-probe.
- draft cost (``DraftCost``, :mod:`.draft_cost`): a model's per drafted token, a model-free drafter's per pass that
  drafts, a block drafter's (DFlash, DSpark) by its one draft pass as measured by k; before any draft, the start's
  calibration (a block's pass is one draft decode), ``NGRAM_DRAFT_MS`` for a model-free drafter.
- a chain (``--spec-type ngram-mod,draft-simple``): one such policy per member, each priced by its own measured cost
  and acceptance; a member that loses is left out of the pass (``members``): :mod:`.chain_cost`.
- a tree drafter (``--drafter tree``, ``suffix-tree``): each pass a chain of k (``children`` 1) or a tree of n nodes
  (``children`` 0), whichever is predicted faster; a tree pass teaches no drafting continuation: :mod:`.tree_cost`.

One run, any mode (``PolicyByMode``, what the engine is handed): one policy per mode observes every event from
``RunStarted`` on (auto k may go on, off or change mode mid-run) and the mode in ``settings.auto`` chooses. No event
is kept: a policy learns aggregates bounded by ``K_LIMIT`` positions, so memory stays flat. A mode switched back on
resumes; the schedule starts again from ``settings.draft_max``, as a fresh HF schedule does.

``schedule``: ``SchedulePolicy`` (spectui/analysis/cost/schedule_policy.py), Hugging Face's heuristic schedule.

Imports nothing of the UI.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

from ...contract.draft_length import DRAFT_MAX_LIMIT, K_MAX, clamp_draft_length
from ...contract.errors import SpectuiError
from ...contract.events import AUTO_MODES, Event, PassEvent, RunStarted, Settings, SettingsChanged
from .chain_cost import ChainCost, is_chain
from .costmodel import Prediction, predict_from
from .decayed import DecayedRate
from .draft_cost import DraftCost, ewma
from .schedule_policy import SchedulePolicy
from .tree_cost import TreeChoice
from .verify_time import verify_sources

K_LIMIT = DRAFT_MAX_LIMIT  # the draft length range, 0..32 (the one rule: contract.draft_length)

PRIOR_RATE = 0.6
PRIOR_WEIGHT = 0.5
STALE_PASSES = 96
MIN_WEIGHT = 1.5  # a position counts as measured once its (decayed) observation weight reaches this
WARMUP_K = 1
WARMUP_PASSES = 2
FIRST_PROBE = 16  # passes at k = 0 before the first re-probe (then 32, 64, ... up to PROBE_MAX)
PROBE_MIN = 24
PROBE_BUDGET = 0.015  # re-probes at k = 0 may cost at most this share of the run's time
OPTIMISM = 0.5  # standard errors added to acceptance before settling on k = 0
MIN_EVIDENCE = 4.0  # first-position observations needed before settling on k = 0
CATCHUP_FRACTION = 0.25  # assumed draft catch-up cost per skipped token, as a share of a draft decode
PROBE_MAX = 192
PLAUSIBLE_RATE = 0.95  # with the hardware's curve: settle on k = 0 at once when even this per-draft
# acceptance, held at every position, could not pay (a 0.5B draft of a 1.5B target holds 60-80%)
CURVE_RECHECK = 32  # passes between re-evaluations of a settled k = 0 (the model costs 0.2-0.5 ms a pass)

def _continue_key(s: Settings) -> tuple:
    """What drafting continuation depends on (a change re-learns it)."""
    return (s.drafter, s.draft_p_min, s.draft_min)


@dataclass
class CostPolicy:
    """Choose k each pass by maximising predicted tokens/s from a running cost model."""

    k_max: int = K_MAX
    name: str = "cost"
    positions: list[DecayedRate] = field(default_factory=list)
    continuation: list[DecayedRate] = field(default_factory=list)
    verify_ms: dict[int, float] = field(default_factory=dict)  # k -> EWMA verify ms (k = 0: whole k=0 pass cost)
    draft: DraftCost = field(default_factory=DraftCost)  # per drafted token, or per pass (draft_cost.py)
    calib_target_ms: float = 0.0
    other_ms: float | None = None
    n_decode_passes: int = 0
    prev_k: int = 0
    best_positive_k: int = 0
    probe_every: int = FIRST_PROBE
    next_probe: int = FIRST_PROBE
    probing: bool = False
    probe_cost_ms: float = 0.0  # measured overhead of the last probe pass
    probe_skipped: int = 0  # k = 0 passes before that probe (the draft model caught up on their tokens)
    zero_run: int = 0  # consecutive k = 0 passes so far
    warmup_left: int = WARMUP_PASSES
    last_prediction: Prediction | None = None
    last_choice: int = 0
    last_reason: str = ""
    _settings_key: tuple | None = None
    _continue_key: tuple | None = None  # (drafter, draft_p_min, draft_min): what drafting continuation depends on
    draft_stop_cause: str = ""  # "p_min" / "no_match": why the passes seen stopped drafting early (advice)
    _at_zero: bool = False
    curve: dict[int, float] | None = None  # the hardware's verify ms by k in use (None: none known)
    given_curve: dict[int, float] | None = None  # passed in; else the run's own (RunStarted.probe)
    drafter: str = "model"
    _curve_check_at: int = 0  # decode pass at which the curve's verdict is evaluated next
    _curve_hopeless: bool = False
    _zero_check_at: int = 0  # while settled at k = 0: the pass at which the model is consulted again
    chain: ChainCost | None = None  # the drafter is a chain: one policy per member (chain_cost.py)
    tree: TreeChoice = field(default_factory=TreeChoice)  # a tree drafter's chain or tree each pass (tree_cost.py)

    def __post_init__(self) -> None:
        if self.given_curve:
            self.curve = dict(self.given_curve)

    # ------------------------------------------------------------ observing
    def observe(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self._reset_all()
            self.calib_target_ms = max(0.0, event.target_decode_ms)
            self.draft.calib_ms = max(0.0, event.draft_decode_ms)
            self._settings_key = (event.settings.temperature, event.settings.drafter)
            self._continue_key = _continue_key(event.settings)
            self.drafter = event.settings.drafter
            self.draft.reset(self.drafter)
            self.curve = dict(self.given_curve) if self.given_curve else (event.probe.curve if event.probe else None)
            self.curve = self.curve or None
            self.chain = ChainCost.started(event, self._member) if is_chain(event.settings.drafter) else None
        elif isinstance(event, SettingsChanged):
            key = (event.new.temperature, event.new.drafter)
            if event.new.drafter != self.drafter:  # a different drafter costs differently
                self.drafter = event.new.drafter
                start = RunStarted(settings=event.new, target_decode_ms=self.calib_target_ms,
                                   draft_decode_ms=self.calib_draft_ms)
                self.chain = ChainCost.started(start, self._member) if is_chain(event.new.drafter) else None
                self.draft.reset(self.drafter)
                self._curve_check_at = self.n_decode_passes  # judge the curve again at once
            if self._settings_key is not None and key != self._settings_key:
                self._reset_acceptance()
            self._settings_key = key
            ckey = _continue_key(event.new)
            if self._continue_key is not None and ckey != self._continue_key:
                self._reset_continuation()
            self._continue_key = ckey
        elif isinstance(event, PassEvent) and not event.prefill:
            self._observe_pass(event)
        if self.chain is not None and not isinstance(event, RunStarted):
            self.chain.observe(event)

    def _member(self) -> "CostPolicy":
        """A chain member's policy: this one's k range and the hardware's curve."""
        return CostPolicy(self.k_max, given_curve=self.curve)

    def _reset_all(self) -> None:
        self.verify_ms.clear()
        self._curve_check_at, self._curve_hopeless = 0, False
        self.other_ms, self.n_decode_passes, self.prev_k, self.zero_run = None, 0, 0, 0
        self._reset_acceptance()
        self._reset_continuation()

    def _reset_continuation(self) -> None:
        self.continuation.clear()
        self.draft_stop_cause = ""

    def _reset_acceptance(self) -> None:
        self.positions.clear()
        self.tree.reset()
        self.best_positive_k, self.probe_every, self.next_probe = 0, FIRST_PROBE, self.n_decode_passes + FIRST_PROBE
        self.probing, self._at_zero, self.warmup_left = False, False, WARMUP_PASSES

    def _observe_pass(self, ev: PassEvent) -> None:
        self.n_decode_passes += 1
        nd = len(ev.drafts)
        t = ev.timing
        asked = max(ev.k, nd)
        if asked > 0 and not ev.tree:  # (a tree's node budget is all drafted or none: no continuation)
            # drafting continuation: positions 1..min(k, nd + 1) were asked for with the one before drafted
            while len(self.continuation) < min(asked, nd + 1):
                self.continuation.append(DecayedRate())
            for i in range(min(asked, nd + 1)):
                self.continuation[i].observe(i < nd, self.n_decode_passes)
            if nd < asked and ev.draft_stop:
                self.draft_stop_cause = ev.draft_stop
        if self.probing and asked > 0:  # the probe pass: its cost over a k = 0 pass's
            k0 = self.k0_pass_ms()
            self.probe_cost_ms = max(0.0, t.wall_ms - len(ev.emitted) * k0) if k0 > 0 else 0.0
            self.probe_skipped = self.zero_run
        if ev.tree:  # its verify is its nodes, its drafting its levels, its acceptance by rank (tree_cost.py)
            return _observe_tree(self, ev)
        if nd == 0 and asked > 0:
            # asked for drafts, made none (confidence below --draft-p-min at the first, no n-gram match): the
            # target verified one token, and the draft model did catch up (no k = 0 stretch)
            self.zero_run, self.other_ms = 0, ewma(self.other_ms, t.other_ms)
            self.verify_ms[0] = ewma(self.verify_ms.get(0), t.verify_ms)
            self.prev_k = asked  # the draft model is in sync: the next pass's drafting is steady
            return
        self.zero_run = self.zero_run + 1 if nd == 0 else 0
        self.other_ms = ewma(self.other_ms, t.other_ms)
        if nd == 0:
            self.verify_ms[0] = ewma(self.verify_ms.get(0), t.verify_ms + t.draft_ms)
        else:
            self.verify_ms[nd] = ewma(self.verify_ms.get(nd), t.verify_ms)
            self.draft.observe(nd, t.draft_ms, steady=self.prev_k > 0)
            while len(self.positions) < nd:
                self.positions.append(DecayedRate())
            # position i is reached when drafts 1..i-1 were accepted; observe up to the first rejection
            for i in range(min(nd, ev.n_accepted + 1)):
                self.positions[i].observe(i < ev.n_accepted, self.n_decode_passes)
        self.prev_k = asked

    # ------------------------------------------------------------ model
    def _measured(self, counts):
        """The measured prefix of per-position counts: up to the first with too few trials or unseen for more
        than STALE_PASSES decode passes."""
        for p in counts:
            if p.trials < MIN_WEIGHT or self.n_decode_passes - p.last_pass > STALE_PASSES:
                return
            yield p

    def continue_rates(self) -> tuple[list[float], list[float]]:
        """Drafting continuation per measured position (prefix), with the prior of 1, and their weights."""
        measured = list(self._measured(self.continuation))
        return [(p.hits + PRIOR_WEIGHT) / (p.trials + PRIOR_WEIGHT) for p in measured], [p.trials for p in measured]

    def rates(self, optimism: float = 0.0) -> tuple[list[float], list[float]]:
        """Conditional acceptance per measured position (prefix), with the prior, and their weights.

        ``optimism`` > 0 adds that many standard errors (an upper confidence bound)."""
        rates: list[float] = []
        weights: list[float] = []
        for p in self._measured(self.positions):
            n = p.trials + PRIOR_WEIGHT
            r = (p.hits + PRIOR_RATE * PRIOR_WEIGHT) / n
            if optimism:
                r = min(1.0, r + optimism * math.sqrt(r * (1.0 - r) / n))
            rates.append(r)
            weights.append(p.trials)
        return rates, weights

    def k0_pass_ms(self) -> float:
        v0 = self.verify_ms.get(0, self.calib_target_ms)
        return v0 + (self.other_ms or 0.0) if v0 else 0.0

    @property
    def draft_ms_per_token(self) -> float | None:
        """The measured draft cost (None before any draft): per drafted token, or per pass (``draft.per_pass``)."""
        return self.draft.per_unit

    @property
    def calib_draft_ms(self) -> float:
        """The start's single draft decode (ms)."""
        return self.draft.calib_ms

    def points(self) -> dict[int, float]:
        points = {0: self.calib_target_ms, **self.verify_ms} if self.calib_target_ms > 0 else dict(self.verify_ms)
        # a pass that drafts never costs less than one that does not: a stale or noisy point is raised to k = 0's
        return {k: max(ms, points[0]) for k, ms in points.items()} if 0 in points else points

    def bound_prediction(self, rate: float = 1.0) -> Prediction:
        """The best case: every draft accepted (or ``rate`` per draft), with the measured times (and the
        hardware's curve)."""
        d, fixed = self.draft.costs()
        return predict_from([rate] * self.k_max, [1.0] * self.k_max, self.points(), d, self.other_ms or 0.0,
                            k_max=self.k_max, curve=self.curve, draft_ms_fixed=fixed)

    def prediction(self, current_k: int | None = None, optimism: float = 0.0) -> Prediction:
        rates, weights = self.rates(optimism)
        c_rates, c_weights = self.continue_rates()
        d, fixed = self.draft.costs()
        return predict_from(rates, weights, self.points(), d, self.other_ms or 0.0, draft_ms_fixed=fixed,
                            k_max=self.k_max, current_k=current_k, curve=self.curve, continue_rates=c_rates,
                            continue_weights=c_weights, draft_stop_cause=self.draft_stop_cause)

    # ------------------------------------------------------------ choosing
    def choose(self, settings: Settings) -> int:
        self.tree.begin(settings.drafter)
        k, why = self._choose(settings)
        self.last_choice, self.last_reason = clamp_draft_length(k), why
        return self.last_choice

    def members(self) -> tuple[tuple[str, int], ...]:
        """A chain's members and their k in the pass just chosen (0: left out); () for a single drafter."""
        return self.chain.caps if self.chain is not None else ()

    def children(self) -> int:
        """A tree drafter's children per node in the pass just chosen (1: a chain; 0: a tree, or not a tree drafter)."""
        return self.tree.children

    def _choose(self, settings: Settings) -> tuple[int, str]:
        if settings.drafter == "none":
            return 0, "no drafter"
        if self.chain is not None:
            k = self.chain.choose(settings)
            return k, self.chain.why()
        if self.curve and self._curve_hopeless_now():
            return 0, (f"speculation loses: even {PLAUSIBLE_RATE:.0%} acceptance at every draft cannot pay "
                       "(probe's curve): k = 0")
        if self.warmup_left > 0:
            self.warmup_left -= 1
            return min(WARMUP_K, self.k_max), "warm-up: measuring acceptance"
        n = self.n_decode_passes
        if self._at_zero and not self.probing and n < self.next_probe and n < self._zero_check_at:
            # settled at k = 0: no drafts, so no new acceptance; only timings drift (re-checked below)
            return 0, "speculation loses: k = 0"
        pred = self.prediction(current_k=self.prev_k)
        self.last_prediction = pred
        if not pred.ready:
            return min(WARMUP_K, self.k_max), "no timings yet"
        best = pred.best_k
        if self.probing:  # the probe pass has been observed: judge it
            _judge_probe(self, best, n)
        if (tree := self.tree.choose(pred)) is not None:  # a tree drafter: a tree predicted faster than any chain
            self._at_zero = False
            return tree.n, tree.why()
        if best > 0:
            self.best_positive_k = best
            self.probe_every = FIRST_PROBE
            self._at_zero = False
            if n >= self.next_probe and best < self.k_max:
                self.next_probe = n + PROBE_MIN
                return best + 1, f"probe: measuring k = {best + 1}"
            return best, f"best predicted k = {best}"
        return self._choose_at_zero(n)

    def _curve_hopeless_now(self) -> bool:
        """The hardware's curve settles it before any draft when no plausible acceptance pays; the verdict is
        re-evaluated every CURVE_RECHECK passes (timings drift slowly; the model is not free)."""
        if self.n_decode_passes >= self._curve_check_at:
            bound = self.bound_prediction(PLAUSIBLE_RATE)
            self._curve_hopeless = bound.ready and bound.best_k == 0
            self._curve_check_at = self.n_decode_passes + (CURVE_RECHECK if self._curve_hopeless else 1)
            if self._curve_hopeless:
                self.last_prediction = bound
        return self._curve_hopeless

    def _choose_at_zero(self, n: int) -> tuple[int, str]:
        """The model predicts k = 0 best: explore while that is not yet certain, else stay at k = 0 and
        re-probe now and then."""
        # when even drafts that are always accepted could not pay (verify and drafting cost more than
        # the tokens they yield), acceptance does not matter: no more exploring
        hopeless = self.bound_prediction().best_k == 0
        if not hopeless:
            # k = 0 stops the flow of acceptance data: leave it only when even an optimistic reading of
            # the acceptance (OPTIMISM standard errors up) cannot make speculation pay
            opt = self.prediction(current_k=self.prev_k, optimism=OPTIMISM)
            if opt.best_k > 0:
                return opt.best_k, f"k = 0 not yet certain: exploring k = {opt.best_k}"
            first = self.positions[0].trials if self.positions else 0.0
            if first < MIN_EVIDENCE:
                return 1, f"k = 0 not yet certain: {first:.0f} of {MIN_EVIDENCE:.0f} first drafts seen"
        if not self._at_zero:  # a stretch at k = 0 begins: the next probe is probe_every passes away
            self._at_zero = True
            if self.probe_cost_ms == 0.0:
                # no probe measured yet: estimate the draft model's catch-up on the skipped text
                k0 = self.k0_pass_ms()
                d = self.draft.costs()[0]
                if k0 > 0 and CATCHUP_FRACTION * d >= PROBE_BUDGET * k0:
                    self.probe_every = PROBE_MAX
            self.next_probe = max(self.next_probe, n + self.probe_every)
        if n >= self.next_probe:
            self.probing = True
            k = self.best_positive_k or min(WARMUP_K, self.k_max)
            return max(1, min(k, self.k_max)), f"probe: re-checking acceptance at k = {k}"
        self._zero_check_at = n + CURVE_RECHECK
        return 0, "speculation loses: k = 0"


def _observe_tree(pol: CostPolicy, ev: PassEvent) -> None:
    """A tree pass: its verify is its nodes, its drafting its levels, its acceptance by rank (tree_cost.py)."""
    t, n, v = ev.timing, len(ev.tree), verify_sources(pol.points(), pol.k_max, pol.curve)[0]
    pol.zero_run, pol.other_ms = 0, ewma(pol.other_ms, t.other_ms)
    pol.verify_ms[n] = ewma(pol.verify_ms.get(n), t.verify_ms)
    pol.draft.observe(pol.tree.learn(ev, pol.positions, pol.n_decode_passes, v), t.draft_ms, pol.prev_k > 0)
    pol.prev_k = ev.k


def _judge_probe(pol: CostPolicy, best: int, n: int) -> None:
    """After a probe pass: the next is far off while k = 0 wins (PROBE_BUDGET), near when drafting pays."""
    pol.probing = False
    if best == 0:
        k0 = pol.k0_pass_ms()
        per_skipped = pol.probe_cost_ms / max(1, pol.probe_skipped)
        if k0 <= 0 or per_skipped >= PROBE_BUDGET * k0:
            # the probe's cost grows with the text skipped (the draft model catches up on it), so
            # no interval keeps it within budget: probe as rarely as allowed
            budget = PROBE_MAX
        else:
            budget = int(pol.probe_cost_ms / (PROBE_BUDGET * k0))
        pol.probe_every = min(PROBE_MAX, max(pol.probe_every * 2, budget))
    else:
        pol.probe_every = FIRST_PROBE
    pol.next_probe = n + pol.probe_every


def make_policy(mode: str | None, curve: Mapping[int, float] | None = None):
    """A fresh policy for one mode.

    Args:
        mode: "cost" or "schedule" (``Settings.auto``; "auto" means "cost", any other is a SpectuiError).
        curve: the target's verify ms by k here (``ProbeResult.curve``) for the cost policy; when None, the
            run's own at RunStarted (``RunStarted.probe``), if it has one.

    Returns:
        A CostPolicy or a SchedulePolicy: ``observe(event)`` every event, ``choose(settings)`` a pass's k.
    """
    if mode == "auto":
        mode = "cost"
    if mode == "cost":
        return CostPolicy(given_curve=dict(curve) if curve else None)
    if mode == "schedule":
        return SchedulePolicy()
    raise SpectuiError(f"unknown automatic draft-length mode {mode!r}; use one of: {', '.join(AUTO_MODES)}")


class PolicyByMode:
    """The draft-length policy of one run whose mode may change (``settings.auto``): one policy per mode in
    ``AUTO_MODES``, each observing every event; ``choose(settings)`` asks the one of ``settings.auto``."""

    def __init__(self, curve: Mapping[int, float] | None = None) -> None:
        self.curve = dict(curve) if curve else None
        self.policies: dict[str, CostPolicy | SchedulePolicy] = {}
        self._active: str | None = None  # the mode that chose the last pass (None: a fixed k did)

    def observe(self, event: Event) -> None:
        """Every event the run emits, in order: each mode's policy learns from all (RunStarted: afresh)."""
        if isinstance(event, RunStarted) or not self.policies:
            self.policies = {m: make_policy(m, self.curve) for m in AUTO_MODES}
            self._active = None
        if isinstance(event, PassEvent) and not event.prefill and event.settings.auto != self._active:
            self._active = None
        for policy in self.policies.values():
            policy.observe(event)

    def choose(self, settings: Settings) -> int:
        """The next pass's k (0..32), asked of the policy of ``settings.auto``."""
        mode = "cost" if settings.auto == "auto" else settings.auto
        if mode not in AUTO_MODES:
            raise SpectuiError(f"unknown automatic draft-length mode {mode!r}; use one of: {', '.join(AUTO_MODES)}")
        if not self.policies:
            self.policies = {m: make_policy(m, self.curve) for m in AUTO_MODES}
        policy = self.policies[mode]
        if mode != self._active and isinstance(policy, SchedulePolicy):
            policy.k = None  # a schedule switched on starts from settings.draft_max
        self._active = mode
        return policy.choose(settings)

    def members(self) -> tuple[tuple[str, int], ...]:
        """A chain's members and their k in the pass just chosen (0: left out), from the mode that chose it."""
        policy = self.policies.get(self._active) if self._active else None
        return policy.members() if policy is not None else ()

    def children(self) -> int:
        """A tree drafter's children per node in the pass just chosen (1: a chain), from the mode that chose it."""
        return self.policies[self._active].children() if self._active in self.policies else 0

    def current(self, mode: str | None):
        """The policy of ``mode`` (its last choice, reason and prediction), or None."""
        return self.policies.get("cost" if mode == "auto" else mode) if mode else None
