"""The race's headless face: per lane tokens, seconds, tokens/s, TTFT and acceptance, then the winner, the
margin and the same tokens or where they part (``--headless``), or one JSON object (``--json``). From the
traces alone: nothing is replayed in real time. No Textual."""

from __future__ import annotations

import dataclasses
from typing import IO

from ..contract.text import json_text, visible
from ..views.numbers import ms_or_dash
from ..views.race_outcome import Outcome
from ..views.race_timeline import Race
from .run import tree_lines


def clock_text(race: Race) -> str:
    return ("clock from each run's start (TTFT raced)" if race.from_start
            else "clock from each run's first token (TTFT shown, not raced)")


def outcome_lines(race: Race, out: Outcome) -> list[str]:
    lines = [f"race of {len(race.lanes)} recordings, {clock_text(race)}"]
    if race.any_prompt:
        lines.append("different prompts (--any-prompt): the texts are not comparable token for token")
    if race.note:
        lines.append(race.note)
    lines.append("")
    w = max(len(r.name) for r in out.lanes)
    lines.append(f"{'':<{w}}  {'tokens':>6}  {'seconds':>8}  {'tok/s':>7}  {'TTFT ms':>8}  {'accept':>6}  "
                 f"{'tok/pass':>8}")
    for r in out.lanes:
        acc = f"{100 * r.acceptance_rate:5.0f}%" if r.drafted else f"{'-':>6}"
        lines.append(f"{r.name:<{w}}  {r.tokens:>6}  {r.seconds:>8.2f}  {r.tokens_per_second:>7.2f}  "
                     f"{ms_or_dash(r.ttft_ms):>8}  {acc}  {r.tokens_per_pass:>8.2f}"
                     + ("  (trace cut off)" if r.truncated else ""))
    for r in out.lanes:  # a lane that drafted trees: its nodes per pass and acceptance by depth
        lines.extend(f"{r.name:<{w}}  {line}" for line in (tree_lines(r.tree) if r.tree is not None else ()))
    lines.append("")
    for r in out.lanes:
        lines.append(f"{r.label}  [{r.path}]")
    lines.append("")
    lines.append(out.verdict())
    lines.append(out.divergence.text(tuple(r.name for r in out.lanes)))
    return lines


def outcome_dict(race: Race, out: Outcome) -> dict:
    names = [r.name for r in out.lanes]
    d = out.divergence
    return {
        "lanes": [{**dataclasses.asdict(r), "tree": r.tree.record() if r.tree is not None else None}
                  for r in out.lanes],
        "from_start": race.from_start,
        "any_prompt": race.any_prompt,
        "winner": names[out.winner] if out.winner >= 0 else None,
        "tie": out.winner < 0,
        "margin_s": out.margin_s,
        "ratio": out.ratio,
        "same_tokens": d.same,
        "diverge_at": d.at if d.at >= 0 else None,  # 0-based token index
        "common_tokens": d.common,
        "diverge_texts": dict(zip(names, d.texts)) if d.at >= 0 else None,
        "note": race.note,
    }


def print_outcome(race: Race, out: Outcome, fh: IO[str], as_json: bool = False) -> None:
    if as_json:
        fh.write(json_text(outcome_dict(race, out)) + "\n")
    else:
        fh.write(visible("\n".join(outcome_lines(race, out))) + "\n")  # the traces' words, controls visible
    fh.flush()
