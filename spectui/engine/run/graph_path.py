"""The graph sampling path of a run (``--sampling graph``): the draft's sample and q(d), and the target's p at
each judged position, from llama.cpp backend sampler chains (graph_sampling.py) attached to the models'
contexts for the run's duration, instead of numpy on the loop's path.

- T = 0: a ``greedy`` chain on each context. Its logits rows are the raw rows bit for bit, so every number
  recorded is the CPU path's; the draft's token and the target's argmax at each row are the chain's.
- T > 0: a ``temp`` + ``dist`` chain on the draft. The draft's token is the draft chain's own draw (a valid draw
  from q: the chain's generator is seeded from the run's RNG) and q is the chain's probability row. Where the
  target runs on a device, a ``temp`` + ``dist`` chain on it too: its p at every judged row is the chain's
  probability row, read in place (zero-copy views). On the CPU backend the target has no chain at T > 0
  (``target_p_for``): the chain would softmax every row of a verify inside llama_decode, on the cores that
  decode, at about 10x numpy's cost per row, where the CPU path softmaxes only the rows judged. The acceptance test
  min(1, p/q) draws its u from spectui's RNG, the residual max(0, p - q) is normalised only on a rejection,
  and the bonus token is drawn from p with spectui's RNG (verify.speculative_verify, unchanged).
  The chain's logits rows are row / T: the inspector's margin is scaled back by T (``GraphTargetProbs``).

``choose`` decides the run's path from ``--sampling`` (auto | graph | cpu): the run records it
(RunStarted.sampling). No UI imports.
"""

from __future__ import annotations

import numpy as np

from ...contract.errors import SpectuiError
from ..drafters.draft_model import DraftModelDrafter
from ..llama import graph_sampling as G
from ..llama.devices import gpu_devices, is_lavapipe
from ..llama.models import LoadedModel
from ..rowmath import RowPool
from ..verify import Verdict
from .eventmaker import TargetProbs

SAMPLING_CHOICES = ("auto", "graph", "cpu")
GRAPH, CPU = "graph", "cpu"
ROW_ALIGN = 256  # bytes: Vulkan's largest minStorageBufferOffsetAlignment


def unavailable(target: LoadedModel, draft: LoadedModel | None, head: str | None) -> str:
    """Why the graph path cannot run with these models ("" when it can)."""
    if not G.available():
        return "this llama.cpp build has no backend sampling API"
    if head is not None:
        return f"the {head} head drafts from the target's hidden states (the graph path covers a draft model)"
    for m in (target, draft):
        if m is not None and (m.n_use != m.n_vocab or not m.reads_sampled):
            return f"the {m.role} model's vocabulary is larger than the one both models share"
        if m is not None and m.n_gpu_layers and (m.n_vocab * 4) % ROW_ALIGN:
            # the chain reads each output row through a view at row x n_vocab floats: ggml-vulkan asserts
            # (aborts) on a view not aligned to the device's storage-buffer offset alignment (at most 256)
            return f"the {m.role} model's rows ({m.n_vocab} ids) are not {ROW_ALIGN}-byte aligned on the device"
    return ""


def choose(asked: str, target: LoadedModel, draft: LoadedModel | None, head: str | None) -> tuple[str, str]:
    """(path, why) for ``--sampling asked``. ``graph`` where it cannot run is an error (one line); ``auto`` takes
    the graph path only where the model runs on a GPU device other than lavapipe (on the CPU backend the chain's
    row math runs on the same cores and no copy is saved: docs/lossless.md says why the CPU default stays)."""
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
    if asked == "auto" and _on_lavapipe(target):
        return CPU, "auto: on lavapipe a chain cannot be replaced (a run at another temperature would be refused)"
    return GRAPH, ""


def _on_lavapipe(model: LoadedModel) -> bool:
    return bool(model.n_gpu_layers) and any(is_lavapipe(d) for d in gpu_devices())


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
    the seed changes, detached (and the model back to its raw rows) by ``off``. A detached chain is freed only
    with the engine (``free``). On Mesa's lavapipe (software Vulkan) a chain attached a second time to a context
    crashes llama.cpp's next decode (0.3.36; the re-reserved graph compiles pipelines after buffers were
    regrown, the bug models.context_params describes): there the first chain stays attached for the engine's
    life (``pinned``), and a run at another temperature is refused with a one-line message."""

    def __init__(self, model: LoadedModel) -> None:
        self.model = model
        self.chain: G.SamplerChain | None = None
        self.key: tuple | None = None
        self.retired: list[G.SamplerChain] = []
        self.pinned = _on_lavapipe(model)

    def set(self, temperature: float, seed: int | None, rng: np.random.Generator) -> None:
        key = (float(temperature), seed if not self.pinned else None) if temperature > 0 else (0.0, None)
        if key == self.key:
            self.model.chain_rows = True
            return
        if self.pinned and self.key is not None:
            raise SpectuiError(f"--sampling graph on lavapipe: this engine's chains are fixed at temperature "
                               f"{self.key[0]:g} (lavapipe crashes when a chain is replaced); use --sampling cpu")
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

    def off(self, force: bool = False) -> None:
        if self.pinned and not force:  # stays attached (lavapipe): its rows stay the ones read
            return
        if self.chain is not None:
            for ctx, seq in list(self.chain.attached):
                self.chain.detach(ctx, seq)
            self.retired.append(self.chain)
        self.chain, self.key = None, None
        self.model.chain_rows = False

    def free(self) -> None:
        """Every chain this side made, freed (the engine closes: before its contexts)."""
        self.off(force=True)
        for c in self.retired:
            c.free()
        self.retired = []


TARGET_P = ("graph", "rows")


def target_p_for(target: LoadedModel) -> str:
    """Where the target's p comes from at T > 0: ``graph`` (its temp + dist chain's probability rows) where the
    target runs on a device, ``rows`` (no chain on the target at T > 0: its raw rows, softmaxed in numpy only
    for the rows the verdict judges, as the CPU path) on the CPU backend. There the chain's in-graph work runs
    per output row, on every row of a verify, on the cores that decode: +1.4 ms a row for temp + dist on the
    fast pair's 151,936 ids against 0.15 ms for numpy's softmax of one row (benchmarks/bench_graph_chains.py;
    docs/lossless.md)."""
    return "graph" if target.n_gpu_layers else "rows"


class GraphRun:
    """The chains of one engine's runs: the target's, and the draft model's when there is one. ``target_p``
    (``TARGET_P``; None: ``target_p_for(target)``) says whether the target has a chain at T > 0."""

    def __init__(self, target: LoadedModel, draft: LoadedModel | None, target_p: str | None = None) -> None:
        self.target = GraphSide(target)
        self.draft = GraphSide(draft) if draft is not None else None
        self.target_p = target_p or target_p_for(target)
        if self.target_p not in TARGET_P:
            raise ValueError(f"target_p must be one of {TARGET_P} (got {self.target_p!r})")

    def set(self, temperature: float, seed: int | None, rng: np.random.Generator, drafters=()) -> None:
        """The chains for a pass's settings, and the engine's draft-model drafter told to read them."""
        if temperature > 0 and self.target_p == "rows":
            self.target.off()  # the target's raw rows (a pinned chain stays: lavapipe is a device, "graph")
        else:
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

    def free(self) -> None:
        self.target.free()
        if self.draft is not None:
            self.draft.free()


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
