"""The token inspector's model: why one token of one pass was accepted, rejected or chosen, from the pass's
event alone (``PassEvent.inspect``, recorded with ``--inspect-top N``). Textual-free: the TUI's inspector
panel, ``spectui replay --headless --explain PASS`` and the JSON all read it, so a live run and its trace
explain a token identically.

A pass's tokens, in the order a cursor visits them (``slots``): its drafts (accepted, the rejected one,
discarded ones), then the target's own token (correction, bonus, or the plain token of a pass without
drafts). Slot i < len(drafts) is decided at verify position i; the target's token comes from position
n_accepted (the row after the last accepted draft).

The rule that decided, with its numbers:

- temperature 0: a draft is accepted when it is the target's argmax at its position; at the first
  mismatch the target's argmax is the correction; after k accepted drafts the argmax of the last row is
  the bonus.
- temperature > 0 (speculative sampling): draft x is accepted when u < min(1, p(x) / q(x)) for a fresh
  uniform u (no draw when p >= q); at the first rejection the correction is drawn from
  norm(max(0, p - q)); after k accepted drafts the bonus is drawn from p.

``near_tie``: the target's top-two logit margin at the deciding position is below ``NEAR_TIE_MARGIN``
(the losslessness tests' threshold): a batched verify can round such a tie differently from the
target's own one-token decode, so greedy speculation may legitimately differ from the target's greedy
text there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..contract.events import (
    ACCEPTED,
    BONUS,
    CORRECTION,
    DISCARDED,
    DRAFT_STOP_K,
    DRAFT_STOP_NO_MATCH,
    DRAFT_STOP_P_MIN,
    NEAR_TIE_MARGIN,
    REJECTED,
    Candidate,
    HeadInfo,
    Inspection,
    PassEvent,
)
from ..contract.text import MAX_ZERO_WIDTH_RUN, cut, pad, visible_cells
from .heads import drafted_by, pass_heads
from .pipeline import pass_text as pipeline_pass_text

NO_DATA = "no inspector data for this pass (recorded with --inspect-top 0, or a trace older than version 3)"
NEAR_TIE_NOTE = (
    "near tie: batched verification can round a top-two margin this small differently from a one-token "
    "decode, so greedy output may differ from the target's own greedy text here"
)


@dataclass(frozen=True)
class Slot:
    """One token of a pass a cursor can stand on."""

    pass_index: int
    slot: int  # 0..len(drafts)-1: a draft; len(drafts): the target's own token
    position: int  # the verify row that decided it
    id: int
    text: str
    verdict: str  # ACCEPTED / REJECTED / DISCARDED for drafts; CORRECTION / BONUS / PLAIN for the target's
    is_draft: bool


def slots(ev: PassEvent) -> list[Slot]:
    out = [Slot(ev.index, i, i, d.id, d.text, d.verdict, True) for i, d in enumerate(ev.drafts)]
    if ev.target is not None:
        out.append(Slot(ev.index, len(ev.drafts), ev.n_accepted, ev.target.id, ev.target.text, ev.target.kind,
                        False))
    return out


@dataclass(frozen=True)
class Marked:
    """A candidate with the marks the inspector draws: ``drafted`` (the draft's token at this position),
    ``chosen`` (what the pass emitted at this position)."""

    cand: Candidate
    drafted: bool
    chosen: bool


@dataclass(frozen=True)
class InspectorView:
    slot: Slot
    temperature: float
    available: bool  # False: no inspector data; ``rule`` then says why
    q: float  # draft's q(x) for a draft (-1 for the target's own token)
    p: float  # target's p(x) at the deciding position (-1 when unknown)
    rule: str  # the rule that decided, with its numbers, one line
    outcome: str  # one line: what happened to the token
    target_top: tuple[Marked, ...] = ()
    draft_top: tuple[Marked, ...] = ()
    residual_top: tuple[Marked, ...] = ()
    margin: float = 0.0
    near_tie: bool = False
    accept_p: float = -1.0
    u: float = -1.0
    notes: tuple[str, ...] = ()
    event: PassEvent | None = field(default=None, compare=False, repr=False)  # the pass (a tree pass: its nodes)


def show(text: str, width: int = 14) -> str:
    """A token's text as the inspector prints it: quoted, control characters escaped (``repr``, then the cell
    faces' rule), cut to ``width`` terminal cells. One pass over at most the start that can show: a 1 MB token
    costs what 14 cells do."""
    limit = (width + 2) * (MAX_ZERO_WIDTH_RUN + 1)  # more code points than ``width`` cells can show
    s = repr(text) if len(text) <= limit else repr(text[:limit])[:-1]  # the cut below drops the end anyway
    return cut(visible_cells(s), width)


def _mark(cands: tuple[Candidate, ...], drafted: int | None, chosen: int | None) -> tuple[Marked, ...]:
    return tuple(Marked(c, c.id == drafted, c.id == chosen) for c in cands)


def _p_of(ins: Inspection, tid: int) -> float:
    for c in ins.target_top:
        if c.id == tid:
            return c.prob
    return -1.0


def explain(ev: PassEvent, slot: int, head: HeadInfo | None = None) -> InspectorView:
    """The inspector's view of token ``slot`` of pass ``ev`` (see ``slots``); ``head``, the run's
    ``RunStarted.head``, names the head that drafted a drafted token in full ("MTP head 2/3")."""
    sl = slots(ev)
    if not 0 <= slot < len(sl):
        raise IndexError(f"pass {ev.index} has {len(sl)} tokens; no token {slot}")
    s = sl[slot]
    temp = ev.settings.temperature
    greedy = temp <= 0
    ins = ev.inspect[s.position] if s.position < len(ev.inspect) else None
    if s.is_draft:
        d = ev.drafts[s.slot]
        q = d.prob
        p = d.target_prob if d.verdict != DISCARDED else (_p_of(ins, d.id) if ins else -1.0)
    else:
        q = -1.0
        p = ev.target.prob if ev.target is not None else -1.0
    by = drafted_by(ev, s.slot, head) if s.is_draft else ""
    if ins is None:
        return InspectorView(s, temp, False, q, p, NO_DATA, _outcome(ev, s), notes=(by,) if by else (), event=ev)
    drafted = ev.drafts[s.position].id if s.position < len(ev.drafts) else None
    chosen = _chosen_at(ev, s.position)
    notes = [by] if by else []
    near_tie = ins.margin < NEAR_TIE_MARGIN
    if near_tie:
        notes.append(f"margin {ins.margin:.3f} < {NEAR_TIE_MARGIN:g}: {NEAR_TIE_NOTE}")
    if s.is_draft and ev.drafts[s.slot].verdict == DISCARDED:
        notes.append("p here is conditioned on the rejected draft before it: this position was never judged")
    shown = {c.id for c in ins.target_top} | {c.id for c in ins.residual_top}
    if chosen is not None and ins.target_top and chosen not in shown:
        notes.append(f"the token emitted here (id {chosen}) is not among the top {len(ins.target_top)} shown: "
                     "sampled from the tail")
    if ev.settings.drafter == "ngram" and s.position < len(ev.drafts):
        notes.append("n-gram drafts are a point mass: q(x) = 1")
    return InspectorView(
        slot=s, temperature=temp, available=True, q=q, p=p, rule=_rule(ev, s, ins, q, p, greedy),
        outcome=_outcome(ev, s),
        target_top=_mark(ins.target_top, drafted, chosen), draft_top=_mark(ins.draft_top, drafted, chosen),
        residual_top=_mark(ins.residual_top, None, chosen), margin=ins.margin, near_tie=near_tie,
        accept_p=ins.accept_p, u=ins.u, notes=tuple(notes), event=ev,
    )


def _chosen_at(ev: PassEvent, position: int) -> int | None:
    """The token the pass emitted at verify position ``position`` (None past the rejection)."""
    if position < ev.n_accepted:
        return ev.drafts[position].id
    if position == ev.n_accepted and ev.target is not None:
        return ev.target.id
    return None


def _rule(ev: PassEvent, s: Slot, ins: Inspection, q: float, p: float, greedy: bool) -> str:
    top = ins.target_top[0] if ins.target_top else None
    top_s = f"{show(top.text)} (p {top.prob:.3f})" if top is not None else "?"
    if s.is_draft:
        if s.verdict == DISCARDED:
            j = ev.n_accepted
            return (f"not judged: drafted after the rejection at position {j + 1}; one rejection discards every "
                    "later draft")
        if greedy:
            if s.verdict == ACCEPTED:
                return f"T = 0, argmax match: the target's top token here is {top_s}, the draft's too"
            return f"T = 0, argmax mismatch: the target's top token here is {top_s}, not the draft's {show(s.text)}"
        ratio = p / q if q > 0 else float("inf")
        if ins.u < 0:
            return f"T = {ev.settings.temperature:g}: p/q = {p:.3f}/{q:.3f} >= 1, accepted without a draw"
        sign = "<" if s.verdict == ACCEPTED else ">="
        return (f"T = {ev.settings.temperature:g}: u = {ins.u:.3f} {sign} min(1, p/q) = min(1, {p:.3f}/{q:.3f}) = "
                f"{min(1.0, ratio):.3f}")
    if s.verdict == CORRECTION:
        if greedy:
            return f"T = 0: the target's argmax at the first mismatch: {top_s}"
        r = next((c.prob for c in ins.residual_top if c.id == s.id), -1.0)
        rs = f" (r {r:.3f})" if r >= 0 else ""
        return f"T = {ev.settings.temperature:g}: drawn from the residual norm(max(0, p - q)){rs}"
    if s.verdict == BONUS:
        how = "the target's argmax" if greedy else f"drawn from p at T = {ev.settings.temperature:g}"
        return f"every draft accepted: one more token from the same verify pass, {how}"
    how = "the target's argmax" if greedy else f"drawn from p at T = {ev.settings.temperature:g}"
    why = "prefill (the first token)" if ev.prefill else "no drafts this pass"
    return f"{why}: {how}"


def _outcome(ev: PassEvent, s: Slot) -> str:
    if s.is_draft:
        d = ev.drafts[s.slot]
        return {ACCEPTED: "accepted: emitted", REJECTED: "rejected: the target's own token replaces it",
                DISCARDED: "discarded: drafted after a rejection, never used"}[d.verdict]
    return {CORRECTION: "correction: replaces the rejected draft", BONUS: "bonus: all drafts accepted",
            }.get(s.verdict, "the target's token")


def draft_stop_line(ev: PassEvent) -> str:
    """Why drafting stopped in this pass, one line ("" for a pass that asked for no drafts)."""
    if ev.prefill or ev.k <= 0:
        return ""
    n = len(ev.drafts)
    if ev.draft_stop == DRAFT_STOP_P_MIN:
        return (f"drafted {n} of k = {ev.k}: the draft's confidence {ev.draft_stop_p:.3f} fell below "
                f"--draft-p-min {ev.settings.draft_p_min:g}")
    if ev.draft_stop == DRAFT_STOP_NO_MATCH:
        return f"drafted {n} of k = {ev.k}: the drafter had no longer continuation"
    if ev.draft_stop == DRAFT_STOP_K:
        return f"drafted {n} of k = {ev.k}"
    return f"drafted {n} of k = {ev.k}"


def _marked(items: tuple[Marked, ...]) -> list[dict]:
    return [{"id": m.cand.id, "text": m.cand.text, "prob": m.cand.prob, "drafted": m.drafted, "chosen": m.chosen}
            for m in items]


def view_dict(v: InspectorView) -> dict:
    """One token's InspectorView as a JSON-ready dict (``spectui replay --explain PASS --json``)."""
    s = v.slot
    return {
        "token": s.slot + 1, "position": s.position, "id": s.id, "text": s.text, "verdict": s.verdict,
        "is_draft": s.is_draft, "available": v.available, "temperature": v.temperature, "q": v.q, "p": v.p,
        "rule": v.rule, "outcome": v.outcome, "margin": v.margin, "near_tie": v.near_tie, "accept_p": v.accept_p,
        "u": v.u, "target_top": _marked(v.target_top), "draft_top": _marked(v.draft_top),
        "residual_top": _marked(v.residual_top), "notes": list(v.notes),
    }


# ------------------------------------------------------------------ text, for --explain and bug reports
def _col(title: str, items: tuple[Marked, ...], width: int, prob_name: str) -> list[str]:
    lines = [f"{title:<{width}}"[:width]]
    for m in items:
        mark = ("*" if m.chosen else " ") + ("d" if m.drafted else " ")
        tw = width - 11  # mark, space, text, space, "p 0.123"
        cell = f"{mark} {pad(show(m.cand.text, tw), tw)} {prob_name} {m.cand.prob:.3f}"
        lines.append(pad(cell, width))
    return lines


def render_view(v: InspectorView, width: int = 80) -> list[str]:
    """The inspector view as plain text lines (no colour, at most ``width`` columns)."""
    s = v.slot
    kind = "draft" if s.is_draft else "target token"
    head = f"pass {s.pass_index} · {kind} {s.slot + 1 if s.is_draft else ''}".rstrip()
    head += f" · {show(s.text, 24)} (id {s.id}) · {s.verdict}"
    lines = [cut(head, width)]
    nums = []
    if v.q >= 0:
        nums.append(f"draft q(x) {v.q:.3f}")
    if v.p >= 0:
        nums.append(f"target p(x) {v.p:.3f}")
    nums.append(f"T = {v.temperature:g}" + (" (p, q shown at T = 1)" if v.temperature <= 0 else ""))
    lines.append(" · ".join(nums)[:width])
    lines.append(("rule: " + v.rule)[:width] if len(v.rule) + 6 <= width else "rule: " + v.rule)
    lines.append("→ " + v.outcome)
    if not v.available:
        return lines
    cols = [("target top (p)", v.target_top, "p")]
    if v.draft_top:
        cols.append(("draft top (q)", v.draft_top, "q"))
    if v.residual_top:
        cols.append(("residual (r)", v.residual_top, "r"))
    cw = min(30, (width - 2 * (len(cols) - 1)) // len(cols))
    if cw >= 18:  # side by side
        blocks = [_col(t, items, cw, pn) for t, items, pn in cols]
        rows = max(len(b) for b in blocks)
        for i in range(rows):
            lines.append("  ".join((b[i] if i < len(b) else " " * cw) for b in blocks).rstrip())
    else:  # too narrow: one list after the other
        for t, items, pn in cols:
            lines.extend(ln.rstrip() for ln in _col(t, items, min(width, 30), pn))
    legend = f"* emitted · d drafted · top-two margin {v.margin:.3f}" + (" · NEAR TIE" if v.near_tie else "")
    lines.append(legend[:width])
    for n in v.notes:
        lines.append(n)
    return lines


def render_pass(ev: PassEvent, width: int = 100, head: HeadInfo | None = None) -> list[str]:
    """Every token of one pass, explained: ``spectui replay FILE --headless --explain PASS``."""
    s = ev.settings
    title = (f"pass {ev.index}" + (" (prefill)" if ev.prefill else "") + f": k = {ev.k}, drafted {len(ev.drafts)}, "
            f"accepted {ev.n_accepted}, emitted {len(ev.emitted)} · T = {s.temperature:g} · drafter {s.drafter}")
    if s.draft_p_min > 0:
        title += f" · --draft-p-min {s.draft_p_min:g} --draft-min {s.draft_min}"
    lines = [title]
    stop = draft_stop_line(ev)
    if stop:
        lines.append(stop)
    lines.append(f"verify {ev.timing.verify_ms:.1f} ms · draft {ev.timing.draft_ms:.1f} ms · pass "
                 f"{ev.timing.wall_ms:.1f} ms")
    piped = pipeline_pass_text(ev.pipeline)
    if piped:  # --pipeline: where the drafts came from, what was thrown away
        lines.append(piped)
    by = pass_heads(ev, head)
    if by:  # a head drafted: which, and its time per draft step beside this pass's verify
        lines.append(f"{by} · {ev.timing.draft_ms / len(ev.drafts):.2f} ms per draft step")
    if not ev.inspect:
        lines.append(NO_DATA)
    for i in range(len(slots(ev))):
        lines.append("")
        lines.extend(render_view(explain(ev, i, head), width))
    return lines
