"""Who wins each category, in one sentence from the numbers: every setting the bench ran (a drafter or a chain x
k, at each temperature) against the target alone of the same category and temperature.

The winner is the setting with the highest speedup (mean tokens/s over the target alone's, ``Summary.speedup``)
among those that drafted, when that speedup, printed to two decimals, is above 1.00x; else the target alone
wins. A setting that never drafted cannot win: it did the target alone's work, so its figure is the spread
between runs of the same work, and its clause says so. Every other setting follows with its own word (wins /
loses / ties, against 1.00x, through ``analysis.cost.wording.outcome`` on the printed figure, so the word always
matches the number beside it) and the numbers that explain it: how many of its passes drafted, its mean
acceptance length (tokens per drafting step, vLLM's), and what one of its steps cost against a target-only step
on this machine with the tokens it yielded (speedup ~ tokens per step / cost):

    ngram-mod k=8 wins agentic: 1.31x the target alone (12.1 vs 9.2 t/s), 62% of passes drafted, mean
    acceptance length 4.10, each step (a verify of up to 9) takes 1.60 target-only steps and yields 2.10 tokens;
    model k=2 loses at 0.80x: 97% of passes drafted, mean acceptance length 2.40, each step ... .
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..analysis.cost.wording import WINS, outcome
from .aggregate import OVERALL, Summary

TARGET_ALONE = "the target alone"
EVEN = 1.0  # the target alone's own speedup
NEVER = "never drafted"  # the outcome of a setting that drafted nothing: it ran as the target alone


@dataclass(frozen=True)
class Verdict:
    """One category at one temperature: who wins, each setting's word and speedup (as printed), the sentence."""

    category: str
    temperature: float
    winner: str  # a setting's label, or TARGET_ALONE
    speedup: float  # the winner's, to two decimals (1.0 for the target alone)
    outcomes: tuple[tuple[str, str, float], ...]  # (label, "wins" / "loses" / "ties" / NEVER, speedup, 2 decimals)
    sentence: str

    def record(self) -> dict:
        """The verdict for ``--json``."""
        return {"category": self.category, "temperature": self.temperature, "winner": self.winner,
                "speedup": self.speedup, "sentence": self.sentence,
                "settings": [{"label": lb, "outcome": w, "speedup": sp} for lb, w, sp in self.outcomes]}


def printed(speedup: float) -> float:
    """A speedup as the sentence prints it (two decimals): the word is judged on this figure."""
    return round(speedup, 2)


def word_for(speedup: float) -> str:
    """"wins" / "loses" / "ties" against the target alone (1.00x), from the printed speedup."""
    return outcome(printed(speedup), EVEN)


def drafted_nothing(s: Summary) -> bool:
    """No draft token and no drafting step: the setting ran as the target alone."""
    return s.n_drafted == 0 and s.passes_drafted == 0


def why(s: Summary, base: Summary) -> str:
    """The numbers behind a setting's word: its drafting, its acceptance and the cost of its steps (a deployment
    that does not count its steps: its drafted tokens and their acceptance)."""
    if s.passes_drafted > 0:
        share = f"{s.passes_drafted / s.n_passes:.0%} of passes drafted, " if s.n_passes else ""
        parts = [f"{share}mean acceptance length {s.mean_accepted_tokens:.2f}"]
    else:
        parts = [f"{s.acceptance_rate:.0%} of its {s.n_drafted} drafted tokens accepted"]
    if base.pass_ms > 0 and s.pass_ms > 0:
        verify = f" (a verify of up to {s.setting.k + 1})" if s.setting.k > 0 else ""
        parts.append(f"each step{verify} takes {s.pass_ms / base.pass_ms:.2f} target-only steps and yields "
                     f"{s.tokens_per_pass:.2f} tokens")
    return ", ".join(parts)


def _where(category: str, temperature: float, several_temps: bool) -> str:
    name = OVERALL if category == OVERALL else category
    return name + (f" at temp {temperature:g}" if several_temps else "")


def _clause(s: Summary, base: Summary) -> str:
    """One setting beside the winner: its word and why; a setting that never drafted did the target alone's work,
    so its figure is the spread between runs of the same work, not a win or a loss."""
    if drafted_nothing(s):
        return (f"{s.label} never drafted (no proposal on any pass), so it ran as the target alone: its "
                f"{s.speedup:.2f}x is the spread between runs of the same work")
    w = word_for(s.speedup)
    return f"{s.label} {'also ' if w == WINS else ''}{w} at {s.speedup:.2f}x: {why(s, base)}"


def verdict(group: Sequence[Summary], base: Summary, where: str) -> Verdict:
    """The verdict of one category and temperature: ``group`` its speculative settings (at least one), ``base``
    the target alone there (tokens/s above 0). Only a setting that drafted can win."""
    ranked = sorted(group, key=lambda s: s.speedup, reverse=True)
    best = next((s for s in ranked if not drafted_nothing(s)), None)
    if best is not None and word_for(best.speedup) == WINS:
        head = (f"{best.label} wins {where}: {best.speedup:.2f}x the target alone ({best.tokens_per_second:.1f} vs "
                f"{base.tokens_per_second:.1f} t/s), {why(best, base)}")
        winner, sp = best.label, printed(best.speedup)
    else:
        best = None
        head = (f"{TARGET_ALONE[0].upper()}{TARGET_ALONE[1:]} wins {where} ({base.tokens_per_second:.1f} t/s): "
                f"no setting beats it")
        winner, sp = TARGET_ALONE, EVEN
    rest = [s for s in ranked if s is not best]
    sentence = "; ".join([head, *(_clause(s, base) for s in rest)]) + "."
    outcomes = tuple((s.label, NEVER if drafted_nothing(s) else word_for(s.speedup), printed(s.speedup))
                     for s in ranked)
    return Verdict(ranked[0].category, ranked[0].setting.temperature, winner, sp, outcomes, sentence)


def verdicts(summaries: Sequence[Summary], has_baseline: bool = True) -> list[Verdict]:
    """Every category's (and overall's) verdict at each temperature, in the summaries' order; none without a
    baseline (no speedup to judge by) or where no setting ran.

    Args:
        summaries: ``bench.aggregate.aggregate``'s.
        has_baseline: whether the target alone was measured (a deployment without --baseline-url: not).

    Returns:
        The verdicts.
    """
    if not has_baseline:
        return []
    cats = list(dict.fromkeys(s.category for s in summaries))
    temps = sorted({s.setting.temperature for s in summaries})
    out = []
    for cat in cats:
        for t in temps:
            group = [s for s in summaries if s.category == cat and s.setting.temperature == t and s.runs]
            base = next((s for s in group if s.setting.is_baseline), None)
            spec = [s for s in group if not s.setting.is_baseline]
            if spec and base is not None and base.tokens_per_second > 0:
                out.append(verdict(spec, base, _where(cat, t, len(temps) > 1)))
    return out


def winner_lines(summaries: Sequence[Summary], has_baseline: bool = True) -> list[str]:
    """The verdicts' sentences, one per category (and overall) and temperature."""
    return [v.sentence for v in verdicts(summaries, has_baseline)]


__all__ = ["TARGET_ALONE", "Verdict", "verdicts", "why", "winner_lines", "word_for"]
