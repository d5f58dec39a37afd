"""The cost model of a pipelined pass (``--pipeline``) against a sequential one, and ``--pipeline auto``'s choice.

With a per-draft acceptance rate a (constant over positions, as ``costmodel.leviathan``) and draft length k, both
ways yield E(k) = (1 - a^(k+1)) / (1 - a) tokens per pass. Their times differ:

- sequential: T_seq(k) = k * d + V(k), d a draft step and V(k) a verify of k + 1 tokens at the sequential
  threads (each model alone on all its threads);
- pipelined: T_pipe(k) = V'(k) + (1 - h) * k * d' + h * max(0, (k + 1) * d' - V'(k)) + (1 - h) * w, with d' and
  V'(k) measured at the split (each model on its share of the cores, decoding at the same time as the
  other). h is the chance that the block drafted during the verify is used: every draft accepted and the
  target's token the draft's guess, h = a^k * a (the guess taken to be as good as a draft). On a hit the next
  drafts are ready once the draft thread has drafted the guess and k drafts ((k + 1) * d') and the verify
  has ended; on a miss the next pass drafts afresh (k * d'), after waiting w for the draft thread's decode in
  progress to end (half a step, d' / 2, when the speculative block was still being drafted as the verify
  ended, (k + 1) * d' > V'(k); 0 otherwise). That wait is the waste on the pass's path; the tokens thrown away
  cost the draft's own cores only.
- tokens/s = 1000 * E(k) / T(k).

So the pipeline pays when the split costs little (d' and V' close to d and V: one thread per model is nearly
as fast as two taking turns, or the cores are many) and hits are common (high acceptance, short k). On two
cores where llama.cpp's threads scale well, d' ~ 2d and V' ~ 2V, and the sequential loop wins at any k.

``choose(costs, a, ks)`` predicts both ways over ``ks`` from measured costs (``engine.pipeline_probe``) and picks
the faster at its best k, with its reason in one line. Imports nothing of the UI.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...engine.probes.pipeline_probe import SplitCosts
from .costmodel import leviathan

ASSUMED_ACCEPTANCE = 0.7  # --pipeline auto before a run has measured any (a same-family pair, temperature 0)


def hit_chance(a: float, k: int) -> float:
    """h: every one of k drafts accepted and the guess right."""
    return a ** (k + 1)


def sequential_ms(d: float, v: float, k: int) -> float:
    return k * d + v


def pipelined_ms(d: float, v: float, k: int, a: float) -> float:
    """T_pipe(k) (see the module docstring); ``d``, ``v`` at the split."""
    h = hit_chance(a, k)
    ahead = (k + 1) * d
    wait = d / 2 if ahead > v else 0.0
    return v + (1 - h) * k * d + h * max(0.0, ahead - v) + (1 - h) * wait


@dataclass(frozen=True)
class PipelineChoice:
    """Both ways predicted at their best k, and the pick."""

    pipeline: bool
    k_seq: int
    tps_seq: float
    k_pipe: int
    tps_pipe: float
    acceptance: float
    reason: str

    @property
    def ratio(self) -> float:
        """Pipelined over sequential tokens/s at their best k."""
        return self.tps_pipe / self.tps_seq if self.tps_seq > 0 else 0.0


def predict(costs: SplitCosts, a: float, k: int) -> tuple[float, float]:
    """(sequential, pipelined) tokens/s at draft length ``k``."""
    e = leviathan(a, k)
    seq = sequential_ms(costs.draft_ms, costs.verify_ms[k], k)
    pipe = pipelined_ms(costs.split_draft_ms, costs.split_verify_ms[k], k, a)
    return 1000.0 * e / seq, 1000.0 * e / pipe


def choose(costs: SplitCosts, a: float = ASSUMED_ACCEPTANCE, ks=None, assumed: bool = True) -> PipelineChoice:
    """The faster way at its best k of ``ks`` (default: every k measured), with its reason."""
    ks = sorted(ks or costs.verify_ms)
    both = {k: predict(costs, a, k) for k in ks}
    k_seq = max(ks, key=lambda k: both[k][0])
    k_pipe = max(ks, key=lambda k: both[k][1])
    seq, pipe = both[k_seq][0], both[k_pipe][1]
    on = pipe > seq
    t, td = costs.split
    ts, tds = costs.threads
    way = f"pipelined ({t} + {td} threads)" if on else f"sequential ({ts} threads)"
    reason = (
        f"{way}: predicted {max(seq, pipe):.1f} t/s against {min(seq, pipe):.1f} "
        f"{'sequential' if on else 'pipelined'} (k = {k_pipe if on else k_seq}); a draft step "
        f"{costs.draft_ms:.1f} ms alone at {tds} threads, {costs.split_draft_ms:.1f} ms at {td} while the target "
        f"verifies; a verify of {k_seq + 1} {costs.verify_ms[k_seq]:.1f} ms alone at {ts} threads, "
        f"{costs.split_verify_ms[k_seq]:.1f} ms at {t} while the draft drafts; acceptance {a:.2f}"
        + (" assumed" if assumed else " measured")
    )
    return PipelineChoice(on, k_seq, seq, k_pipe, pipe, a, reason)
