"""EngineThread: every llama.cpp call of one Engine on one dedicated thread.

Why: llama.cpp's CPU backend is built with OpenMP, and OpenMP keeps one thread team per calling
thread. Loading the models on the main thread and then decoding on a UI worker thread leaves two teams
on the machine; with more OpenMP threads than cores libgomp throttles its spin-waits, and decoding was
measured 20% slower (Qwen2.5-Coder 1.5B target alone on 2 cores: 30 t/s from the loading thread, 24 t/s
from another thread; with OMP_WAIT_POLICY=ACTIVE, 15 t/s). So the engine is built, run and closed on
one thread, and consumers on other threads receive its events through a queue (one hop per pass).

Also: a llama.cpp context is not thread-safe, and this keeps every call on one thread by construction.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from typing import Any, Callable, Iterator

from ..contract.control import RunControl
from ..contract.events import Event, MachineProbe

_DONE = object()


class EngineThread:
    """Owns an Engine built by ``factory`` on its own thread. Its API is explicit: ``run`` (the event
    stream), ``measure_verify_ms``, ``call(fn)`` (any other engine work, on the engine thread), ``close``,
    and the loaded engine's read-only facts (``target_info``, ``draft_info``, ``n_ctx``, ``threads``,
    ``spare_core``, and ``decoding``: the Event set while it decodes, for a trace writer's ``gate``);
    nothing is forwarded, so no llama.cpp call can run off the engine thread by accident."""

    def __init__(self, factory: Callable[[], Any], name: str = "spectui-engine") -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()
        self.engine = self.call(factory)  # re-raises the factory's error (SpectuiError) here
        # read-only facts of the loaded engine (fixed at load): read here, never forwarded
        self.target_info = self.engine.target_info
        self.draft_info = self.engine.draft_info
        self.n_ctx = self.engine.n_ctx
        self.threads = self.engine.threads
        self.spare_core = self.engine.spare_core
        self.decoding = self.engine.decoding  # an Event: reading or waiting on it calls nothing in llama.cpp

    @property
    def ident(self) -> int | None:
        return self._thread.ident

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fn, fut = job
            try:
                result = fn()
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                if fut is not None:
                    fut.set_exception(exc)
            else:
                if fut is not None:
                    fut.set_result(result)

    def call(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn()`` on the engine thread and return its result (or raise its exception)."""
        fut: Future = Future()
        self._jobs.put((fn, fut))
        return fut.result()

    def run(self, prompt: str, control: RunControl | None = None, n_predict: int = 128,
            probe: MachineProbe | None = None, chat_template: str = "", overlap: bool = False) -> Iterator[Event]:
        """Same contract as ``Engine.run``; the passes execute on the engine thread.

        Runs are serialised: a new run starts when the previous one has ended (stop it with its
        RunControl first). Abandoning the iterator does not stop the run: ``control.stop()`` does.
        """
        out: queue.SimpleQueue = queue.SimpleQueue()
        control = control or RunControl()

        def produce() -> None:
            try:
                for ev in self.engine.run(prompt, control, n_predict, probe, chat_template, overlap=overlap):
                    out.put(ev)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the consumer
                out.put(exc)
            finally:
                out.put(_DONE)

        self._jobs.put((produce, None))
        while True:
            item = out.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def measure_verify_ms(self, k: int, repeats: int = 3) -> float:
        return self.call(lambda: self.engine.measure_verify_ms(k, repeats))

    def close(self) -> None:
        if self._thread.is_alive():
            try:
                self.call(self.engine.close)
            finally:
                self._jobs.put(None)
                self._thread.join(timeout=10)
