"""Made-up runs, never shown as a real recording: one generator (``made_up_run``) for the demo's fallback
(``python -m spectui.tui`` without a trace), the tests and the benchmarks. No Textual import.

A run is a ``Script``'s: its start, the settings changes before its passes, its tokens and what each pass
costs. Two scripts: ``sample_events`` (the fixed sample run: every token state in a cycle, setting changes at
passes 12, 26 and 30; the TUI's snapshots and tests) and ``synthetic_run`` (random verdicts from a seed, one
settings change half-way; the replay benchmark, the reader's tests). The loop counts ``RunEnded`` as the
engine does (spectui.engine's ``RunCounters``): ``n_passes`` the decode passes (pass 0, the prefill, is not
one), ``n_emitted`` every emitted token (the prefill's included), ``n_drafted`` and ``n_accepted`` the decode
passes' drafts and accepted drafts; the statistics of its passes (``analysis.stats.compute``) say the same.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Iterator

from ..contract.events import (
    ACCEPTED,
    BONUS,
    CORRECTION,
    DISCARDED,
    PLAIN,
    REJECTED,
    STOP_N_PREDICT,
    DraftToken,
    Event,
    ModelInfo,
    PassEvent,
    RunEnded,
    RunStarted,
    Settings,
    SettingsChanged,
    TargetToken,
    Timing,
    Token,
)


def verdicts(k: int, n_accepted: int) -> tuple[str, ...]:
    """The verdicts of ``k`` drafts of which the first ``n_accepted`` were accepted, as the engine decides
    them: the next one rejected, the rest discarded."""
    return tuple(ACCEPTED if j < n_accepted else (REJECTED if j == n_accepted else DISCARDED) for j in range(k))


def decided_pass(index: int, settings: Settings, drafts: tuple[DraftToken, ...], target: Token, timing: Timing,
                 n_ctx_used: int = 0) -> PassEvent:
    """Decode pass ``index`` as the engine reports it, from its drafts (accepted ones first: ``verdicts``) and
    the target's token: k the drafts, the target token a plain one (no drafts), a bonus (all accepted) or a
    correction; the accepted drafts' tokens and the target's emitted."""
    n_acc = sum(1 for d in drafts if d.verdict == ACCEPTED)
    kind = PLAIN if not drafts else (BONUS if n_acc == len(drafts) else CORRECTION)
    emitted = tuple(Token(id=d.id, text=d.text, prob=d.prob) for d in drafts[:n_acc]) + (target,)
    return PassEvent(index=index, settings=settings, k=len(drafts), drafts=drafts,
                     target=TargetToken(id=target.id, text=target.text, prob=target.prob, kind=kind),
                     n_accepted=n_acc, emitted=emitted, timing=timing, n_ctx_used=n_ctx_used)


@dataclass(frozen=True)
class Costs:
    """What a made-up pass costs, in ms: the prefill's verify and other time; a decode pass at draft length k
    drafts ``draft * k``, verifies ``verify + verify_per_draft * k`` and spends ``other``."""

    prefill_verify: float
    prefill_other: float
    draft: float
    verify: float
    verify_per_draft: float
    other: float

    def pass_ms(self, k: int) -> tuple[float, float, float, float]:
        """A decode pass's (draft, verify, other, wall) ms at draft length ``k``."""
        dm, vm = self.draft * k, self.verify + self.verify_per_draft * k
        return dm, vm, self.other, dm + vm + self.other


class Script:
    """What a made-up run says, walked by ``made_up_run``: ``start()`` (RunStarted), ``change(index, settings)``
    (the settings from pass ``index`` on, or None), ``first()`` (the prefill's token), ``decode(index, k)`` (a
    decode pass's drafts and the target's token) and ``costs``; ``digits``: times rounded to so many decimals
    (None: as summed)."""

    costs: Costs
    digits: int | None = None


