"""What the faces say of pipelined passes (``--pipeline``), written once: the glyphs of the ribbon (which drafts
were drafted during the previous verify, what was thrown away) and the run's figures in words (the headless
summary, the run face's metrics, the bench). No Textual; every number comes from ``analysis.stats``.

Glyphs read without colour and in ``--ascii`` (tui.shared.ascii maps them): ``⇉`` (ASCII ``=``) before a pass
whose drafts were drafted during the previous pass's verify, ``✂`` (ASCII ``/``) before the number of speculative
tokens a pass threw away.
"""

from __future__ import annotations

from ..analysis.stats import PipelineStats
from ..contract.events import SPEC_CHANGED, SPEC_END, SPEC_GUESS, SPEC_REJECTED, RunStarted
from ..contract.text import visible_cells

OVERLAPPED = "⇉"  # this pass's drafts were drafted while the previous pass was verified
THROWN = "✂"  # the speculative tokens drafted ahead and thrown away
PIPELINE_LEGEND = f" {OVERLAPPED} drafted ahead {THROWN} thrown"
WHY = {SPEC_REJECTED: "a draft was rejected", SPEC_GUESS: "the target's token was not the guess",
       SPEC_CHANGED: "the settings changed", SPEC_END: "the run ended"}
WHY_SHORT = {SPEC_REJECTED: "rejected", SPEC_GUESS: "guess missed", SPEC_CHANGED: "settings changed",
             SPEC_END: "run ended"}


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def pass_text(info) -> str:
    """One pipelined pass in words (``replay --explain``): where its drafts came from, its guess, what it threw
    away and why, the draft thread's time beside the loop's wait ("" for a sequential pass)."""
    if info is None:
        return ""
    where = ("drafted during the previous pass's verify (a hit)" if info.overlapped
             else "drafted afresh on the draft thread")
    out = [f"pipelined: drafts {where}; the draft thread drafted {info.draft_busy_ms:.1f} ms for them"]
    if info.hit:
        out.append("every draft held and the target's token was the guess: the next drafts were drafted meanwhile")
    if info.thrown:
        texts = " ".join(visible_cells(t.text, one_line=True) for t in info.thrown[:8])
        out.append(f"threw away {len(info.thrown)} speculative tokens ({WHY.get(info.thrown_why, info.thrown_why)}):"
                   f" {texts}")
    out.append(f"overlap with the verify {info.overlap_ms:.1f} ms; waited {info.cut_wait_ms:.1f} ms for the draft "
               "thread to stop")
    return " · ".join(out)


def split_text(start: RunStarted | None) -> str:
    """"1 + 1 threads (target + draft)" for the run's pipelined passes, "" when it could not pipeline."""
    if start is None or len(start.pipeline_threads) != 2:
        return ""
    t, td = start.pipeline_threads
    return f"{t} + {td} threads (target + draft)"


def summary(p: PipelineStats, start: RunStarted | None = None) -> str:
    """The run's pipelined passes in one line: hits, waste and why, the drafting hidden behind the verifies."""
    split = split_text(start)
    thrown = ", ".join(f"{WHY_SHORT.get(why, why)} {n}" for why, n in p.thrown_by)
    parts = [
        f"{p.passes} pipelined passes" + (f" at {split}" if split else ""),
        f"{p.hits} hit ({pct(p.hit_rate)}): the next drafts were ready",
        f"{p.thrown} speculative tokens thrown away (waste {pct(p.waste)}" + (f": {thrown})" if thrown else ")"),
        f"drafting {pct(p.hidden_share)} hidden behind the verifies (overlap {pct(p.overlap_share)} of the "
        f"verify time; waits for drafts {p.wait_ms:.0f} ms, after misses {p.cut_wait_ms:.0f} ms)",
    ]
    return "; ".join(parts)


def as_dict(p: PipelineStats, start: RunStarted | None = None) -> dict:
    """The figures for --json (null where there was nothing to measure)."""
    return {
        "passes": p.passes, "hits": p.hits, "hit_rate": p.hit_rate, "overlapped": p.overlapped,
        "drafted": p.drafted, "thrown": p.thrown, "thrown_by": {why: n for why, n in p.thrown_by},
        "waste": p.waste, "overlap_ms": p.overlap_ms, "overlap_share": p.overlap_share, "wait_ms": p.wait_ms,
        "busy_ms": p.busy_ms, "hidden_share": p.hidden_share, "cut_wait_ms": p.cut_wait_ms,
        "threads": list(start.pipeline_threads) if start is not None else [],
        "choice": start.pipeline_choice if start is not None else "",
    }
