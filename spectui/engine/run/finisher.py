"""Finishing passes: a decided pass is made into its event, in order, inline or overlapped with the next pass.

``Finisher`` (one per run) owns every overlap field of a run. Its two modes:

- inline: each pass's event is made on the loop as soon as the pass is decided (its clock stops when the
  event is made: finishing is on its path);
- overlapped (``Engine.run(overlap=True)`` where a core is spare, never under automatic k): each pass's event
  is made on the finishing thread while the next pass drafts and verifies; the loop hands pass N's event on
  once pass N + 1 has been decided, and the loop's wait for a finishing pass counts in the next pass's time.

``FinishingThread`` (one per engine) is what outlives a run: the thread itself (started on the first
overlapped pass), the gate it works in (set while a model decodes or the loop waits for it, so that the loop's
own Python never waits for the GIL behind it) and the reused copies of target rows that overlapped passes read.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from typing import Iterator

import numpy as np

from ...contract.events import PassEvent, Settings
from .eventmaker import PassEventMaker, PassWork, TargetProbs


class FinishingThread:
    """The engine's finishing thread, its gate and its row buffers (see the module docstring)."""

    def __init__(self) -> None:
        # set while a model decodes (LoadedModel.gate) or while the loop waits for a pass to be finished: the
        # finishing thread works only then, so the loop's own Python never waits for the GIL behind it
        self.gate = threading.Event()
        self._pool: ThreadPoolExecutor | None = None
        self._rows_free: list[np.ndarray] = []  # target row buffers (copies for a finishing pass), reused

    def submit(self, fn, work: PassWork) -> Future:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spectui-finish")
        return self._pool.submit(fn, work)

    def wait(self, fut: Future) -> float:
        """Block until a pass is finished, the gate open meanwhile (the finishing thread has the GIL to itself).
        Returns the seconds waited."""
        if fut.done():
            return 0.0
        t = time.perf_counter()
        self.gate.set()
        try:
            wait_futures([fut])
        finally:
            self.gate.clear()
        return time.perf_counter() - t

    def rows_copy(self, rows: np.ndarray) -> np.ndarray:
        """A reused buffer of at least len(rows) rows holding a copy of ``rows``."""
        buf = self._rows_free.pop() if self._rows_free else None
        if buf is None or len(buf) < len(rows) or buf.shape[1] != rows.shape[1]:
            buf = np.empty((max(len(rows), 5), rows.shape[1]), dtype=np.float32)
        np.copyto(buf[: len(rows)], rows)
        return buf

    def give_rows(self, buf: np.ndarray) -> None:
        self._rows_free.append(buf)

    def close(self) -> None:
        """Let a pass still being finished end first (it reads the models' vocabularies), then stop the thread."""
        pool, self._pool = self._pool, None
        if pool is not None:
            self.gate.set()  # (it may be waiting for a decode that will not come)
            pool.shutdown(wait=True)
            self.gate.clear()


class Finisher:
    """Finishes one run's decided passes, in order, inline or overlapped (see the module docstring)."""

    def __init__(self, thread: FinishingThread, maker: PassEventMaker, may_overlap: bool) -> None:
        self.thread = thread
        self.maker = maker
        self.may_overlap = may_overlap  # run(overlap=True) where a core is spare
        self.overlap = False  # this pass is finished on the finishing thread (mode_for)
        self.pending: deque = deque()  # passes decided, not yet yielded: Future[PassEvent] or PassEvent
        self.rows_busy: Future | None = None  # the pass still reading the target's logit buffer, if any
        self.copy_rows = False  # a verify had to wait for rows_busy: finishing passes read copies instead
        self.waited_s = 0.0  # the loop's wait for a finishing pass since the last pass began (goes to the next)

    def mode_for(self, s: Settings, spare: bool = True) -> bool:
        """Finish the next pass on the finishing thread? When the run asked for it and a core is spare (``spare``:
        the pass leaves it free; a pipelined pass may take every core), and not under automatic k: its policy
        must see pass N's event before it chooses pass N + 1's k."""
        self.overlap = self.may_overlap and spare and not s.auto
        return self.overlap

    def take_waited(self) -> float:
        """The loop's wait for finishing passes since the last pass began (the next pass's time), reset."""
        w, self.waited_s = self.waited_s, 0.0
        return w

    def free_rows(self) -> None:
        """Before a target decode overwrites its logit rows: wait for the pass still reading them (it had this
        pass's draft decodes to be finished; when they were too short, finishing passes read copies from now on)."""
        if self.rows_busy is not None:
            if not self.rows_busy.done():
                self.copy_rows = True
            self.thread.wait(self.rows_busy)
            self.rows_busy = None

    def keep_rows(self, p: TargetProbs, view_is_safe: bool) -> tuple[np.ndarray | None, bool]:
        """Overlapped, the finishing thread reads the pass's rows while the next pass drafts: straight from
        llama.cpp's buffer when ``view_is_safe`` (draft decodes come first; the next verify waits for it:
        ``free_rows``), else from a copy (``p.rows`` then points into it). Returns (the copy's buffer or None,
        whether the pass holds llama.cpp's buffer). Inline: (None, False)."""
        if not self.overlap:
            return None, False
        if view_is_safe and not self.copy_rows:
            return None, True
        buf = self.thread.rows_copy(p.rows)
        p.rows = buf[: len(p.rows)]
        return buf, False

    def submit(self, work: PassWork) -> None:
        """A decided pass: made into its event now (inline) or on the finishing thread (overlapped)."""
        if self.overlap:
            work.between = self.thread.gate.wait
            fut = self.thread.submit(self._finish, work)
            self.pending.append(fut)
            if work.holds_view:
                self.rows_busy = fut
        else:
            self.pending.append(self._finish(work))

    def _finish(self, work: PassWork) -> PassEvent:
        event = self.maker.make(work)
        if work.rows_buf is not None:
            self.thread.give_rows(work.rows_buf)
        return event

    def drain(self, keep: int = 0) -> Iterator[PassEvent]:
        """Yield finished pass events, oldest first, until at most ``keep`` are still pending."""
        while len(self.pending) > keep:
            item = self.pending[0]
            if isinstance(item, Future):
                # the loop waiting for the finishing thread is the loop's time: the next pass's (Timing.other_ms)
                self.waited_s += self.thread.wait(item)
                if item is self.rows_busy:
                    self.rows_busy = None
                ev = item.result()
            else:
                ev = item
            self.pending.popleft()
            yield ev

    def drain_decided(self) -> Iterator[PassEvent]:
        """After a pass is submitted: inline, its event; overlapped, the previous pass's (finished while this
        one decoded), this one's being finished while the next pass decodes."""
        return self.drain(keep=1 if self.overlap else 0)

    def settle(self) -> None:
        """Wait for every pass still being finished, and drop them (an abandoned run)."""
        for item in self.pending:
            if isinstance(item, Future):
                self.thread.wait(item)
        self.pending.clear()
        self.rows_busy = None
