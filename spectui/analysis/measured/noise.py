"""The near-tie threshold of the lossless check, measured: the kernels' own noise for a target on this machine
and backend (``spectui.engine.probes.noise`` measures it), cached like the probe, and what it means.

A greedy speculative run and the target-only run it is compared with decode the same tokens, the one in
verify batches of k + 1, the other one token at a time. Where the batch rounds differently, a step whose
top-two margin is within that difference may choose the other token: the texts part there, and that is
numerics, not speculation. ``NoiseResult.threshold(k)`` is the largest change a batch of up to k + 1
tokens made to a logit's gap to the top token (``BatchNoise.max_gap``); ``analysis.lossless`` calls a
parting at a margin at most that a near tie and a parting above it a real inequality.

Cached under ``$XDG_CACHE_HOME/spectui/noise`` (``~/.cache/spectui/noise``), one JSON file per key: the
target file's identity (real path, size, mtime, a hash of its first 64 KiB), where its layers run (backend,
GPU layers), the threads, weight repacking, the batch sizes and tokens measured, and the machine (CPU model,
llama-cpp-python version, a hash of llama.cpp's system info). The draft does not enter the key: only the
target's numerics are compared. ``refresh`` measures again; a corrupt cache file is reported in one line and
measured again. No Textual imports.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from ...contract.prompt import DEFAULT_PROMPT
from ...engine.probes.noise import DEFAULT_MAX_BATCH, DEFAULT_TOKENS, BatchNoise, measure_noise
from .cachefile import CachedRecord, Measurement
from .machine import file_identity, load_average, machine_key

NOISE_VERSION = 1


@dataclass(frozen=True)
class NoiseResult(CachedRecord):
    RECORD_VERSION, CACHE_NAME = NOISE_VERSION, "noise"
    target_path: str
    target_name: str
    backend: str
    n_gpu_layers: int
    machine: dict
    batches: tuple[BatchNoise, ...]  # ascending batch sizes, from 2
    n_tokens: int
    prompt_tokens: int
    min_margin: float
    version: int = NOISE_VERSION
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def max_batch(self) -> int:
        return self.batches[-1].batch if self.batches else 1

    def covered(self, k: int) -> tuple[BatchNoise, ...]:
        """The measured batch sizes a run of draft length k uses (2..k + 1; every one measured when k + 1
        is past the largest)."""
        return tuple(b for b in self.batches if b.batch <= max(2, int(k) + 1)) or self.batches

    def threshold(self, k: int) -> float:
        """The near-tie threshold for a run of draft length k: the largest gap change of any verify batch it
        can use (k <= 0 verifies nothing in batches: 0)."""
        if k <= 0:
            return 0.0
        return max((b.max_gap for b in self.covered(k)), default=0.0)

    def max_abs(self, k: int) -> float:
        """The largest logit difference of any verify batch a run of draft length k can use."""
        if k <= 0:
            return 0.0
        return max((b.max_abs for b in self.covered(k)), default=0.0)

    def exact_up_to(self) -> int:
        """The largest k whose batches (2..k + 1) all reproduced the one-token rows bit for bit (0: none)."""
        k = 0
        for b in self.batches:
            if b.max_abs != 0.0 or b.batch != k + 2:
                break
            k = b.k
        return k

    def summary_line(self) -> str:
        """One line: what was measured, where, and the figures over every batch size."""
        exact = self.exact_up_to()
        hi = self.batches[-1]
        ks = f"k = {self.batches[0].k}..{hi.k}" if len(self.batches) > 1 else f"k = {hi.k}"
        head = (f"{self.target_name} on {self.backend}, {self.threads} thread{'s' if self.threads != 1 else ''}, "
                f"{self.n_tokens} tokens decoded one at a time and in verify batches of k + 1 ({ks})")
        if exact >= hi.k:
            return head + ": bit-identical (every logit equal)"
        body = (f": largest logit difference {self.max_abs(hi.k):.3g}, largest change of a gap to the top token "
                f"{self.threshold(hi.k):.3g}")
        if exact:
            body += f"; bit-identical at k <= {exact}"
        return head + body

    def lines(self) -> list[str]:
        """The figures by batch size (for the docs and ``--json`` readers)."""
        out = [self.summary_line()]
        for b in self.batches:
            out.append(f"  k = {b.k:>2} (batch {b.batch:>2}): largest logit difference {b.max_abs:.3g}, gap change "
                       f"{b.max_gap:.3g}, argmax flips {b.flips} of {b.rows} rows")
        return out

    def to_dict(self) -> dict:
        d = asdict(self)
        d["batches"] = [asdict(b) for b in self.batches]
        d["loadavg"] = list(self.loadavg)
        d["notes"] = list(self.notes)
        return d

    def report(self) -> dict:
        d = self.to_dict()
        d["summary"] = self.summary_line()
        d["threshold_by_k"] = {str(b.k): self.threshold(b.k) for b in self.batches}
        return d

    @classmethod
    def _from_checked(cls, d: dict) -> "NoiseResult":
        batches = tuple(BatchNoise(batch=int(b["batch"]), max_abs=float(b["max_abs"]),
                                   max_gap=float(b["max_gap"]), rows=int(b["rows"]), flips=int(b["flips"]),
                                   worst_row=int(b["worst_row"])) for b in d["batches"])
        if not batches or any(b.batch < 2 or not (b.max_abs >= 0) or not (b.max_gap >= 0) for b in batches):
            raise ValueError("batch figures must be non-negative, batches from 2 tokens")
        if [b.batch for b in batches] != sorted({b.batch for b in batches}):
            raise ValueError("batch sizes must ascend")
        return cls(
            target_path=str(d["target_path"]), target_name=str(d.get("target_name", "")),
            backend=str(d.get("backend", "CPU")), n_gpu_layers=int(d.get("n_gpu_layers", 0)),
            machine=dict(d.get("machine") or {}), batches=batches, n_tokens=int(d["n_tokens"]),
            prompt_tokens=int(d.get("prompt_tokens", 0)), min_margin=float(d.get("min_margin", 0.0)),
            notes=tuple(str(x) for x in d.get("notes", ())), **cls.shared(d),
        )


# ---------------------------------------------------------------- measuring


def measure(engine, max_batch: int = DEFAULT_MAX_BATCH, n_tokens: int = DEFAULT_TOKENS,
            progress: Callable[[str], None] | None = None) -> NoiseResult:
    """Measure on a loaded ``Engine`` (between runs): batch sizes 2..max_batch.

    Args:
        engine: the loaded engine (its target's numerics are measured).
        max_batch: the largest verify batch compared with one-at-a-time decoding.
        n_tokens: tokens decoded, one at a time and in batches.
        progress: told how far it is.

    Returns:
        The NoiseResult (not cached: ``cached_or_measure`` stores it).
    """
    load0 = load_average()
    m = measure_noise(engine, range(2, max_batch + 1), n_tokens, progress=progress)
    load1 = load_average()
    info = engine.target_info
    return NoiseResult(
        target_path=info.path, target_name=info.name or os.path.basename(info.path), backend=info.backend or "CPU",
        n_gpu_layers=int(info.n_gpu_layers), threads=int(engine.threads), machine=machine_key(),
        batches=m.batches, n_tokens=m.n_tokens, prompt_tokens=m.prompt_tokens, min_margin=m.min_margin,
        loadavg=tuple(max(a, b) for a, b in zip(load0, load1)),  # type: ignore[arg-type]
        measured_at=time.time(), wall_s=m.wall_s,
    )


def fitting_tokens(engine, n_tokens: int = DEFAULT_TOKENS) -> int:
    """``n_tokens``, or fewer where the prompt and that many tokens would not fit the context (-c)."""
    room = int(engine.n_ctx) - len(engine.tokenize(DEFAULT_PROMPT))
    return max(0, min(int(n_tokens), room))


# ---------------------------------------------------------------- the cache


def cache_key(engine, max_batch: int = DEFAULT_MAX_BATCH, n_tokens: int = DEFAULT_TOKENS) -> tuple[dict, str]:
    """(key object, its hash): the target file, where it runs, threads, repacking, what is measured, machine."""
    info = engine.target_info
    key = {
        "version": NOISE_VERSION,
        "target": file_identity(info.path),
        "threads": int(engine.threads),
        "backend": info.backend,
        "gpu_layers": int(info.n_gpu_layers),
        "no_repack": bool(getattr(engine, "no_repack", False)),
        "max_batch": int(max_batch),
        "n_tokens": int(n_tokens),
        "machine": machine_key(),
    }
    return key, hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:24]


NOISE = Measurement(NoiseResult, key=lambda e, p: cache_key(e, p["max_batch"], p["n_tokens"]),
                    measure=lambda e, p: measure(e, **p), folder="noise")


def cached_or_measure(engine, *, max_batch: int = DEFAULT_MAX_BATCH, n_tokens: int = DEFAULT_TOKENS,
                      refresh: bool = False, directory: Path | None = None,
                      warn: Callable[[str], None] | None = None,
                      progress: Callable[[str], None] | None = None) -> NoiseResult:
    """The noise for this engine's target here: from the cache, or measured now and stored. The figures are
    numerics, not times: the machine's load does not change them (it is recorded, not judged).

    Args:
        engine, max_batch, n_tokens, progress: as ``measure``.
        refresh: measure again even when a cached result exists; directory: the cache folder.
        warn: gets the one-line messages (a corrupt cache file).

    Returns:
        The NoiseResult; ``threshold(k)`` is the near-tie threshold of a verify batch of k + 1.
    """
    params = {"max_batch": max_batch, "n_tokens": fitting_tokens(engine, n_tokens), "progress": progress}
    return NOISE.get(engine, params, refresh=refresh, directory=directory, warn=warn)
