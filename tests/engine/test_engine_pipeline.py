"""--pipeline (spectui/engine/run/pipeline.py): the draft model drafts the next block on its own thread while the
target verifies this one. On the real llama.cpp with the tiny models:

- at T = 0 a pipelined run records what the sequential run records, every field (times, other processes' CPU
  and the pipeline's own record aside): every id, verdict and text, the target's numbers bit for bit, the
  draft's probabilities within its kernels' noise (after a hit the draft decodes its last draft and the guess
  one at a time where the sequential loop catches up with one batch of two; llama.cpp rounds the two apart in
  the last bits, and the draft's KV carries it on: about 1e-4 on the tiny models over 48 tokens); and it is
  lossless against the target alone (the greedy checks of test_engine_greedy.py);
- at T > 0 its tokens follow the target's law (a chi-square, as test_engine_sampling.py) also in the passes
  whose drafts were drafted during the previous verify, and a seeded run repeats whatever the threads' timing;
- the pipeline's record says what happened: hits, what was thrown away and why, the overlap."""

from __future__ import annotations

import dataclasses
import math
import threading
from collections import Counter

import numpy as np
import pytest
from greedy_checks import N, assert_argmax_of_verify_pass, assert_lossless, emitted_ids, reference, run_with_hook
from test_engine_overlap import PROMPT, run
from test_engine_sampling import chi2_check

from spectui.contract.control import RunControl
from spectui.contract.events import (
    SPEC_CHANGED,
    SPEC_END,
    SPEC_GUESS,
    SPEC_REJECTED,
    PassEvent,
    RunStarted,
    Settings,
    SettingsChanged,
)
from spectui.engine.llama.models import LoadedModel
from spectui.engine.run.pipeline import PositionDraws, split_threads
from spectui.engine.verify import softmax

MEASURED = ("timing", "others_cpu", "t", "wall_s", "run_id", "started_at", "target_decode_ms", "draft_decode_ms",
            "pipeline", "load_s")
DRAFT_CLOSE = 1e-3  # the draft's probabilities (q): its kernels' noise, carried on by its KV (see above)


def recorded(ev):
    """An event as a dict without what is measured or says how it was drafted (RunStarted's split, the pipeline's
    record, the settings' pipeline switch)."""
    d = dataclasses.asdict(ev)
    for key in MEASURED:
        d.pop(key, None)
    for key in ("target", "draft"):
        if isinstance(d.get(key), dict):
            d[key].pop("load_s", None)
    for key in ("settings", "old", "new"):
        if isinstance(d.get(key), dict):
            d[key].pop("pipeline", None)
    return d


def _draft_side(path: str) -> bool:
    """Where q is recorded: drafts[i].prob, emitted[i].prob (an accepted draft's is its q), inspect[i].draft_top
    [j].prob; never a target's number (target.prob, drafts[i].target_prob, target_top)."""
    return ("drafts[" in path or "emitted[" in path or ".draft_top" in path) and path.endswith(".prob")


