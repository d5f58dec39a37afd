"""``suffix``: suffix decoding (Oliaro et al., arXiv 2411.04975), as Arctic Inference defines it and vLLM runs it
(``--speculative-config '{"method": "suffix"}'``).

Two suffix trees of depth ``max_tree_depth`` hold frequency counts: the count of a string is the number of its
occurrences (of length at most the depth) in the tree's sequences. The **request tree** holds this run's context
(its prompt and its output so far, one sequence); the **global tree** holds the outputs of the engine's earlier
runs and of this one (one sequence each, the oldest evicted first beyond ``max_cached_requests``; 0 turns it off).
The drafter lives as long as its engine: ``start()`` begins a new request and keeps the global tree.

A speculation, in each tree: for every match length m = 1, 2, ... (the last m tokens of the context's last
``max_tree_depth``, m below that count, until they no longer occur) walk from the matched string down the tree,
each step to its most frequent child; a drafted token's probability is the product of child count / parent count
along the walk (a string's count includes its occurrences that end a sequence), and the walk stops before a
token below ``min_token_prob``, at the tree's depth (match + draft at most ``max_tree_depth``), at
``max_spec_factor`` x m + ``max_spec_offset`` tokens, or at the pass's k. The draft with the highest score (the sum
of its probabilities; ties: the longer match) is the tree's, and the request tree's wins ties with the global's.
A point mass: q = 1 on every draft.

Follows Arctic Inference's ``csrc/suffix_decoding/suffix_tree.cc`` (``SuffixTree::speculate``,
``_match_context``, ``_speculate_path``, float32 probabilities) and ``arctic_inference/suffix_decoding/cache.py``
(``SuffixDecodingCache``: ``start_request``, ``add_active_response``, ``speculate``, FIFO eviction), and vLLM's
``vllm/v1/spec_decode/suffix_decoding.py`` (the request's prompt at its start, the newly accepted tokens added
before each speculation, the pattern = the context's last ``max_tree_depth`` tokens) with the defaults of
``vllm/config/speculative.py`` (``suffix_decoding_max_tree_depth`` 24, ``..._max_cached_requests`` 10000,
``..._max_spec_factor`` 1.0, ``..._min_token_prob`` 0.1; vLLM passes no offset: Arctic's default 0). Arctic's
path-compressed C++ tree is replaced by its counts computed from the stored token ids (numpy), which gives the same
counts in memory linear in the tokens held. One difference: among equally frequent children Arctic takes the
first of a list whose order follows its count updates; here the continuation stored first.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from ...contract.events import DRAFT_STOP_K, DRAFT_STOP_NO_MATCH
from .base import Drafter, DrafterSpec, DraftLimits, Proposal

SEP = -1  # between sequences in a store (never a token id)
FACTOR_EPS = 1e-6  # suffix_tree.cc: int(match_len * max_spec_factor + max_spec_offset + 1e-6)


@dataclass(frozen=True)
class SuffixParams:
    """vLLM's ``suffix_decoding_*`` options (vllm/config/speculative.py), its defaults and its bounds, and Arctic's
    ``max_spec_offset`` (``SuffixDecodingCache.speculate``; vLLM leaves it at 0)."""

    max_tree_depth: int = 24
    max_cached_requests: int = 10000
    max_spec_factor: float = 1.0
    min_token_prob: float = 0.1
    max_spec_offset: float = 0.0

    def __post_init__(self) -> None:
        if self.max_tree_depth < 1:
            raise ValueError(f"suffix_decoding_max_tree_depth={self.max_tree_depth} must be >= 1")
        if self.max_cached_requests < 0:
            raise ValueError(f"suffix_decoding_max_cached_requests={self.max_cached_requests} must be >= 0")
        if self.max_spec_factor < 0:
            raise ValueError(f"suffix_decoding_max_spec_factor={self.max_spec_factor} must be >= 0")
        if not 0 <= self.min_token_prob <= 1:
            raise ValueError(f"suffix_decoding_min_token_prob={self.min_token_prob} must be in [0, 1]")


@dataclass
class SuffixDraft:
    """One speculation (Arctic's ``Draft``, a path): the ids, each one's estimated probability, their sum (the
    score) and the length of the context match it continues."""

    ids: list[int] = field(default_factory=list)
    probs: list[float] = field(default_factory=list)
    score: float = 0.0
    match_len: int = 0


class SuffixTree:
    """A suffix tree's counts over sequences of token ids, to ``max_depth`` tokens: the sequences are stored one
    after the other in one int32 buffer (each followed by ``SEP``); the count of a string is the number of places
    it ends in the buffer, found with numpy when a speculation asks.

    Args:
        max_depth: the tree's depth (the longest string counted).
    """

    def __init__(self, max_depth: int) -> None:
        self.max_depth = int(max_depth)
        self.buf = np.full(256, SEP, dtype=np.int32)  # buf[0] and every unused cell: SEP
        self.end = 1  # the next free cell
        self.spans: OrderedDict[int, list[int]] = OrderedDict()  # seq id -> [start, length], in storage order
        self.dead = 0  # cells of removed sequences (SEP now)

    @property
    def n_tokens(self) -> int:
        """Tokens held (removed sequences' not counted)."""
        return sum(n for _, n in self.spans.values())

    def extend(self, seq_id: int, tokens) -> None:
        """Append ``tokens`` to sequence ``seq_id``: the last one stored, or a new one (stored after the others).

        Args:
            seq_id: the sequence.
            tokens: token ids (non-negative).

        Raises:
            ValueError: a negative id, or a sequence stored before others (only the newest grows, as the drafter's
                active request does).
        """
        toks = np.asarray(tokens, dtype=np.int32).ravel()
        if toks.size and int(toks.min()) < 0:
            raise ValueError("token ids are non-negative")
        span = self.spans.get(seq_id)
        if span is None:
            span = self.spans[seq_id] = [self.end, 0]  # its left neighbour: the SEP ending the last one
        elif span[0] + span[1] != self.end - 1:
            raise ValueError(f"sequence {seq_id} is not the newest: only the newest grows")
        self._reserve(toks.size + 1)
        start = span[0] + span[1]
        self.buf[start:start + toks.size] = toks
        span[1] += int(toks.size)
        self.end = start + toks.size + 1  # the cell after it stays SEP

    def remove(self, seq_id: int) -> None:
        """Forget sequence ``seq_id`` (Arctic's ``SuffixTree::remove``); the buffer is compacted once more than half
        of it is removed sequences.

        Args:
            seq_id: the sequence.
        """
        start, n = self.spans.pop(seq_id)
        self.buf[start:start + n] = SEP
        self.dead += n + 1
        if self.dead * 2 > self.end:
            self._compact()

    def _reserve(self, n: int) -> None:
        if self.end + n + 1 > self.buf.size:
            grown = np.full(max(2 * self.buf.size, self.end + n + 1), SEP, dtype=np.int32)
            grown[:self.end] = self.buf[:self.end]
            self.buf = grown

    def _compact(self) -> None:
        parts, pos = [np.array([SEP], dtype=np.int32)], 1
        for span in self.spans.values():
            parts += [self.buf[span[0]:span[0] + span[1]], np.array([SEP], dtype=np.int32)]
            span[0], pos = pos, pos + span[1] + 1
        packed = np.concatenate(parts)
        self.buf = np.full(max(256, 2 * packed.size), SEP, dtype=np.int32)
        self.buf[:packed.size] = packed
        self.end, self.dead = packed.size, 0

    def speculate(self, context, max_spec_tokens: int, max_spec_factor: float, max_spec_offset: float,
                  min_token_prob: float) -> SuffixDraft:
        """Arctic's ``SuffixTree::speculate`` (a path): the best-scored draft over the match lengths.

        Args:
            context: the token ids to continue (only its last ``max_depth`` are read).
            max_spec_tokens: the most tokens to draft.
            max_spec_factor: a match of m tokens drafts at most ``max_spec_factor * m + max_spec_offset``.
            max_spec_offset: see ``max_spec_factor``.
            min_token_prob: no token whose estimated probability is below it.

        Returns:
            The draft (empty where nothing in the tree continues the context).
        """
        best = SuffixDraft()
        for m, ends in self.matches(context):
            n_max = max(min(max_spec_tokens, int(m * max_spec_factor + max_spec_offset + FACTOR_EPS)), 0)
            draft = self._walk(ends, m, n_max, np.float32(min_token_prob))
            if draft.score >= best.score:
                best = draft
                best.match_len = m
        return best

    def matches(self, context):
        """Arctic's ``_match_context`` for every match length: for m = 1, 2, ... (below the context's last
        ``max_depth`` tokens) while the last m tokens occur, m and where each occurrence ends in the buffer (the
        cell after it: its continuation).

        Args:
            context: the token ids to continue.

        Yields:
            (m, the occurrences' end cells).
        """
        ctx = np.asarray(context, dtype=np.int64)[-self.max_depth:]
        if ctx.size < 2:
            return
        buf = self.buf[:self.end]
        ends = np.flatnonzero(buf == ctx[-1]) + 1  # where each occurrence of the last m tokens ends
        for m in range(1, ctx.size):
            if m > 1:
                ends = ends[buf[ends - m] == ctx[-m]]
            if ends.size == 0:
                return
            yield m, ends

    def continuations(self, ends: np.ndarray) -> list[tuple[int, int, np.ndarray]]:
        """What follows the string that ends at ``ends``: each token stored after it, most frequent first (ties: the
        one stored first), with its count and where the string extended by it ends.

        Args:
            ends: the string's occurrences' end cells.

        Returns:
            (token, count, end cells of the longer string) per continuation (a sequence's end is none).
        """
        nxt = self.buf[ends]
        tokens, first, counts = np.unique(nxt, return_index=True, return_counts=True)
        order = sorted((i for i in range(tokens.size) if tokens[i] != SEP), key=lambda i: (-counts[i], first[i]))
        return [(int(tokens[i]), int(counts[i]), ends[nxt == tokens[i]] + 1) for i in order]

    def _walk(self, ends: np.ndarray, depth: int, n_max: int, min_prob: np.float32) -> SuffixDraft:
        """``_speculate_path`` from the string that ends at ``ends`` (``depth`` tokens long): each step to its most
        frequent continuation (ties: the one stored first), its probability the running product of child count /
        parent count in float32, as Arctic's."""
        out = SuffixDraft()
        prob = np.float32(1.0)
        score = np.float32(0.0)
        while len(out.ids) < n_max and depth < self.max_depth:
            nxt = self.buf[ends]
            if ends.size == 1:
                token, count = int(nxt[0]), 1
                if token == SEP:
                    break
            else:
                tokens, first, counts = np.unique(nxt, return_index=True, return_counts=True)
                keep = tokens != SEP
                if not keep.any():
                    break
                tokens, first, counts = tokens[keep], first[keep], counts[keep]
                top = np.flatnonzero(counts == counts.max())
                pick = top[np.argmin(first[top])]
                token, count = int(tokens[pick]), int(counts[pick])
            prob = np.float32(prob * np.float32(np.float32(count) / np.float32(ends.size)))
            if prob < min_prob:
                break
            out.ids.append(token)
            out.probs.append(float(prob))
            score = np.float32(score + prob)
            ends = ends[nxt == token] + 1
            depth += 1
        out.score = float(score)
        return out


class SuffixCache:
    """Arctic's ``SuffixDecodingCache`` for one request at a time: the active request's tree (its prompt and
    output) and the global tree of outputs, at most ``max_cached_requests`` of them (FIFO; 0: no global tree).

    Args:
        max_tree_depth: both trees' depth.
        max_cached_requests: the outputs the global tree keeps.
    """

    def __init__(self, max_tree_depth: int, max_cached_requests: int) -> None:
        self.max_tree_depth = max_tree_depth
        self.max_cached_requests = max_cached_requests
        self.global_tree = SuffixTree(max_tree_depth)
        self.local_tree: SuffixTree | None = None
        self.req = -1  # the active request's sequence id in the global tree (ids count up, one per request)

    @property
    def cached_requests(self) -> list[int]:
        """The requests whose outputs the global tree holds, oldest first."""
        return list(self.global_tree.spans)

    def start_request(self, prompt) -> None:
        """A new request: its tree holds ``prompt``; a new output in the global tree, the oldest evicted beyond
        the cap (never the new one).

        Args:
            prompt: the request's prompt ids.
        """
        self.req += 1
        self.local_tree = SuffixTree(self.max_tree_depth)
        self.local_tree.extend(0, prompt)
        if self.max_cached_requests != 0:
            self.global_tree.extend(self.req, [])
            while len(self.global_tree.spans) > self.max_cached_requests:
                self.global_tree.remove(next(iter(self.global_tree.spans)))

    def add_active_response(self, tokens) -> None:
        """Append output tokens to the active request (its tree, and its output in the global tree if kept).

        Args:
            tokens: the new output ids.
        """
        self.local_tree.extend(0, tokens)
        if self.req in self.global_tree.spans:
            self.global_tree.extend(self.req, tokens)

    def speculate(self, context, max_spec_tokens: int, params: SuffixParams) -> SuffixDraft:
        """Both trees' drafts for ``context``; the request tree's where its score is at least the global's.

        Args:
            context: the token ids to continue.
            max_spec_tokens: the most tokens to draft.
            params: the factor, offset and probability floor.

        Returns:
            The draft.
        """
        args = (context[-self.max_tree_depth:], max_spec_tokens, params.max_spec_factor, params.max_spec_offset,
                params.min_token_prob)
        mine = self.local_tree.speculate(*args)
        other = self.global_tree.speculate(*args)
        return mine if mine.score >= other.score else other


class SuffixDrafter(Drafter):
    """Suffix decoding behind the drafter interface: ``prefill(prompt)`` starts a request; each ``propose`` adds
    the context's tokens accepted since the last one to the trees (as vLLM adds the sampled ids before it
    speculates) and drafts up to the pass's k. A run whose ``prefill`` went to another drafter (``d`` pressed
    mid-run) starts its request at the first proposal, with the context so far as its prompt. What a run emits
    after its last proposal (its last pass's tokens) reaches no tree.

    Args:
        params: the options (vLLM's defaults when None).
    """

    name = "suffix"

    def __init__(self, params: SuffixParams | None = None) -> None:
        self.params = params or SuffixParams()
        self.cache = SuffixCache(self.params.max_tree_depth, self.params.max_cached_requests)
        self.seen = -1  # context tokens in the request's tree; -1: no request this run

    def start(self) -> None:
        self.seen = -1  # the global tree stays: it outlives the runs, as vLLM's cache outlives requests

    def prefill(self, prompt: list[int]) -> None:
        self.cache.start_request(list(prompt))
        self.seen = len(prompt)

    def follow(self, tokens) -> None:
        """The context's tokens accepted since the last proposal into the trees (a new request where this run had
        none, or where the context is shorter than what the request holds).

        Args:
            tokens: the whole accepted context.
        """
        if self.seen < 0 or len(tokens) < self.seen:  # no prefill this run (or a shorter context: a new request)
            self.prefill(list(tokens))
        elif len(tokens) > self.seen:
            self.cache.add_active_response(list(tokens[self.seen:]))
            self.seen = len(tokens)

    def propose(self, tokens, k, temperature, rng) -> Proposal:
        lim = k if isinstance(k, DraftLimits) else DraftLimits(int(k))
        self.follow(tokens)
        if lim.k <= 0:
            return Proposal()
        ids = self.cache.speculate(tokens, lim.k, self.params).ids
        if not ids:
            return Proposal(stop=DRAFT_STOP_NO_MATCH)
        top = [[(d, 1.0)] for d in ids] if lim.top_n > 0 else None
        return Proposal(ids=ids, q_probs=[1.0] * len(ids), q_rows=None, top=top,
                        stop=DRAFT_STOP_K if len(ids) == lim.k else DRAFT_STOP_NO_MATCH)


SPEC = DrafterSpec(name="suffix", spec_type="suffix", needs="nothing", shape="chain", order=26, priority=7,
                   summary="suffix decoding (Arctic Inference, vLLM's method suffix): the most frequent continuation "
                           "in suffix trees of the prompt, the output and the engine's earlier outputs",
                   make=lambda res: SuffixDrafter())