def made_up_run(n_passes: int, script: Script, ended: bool = True) -> Iterator[Event]:
    """The one generator: RunStarted, the prefill pass, ``n_passes`` decode passes (each settings change
    before its pass), RunEnded counted as the engine counts it (the module docstring).

    Args:
        n_passes: decode passes after the prefill pass.
        script: the run's start, settings changes, tokens and costs (a fresh ``SampleScript`` or
            ``RandomScript``: scripts keep their place).
        ended: end with RunEnded (False: a run still going).

    Returns:
        An iterator of the run's events, generated lazily.
    """
    start = script.start()
    yield start
    settings, costs, digits = start.settings, script.costs, script.digits
    first = script.first()
    wall = costs.prefill_verify + costs.prefill_other
    t = wall / 1000.0
    ctx = start.prompt_tokens + 1
    yield PassEvent(index=0, prefill=True, settings=settings, k=0,
                    target=TargetToken(id=first.id, text=first.text, prob=first.prob, kind=PLAIN), emitted=(first,),
                    timing=Timing(verify_ms=costs.prefill_verify, other_ms=costs.prefill_other, wall_ms=wall,
                                  t_end=_rounded(t, digits)), n_ctx_used=ctx)
    n_emitted, n_drafted, n_accepted = 1, 0, 0
    for i in range(1, n_passes + 1):
        new = script.change(i, settings)
        if new is not None:
            yield SettingsChanged(before_pass=i, old=settings, new=new, t=t)
            settings = new
        drafts, target = script.decode(i, settings.draft_max)
        dm, vm, om, wall = costs.pass_ms(len(drafts))
        t += wall / 1000.0
        ctx += 1 + sum(d.verdict == ACCEPTED for d in drafts)  # the pass's tokens, emitted into the context
        ev = decided_pass(i, settings, drafts, target, Timing(dm, vm, om, wall, _rounded(t, digits)), ctx)
        n_emitted += len(ev.emitted)
        n_drafted += len(ev.drafts)
        n_accepted += ev.n_accepted
        yield ev
    if ended:
        yield RunEnded(reason=STOP_N_PREDICT, n_passes=n_passes, n_emitted=n_emitted, n_drafted=n_drafted,
                       n_accepted=n_accepted, wall_s=_rounded(t, digits))


def _rounded(t: float, digits: int | None) -> float:
    return t if digits is None else round(t, digits)


# ------------------------------------------------------------------ the sample run: every state, fixed

SAMPLE_WORDS = ("A hash map stores keys in buckets chosen by a hash function. When two keys land in the same "
                "bucket, it resolves the collision by chaining entries in a list or by probing for the next free "
                "slot.\nStep 1: compute the hash.\nStep 2: pick the bucket.\nStep 3: compare keys until one "
                "matches.").split(" ")

# the sample's settings changes: before pass 12 k = 5; before 26 k = 0 at T = 0.3; before 30 n-gram lookup at k = 2
SAMPLE_CHANGES = {
    12: Settings(draft_max=5, temperature=0.0, drafter="model"),
    26: Settings(draft_max=0, temperature=0.3, drafter="model"),
    30: Settings(draft_max=2, temperature=0.3, drafter="ngram"),
}


class SampleScript(Script):
    """The fixed sample: a Qwen2.5-Coder 1.5B / 0.5B pair explaining hash maps on 2 CPU threads at k = 3; pass
    i's accepted drafts cycle through (k, k - 1, 1, 0, k)[i % 5], so accepted, rejected and discarded drafts,
    bonus, correction and plain tokens all appear; ``SAMPLE_CHANGES`` before their passes."""

    costs = Costs(prefill_verify=300.0, prefill_other=10.0, draft=44.0, verify=85.0, verify_per_draft=20.0,
                  other=3.0)

    def __init__(self) -> None:
        self.words = self._words()
        self.tid = 10  # the next token id

    @staticmethod
    def _words() -> Iterator[str]:
        yield SAMPLE_WORDS[0]
        yield from (" " + w for w in SAMPLE_WORDS[1:])
        while True:
            yield from (" " + w for w in SAMPLE_WORDS)

    def start(self) -> RunStarted:
        return RunStarted(
            run_id="sample", started_at=1764470000.0,
            target=ModelInfo(path="/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", name="qwen2.5-coder-1.5b",
                             backend="CPU", n_layer=28),
            draft=ModelInfo(path="/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", name="qwen2.5-coder-0.5b",
                            backend="CPU", n_layer=24),
            prompt="Write a step-by-step explanation of how a hash map handles collisions.",
            prompt_tokens=18, n_predict=128, n_ctx=4096, threads=2,
            settings=Settings(draft_max=3, temperature=0.0, drafter="model"),
            target_decode_ms=85.0, draft_decode_ms=44.0,
        )

    def change(self, index: int, settings: Settings) -> Settings | None:
        return SAMPLE_CHANGES.get(index)

    def first(self) -> Token:
        return Token(id=1, text=next(self.words), prob=0.9)

    def decode(self, index: int, k: int) -> tuple[tuple[DraftToken, ...], Token]:
        n_acc = (k, max(0, k - 1), 1, 0, k)[index % 5] if k else 0
        drafts = []
        for j, verdict in enumerate(verdicts(k, n_acc)):
            text = next(self.words) if verdict == ACCEPTED else f" wrong{j}"
            drafts.append(DraftToken(id=self.tid, text=text, prob=0.6, verdict=verdict, target_prob=0.5))
            self.tid += 1
        target = Token(id=self.tid, text=next(self.words), prob=0.8)
        self.tid += 1
        return tuple(drafts), target


