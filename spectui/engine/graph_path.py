"""The graph sampling path of a run (``--sampling graph``): the draft's sample and q(d), and the target's p at
each judged position, from llama.cpp backend sampler chains (graph_sampling.py) attached to the models'
contexts for the run's duration, instead of numpy on the loop's path.

- T = 0: a ``greedy`` chain on each context. Its logits rows are the raw rows bit for bit, so every number
  recorded is the CPU path's; the draft's token and the target's argmax at each row are the chain's.
- T > 0: ``temp`` + ``dist`` chains. The draft's token is the draft chain's own draw (a valid draw from q: the
  chain's generator is seeded from the run's RNG) and q is the chain's probability row; the target's p at
  every judged row is its chain's probability row, read in place (zero-copy views). The acceptance test
  min(1, p/q) draws its u from spectui's RNG, the residual max(0, p - q) is normalised only on a rejection,
  and the bonus token is drawn from p with spectui's RNG (verify.speculative_verify, unchanged).
  The chain's logits rows are row / T: the inspector's margin is scaled back by T (``GraphTargetProbs``).

``choose`` decides the run's path from ``--sampling`` (auto | graph | cpu): the run records it
(RunStarted.sampling). No UI imports.
"""

from __future__ import annotations

import numpy as np

from ..contract.errors import SpectuiError
from . import graph_sampling as G
from .drafters import DraftModelDrafter
from .eventmaker import TargetProbs
from .models import LoadedModel
from .rowmath import RowPool
from .verify import Verdict

SAMPLING_CHOICES = ("auto", "graph", "cpu")
GRAPH, CPU = "graph", "cpu"


def unavailable(target: LoadedModel, draft: LoadedModel | None, head: str | None) -> str:
    """Why the graph path cannot run with these models ("" when it can)."""
    if not G.available():
        return "this llama.cpp build has no backend sampling API"
    if head is not None:
        return f"the {head} head drafts from the target's hidden states (the graph path covers a draft model)"
    for m in (target, draft):
        if m is not None and (m.n_use != m.n_vocab or m._sampled is None):
            return f"the {m.role} model's vocabulary is larger than the one both models share"
    return ""


def choose(asked: str, target: LoadedModel, draft: LoadedModel | None, head: str | None) -> tuple[str, str]:
    """(path, why) for ``--sampling asked``. ``graph`` where it cannot run is an error (one line); ``auto`` takes
    the graph path only where the model runs on a GPU device (on the CPU backend the chain's row math runs
    on the same cores and no copy is saved: docs/lossless.md says why the CPU default stays)."""
    if asked not in SAMPLING_CHOICES:
        raise SpectuiError(f"--sampling must be one of {', '.join(SAMPLING_CHOICES)} (got {asked!r})")
    if asked == CPU:
        return CPU, ""
    why = unavailable(target, draft, head)
    if why and asked == GRAPH:
        raise SpectuiError(f"--sampling graph: {why}")
    if why:
        return CPU, why
    if asked == "auto" and not target.n_gpu_layers:
        return CPU, "auto: the target runs on the CPU backend"
    return GRAPH, ""


def greedy_tokens_verify(target: LoadedModel, draft_ids: list[int]) -> Verdict:
    """The greedy rule over the target chain's greedy token of each verify row (the argmax of the row: ties go
    to the lower id, as np.argmax in verify.greedy_verify)."""
    k = len(draft_ids)
    for i in range(k):
        best = target.sampled_token(i)
        if best != draft_ids[i]:
            return Verdict(i, best)
    return Verdict(k, target.sampled_token(k))


class GraphSide:
    """One model's chain for a run: greedy at T = 0, temp + dist at T > 0; made again when the temperature or
    the seed changes, detached (and the model back to its raw rows) by ``off``."""

    def __init__(self, model: LoadedModel) -> None:
        self.model = model
        self.chain: G.SamplerChain | None = None
        self.key: tuple | None = None

    def set(self, temperature: float, seed: int | None, rng: np.random.Generator) -> None:
        key = (float(temperature), seed) if temperature > 0 else (0.0, None)
        if key == self.key:
            return
        self.off()
        if temperature > 0:  # the chain's generator, seeded from the run's RNG (a --seed run repeats)
            chain = G.SamplerChain.at_temperature(temperature, seed=int(rng.integers(0, 2**32)))
        else:
            chain = G.SamplerChain.greedy()
        if not chain.attach(self.model.ctx):
            chain.free()
            raise SpectuiError(f"llama.cpp refused a backend sampler on the {self.model.role} model "
                               "(run with --sampling cpu)")
        self.chain, self.key = chain, key
        self.model.chain_rows = True

    def off(self) -> None:
        if self.chain is not None:
            self.chain.free()  # detaches it first
        self.chain, self.key = None, None
        self.model.chain_rows = False


class GraphRun:
    """The chains of one engine's runs: the target's, and the draft model's when there is one."""

    def __init__(self, target: LoadedModel, draft: LoadedModel | None) -> None:
        self.target = GraphSide(target)
        self.draft = GraphSide(draft) if draft is not None else None

    def set(self, temperature: float, seed: int | None, rng: np.random.Generator, drafters=()) -> None:
        """The chains for a pass's settings, and the engine's draft-model drafter told to read them."""
        self.target.set(temperature, None, rng)  # the target's draws are never used: spectui's RNG decides
        if self.draft is not None:
            self.draft.set(temperature, seed, rng)
        for d in drafters:
            if isinstance(d, DraftModelDrafter):
                d.graph, d.scale = self.draft is not None, (temperature if temperature > 0 else 1.0)

    def off(self, drafters=()) -> None:
        self.target.off()
        if self.draft is not None:
            self.draft.off()
        for d in drafters:
            if isinstance(d, DraftModelDrafter):
                d.graph, d.scale = False, 1.0


class GraphTargetProbs(TargetProbs):
    """The target's p rows of one pass at T > 0 on the graph path: the chain's probability rows, read in place
    (``speculative_verify`` indexes them; nothing is softmaxed in numpy). ``rows`` are the chain's logits rows
    (row / T); the inspector's margin is scaled back by ``logit_scale`` = T. When the Finisher gives the pass
    a copy of its rows (``rows`` assigned: the next decode will not wait for it), the probability rows are
    copied too, into the run's pool (they go back there with the pass, as the CPU path's softmaxed rows)."""

    @classmethod
    def of(cls, target: LoadedModel, rows: np.ndarray, temperature: float, pool: RowPool | None):
        return cls(rows, temperature, target.probs_rows(len(rows)), pool)

    def __init__(self, rows: np.ndarray, temperature: float, probs: np.ndarray, pool: RowPool | None) -> None:
        self._rows = rows
        super().__init__(rows, temperature, pool)
        self.view = probs
        self.logit_scale = float(temperature)

    @property
    def rows(self) -> np.ndarray:
        return self._rows

    @rows.setter
    def rows(self, value: np.ndarray) -> None:
        if getattr(self, "view", None) is not None and value is not self._rows:
            for i in range(len(value)):
                if i not in self.cache:
                    buf = self.pool.take(self.view.shape[1]) if self.pool is not None else None
                    self.cache[i] = np.copyto(buf, self.view[i]) or buf if buf is not None else self.view[i].copy()
            self.view = None
        self._rows = value

    def __getitem__(self, i: int) -> np.ndarray:
        p = self.cache.get(i)
        return p if p is not None else self.view[i]

    def probs(self, i: int, ids: np.ndarray) -> list[float]:
        p = self[i]
        return [float(p[j]) for j in ids]
