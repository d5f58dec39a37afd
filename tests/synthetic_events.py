"""Hand-built events for the unit tests of statistics, the cost model, auto k and the sweep (no engine
involved; no tests here). Whole runs come from the one generator, ``spectui.recording.synthetic``
(``synthetic_run``: random, any length; ``sample_events``: the fixed sample).

``make_pass`` builds one PassEvent exactly as the engine would describe it (``synthetic.decided_pass``): drafts
1..n_acc accepted, the next one rejected, the rest discarded; the target token is a correction (or a bonus
when every draft was accepted); timings are given in ms. ``make_pass_with_verdicts`` takes the verdicts one
by one and the target token's kind as given. ``held_source`` turns a recorded event list into a TUI source
that behaves like a live run.
"""

from __future__ import annotations

import time

from spectui.contract.events import (
    ACCEPTED,
    PLAIN,
    DraftToken,
    ModelInfo,
    PassEvent,
    RunEnded,
    RunStarted,
    Settings,
    TargetToken,
    Timing,
    Token,
)
from spectui.recording.synthetic import decided_pass, verdicts


def make_pass(index: int, k: int, n_acc: int, *, draft_ms_per_token: float = 0.0, verify_ms: float = 0.0,
              other_ms: float = 0.0, t_end: float = 0.0, settings: Settings | None = None) -> PassEvent:
    assert 0 <= n_acc <= k
    drafts = tuple(DraftToken(id=10 + i, text=f"d{i}", prob=0.5, verdict=v, target_prob=0.5)
                   for i, v in enumerate(verdicts(k, n_acc)))
    draft_ms = draft_ms_per_token * k
    timing = Timing(draft_ms=draft_ms, verify_ms=verify_ms, other_ms=other_ms,
                    wall_ms=draft_ms + verify_ms + other_ms, t_end=t_end)
    return decided_pass(index, settings or Settings(draft_max=k), drafts, Token(id=99, text="t", prob=0.9), timing)


def make_start(target_decode_ms: float = 0.0, draft_decode_ms: float = 0.0, settings: Settings | None = None,
               n_predict: int = 128) -> RunStarted:
    return RunStarted(run_id="synthetic", target=ModelInfo(path="t.gguf"), draft=ModelInfo(path="d.gguf"),
                      prompt="p", prompt_tokens=3, n_predict=n_predict, n_ctx=512, threads=2,
                      settings=settings or Settings(), target_decode_ms=target_decode_ms,
                      draft_decode_ms=draft_decode_ms)


def make_prefill(wall_ms: float = 50.0) -> PassEvent:
    return PassEvent(index=0, prefill=True, k=0, target=TargetToken(id=5, text="x", prob=0.9, kind=PLAIN),
                     emitted=(Token(id=5, text="x", prob=0.9),),
                     timing=Timing(verify_ms=wall_ms, wall_ms=wall_ms, t_end=wall_ms / 1000.0))


def make_end(n_passes: int = 0) -> RunEnded:
    return RunEnded(reason="n_predict", n_passes=n_passes)


def make_pass_with_verdicts(index: int, verdicts, target_kind: str, wall: float, draft_ms: float = 0.0,
                            verify_ms: float = 0.0, prefill: bool = False) -> PassEvent:
    """A pass with the given draft verdicts (k = len(verdicts)); tokens carry no probabilities."""
    drafts = tuple(DraftToken(id=10 + j, text=f"d{j}", prob=0.5, verdict=v) for j, v in enumerate(verdicts))
    n_acc = sum(1 for v in verdicts if v == ACCEPTED)
    tgt = TargetToken(id=99, text="t", prob=0.9, kind=target_kind)
    emitted = tuple(Token(id=d.id, text=d.text) for d in drafts[:n_acc]) + (Token(id=99, text="t"),)
    return PassEvent(
        index=index, prefill=prefill, settings=Settings(draft_max=len(verdicts)), k=len(verdicts), drafts=drafts,
        target=tgt, n_accepted=n_acc, emitted=emitted,
        timing=Timing(draft_ms=draft_ms, verify_ms=verify_ms, other_ms=wall - draft_ms - verify_ms, wall_ms=wall),
    )


def make_plain_pass(index: int, wall_ms: float, *, tokens: int = 1, others_cpu: float = -1.0) -> PassEvent:
    """A pass without drafts that emits ``tokens`` tokens in ``wall_ms`` (all of it verify time), ending at
    index * wall_ms; ``others_cpu`` as measured for contention (-1: not measured)."""
    return PassEvent(index=index, emitted=tuple(Token(id=5, text="x") for _ in range(tokens)),
                     timing=Timing(wall_ms=wall_ms, verify_ms=wall_ms, t_end=index * wall_ms / 1000),
                     others_cpu=others_cpu)


def held_source(events, prompts=None):
    """A TUI source (``SpectuiApp(source, control)``): yield the events (without their end), then wait like a
    live run until stopped, then end. ``prompts`` collects the prompt of each start (a restart, a new prompt)."""

    def source(control, prompt):
        if prompts is not None:
            prompts.append(prompt)
        for ev in events:
            if isinstance(ev, RunEnded):
                break
            yield ev
        while not control.stopped:
            time.sleep(0.01)
        yield RunEnded(reason="stopped")

    return source
