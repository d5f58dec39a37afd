"""Small run traces with known timings for the race tests (written by the tests, in the trace format the
race reads). ``run_events(words, per_pass, pass_ms, ...)``: a prefill emitting ``words[0]`` after ``ttft_ms``,
then passes of ``per_pass`` tokens each (``per_pass - 1`` accepted drafts and the target's token, or k = 0
passes when ``per_pass`` is 1), each ``pass_ms`` long: its decode time is known exactly."""

from __future__ import annotations

from spectui.contract.events import (
    ACCEPTED,
    BONUS,
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
from spectui.recording.trace import write_trace

WORDS = [f" w{i}" for i in range(200)]


def run_events(words=WORDS[:41], per_pass: int = 1, pass_ms: float = 50.0, ttft_ms: float = 80.0,
               prompt: str = "race me", drafter: str = "model", temperature: float = 0.0, end: bool = True,
               ids=None):
    ids = list(ids) if ids is not None else [1000 + WORDS.index(w) if w in WORDS else 5 for w in words]
    k = per_pass - 1
    settings = Settings(draft_max=k, temperature=temperature, drafter=drafter if k else "none")
    evs = [RunStarted(run_id="race-test", started_at=1_700_000_000.0,
                      target=ModelInfo(path="/m/target-1.5b.gguf", name="target-1.5b"),
                      draft=ModelInfo(path="/m/draft-0.5b.gguf", name="draft-0.5b") if drafter == "model" else None,
                      prompt=prompt, prompt_tokens=3, n_predict=len(words), n_ctx=512, threads=2, settings=settings)]
    t = ttft_ms / 1000
    evs.append(PassEvent(index=0, prefill=True, settings=settings, target=TargetToken(id=ids[0], text=words[0],
                         prob=0.9, kind=PLAIN), emitted=(Token(id=ids[0], text=words[0], prob=0.9),),
                         timing=Timing(verify_ms=ttft_ms, wall_ms=ttft_ms, t_end=t)))
    i, n = 1, 1
    while i < len(words):
        chunk = list(zip(ids[i:i + per_pass], words[i:i + per_pass]))
        t += pass_ms / 1000
        drafts = tuple(DraftToken(id=x, text=w, prob=0.8, verdict=ACCEPTED, target_prob=0.8) for x, w in chunk[:-1])
        tid, tw = chunk[-1]
        kind = PLAIN if k == 0 else BONUS
        if len(drafts) < k:  # the last, short pass: its drafts were cut by n_predict
            kind = BONUS
        evs.append(PassEvent(index=n, settings=settings, k=k, drafts=drafts,
                             target=TargetToken(id=tid, text=tw, prob=0.9, kind=kind), n_accepted=len(drafts),
                             emitted=tuple(Token(id=x, text=w, prob=0.8) for x, w in chunk),
                             timing=Timing(draft_ms=0.0, verify_ms=pass_ms, wall_ms=pass_ms, t_end=t)))
        i += len(chunk)
        n += 1
    if end:
        passes = [e for e in evs if isinstance(e, PassEvent) and not e.prefill]  # counted as the engine counts
        evs.append(RunEnded(reason="n_predict", n_passes=len(passes), n_emitted=len(words),
                            n_drafted=sum(len(e.drafts) for e in passes), n_accepted=sum(e.n_accepted for e in passes),
                            wall_s=t))
    return evs


MACHINE = {"cpu": "Test CPU 2.0GHz", "cpu_count": 2, "threads": 2}  # fixed: snapshots do not depend on the host


def write_run(path, **kw) -> str:
    write_trace(path, run_events(**kw), header_extra={"machine": MACHINE})
    return str(path)
