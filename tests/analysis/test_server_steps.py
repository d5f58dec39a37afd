"""The replay of llama-server's steps (spectui.analysis.knee.server_steps) on hand-checkable costs: its micro-batches
(llama.cpp's split_equal, sequential), its slot choice, continuous batching of prompts, the draft's evaluation of
every batch, and a level's wall time worked out by hand."""

from __future__ import annotations

import pytest

from spectui.analysis.knee import server_steps as ss
from spectui.analysis.measured import batch_knee as bk
from spectui.analysis.measured import step_costs as sc
from spectui.analysis.measured.cachefile import CacheError
from spectui.analysis.measured.machine import cache_path


def costs(draft=True, sample_ms=0.0):
    """Uniform steps: a decode of B sequences costs 10 + B ms, a verify (k = 2, 3 tokens each) 10 + 3B ms; a
    prompt chunk of T tokens 10 + T ms on the target (5 + T / 2 on the draft); a draft step of B 4 + B ms."""
    seqs = (1, 2, 4, 8)
    curve = bk.BatchCurve(seqs=seqs, ks=(2,), plain_ms=tuple(10.0 + b for b in seqs),
                          verify_ms={2: tuple(10.0 + 3 * b for b in seqs)},
                          draft_ms=tuple(4.0 + b for b in seqs) if draft else ())
    chunks = (8, 16, 32, 64, 128, 256)
    steps = sc.StepCosts(chunks=chunks, target_chunk_ms=tuple(10.0 + c for c in chunks),
                         draft_chunk_ms=tuple(5.0 + c / 2 for c in chunks) if draft else (), sample_ms=sample_ms)
    return ss.ServerCosts(curve, steps)


DRAFT_EVAL_3 = 5 + 4 * 2 / 7  # the draft evaluating 3 tokens


def seg(seq, tokens, gen=True, last=False):
    return ss.Segment(seq, tokens, outputs_all=gen, output_last=last)


def test_split_equal_takes_runs_of_consecutive_slots_and_equal_tokens():
    # slots 0, 1, 2 verify 3 tokens each; slot 3 joins with a 40-token prompt: one micro-batch of 4 x 3, then the
    # prompt's other 37 tokens alone
    mbs = ss.split_equal([seg(0, 3), seg(1, 3), seg(2, 3), seg(3, 40, gen=False, last=True)])
    assert mbs == [ss.MicroBatch(4, 12, 9), ss.MicroBatch(1, 37, 1)]
    # slots 0, 1, 3 (a gap): two passes, {0, 1} and {3}
    assert ss.split_equal([seg(0, 1), seg(1, 1), seg(3, 1)]) == [ss.MicroBatch(2, 2, 2), ss.MicroBatch(1, 1, 1)]
    # a prompt slot between generating ones, appended after them in the batch (as llama-server adds prompts):
    # {0, 1} take slot 2's prompt along, then {3, 4}, then the prompt's rest
    mbs = ss.split_equal([seg(0, 1), seg(1, 1), seg(3, 1), seg(4, 1), seg(2, 20, gen=False, last=True)])
    assert mbs == [ss.MicroBatch(3, 3, 2), ss.MicroBatch(2, 2, 2), ss.MicroBatch(1, 19, 1)]
    # at most n_ubatch tokens a pass
    assert ss.split_equal([seg(0, 600, gen=False, last=True)], 512) == [ss.MicroBatch(1, 512, 0),
                                                                        ss.MicroBatch(1, 88, 1)]
    assert ss.runs([5, 1, 2, 7, 6, 9]) == [2, 3, 1]  # {1, 2}, {5, 6, 7}, {9}