def sample_events(n_passes: int = 40, ended: bool = True) -> list:
    """The fixed sample run (``SampleScript``): the demo's fallback, the TUI's snapshots and tests.

    Args:
        n_passes: decode passes after the prefill pass.
        ended: end with RunEnded (False: a run still going).

    Returns:
        RunStarted, the prefill pass, the decode passes with ``SAMPLE_CHANGES`` before their passes, RunEnded.
    """
    return list(made_up_run(n_passes, SampleScript(), ended))


# ------------------------------------------------------------------ random runs: any length, from a seed

WORDS = ["the", " cat", " sat", " on", " a", " mat", ".", "\n", " def", " f", "(x", "):", " ré", "sumé", " 🙂"]


class RandomScript(Script):
    """Random verdicts and tokens from ``seed``: each draft accepted with chance ``p_accept`` until the first
    rejection; k until the settings change before pass ``n_passes // 2`` (then k - 1, at temperature 0.5)."""

    costs = Costs(prefill_verify=120.0, prefill_other=0.0, draft=40.0, verify=80.0, verify_per_draft=15.0, other=2.0)
    digits = 6

    def __init__(self, n_passes: int, seed: int, k: int, p_accept: float) -> None:
        self.n_passes, self.seed, self.k, self.p_accept = n_passes, seed, k, p_accept
        self.rng = random.Random(seed)  # noqa: S311 - made-up data, nothing secret

    def start(self) -> RunStarted:
        return RunStarted(
            run_id=f"synthetic-{self.seed}", started_at=1_700_000_000.0,
            target=ModelInfo(path="synthetic-target.gguf", name="synthetic target", n_vocab=len(WORDS)),
            draft=ModelInfo(path="synthetic-draft.gguf", name="synthetic draft", n_vocab=len(WORDS)),
            prompt="synthetic", prompt_tokens=3, n_predict=self.n_passes * (self.k + 1), n_ctx=1 << 20, threads=2,
            settings=Settings(draft_max=self.k), target_decode_ms=80.0, draft_decode_ms=40.0,
        )

    def change(self, index: int, settings: Settings) -> Settings | None:
        if index != self.n_passes // 2:
            return None
        return Settings(draft_max=max(0, settings.draft_max - 1), temperature=0.5)

    def first(self) -> Token:
        tok = self.rng.randrange(len(WORDS))
        return Token(tok, WORDS[tok], 0.9)

    def decode(self, index: int, k: int) -> tuple[tuple[DraftToken, ...], Token]:
        rng = self.rng
        n_acc = 0
        while n_acc < k and rng.random() < self.p_accept:
            n_acc += 1
        ids = [rng.randrange(len(WORDS)) for _ in range(k + 1)]
        drafts = tuple(DraftToken(ids[j], WORDS[ids[j]], rng.random(), verdict=v, target_prob=rng.random())
                       for j, v in enumerate(verdicts(k, n_acc)))
        return drafts, Token(ids[k], WORDS[ids[k]], rng.random())


def synthetic_run(n_passes: int, seed: int = 0, k: int = 3, p_accept: float = 0.7) -> Iterator[Event]:
    """A made-up but well-formed run of random verdicts (``RandomScript``), the same for the same arguments.

    Args:
        n_passes: decode passes after the prefill pass.
        seed: the random generator's seed.
        k: the draft length until the settings change half-way (then k - 1, at temperature 0.5).
        p_accept: each draft's chance of acceptance (the first rejection discards the rest).

    Returns:
        An iterator of RunStarted, the prefill pass, ``n_passes`` decode passes (a SettingsChanged before pass
        ``n_passes // 2``), RunEnded.
    """
    return made_up_run(n_passes, RandomScript(n_passes, seed, k, p_accept))
