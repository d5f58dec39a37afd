"""Draft and verify at once (``--pipeline``): the draft model drafts the next block on its own thread and cores
while the target verifies this one.

Every other loop drafts, then verifies, then drafts again: one model idles while the other runs. In a pipelined
pass the draft model decodes on the engine's draft thread (``DraftThread``, ``spectui-draft``), and goes on
drafting while the loop's thread is inside the target's ``llama_decode`` (ctypes releases the GIL there; two
llama.cpp contexts decode from two threads independently). What it drafts meanwhile is the *optimistic
continuation*: as if every draft of the block being verified were accepted, it decodes the last draft, takes
its most likely next token as its **guess** of the target's own token, and drafts the next pass's block after
the guess. After the verify:

- a **hit** (every draft accepted and the target's token is the guess): the next pass's drafts are the block
  drafted meanwhile, and the draft thread goes on from its end while they are verified. At T = 0 they are the
  drafts the sequential loop drafts from the same context (the one difference: the sequential loop decodes
  the last draft and the target's token as one batch of two, the pipelined one each alone, which llama.cpp
  may round apart in the last bits of the draft's rows);
- a **miss** (a rejection, or another token than the guess): the block drafted ahead is thrown away: the draft
  thread stops after the token it is drafting (``DraftLimits.cancel``; a decode is never cut mid-way), the
  draft's KV cache is rolled back to the accepted context (``llama_memory_seq_rm``, as the sequential loop
  does) and the next block is drafted afresh. A settings change between passes throws a block drafted ahead
  away too, and so does the run's end.

On a hit the loop waits for the block to be complete (its drafts are the next pass's); on a miss it waits only
for the draft thread's decode in progress to end (``PipeInfo.cut_wait_ms``).

Exactness at T > 0: the guess is only used to choose a block (the draft's argmax, at every temperature: the
likeliest hit); the block's drafts are sampled from q given the guess, and their q rows are the ones the
acceptance test reads, so a block used after a hit is a block of q samples drafted from the accepted context,
as in the sequential loop. The draft thread never draws from the loop's RNG (the acceptance tests' and the
target's draws): each drafted position draws its own uniform from a stream keyed by (seed, position)
(``PositionDraws``), so a seeded run repeats whatever the threads' timing. A position's uniform is drawn again
only where the earlier draw was thrown away unjudged.

Threads: the passes' split (``split_threads``: the target's -t and the draft's -td; by default an even split
of the cores this process may use) is set on both contexts for pipelined decode passes only; the prefill
pass, sequential passes and everything between runs use the sequential counts. At one thread a context
computes on its calling thread (ggml-cpu calls no OpenMP region for n_threads = 1); at more, each calling
thread has its own OpenMP team, so the split must not oversubscribe the cores (teams spin at their barriers).
This module is the draft thread and the block; the run's side (when a pass is pipelined, keeping or throwing
a block, the threads of a pass) is ``pipelined.PipelinedPassLoop``, a pass-loop strategy over the same steps.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from ...contract.events import DRAFT_STOP_K, SPEC_NONE, Settings
from ..drafters.base import DraftLimits, Proposal
from ..drafters.draft_model import DraftModelDrafter

STREAM = 0x5EC  # the draft thread's draws: a stream of its own per token position
_MASK = (1 << 63) - 1
SWITCH_INTERVAL_S = 0.0005  # while pipelined: a thread back from llama_decode waits at most this for the GIL


class PositionDraws:
    """What the draft thread draws with at T > 0, in place of the run's Generator: the i-th ``random()`` is the
    uniform of token position ``pos0 + i``, from a stream keyed by (seed, position)."""

    def __init__(self, seed: int, pos0: int) -> None:
        self.seed = int(seed) & _MASK
        self.pos = int(pos0)

    def random(self) -> float:
        u = float(np.random.default_rng([self.seed, self.pos, STREAM]).random())
        self.pos += 1
        return u


def split_threads(threads: int, threads_draft: int | None, given: bool, cores: int) -> tuple[int, int]:
    """(target, draft) threads of pipelined passes: -t and -td as given; what is not given, the rest of the
    ``cores`` this process may use (an even split when neither is: 2 cores, 1 + 1; the target takes an odd
    core), at least one each."""
    if given and threads_draft:
        return threads, threads_draft
    if given:
        return threads, max(1, cores - threads)
    if threads_draft:
        return max(1, cores - threads_draft), threads_draft
    t = max(1, (cores + 1) // 2)
    return t, max(1, cores - t)


@dataclass(frozen=True)
class PipelineSetup:
    """What an engine with a draft model hands its runs for pipelined passes (``RunParts.pipeline``).

    Attributes:
        thread: the engine's draft thread.
        threads: the sequential passes' (target, draft) threads (-t, -td).
        split: the pipelined passes' (target, draft) threads (``split_threads``).
        cores: the CPUs this process may use.
        pin: pin the loop's thread and the draft thread to cores of their own in pipelined passes.
    """

    thread: "DraftThread"
    threads: tuple[int, int]
    split: tuple[int, int]
    cores: int
    pin: bool = False


def pipeline_setup(threads: int, given, threads_draft: int | None, split: tuple[int, int] | None, pin: bool,
                   cores: int) -> PipelineSetup:
    """An engine's PipelineSetup: the sequential threads (-t; -td, default -t), the split (as given, or
    ``split_threads`` over the ``cores`` the engine's default thread count says this process may use) and a draft
    thread (started on the first pipelined pass)."""
    if split is not None:
        split = (max(1, int(split[0])), max(1, int(split[1])))
    else:
        split = split_threads(threads, threads_draft, bool(given), cores)
    n_cpus = max(1, len(affinity() or ())) if affinity() else cores
    return PipelineSetup(DraftThread(), (threads, threads_draft or threads), split, n_cpus, bool(pin))


class DraftThread:
    """The engine's draft thread: one worker for the draft model's decodes in pipelined passes, started on the
    first, pinned to ``cores`` when they are set (``os.sched_setaffinity`` on its native id)."""

    def __init__(self) -> None:
        self._pool: ThreadPoolExecutor | None = None
        self.cores: set[int] | None = None
        self._pinned: set[int] | None = None

    def submit(self, fn, *args) -> Future:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spectui-draft")
        return self._pool.submit(self._pinned_call, fn, *args)

    def _pinned_call(self, fn, *args):
        if self.cores != self._pinned:
            pin(self.cores)
            self._pinned = self.cores
        return fn(*args)

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)


def pin(cores: set[int] | None) -> None:
    """This thread onto ``cores`` (None: every core this process may use)."""
    try:
        os.sched_setaffinity(threading.get_native_id(), cores or os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux, or cores this process may not use: the scheduler decides
        pass


@dataclass
class Block:
    """One pass's drafts on the draft thread and what it drafted after them: the guess of the target's token,
    then the drafts of the pass after it (``spec``). ``first`` is given (a hit's ``spec``) or drafted here."""

    tokens: list[int]  # the accepted context the drafts follow (the loop's copy of that moment)
    lim: DraftLimits
    settings: Settings
    next_k: object  # callable: the number of drafts -> the next pass's DraftLimits if they all hold, or None
    first: Proposal | None = None
    given: bool = False  # drafted during the previous pass's verify
    decoded: int = 0  # drafts of ``first`` whose cells are in the draft's KV
    guess: int = -1
    spec: Proposal | None = None
    busy_s: float = 0.0  # the draft thread's time for ``first`` (when drafted here; a hit's: the previous block's)
    spec_t: list[float] = field(default_factory=list)  # [start, end] of drafting ahead (perf_counter)
    cancel: threading.Event = field(default_factory=threading.Event)
    drafts_ready: threading.Event = field(default_factory=threading.Event)
    guess_ready: threading.Event = field(default_factory=threading.Event)
    done: Future | None = None
    error: BaseException | None = None

    @property
    def base(self) -> int:
        return len(self.tokens)

    def finish(self) -> None:
        """Wait for the draft thread to be done with this block (raising what it raised)."""
        if self.done is not None:
            self.done.result()
        if self.error is not None:
            raise self.error

    def wait(self, event: threading.Event) -> None:
        event.wait()
        if self.error is not None:
            raise self.error

    def spec_ms(self) -> float:
        t = self.spec_t
        return (t[1] - t[0]) * 1000.0 if len(t) == 2 else 0.0


def draft_block(drafter: DraftModelDrafter, b: Block) -> None:
    """On the draft thread: ``b``'s drafts (unless given), then, as if they all hold, the guess and the next
    pass's drafts after it, until done or ``b.cancel``."""
    try:
        temp, seed = b.settings.temperature, b.settings.seed
        if b.first is None:
            t = time.perf_counter()
            b.first = drafter.propose(b.tokens, b.lim, temp, PositionDraws(seed, b.base))
            b.decoded = drafter.decoded_drafts
            b.busy_s = time.perf_counter() - t
        elif len(b.first.ids) < b.lim.k and b.first.stop == DRAFT_STOP_K:  # a hit's block, shorter than asked for
            t = time.perf_counter()
            _extend(drafter, b)
            b.busy_s += time.perf_counter() - t
        b.drafts_ready.set()
        lim = b.next_k(len(b.first.ids))
        if lim is None or b.cancel.is_set():
            return
        b.spec_t.append(time.perf_counter())
        _guess(drafter, b)
        b.guess_ready.set()
        if not b.cancel.is_set():
            ctx = b.tokens + b.first.ids + [b.guess]
            b.spec = drafter.propose(ctx, dataclasses.replace(lim, cancel=b.cancel), temp,
                                     PositionDraws(seed, len(ctx)))
        b.spec_t.append(time.perf_counter())
    except BaseException as exc:  # noqa: BLE001 - handed to the loop, which raises it
        b.error = exc
    finally:
        b.drafts_ready.set()
        b.guess_ready.set()


def _extend(drafter: DraftModelDrafter, b: Block) -> None:
    """Draft on after a hit's block that stopped at its own limit (automatic k chose a longer one): its drafts are
    a prefix of what the sequential loop drafts; the rest follows them, drawn at their own positions."""
    first, n = b.first, len(b.first.ids)
    drafter.hold(b.base + b.decoded)  # the catch-up decodes the block's last draft(s), as the loop's propose does
    more = drafter.propose(b.tokens + first.ids, dataclasses.replace(b.lim, k=b.lim.k - n), b.settings.temperature,
                           PositionDraws(b.settings.seed, b.base + n))
    b.decoded = n + drafter.decoded_drafts
    b.first = dataclasses.replace(
        first, ids=first.ids + more.ids, q_probs=first.q_probs + more.q_probs, pending=first.pending + more.pending,
        q_rows=_joined(first.q_rows, more.q_rows), logit_rows=_joined(first.logit_rows, more.logit_rows),
        top=_joined(first.top, more.top), stop=more.stop, stop_p=more.stop_p, stop_row=more.stop_row)


def _joined(a: list | None, b: list | None) -> list | None:
    return None if a is None and b is None else (a or []) + (b or [])


def _guess(drafter: DraftModelDrafter, b: Block) -> None:
    """Decode the block's drafts not in the KV yet (usually the last one alone) and take the draft's argmax
    after them as the guess of the target's token; the KV then holds the drafts as accepted context."""
    ids, m = b.first.ids, len(b.first.ids)
    model = drafter.model
    if b.decoded < m:
        model.rollback(b.base + b.decoded)  # (cells past a block cut shorter than drafted)
        model.decode(ids[b.decoded:], b.base + b.decoded, "last")
        b.decoded = m
    # else drafting stopped before another draft (--draft-p-min, or none): the last decode's row is the one
    b.guess = int(np.argmax(model.logits_last()))
    drafter.hold(b.base + m)


@dataclass
class PipeWork:
    """What a pipelined pass hands its event (``PassEventMaker`` makes ``events.PipeInfo`` of it)."""

    overlapped: bool = False
    guess: int = -1
    hit: bool = False
    thrown: list[int] = field(default_factory=list)
    thrown_why: str = SPEC_NONE
    overlap_ms: float = 0.0
    draft_busy_ms: float = 0.0
    cut_wait_ms: float = 0.0


def overlap_ms(a: list[float], b: tuple[float, float], now: float) -> float:
    """Milliseconds two spans share (an open span ``a`` ends ``now``)."""
    if not a:
        return 0.0
    end = a[1] if len(a) == 2 else now
    return max(0.0, min(end, b[1]) - max(a[0], b[0])) * 1000.0


def affinity() -> set[int] | None:
    """The CPUs the calling thread may run on (None where the platform does not say)."""
    try:
        return set(os.sched_getaffinity(threading.get_native_id()))
    except (AttributeError, OSError):
        return None