def test_micro_batch_costs_on_the_measured_points_and_between():
    c = costs()
    assert c.target(ss.MicroBatch(4, 4, 4)) == 14.0  # a decode of 4: its measured point
    assert c.target(ss.MicroBatch(4, 12, 12)) == 22.0  # a verify of 4 x 3
    assert c.target(ss.MicroBatch(3, 9, 9)) == pytest.approx(19.0)  # between B = 2 and 4 on the verify row
    assert c.target(ss.MicroBatch(1, 37, 1)) == pytest.approx(47.0)  # a prompt chunk: 10 + T
    assert c.draft_eval(ss.MicroBatch(1, 64, 1)) == pytest.approx(37.0)
    assert c.draft_gen(4) == 8.0


def test_slot_choice_prefers_the_slot_that_held_the_same_prompt_then_lru():
    w = ss.Workload(((0, 50, 4),), 1, 4, prefix=((50, 30), (30, 50)))
    slots = [ss._Slot(i) for i in range(4)]
    assert ss._take_slot(slots, 0, 50, w).id == 3  # all empty: the least recently used, ties to the last slot
    slots[3].last_prompt, slots[3].t_last = 0, 5.0
    slots[1].last_prompt, slots[1].t_last = 1, 9.0
    assert ss._take_slot(slots, 0, 50, w).id == 3  # the same prompt
    assert ss._take_slot(slots, 1, 50, w).id == 1  # the same prompt
    w2 = ss.Workload(((0, 50, 4),), 1, 4, prefix=((50, 3), (3, 50)))  # 3 / 50 shared: under 10%
    slots[1].last_prompt = None
    assert ss._take_slot(slots, 1, 50, w2).id == 2  # no similar slot: least recently used (2 and 0 empty, -1)


def test_one_request_alone_by_hand():
    """c = 1, a 40-token prompt, 4 tokens out, no speculation: the prompt step (10 + 40) gives the first token,
    then 3 decodes of one (11 each): 83 ms."""
    w = ss.Workload(((0, 40, 4),), 1, 4)
    r = ss.simulate(costs(), w)
    assert r.wall_ms == pytest.approx(50 + 3 * 11) and r.tokens == 4 and r.steps == 4
    assert r.ttft_ms == [pytest.approx(50.0)]


def test_one_request_with_a_draft_model_by_hand():
    """The same request with k = 2 drafts at rate 1 (every draft accepted): the prompt step costs the target's
    chunk and the draft's (10 + 40 + 5 + 20 = 75); then one pass drafts min(2, 3 left - 1) = 2 (two draft steps of
    one, 5 each), verifies 3 tokens (10 + 3) and the draft evaluates them (between its 1-token step, 5, and its
    8-token chunk, 9: 5 + 4 x 2/7) and yields 3 tokens: done."""
    w = ss.Workload(((0, 40, 4),), 1, 4)
    r = ss.simulate(costs(), w, ss.Speculation(2, 1.0))
    assert r.wall_ms == pytest.approx(75 + 10 + 13 + DRAFT_EVAL_3) and r.tokens == 4 and r.steps == 2


def test_sampling_rows_are_counted():
    w = ss.Workload(((0, 40, 4),), 1, 4)
    plain = ss.simulate(costs(sample_ms=1.0), w)
    assert plain.wall_ms == pytest.approx(83 + 4)  # one row a token
    spec = ss.simulate(costs(sample_ms=1.0), w, ss.Speculation(2, 1.0))
    # the prompt's row, the verify's 3 accepted rows, the draft's 2 rows
    assert spec.wall_ms == pytest.approx(75 + 10 + 13 + DRAFT_EVAL_3 + 1 + 3 + 2)


def test_prompts_join_the_decodes_of_others():
    """c = 2, two prompts arriving together go to slots 3 and 2 (the least recently used, ties to the last) and
    are evaluated in the first step: split_equal takes {2, 3} x 30 tokens (one row of logits: slot 2's last),
    then slot 3's other 10 (its last row). Steps 2 and 3 decode both slots together (12 ms each)."""
    w = ss.Workload(((0, 40, 3), (1, 30, 3)), 2, 4)
    r = ss.simulate(costs(), w)
    assert r.steps == 3 and r.micro_batches == 2 + 1 + 1
    assert r.wall_ms == pytest.approx(c_first(costs()) + 2 * 12)


