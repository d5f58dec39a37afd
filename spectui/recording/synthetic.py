"""Made-up runs: ``synthetic_run``, a well-formed event stream (start, prefill, decode passes, one settings
change half-way, end) for the replay benchmark and the reader's tests; never shown as a real recording.
No Textual import.
"""

from __future__ import annotations

import random
from typing import Iterator

from ..contract.events import (
    ACCEPTED,
    BONUS,
    CORRECTION,
    DISCARDED,
    PLAIN,
    REJECTED,
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

WORDS = ["the", " cat", " sat", " on", " a", " mat", ".", "\n", " def", " f", "(x", "):", " ré", "sumé", " 🙂"]


def synthetic_run(n_passes: int, seed: int = 0, k: int = 3, p_accept: float = 0.7) -> Iterator[Event]:
    """A made-up but well-formed run, generated lazily (the same for the same arguments).

    Args:
        n_passes: decode passes after the prefill pass.
        seed: the random generator's seed.
        k: the draft length until the settings change half-way (then k - 1, at temperature 0.5).
        p_accept: each draft's chance of acceptance (the first rejection discards the rest).

    Returns:
        An iterator of RunStarted, the prefill pass, ``n_passes`` decode passes (a SettingsChanged before pass
        ``n_passes // 2``), RunEnded.
    """
    rng = random.Random(seed)  # noqa: S311 - made-up data, nothing secret
    settings = Settings(draft_max=k)
    yield RunStarted(
        run_id=f"synthetic-{seed}", started_at=1_700_000_000.0,
        target=ModelInfo(path="synthetic-target.gguf", name="synthetic target", n_vocab=len(WORDS)),
        draft=ModelInfo(path="synthetic-draft.gguf", name="synthetic draft", n_vocab=len(WORDS)),
        prompt="synthetic", prompt_tokens=3, n_predict=n_passes * (k + 1), n_ctx=1 << 20, threads=2,
        settings=settings, target_decode_ms=80.0, draft_decode_ms=40.0,
    )
    t = 0.0
    ctx = 3
    n_emit = n_drafted = n_acc = 0
    for i in range(n_passes + 1):
        if i == n_passes // 2 and i > 0:
            new = Settings(draft_max=max(0, settings.draft_max - 1), temperature=0.5)
            yield SettingsChanged(before_pass=i, old=settings, new=new, t=t)
            settings = new
        if i == 0:
            drafts, target, emitted, timing, n_a = _prefill(rng)
        else:
            drafts, target, emitted, timing, n_a = _decode(rng, settings.draft_max, p_accept)
            n_drafted += settings.draft_max
            n_acc += n_a
        t += timing.wall_ms / 1000.0
        ctx += len(emitted)
        n_emit += len(emitted)
        yield PassEvent(
            index=i, prefill=i == 0, settings=settings, k=settings.draft_max if i else 0, drafts=drafts,
            target=target, n_accepted=n_a, emitted=emitted,
            timing=Timing(timing.draft_ms, timing.verify_ms, timing.other_ms, timing.wall_ms, round(t, 6)),
            n_ctx_used=ctx,
        )
    yield RunEnded(reason="n_predict", n_passes=n_passes + 1, n_emitted=n_emit, n_drafted=n_drafted,
                   n_accepted=n_acc, wall_s=round(t, 6))


def _prefill(rng: random.Random):
    """The prefill pass's made-up parts: (drafts, target, emitted, timing, accepted)."""
    wall = 120.0
    tok = rng.randrange(len(WORDS))
    target = TargetToken(tok, WORDS[tok], 0.9, kind=PLAIN)
    return (), target, (Token(tok, WORDS[tok], 0.9),), Timing(0.0, wall, 0.0, wall, 0.0), 0


def _decode(rng: random.Random, kk: int, p_accept: float):
    """A decode pass's made-up parts at draft length ``kk``: (drafts, target, emitted, timing, accepted)."""
    verdicts = []
    rejected = False
    for _ in range(kk):
        if rejected:
            verdicts.append(DISCARDED)
        elif rng.random() < p_accept:
            verdicts.append(ACCEPTED)
        else:
            verdicts.append(REJECTED)
            rejected = True
    ids = [rng.randrange(len(WORDS)) for _ in range(kk + 1)]
    drafts: tuple[DraftToken, ...] = tuple(
        DraftToken(ids[j], WORDS[ids[j]], rng.random(), verdict=verdicts[j], target_prob=rng.random())
        for j in range(kk)
    )
    n_a = verdicts.count(ACCEPTED)
    kind = PLAIN if kk == 0 else (BONUS if n_a == kk else CORRECTION)
    target = TargetToken(ids[kk], WORDS[ids[kk]], rng.random(), kind=kind)
    emitted: tuple[Token, ...] = tuple(Token(d.id, d.text, d.prob) for d in drafts[:n_a])
    emitted += (Token(target.id, target.text, target.prob),)
    dm, vm, om = 40.0 * kk, 80.0 + 15.0 * kk, 2.0
    return drafts, target, emitted, Timing(dm, vm, om, dm + vm + om, 0.0), n_a