def assert_same_record(a, b, path="event"):
    """Equal: the draft's probabilities within DRAFT_CLOSE, everything else exactly (the target's too)."""
    if isinstance(a, float) and isinstance(b, float) and _draft_side(path):
        assert math.isclose(a, b, abs_tol=DRAFT_CLOSE), f"{path}: {a} != {b}"
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            assert_same_record(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{path}: {len(a)} != {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same_record(x, y, f"{path}[{i}]")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def passes(events):
    return [e for e in events if isinstance(e, PassEvent) and not e.prefill]


def pipelined(events):
    """The passes with a pipeline record (a pass of k = 0, at the very end, has none)."""
    return [p for p in passes(events) if p.pipeline is not None]


@pytest.fixture(scope="module")
def engine(make_engine, tiny_target, tiny_draft_noisy):
    return make_engine(tiny_target, tiny_draft_noisy, threads=1, threads_draft=1)


@pytest.fixture(scope="module")
def same_engine(make_engine, tiny_target, tiny_draft_same):
    return make_engine(tiny_target, tiny_draft_same, threads=1, threads_draft=1)


GREEDY = {
    "k=1": Settings(draft_max=1, drafter="model"),
    "k=3": Settings(draft_max=3, drafter="model"),
    "k=8": Settings(draft_max=8, drafter="model"),
    "p-min 0.6": Settings(draft_max=6, drafter="model", draft_p_min=0.6, draft_min=1),
    "auto k (schedule)": Settings(draft_max=2, drafter="model", auto="schedule"),
}


@pytest.mark.parametrize("inspect_top", [5, 0])
@pytest.mark.parametrize("case", list(GREEDY))
@pytest.mark.parametrize("pair", ["noisy", "same"])
def test_pipelined_records_what_sequential_records_at_t0(engine, same_engine, pair, case, inspect_top):
    e = engine if pair == "noisy" else same_engine
    settings = GREEDY[case]
    e.inspect_top = inspect_top
    try:
        seq = run(e, settings, 48)
        pipe = run(e, dataclasses.replace(settings, pipeline=True), 48)
    finally:
        e.inspect_top = 5
    assert [type(x).__name__ for x in pipe] == [type(x).__name__ for x in seq]
    assert_same_record([recorded(x) for x in pipe], [recorded(x) for x in seq])
    assert all(p.pipeline is not None and p.settings.pipeline for p in passes(pipe) if p.k)
    ps = pipelined(pipe)
    assert all(p.pipeline is None for p in passes(seq))
    assert pipe[-1].reason == seq[-1].reason == "n_predict"
    if pair == "same":  # the draft is the target: every block drafted ahead is used
        assert sum(p.pipeline.overlapped for p in ps) == len(ps) - 1 and ps[0].pipeline.overlapped is False
        assert not any(p.pipeline.thrown for p in ps[:-1])


@pytest.fixture(scope="module")
def ref(engine):
    return reference(engine)


@pytest.mark.parametrize("k", [1, 2, 5, 8])
def test_pipelined_greedy_is_lossless(engine, ref, k):
    events, records = run_with_hook(engine, Settings(draft_max=k, drafter="model", pipeline=True))
    toks = emitted_ids(events)
    assert len(toks) == N and events[-1].reason == "n_predict"
    assert_argmax_of_verify_pass(records)
    assert_lossless(toks, *ref)
    ps = pipelined(events)
    assert any(p.pipeline.thrown for p in ps)  # misses
    assert k > 2 or any(p.pipeline.overlapped for p in ps)  # and hits (the noisy draft rarely holds 5 in a row)


def test_the_record_says_what_happened(engine):
    """Each pipelined pass: a hit (every draft held, the target's token was the guess) hands its block to the next
    pass, which is overlapped; a miss throws the block drafted ahead away, with its reason."""
    ps = pipelined(run(engine, Settings(draft_max=3, drafter="model", pipeline=True), 80))
    for prev, p in zip(ps, ps[1:]):
        assert p.pipeline.overlapped == prev.pipeline.hit
    for p in ps:
        info = p.pipeline
        all_held = p.n_accepted == len(p.drafts)
        if info.hit:
            assert all_held and info.guess == p.target.id and not info.thrown
        elif info.thrown:
            assert info.thrown_why == (SPEC_GUESS if all_held else SPEC_REJECTED) or info.thrown_why == SPEC_END
            if info.thrown_why == SPEC_GUESS:
                assert info.guess != p.target.id and info.thrown[0].id == info.guess
        assert info.draft_busy_ms >= 0 and info.cut_wait_ms >= 0
        assert 0 <= info.overlap_ms <= p.timing.verify_ms + 1e-6  # a share of the target's decode
    assert {p.pipeline.thrown_why for p in ps if p.pipeline.thrown} >= {SPEC_REJECTED}


def slowed(model, seconds: float):
    """``model``'s decodes each ``seconds`` longer (a wait inside, the GIL free as in llama_decode)."""
    real = model.decode

    def slow(tokens, pos0, logits="last"):
        n = real(tokens, pos0, logits)
        threading.Event().wait(seconds)
        return n

    return slow


@pytest.mark.timing  # shares of the wall clock
def test_the_draft_thread_drafts_while_the_target_verifies(same_engine):
    """Decodes slowed to 40 ms a verify and 2 ms a draft step (the tiny models' take a fraction of a millisecond,
    less than the loop's own Python between them): the draft thread drafts the next block within the verify, so
    a hit's pass waits for its drafts less than they took to draft, and the overlap is a good share of them."""
    tgt, dft = same_engine.target, same_engine.draft
    tgt.decode, dft.decode = slowed(tgt, 0.04), slowed(dft, 0.002)
    try:
        ps = pipelined(run(same_engine, Settings(draft_max=3, drafter="model", pipeline=True), 24))
    finally:
        del tgt.decode, dft.decode
    over = [p for p in ps if p.pipeline.overlapped]
    assert len(over) >= 3
    for prev, p in zip(ps, ps[1:]):
        if p.pipeline.overlapped:  # drafted during prev's 20 ms verify
            assert prev.pipeline.overlap_ms > 0.3 * p.pipeline.draft_busy_ms
            assert p.timing.draft_ms < p.pipeline.draft_busy_ms


def test_a_settings_change_throws_the_block_away(same_engine):
    """With the draft = the target every block is used, until a change of k: that pass throws the block drafted
    ahead away (why: changed) and drafts afresh; the run stays the sequential run's."""
    def on_pass(control, ev):
        if ev.index == 4:
            control.update(draft_max=2)

    s = Settings(draft_max=4, drafter="model")
    seq = run(same_engine, s, 40, on_pass=on_pass)
    pipe = run(same_engine, dataclasses.replace(s, pipeline=True), 40, on_pass=on_pass)
    assert_same_record([recorded(x) for x in pipe], [recorded(x) for x in seq])
    ps = {p.index: p for p in passes(pipe)}
    assert ps[4].pipeline.hit and not ps[5].pipeline.overlapped
    # thrown: what the draft thread had drafted of it when told to stop (it stops after the draft in progress)
    assert ps[5].pipeline.thrown_why == SPEC_CHANGED and 1 <= len(ps[5].pipeline.thrown) <= 4
    assert ps[6].pipeline.overlapped and len(ps[6].drafts) == 2


def test_switching_the_pipeline_mid_run_keeps_the_text(engine):
    """--pipeline on and off between passes (the TUI's key): the same tokens as a sequential run throughout;
    sequential passes carry no pipeline record unless they threw a block away."""
    flips = {3: True, 7: False, 11: True, 15: False}

    def on_pass(control, ev):
        if ev.index in flips:
            control.update(pipeline=flips[ev.index])

    seq = run(engine, Settings(draft_max=3, drafter="model"), 60)
    mixed = run(engine, Settings(draft_max=3, drafter="model"), 60, on_pass=on_pass)
    assert emitted_ids(mixed) == emitted_ids(seq)
    changes = [c for c in mixed if isinstance(c, SettingsChanged)]
    assert [c.new.pipeline for c in changes] == [True, False, True, False]
    for p in passes(mixed):
        if p.settings.pipeline:
            assert p.pipeline is not None
        else:
            assert p.pipeline is None or (p.pipeline.thrown_why == SPEC_CHANGED and not p.pipeline.overlapped)
    assert engine.target.threads == 1 and engine.draft.threads == 1  # the sequential counts once more


def test_other_drafters_and_k0_run_sequentially(engine):
    for s in (Settings(draft_max=3, drafter="ngram", pipeline=True), Settings(draft_max=0, drafter="none",
                                                                               pipeline=True)):
        ev = run(engine, s, 24, prompt="a b c d a b c d a b c d a b c")
        assert ev[-1].reason == "n_predict" and all(p.pipeline is None for p in passes(ev))


def test_run_started_records_the_split(make_engine, tiny_target, tiny_draft_noisy):
    with make_engine(tiny_target, tiny_draft_noisy, threads=1, threads_draft=1) as e:
        start = run(e, Settings(draft_max=2, drafter="model", pipeline=True), 4)[0]
    assert isinstance(start, RunStarted)
    assert start.threads == 1 and start.threads_draft == 1 and start.pipeline_threads == (1, 1)


def test_split_threads():
    assert split_threads(2, None, False, 2) == (1, 1)
    assert split_threads(3, None, False, 3) == (2, 1)
    assert split_threads(4, None, False, 4) == (2, 2)
    assert split_threads(1, None, False, 1) == (1, 1)  # one core: nothing to split (auto says so)
    assert split_threads(1, None, True, 4) == (1, 3)  # -t 1: the draft takes the rest
    assert split_threads(2, 1, False, 8) == (7, 1)  # -td 1 alone: the target takes the rest
    assert split_threads(2, 2, True, 2) == (2, 2)  # both given: as given


def test_seeded_pipelined_runs_repeat_whatever_the_timing(engine):
    """At T > 0 the draft thread draws from streams keyed by (seed, position), never the loop's RNG: the same
    seed gives the same run, with the draft thread slowed or not."""
    s = Settings(draft_max=3, drafter="model", temperature=0.9, seed=11, pipeline=True)
    a = run(engine, s, 48)
    drafter = engine._drafters.get("model")
    real = drafter.propose

    def slow(*args, **kw):  # the draft thread late: the loop waits longer, the draws stay the same
        threading.Event().wait(0.002)
        return real(*args, **kw)

    drafter.propose = slow
    try:
        b = run(engine, s, 48)
    finally:
        del drafter.propose
    assert emitted_ids(a) == emitted_ids(b)
    assert [recorded(x) for x in a] == [recorded(x) for x in b]
    assert emitted_ids(run(engine, dataclasses.replace(s, seed=12), 48)) != emitted_ids(a)


def test_position_draws_are_keyed_by_position():
    a, b = PositionDraws(7, 10), PositionDraws(7, 10)
    first = [a.random() for _ in range(3)]
    assert first == [b.random() for _ in range(3)]
    c = PositionDraws(7, 11)
    assert c.random() == first[1]  # position 11's uniform whoever draws it
    assert PositionDraws(8, 10).random() != first[0]
    assert all(0.0 <= u < 1.0 for u in first)


RUNS = 2500


@pytest.mark.slow  # a law checked over many samples
@pytest.mark.parametrize("pair", ["same", "noisy"])
def test_overlapped_blocks_follow_the_target_law(make_engine, tiny_target, tiny_draft_same, tiny_draft_noisy, pair):
    """T = 1, k = 1: pass 1 (drafted afresh) emits x1, x2; on a hit (its draft held and the target's token was the
    guess) pass 2's draft was drafted during pass 1's verify, sampled from q after the guess. The token x3 pass 2
    emits first must follow the target's law after (prompt, t0, x1, x2), whatever (x1, x2) were: each x3 is put
    through its own law's randomized probability integral transform, uniform on [0, 1) exactly when x3 follows
    it, and the values are checked for uniformity (a chi-square over 10 bins), among hits alone and among all
    runs. With the draft = the target (q = p) every draft holds; with the noisy draft the acceptance test decides
    (its q rows are checked against the draft's own law by test_overlapped_drafts_are_judged_by_their_own_q)."""
    draft = tiny_draft_same if pair == "same" else tiny_draft_noisy
    with make_engine(tiny_target, draft, n_ctx=256, threads=1, threads_draft=1) as e:
        prompt_ids = e.tokenize("the hash map handles collisions")
        rows = []
        for seed in range(RUNS):
            control = RunControl(Settings(draft_max=1, temperature=0.0, drafter="model", seed=seed, pipeline=True))
            ps = []
            for ev in e.run("the hash map handles collisions", control, 6):
                if isinstance(ev, PassEvent):
                    ps.append(ev)
                    if ev.prefill:
                        control.update(temperature=1.0)
            toks = [t.id for p in ps for t in p.emitted]
            if len(ps) >= 3 and len(toks) >= 4:
                rows.append((toks[0], toks[1], toks[2], toks[3], ps[2].pipeline.overlapped))
    assert len({r[0] for r in rows}) == 1
    laws = target_laws(tiny_target, prompt_ids, {r[:3] for r in rows})
    v = np.random.default_rng(0)
    for only_hits in (True, False):
        us = [pit(laws[r[:3]], r[3], v) for r in rows if r[4] or not only_hits]
        assert len(us) >= 150, f"too few samples ({len(us)}) for the check; pick another prompt"
        counts = Counter(min(9, int(u * 10)) for u in us)
        chi2, bound = chi2_check(counts, np.full(10, 0.1), len(us))
        assert chi2 < bound, (only_hits, chi2, bound, len(us))
    hits = sum(r[4] for r in rows)
    assert 0.05 * len(rows) < hits < len(rows)  # the overlapped blocks were used, and not always


def test_overlapped_drafts_are_judged_by_their_own_q(engine, tiny_draft_noisy):
    """T = 0.9: every judged draft of an overlapped block was drafted on the draft thread during the previous
    verify; its recorded q(d) is the draft model's own law after exactly its context (a fresh model decoding it),
    and the acceptance test's min(1, p/q) used that q and the target's p."""
    s = Settings(draft_max=2, drafter="model", temperature=0.9, seed=5, pipeline=True)
    events = run(engine, s, 60)
    prompt = engine.tokenize(PROMPT)
    ctx, checked = list(prompt), 0
    fresh = LoadedModel(str(tiny_draft_noisy), "fresh", 256, 1, True)
    try:
        for p in [x for x in events if isinstance(x, PassEvent)]:
            if p.pipeline is not None and p.pipeline.overlapped:
                for i, d in enumerate(p.drafts[: p.n_accepted + 1]):
                    fresh.clear()
                    fresh.decode_chunked(ctx + [x.id for x in p.drafts[:i]], 0)
                    q = softmax(fresh.logits_last().astype(np.float64), 0.9)[d.id]
                    assert math.isclose(d.prob, q, rel_tol=1e-3), (p.index, i)
                    assert math.isclose(p.inspect[i].accept_p, min(1.0, d.target_prob / d.prob), rel_tol=1e-6)
                    checked += 1
            ctx += [t.id for t in p.emitted]
    finally:
        fresh.close()
    assert checked >= 5


def target_laws(path, prompt_ids, prefixes):
    """The target's next-token law (T = 1) after prompt + each prefix, one model decoding them in turn."""
    m = LoadedModel(str(path), "fresh", 256, 1, True)
    try:
        out = {}
        for c in prefixes:
            m.clear()
            m.decode_chunked(prompt_ids + list(c), 0)
            out[c] = softmax(m.logits_last().astype(np.float64), 1.0)
        return out
    finally:
        m.close()


def pit(p: np.ndarray, x: int, v: np.random.Generator) -> float:
    """F(x - 1) + V p(x), V uniform: uniform on [0, 1) when x ~ p (the randomized probability integral transform)."""
    return float(p[:x].sum() + v.random() * p[x])


def test_a_stop_ends_a_pipelined_run_and_the_next_run_starts_clean(engine):
    """A stop between passes (q, a signal) while the draft thread drafts ahead: the run ends 'stopped' with every
    decided pass delivered, the draft thread is idle (the engine's decode abort ends its decode in progress), the
    contexts have their sequential threads back, and the next run records what a fresh sequential run does."""
    def on_pass(control, ev):
        if ev.index == 4:
            control.stop()

    s = Settings(draft_max=3, drafter="model", pipeline=True)
    stopped = run(engine, s, 200, on_pass=on_pass)
    assert stopped[-1].reason == "stopped" and [p.index for p in passes(stopped)][-1] >= 4
    assert engine.target.threads == 1 and engine.draft.threads == 1
    after = run(engine, s, 40)
    seq = run(engine, dataclasses.replace(s, pipeline=False), 40)
    assert emitted_ids(after) == emitted_ids(seq) and after[-1].reason == "n_predict"