def c_first(c: ss.ServerCosts) -> float:
    return c.target(ss.MicroBatch(2, 60, 1)) + c.target(ss.MicroBatch(1, 10, 1))


def test_a_level_keeps_c_in_flight_and_the_speedup_follows():
    reqs = tuple((i % 2, 32, 16) for i in range(8))
    w = ss.Workload(reqs, 4, 4, prefix=((32, 8), (8, 32)))
    c = costs()
    base = ss.simulate(c, w)
    assert base.tokens == 8 * 16 and len(base.ends_ms) == 8 and max(base.ends_ms) == base.wall_ms
    p = ss.predict_level(c, w, ss.Speculation(2, 0.9))
    assert p.base_tps == pytest.approx(base.tokens_per_second)
    assert 0 < p.speedup and p.micro_batches_per_step >= 1.0


def test_speculation_of_a_measured_level():
    # a draft model: 100 drafted in 25 drafts of 4, 60 accepted: the rate whose expectation is 1 + 60/25
    sp = ss.speculation_of_level(4, drafted=100, accepted=60, drafts=25, output_tokens=200, n_requests=2,
                                 draft_model=True)
    assert sp.share == 1.0 and sp.length == 4 and bk.leviathan(sp.rate, 4) == pytest.approx(1 + 60 / 25, rel=1e-6)
    # prompt lookup: 30 drafts in 200 - 2 - 20 passes
    sp = ss.speculation_of_level(4, drafted=90, accepted=20, drafts=30, output_tokens=200, n_requests=2,
                                 draft_model=False)
    assert sp.share == pytest.approx(30 / 178) and sp.length == 3
    assert ss.speculation_of_level(4, 0, 0, 0, 10, 1, True) is None
    drafts_in_100 = sum(1 for n in range(100) if sp.drafts(50, n, 0))
    assert abs(drafts_in_100 - 100 * sp.share) <= 1  # spread evenly over a slot's passes


def test_step_costs_round_trip_and_refuse_bad_figures():
    s = sc.StepCosts(chunks=(8, 16), target_chunk_ms=(1.0, 2.0), sample_ms=0.1)
    assert sc.StepCosts.from_dict(s.to_dict()) == s
    with pytest.raises(CacheError):
        sc.StepCosts.from_dict(dict(s.to_dict(), target_chunk_ms=[1.0, -2.0]))
    with pytest.raises(CacheError):
        sc.StepCosts.from_dict(dict(s.to_dict(), version=99))


def test_a_slowed_sample_does_not_make_a_small_step_dearer():
    # T = 16 slowed (40 ms, more than T = 32's 30 ms): read as 30; the rest as measured
    assert ss.monotone([(8, 12.0), (16, 40.0), (32, 30.0), (64, 50.0)]) == [(8, 12.0), (16, 30.0), (32, 30.0),
                                                                           (64, 50.0)]


def test_costs_cached_busy_are_measured_again_once_quiet(make_engine, tiny_target, tiny_draft_noisy, tmp_path):
    eng = make_engine(tiny_target, tiny_draft_noisy)
    first = sc.cached_or_measure(eng, repeats=1, directory=tmp_path)
    busy = sc.StepCosts.from_dict(dict(first.to_dict(), loadavg=[99.0, 99.0, 99.0]))
    key, name = sc.steps_cache_key(eng, 1)
    busy.store(key, cache_path(name, tmp_path), [])
    warned = []
    kept = sc.cached_or_measure(eng, repeats=1, directory=tmp_path, now_quiet=lambda t: False)
    assert kept.cached and not kept.quiet  # busy, and still busy: read back
    again = sc.cached_or_measure(eng, repeats=1, directory=tmp_path, now_quiet=lambda t: True, warn=warned.append)
    assert not again.cached and "quiet now: measuring again" in warned[0]
