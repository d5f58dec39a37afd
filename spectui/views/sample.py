"""A fixed, deterministic event list covering every token state (for snapshots, tmux tests, docs).

Built only from the dataclasses in spectui.contract.events: a prefill pass, passes with all drafts accepted
(bonus token), with a rejection (rejected + discarded drafts, correction token), a k = 0 pass (plain
target token), setting changes (k, temperature, drafter) and the run's end.
"""

from __future__ import annotations

from ..contract.events import (
    ACCEPTED,
    BONUS,
    CORRECTION,
    DISCARDED,
    PLAIN,
    REJECTED,
    DraftToken,
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

WORDS = ("A hash map stores keys in buckets chosen by a hash function. When two keys land in the same "
         "bucket, it resolves the collision by chaining entries in a list or by probing for the next free "
         "slot.\nStep 1: compute the hash.\nStep 2: pick the bucket.\nStep 3: compare keys until one "
         "matches.").split(" ")


def _words():
    first = True
    for w in WORDS:
        yield w if first else " " + w
        first = False
    while True:
        for w in WORDS:
            yield " " + w


# the settings changes: before pass 12 k = 5; before 26 k = 0 at T = 0.3; before 30 n-gram lookup at k = 2
CHANGES = {
    12: Settings(draft_max=5, temperature=0.0, drafter="model"),
    26: Settings(draft_max=0, temperature=0.3, drafter="model"),
    30: Settings(draft_max=2, temperature=0.3, drafter="ngram"),
}


def sample_events(n_passes: int = 40, ended: bool = True) -> list:
    """The fixed run. Pass i's verdict pattern cycles so every state appears, with k changes at 12 and 26.

    Args:
        n_passes: decode passes after the prefill pass.
        ended: end with RunEnded (False: a run still going).

    Returns:
        RunStarted, the prefill pass, the decode passes with ``CHANGES`` before their passes, RunEnded.
    """
    gen = _words()
    s = Settings(draft_max=3, temperature=0.0, drafter="model")
    events: list = [_start(s)]
    t = 0.31
    ctx = 18
    first = next(gen)
    events.append(PassEvent(index=0, prefill=True, settings=s, k=0, target=TargetToken(id=1, text=first, prob=0.9),
                            emitted=(Token(id=1, text=first, prob=0.9),),
                            timing=Timing(verify_ms=300.0, other_ms=10.0, wall_ms=310.0, t_end=t), n_ctx_used=ctx + 1))
    ctx += 1
    n_drafted = n_acc = 0
    n_emit = 1
    tid = 10
    for i in range(1, n_passes + 1):
        if i in CHANGES:
            events.append(SettingsChanged(before_pass=i, old=s, new=CHANGES[i], t=t))
            s = CHANGES[i]
        k = s.draft_max
        drafts, target, pattern, tid = _tokens(i, k, gen, tid)
        emitted = tuple(Token(id=d.id, text=d.text, prob=d.prob) for d in drafts[:pattern]) + (
            Token(id=target.id, text=target.text, prob=target.prob),)
        draft_ms = 44.0 * k
        verify_ms = 85.0 + 20.0 * k
        wall = draft_ms + verify_ms + 3.0
        t += wall / 1000.0
        ctx += len(emitted)
        n_drafted += k
        n_acc += pattern
        n_emit += len(emitted)
        events.append(PassEvent(index=i, settings=s, k=k, drafts=drafts, target=target, n_accepted=pattern,
                                emitted=emitted, timing=Timing(draft_ms=draft_ms, verify_ms=verify_ms, other_ms=3.0,
                                                               wall_ms=wall, t_end=t), n_ctx_used=ctx))
    if ended:
        events.append(RunEnded(reason="n_predict", n_passes=n_passes + 1, n_emitted=n_emit, n_drafted=n_drafted,
                               n_accepted=n_acc, wall_s=t))
    return events


def _start(s: Settings) -> RunStarted:
    return RunStarted(
        run_id="sample", started_at=1764470000.0,
        target=ModelInfo(path="/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", name="qwen2.5-coder-1.5b",
                         backend="CPU", n_layer=28),
        draft=ModelInfo(path="/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", name="qwen2.5-coder-0.5b",
                        backend="CPU", n_layer=24),
        prompt="Write a step-by-step explanation of how a hash map handles collisions.",
        prompt_tokens=18, n_predict=128, n_ctx=4096, threads=2, settings=s,
        target_decode_ms=85.0, draft_decode_ms=44.0,
    )


def _tokens(i: int, k: int, gen, tid: int) -> tuple[tuple[DraftToken, ...], TargetToken, int, int]:
    """Pass ``i``'s drafts and target token at draft length ``k``: (drafts, target, accepted drafts, next id)."""
    pattern = (k, max(0, k - 1), 1, 0, k)[i % 5] if k else 0  # accepted drafts this pass
    drafts = []
    for j in range(k):
        txt = next(gen) if j < pattern else f" wrong{j}"
        verdict = ACCEPTED if j < pattern else (REJECTED if j == pattern else DISCARDED)
        drafts.append(DraftToken(id=tid, text=txt, prob=0.6, verdict=verdict, target_prob=0.5))
        tid += 1
    tgt_text = next(gen)
    kind = PLAIN if k == 0 else (BONUS if pattern == k else CORRECTION)
    return tuple(drafts), TargetToken(id=tid, text=tgt_text, prob=0.8, kind=kind), pattern, tid + 1
