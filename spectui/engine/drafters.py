"""Drafters: who proposes the next k tokens. One interface, three kinds.

- ``DraftModelDrafter``: a small model with its own llama.cpp context, greedy at temperature 0 and
  sampled from q at the same temperature otherwise. Its KV cache is kept exactly in sync with the
  accepted text: before drafting it decodes, as one batch, every accepted token it has not decoded yet
  (the last emitted token, plus d_k when all k drafts were accepted: d_k is proposed, never decoded);
  after verification ``accept()`` removes its rejected positions with llama_memory_seq_rm.
- ``NgramDrafter``: prompt lookup - the longest recent n-gram (n = 3, 2, 1) that ends the context and
  occurred earlier proposes what followed it. A point mass: q(x) = 1.
- ``NoDrafter``: proposes nothing; the loop then runs the target alone (the baseline) through the
  same passes and events.

Interface: ``start()`` at the beginning of a run (caches cleared), ``prefill(prompt)`` inside pass 0,
``propose(tokens, k, temperature, rng) -> Proposal`` and ``accept(n_accepted)`` after verification.
``tokens`` is the whole accepted context (prompt + emitted); it only grows during a run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .models import LoadedModel
from .verify import logsumexp, sample, softmax


@dataclass
class Proposal:
    ids: list[int] = field(default_factory=list)
    q_probs: list[float] = field(default_factory=list)  # q(d_i) at the temperature in force (T=0: T=1 softmax)
    q_rows: list[np.ndarray] | None = None  # full q rows when temperature > 0 (None: point mass)
    logit_rows: list[np.ndarray] | None = None  # copies of the raw draft logits (only when debugging)


class Drafter:
    name = "none"
    keep_rows = False  # copy raw logit rows into proposals (tests / debugging)

    def start(self) -> None:
        """A new run begins (the target's and the draft's caches are empty)."""

    def prefill(self, prompt: list[int]) -> None:
        """Pass 0: evaluate the prompt (draft model only)."""

    def propose(self, tokens: list[int], k: int, temperature: float, rng: np.random.Generator) -> Proposal:
        raise NotImplementedError

    def accept(self, n_accepted: int) -> None:
        """Verification accepted the first ``n_accepted`` drafts of the last proposal."""


class NoDrafter(Drafter):
    name = "none"

    def propose(self, tokens, k, temperature, rng) -> Proposal:
        return Proposal()


class NgramDrafter(Drafter):
    """Prompt lookup over the accepted context, incremental index per n (most recent occurrence wins)."""

    name = "ngram"

    def __init__(self, n_max: int = 3) -> None:
        self.n_max = n_max
        self.start()

    def start(self) -> None:
        self._index: list[dict[tuple, int]] = [dict() for _ in range(self.n_max + 1)]
        self._upto = 0  # end positions < _upto are indexed

    def _update(self, tokens: list[int]) -> None:
        if len(tokens) < self._upto + 1:
            self.start()  # a shorter context: a new run without start() (defensive)
        # index n-grams ending at j for every j <= len - 2 (so a continuation exists and the final
        # suffix itself is never its own match)
        last = len(tokens) - 2
        for j in range(self._upto, last + 1):
            for n in range(1, self.n_max + 1):
                if j - n + 1 < 0:
                    break
                self._index[n][tuple(tokens[j - n + 1 : j + 1])] = j
        self._upto = max(self._upto, last + 1)

    def propose(self, tokens, k, temperature, rng) -> Proposal:
        if k <= 0 or len(tokens) < 2:
            return Proposal()
        self._update(tokens)
        for n in range(min(self.n_max, len(tokens) - 1), 0, -1):
            j = self._index[n].get(tuple(tokens[-n:]))
            if j is not None:
                ids = tokens[j + 1 : j + 1 + k]
                return Proposal(ids=list(ids), q_probs=[1.0] * len(ids), q_rows=None)
        return Proposal()


class DraftModelDrafter(Drafter):
    name = "model"

    def __init__(self, model: LoadedModel) -> None:
        self.model = model
        self.n_past = 0  # draft KV positions holding accepted context
        self._decoded_drafts = 0  # drafts of the last proposal that sit in the draft KV (k - 1 at most)

    def start(self) -> None:
        self.n_past = 0
        self._decoded_drafts = 0

    def prefill(self, prompt: list[int]) -> None:
        self.model.decode_chunked(prompt, 0)
        self.n_past = len(prompt)

    def propose(self, tokens, k, temperature, rng) -> Proposal:
        m = self.model
        self._decoded_drafts = 0
        if k <= 0:
            return Proposal()
        pending = tokens[self.n_past :]
        if not pending:  # cannot happen in the loop (the last token is never decoded yet); be safe
            m.rollback(len(tokens) - 1)
            self.n_past = len(tokens) - 1
            pending = tokens[-1:]
        m.decode_chunked(pending, self.n_past)
        self.n_past = len(tokens)
        ids: list[int] = []
        q_probs: list[float] = []
        q_rows: list[np.ndarray] | None = [] if temperature > 0 else None
        keep: list[np.ndarray] | None = [] if self.keep_rows else None
        for i in range(k):
            row = m.logits_last()
            if keep is not None:
                keep.append(row.copy())
            if temperature > 0:
                q = softmax(row, temperature)
                d = sample(q, rng)
                q_rows.append(q)  # type: ignore[union-attr]
                q_probs.append(float(q[d]))
            else:
                d = int(np.argmax(row))
                q_probs.append(float(np.exp(float(row[d]) - logsumexp(row))))
            ids.append(d)
            if i < k - 1:
                m.decode([d], self.n_past + i, "last")
                self._decoded_drafts += 1
        return Proposal(ids=ids, q_probs=q_probs, q_rows=q_rows, logit_rows=keep)

    def accept(self, n_accepted: int) -> None:
        keep = min(n_accepted, self._decoded_drafts)
        if keep < self._decoded_drafts:
            self.model.rollback(self.n_past + keep)
        self.n_past += keep
        self._decoded_drafts = 0
