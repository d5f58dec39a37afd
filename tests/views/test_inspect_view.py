"""spectui.views.inspector_model on hand-built passes: the rule line carries the pass's own numbers, the marks
fall on the drafted and the emitted token, the near-tie flag follows the margin, and the text fits its width."""

from __future__ import annotations

import pytest

from spectui.contract.events import (
    ACCEPTED,
    BONUS,
    CORRECTION,
    DISCARDED,
    NEAR_TIE_MARGIN,
    REJECTED,
    Candidate,
    DraftToken,
    Inspection,
    PassEvent,
    Settings,
    TargetToken,
)
from spectui.views.inspector_model import NEAR_TIE_NOTE, NO_DATA, explain, render_pass, render_view, slots


def c(i, p):
    return Candidate(id=i, text=f"t{i}", prob=p)


def sampled_pass() -> PassEvent:
    """k = 3 at T = 0.8: draft 1 accepted with u, draft 2 rejected (correction 9 from the residual), draft 3
    discarded."""
    drafts = (
        DraftToken(id=1, text="t1", prob=0.5, verdict=ACCEPTED, target_prob=0.4),
        DraftToken(id=2, text="t2", prob=0.6, verdict=REJECTED, target_prob=0.2),
        DraftToken(id=3, text="t3", prob=0.3, verdict=DISCARDED, target_prob=0.0),
    )
    inspect = (
        Inspection(0, (c(1, 0.4), c(5, 0.3)), (c(1, 0.5), c(6, 0.2)), margin=0.3, accept_p=0.8, u=0.25),
        Inspection(1, (c(9, 0.5), c(2, 0.2)), (c(2, 0.6), c(9, 0.1)), margin=0.05, accept_p=1 / 3, u=0.7,
                   residual_top=(c(9, 0.8), c(4, 0.1))),
        Inspection(2, (c(3, 0.35), c(7, 0.3)), (c(3, 0.3),), margin=0.2),
        Inspection(3, (c(8, 0.9), c(7, 0.05)), (), margin=2.0),
    )
    return PassEvent(index=4, settings=Settings(draft_max=3, temperature=0.8), k=3, drafts=drafts,
                     target=TargetToken(id=9, text="t9", prob=0.5, kind=CORRECTION), n_accepted=1,
                     draft_stop="k", inspect=inspect)


def test_slots_visit_drafts_then_the_target_token():
    ev = sampled_pass()
    s = slots(ev)
    assert [(x.id, x.verdict, x.position, x.is_draft) for x in s] == [
        (1, ACCEPTED, 0, True), (2, REJECTED, 1, True), (3, DISCARDED, 2, True), (9, CORRECTION, 1, False)]


def test_sampled_rules_carry_the_numbers():
    ev = sampled_pass()
    v = explain(ev, 0)
    assert v.q == 0.5 and v.p == 0.4 and "u = 0.250 < min(1, p/q) = min(1, 0.400/0.500) = 0.800" in v.rule
    v = explain(ev, 1)
    assert "u = 0.700 >= min(1, p/q) = min(1, 0.200/0.600) = 0.333" in v.rule and v.outcome.startswith("rejected")
    assert v.near_tie and any(NEAR_TIE_NOTE in n for n in v.notes) and v.margin < NEAR_TIE_MARGIN
    assert [m.cand.id for m in v.target_top if m.chosen] == [9]  # the correction, emitted at this position
    assert [m.cand.id for m in v.target_top if m.drafted] == [2]
    assert [m.cand.id for m in v.residual_top if m.chosen] == [9]
    v = explain(ev, 2)
    assert "not judged" in v.rule and not v.near_tie
    v = explain(ev, 3)
    assert "residual norm(max(0, p - q)) (r 0.800)" in v.rule and v.q == -1.0 and v.p == 0.5


def test_greedy_rules_and_bonus():
    drafts = (DraftToken(id=1, text="t1", prob=0.7, verdict=ACCEPTED, target_prob=0.6),)
    ev = PassEvent(index=2, settings=Settings(draft_max=1), k=1, drafts=drafts, n_accepted=1,
                   target=TargetToken(id=8, text="t8", prob=0.9, kind=BONUS),
                   inspect=(Inspection(0, (c(1, 0.6), c(2, 0.1)), (c(1, 0.7),), margin=1.5),
                            Inspection(1, (c(8, 0.9), c(2, 0.01)), (), margin=3.0)))
    assert explain(ev, 0).rule.startswith("T = 0, argmax match: the target's top token here is 't1' (p 0.600)")
    v = explain(ev, 1)
    assert v.rule.startswith("every draft accepted") and "argmax" in v.rule and v.outcome.startswith("bonus")


def test_a_token_outside_the_top_n_says_so():
    ev = PassEvent(index=1, settings=Settings(draft_max=0, temperature=1.0), k=0,
                   target=TargetToken(id=77, text="x", prob=0.001, kind="plain"),
                   inspect=(Inspection(0, (c(1, 0.5), c(2, 0.2)), (), margin=0.9),))
    v = explain(ev, 0)
    assert any("id 77" in n and "not among the top 2" in n for n in v.notes)


def test_no_data_and_bad_slot():
    ev = PassEvent(index=3, settings=Settings(), k=0, target=TargetToken(id=5, text="a", prob=0.4, kind="plain"))
    v = explain(ev, 0)
    assert not v.available and v.rule == NO_DATA and v.p == 0.4
    assert NO_DATA in render_pass(ev)
    with pytest.raises(IndexError):
        explain(ev, 1)


@pytest.mark.parametrize("width", [40, 60, 80, 100])
def test_text_fits_its_width_except_long_notes(width):
    ev = sampled_pass()
    for i in range(len(slots(ev))):
        lines = render_view(explain(ev, i), width)
        table = [ln for ln in lines if ln.startswith(("target top", "draft top", "residual", " ", "*"))]
        assert table and all(len(ln) <= width for ln in table)


def test_wide_characters_keep_the_columns_aligned():
    """A full-width token (Qwen has many) takes two terminal cells: the columns after it stay aligned."""
    from spectui.contract.text import cells

    ev = sampled_pass()
    ins = ev.inspect[0]
    wide = Inspection(0, (Candidate(1, "，", 0.4), Candidate(5, "漢字テキスト長い", 0.3)), ins.draft_top,
                      margin=0.3, accept_p=0.8, u=0.25)
    ev = PassEvent(index=ev.index, settings=ev.settings, k=ev.k, drafts=ev.drafts, target=ev.target,
                   n_accepted=ev.n_accepted, inspect=(wide, *ev.inspect[1:]))
    lines = render_view(explain(ev, 0), 80)
    head = next(i for i, ln in enumerate(lines) if ln.startswith("target top"))
    col2 = lines[head].index("draft top")
    for ln in lines[head + 1 : head + 3]:
        assert cells(ln) <= 80
        # the draft column starts at the same terminal cell on every row
        left = next(j for j in range(len(ln)) if cells(ln[:j]) >= col2)
        assert cells(ln[:left]) == col2 and ln[left:].lstrip(" *d").startswith("'")
