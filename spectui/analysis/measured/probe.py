"""``spectui probe``: the hardware's own numbers, measured on this machine, and what they mean for speculation.

For the loaded target (and draft) it measures:

- the target's single-token decode time, and the weight-read bandwidth that implies (model file bytes /
  decode time: an upper-bound estimate of the bytes a decode reads, since not every byte of the file is
  a weight read per token);
- the verify cost of batches of 1..``max_batch`` tokens (one ``llama_decode`` of b tokens with every
  row's logits, rolled back: ``Engine.measure_verify_ms``), the median of ``repeats`` rounds whose order
  alternates (1..16, then 16..1, ...) so that a slow drift of the machine's load hits every size alike,
  after one discarded warm-up round; measured after a short prompt is in the KV cache, as in a run;
- the per-token cost at the largest batch, the draft's single-token cost and the cost ratio c;
- the machine's load while it measured (``/proc/loadavg`` and the cores other processes kept busy,
  ``spectui.engine.cpu.OthersCpu``), with a warning when it was not quiet.

From these it says in one sentence what speculation needs here, and names what makes verification
cost: memory-bound decoding gives a flat curve (a verify of k + 1 tokens costs one decode); if the
cost rises per token at small batches although a large batch computes tokens far cheaper than a
decode, the small-batch kernels (not a lack of idle compute) make speculation lose; if even a large
batch costs about a decode per token, the cores have no idle compute for verification.

Results are cached under ``$XDG_CACHE_HOME/spectui/probe`` (``~/.cache/spectui/probe``), one JSON file
per key: the model files' identity (real path, size, mtime, a hash of the GGUF's first 64 KiB), the
threads, where the layers run (backend, GPU layers), weight repacking, the largest batch and the
machine (CPU model, llama-cpp-python version and a hash of llama.cpp's system info). ``--refresh``
measures again; a corrupt cache file is reported in one line and measured again.

``cached_or_measure(engine)`` is the hook for a live run: it returns the probe result, whose
``machine_probe()`` the run hands to ``engine.run(..., probe=...)``; the engine records it in
``RunStarted.probe``, where auto k, the faces and a replay read it (no registry).

No Textual imports.
"""

from __future__ import annotations

import contextlib
import json
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from ...contract.errors import SpectuiError
from ...contract.events import MachineProbe, ModelInfo
from ...contract.prompt import DEFAULT_PROMPT
from ...contract.text import model_label, visible_line
from .batch_knee import sibling_curve
from .cachefile import CachedRecord, Measurement
from .machine import DEFAULT_MAX_BATCH, PROBE_VERSION, cache_key, load_average, machine_key, quiet_machine
from .probe_verdict import ProbeVerdict, analyse

DEFAULT_REPEATS = 5
MAX_BATCH_LIMIT = 64
CHART_WIDTH = 48


# ---------------------------------------------------------------- the result


# What a probe result keeps of each model (``contract.events.ModelInfo``): its cache file and --json report
# hold these fields only, the model's identity and where its layers ran.
PROBE_MODEL_FIELDS = ("path", "name", "size_bytes", "quantization", "n_params", "backend", "n_gpu_layers")


def _model_dict(m: ModelInfo | None) -> dict | None:
    return None if m is None else {f: getattr(m, f) for f in PROBE_MODEL_FIELDS}


def _model_from(d: dict) -> ModelInfo:
    if not isinstance(d, dict):
        raise TypeError("a model is not an object")
    extra = sorted(set(d) - set(PROBE_MODEL_FIELDS))
    if extra:
        raise TypeError(f"unexpected model fields {', '.join(extra)}")
    return ModelInfo(**d)


@dataclass(frozen=True)
class ProbeResult(CachedRecord):
    RECORD_VERSION, CACHE_NAME = PROBE_VERSION, "probe"
    target: ModelInfo  # PROBE_MODEL_FIELDS only
    draft: ModelInfo | None
    machine: dict
    decode_ms: float  # target, one token (= verify of a batch of 1)
    verify_ms_by_batch: tuple[float, ...]  # index b - 1: a verify batch of b tokens
    draft_decode_ms: float = 0.0  # draft, one token (0: no draft)
    repeats: int = DEFAULT_REPEATS
    context_tokens: int = 0  # tokens in the KV cache while measuring
    others_cpu: float = -1.0  # cores other processes kept busy while measuring (-1: unknown)
    spread_by_batch: tuple[float, ...] = ()  # (max - min) / median of each size's samples
    version: int = PROBE_VERSION
    notes: tuple[str, ...] = field(default_factory=tuple)

    # ---- derived figures
    @property
    def max_batch(self) -> int:
        return len(self.verify_ms_by_batch)

    @property
    def curve(self) -> dict[int, float]:
        """Verify ms by draft length k (a batch of k + 1 tokens): the cost model's ``curve``."""
        return {b - 1: ms for b, ms in enumerate(self.verify_ms_by_batch, start=1)}

    @property
    def weight_bytes(self) -> int:
        return self.target.size_bytes

    @property
    def bandwidth_gb_s(self) -> float:
        """Model file bytes / decode time: an upper-bound estimate of the weight-read bandwidth."""
        return self.weight_bytes / (self.decode_ms / 1000.0) / 1e9 if self.decode_ms > 0 else 0.0

    def ratio(self, batch: int) -> float:
        """Verify of ``batch`` tokens, in single decodes."""
        return self.verify_ms_by_batch[batch - 1] / self.decode_ms if self.decode_ms > 0 else 0.0

    @property
    def per_token_ms(self) -> float:
        """Per-token cost at the largest batch."""
        return self.verify_ms_by_batch[-1] / self.max_batch if self.verify_ms_by_batch else 0.0

    @property
    def cost_ratio(self) -> float | None:
        """c: a draft token's cost as a share of a target decode (None without a draft)."""
        if self.draft is None or self.decode_ms <= 0:
            return None
        return self.draft_decode_ms / self.decode_ms

    @property
    def quiet(self) -> bool:
        return quiet_machine(self.others_cpu, self.loadavg, self.threads)

    def load_line(self) -> str:
        others = f"{self.others_cpu:.1f} cores busy with other processes" if self.others_cpu >= 0 else (
            "other processes' CPU use unknown")
        la = ", ".join(f"{x:.2f}" for x in self.loadavg)
        return f"machine load while measuring: load average {la} (1, 5, 15 min); {others}"

    def warning(self) -> str:
        """A one-line warning when the machine was not quiet, else ""."""
        if self.quiet:
            return ""
        return (f"warning: the machine was not quiet while measuring ({self.load_line().split(': ', 1)[1]}): "
                "the figures are slower and noisier than this machine's own; run `spectui probe --refresh` "
                "when it is quiet")

    def verdict(self) -> ProbeVerdict:
        return analyse(self)

    def machine_probe(self) -> MachineProbe:
        """What a run records of this result (``RunStarted.probe``): the curve and the one-line figures."""
        rep = self.report()
        batched = sibling_curve(self.cache_file, self.key)
        if batched is not None:
            rep["batched"] = {"curve": batched}
        return MachineProbe(verify_ms_by_batch=tuple(self.verify_ms_by_batch), summary=self.summary_line(),
                            report_json=json.dumps(rep, sort_keys=True))

    def summary_line(self) -> str:
        """One line of the figures (for a face's panel or a summary)."""
        sizes = [b for b in (2, 3, 4, 8, 16, 32, 64) if b <= self.max_batch]
        if self.max_batch not in sizes:
            sizes.append(self.max_batch)
        c = f", draft c = {self.cost_ratio:.2f}" if self.cost_ratio is not None else ""
        return (f"this machine: decode {self.decode_ms:.1f} ms (weights <= {self.bandwidth_gb_s:.0f} GB/s), verify "
                f"{'/'.join(str(b) for b in sizes)} tokens = {'/'.join(f'{self.ratio(b):.2f}' for b in sizes)} "
                f"decodes{c}{'' if self.quiet else ' (measured under load)'}")

    # ---- JSON form
    def to_dict(self) -> dict:
        d = asdict(self)
        d["target"], d["draft"] = _model_dict(self.target), _model_dict(self.draft)
        d["loadavg"] = list(self.loadavg)
        d["verify_ms_by_batch"] = list(self.verify_ms_by_batch)
        d["spread_by_batch"] = list(self.spread_by_batch)
        d["notes"] = list(self.notes)
        return d

    def report(self) -> dict:
        """The ``--json`` object: every measured figure, the derived ones and the verdict."""
        v = self.verdict()
        d = self.to_dict()
        d.update(
            weight_bytes=self.weight_bytes,
            bandwidth_gb_s=round(self.bandwidth_gb_s, 3),
            bandwidth_note="model file bytes / decode time: an upper-bound estimate of the bytes a decode reads",
            verify=[{"batch": b, "ms": round(ms, 3), "decodes": round(self.ratio(b), 3),
                     "ms_per_token": round(ms / b, 3)} for b, ms in enumerate(self.verify_ms_by_batch, 1)],
            per_token_ms_at_max_batch=round(self.per_token_ms, 3),
            cost_ratio=None if self.cost_ratio is None else round(self.cost_ratio, 4),
            quiet=self.quiet,
            warning=self.warning(),
            verdict=asdict(v),
            sentence=v.sentence,
        )
        return d

    @classmethod
    def _from_checked(cls, d: dict) -> "ProbeResult":
        target = _model_from(d["target"])
        draft = _model_from(d["draft"]) if d.get("draft") is not None else None
        verify = tuple(float(x) for x in d["verify_ms_by_batch"])
        if not verify or any(not (x > 0) for x in verify):
            raise ValueError("verify times must be positive")
        decode = float(d["decode_ms"])
        if not decode > 0:
            raise ValueError("decode time must be positive")
        return cls(
            target=target, draft=draft, machine=dict(d.get("machine") or {}), decode_ms=decode,
            verify_ms_by_batch=verify, draft_decode_ms=float(d.get("draft_decode_ms", 0.0)),
            repeats=int(d.get("repeats", 0)), context_tokens=int(d.get("context_tokens", 0)),
            others_cpu=float(d.get("others_cpu", -1.0)),
            spread_by_batch=tuple(float(x) for x in d.get("spread_by_batch", ())),
            notes=tuple(str(x) for x in d.get("notes", ())), **cls.shared(d),
        )


# ---------------------------------------------------------------- measuring


def _facts(info: ModelInfo) -> ModelInfo:
    """What the probe keeps of a loaded model (PROBE_MODEL_FIELDS)."""
    return ModelInfo(path=info.path, name=info.name, size_bytes=int(info.size_bytes), quantization=info.quantization,
                     n_params=int(info.n_params), backend=info.backend or "CPU", n_gpu_layers=int(info.n_gpu_layers))


def _draft_decode_ms(engine, token: int) -> float:
    """One single-token decode of the draft model at position 0, rolled back (between runs only)."""
    d = engine.draft
    t = time.perf_counter()
    d.decode([token], 0, "last")
    dt = (time.perf_counter() - t) * 1000.0
    d.rollback(0)
    return dt


def measure(engine, max_batch: int = DEFAULT_MAX_BATCH, repeats: int = DEFAULT_REPEATS,
            progress: Callable[[str], None] | None = None, stop=None) -> ProbeResult:
    """Measure the figures on a loaded ``Engine`` (between runs; see the module docstring).

    Args:
        engine: the loaded engine (its draft model's decode too, when it has one).
        max_batch: the largest verify batch measured (2..64; capped to the context and the batch size).
        repeats: measured rounds over every batch size (the median is kept); progress: told how far it is.
        stop: a RunControl whose ``stop()`` ends the measurement mid-decode (the engine's abort: the decode
            raises ``spectui.engine.llama.abort.DecodeAborted``, and nothing is measured).

    Returns:
        The ProbeResult (not cached: ``cached_or_measure`` stores it).
    """
    from ...contract.control import RunControl  # noqa: PLC0415 - the engine's side, only when measuring
    from ...contract.events import Settings  # noqa: PLC0415
    from ...engine.cpu import OthersCpu  # noqa: PLC0415

    if not 2 <= max_batch <= MAX_BATCH_LIMIT:
        raise SpectuiError(f"--max-batch must be between 2 and {MAX_BATCH_LIMIT}, not {max_batch}")
    if repeats < 1:
        raise SpectuiError(f"--repeats must be at least 1, not {repeats}")
    if getattr(engine, "target", None) is None:
        raise SpectuiError("the engine is closed")
    max_batch = min(max_batch, engine.target.n_batch, max(2, engine.n_ctx // 2))
    t_start = time.perf_counter()
    others = OthersCpu()
    others.sample()
    load0 = load_average()
    # a short prompt in the KV cache, as in a run (this also warms both models' weights up)
    ctl = RunControl(Settings(draft_max=0, drafter="none"))
    if stop is not None:
        stop.on_stop(ctl.stop)
        watching = engine.abort.watching(stop)
    else:
        watching = contextlib.nullcontext()
    with watching:
        return _measured(engine, ctl, max_batch, repeats, progress, (t_start, others, load0))


def _measured(engine, ctl, max_batch: int, repeats: int, progress, began) -> ProbeResult:
    """``measure``'s rounds, after its checks (``began``: its start time, CPU sampler and load average)."""
    t_start, others, load0 = began
    for ev in engine.run(DEFAULT_PROMPT, ctl, 1):
        if getattr(ev, "type", "") == "end" and ev.error:
            raise SpectuiError(f"probe: the warm-up run failed: {ev.error}")
    if ctl.stopped:  # stopped during the warm-up run (it ends 'stopped'): nothing to measure
        from ...engine.llama.abort import DecodeAborted  # noqa: PLC0415

        raise DecodeAborted("target")
    context_tokens = len(engine.tokenize(DEFAULT_PROMPT))  # the prompt's KV cells the measurements follow
    ids = engine.tokenize("a")
    tok = ids[-1] if ids else 0
    sizes = list(range(1, max_batch + 1))
    samples: dict[int, list[float]] = {b: [] for b in sizes}
    draft_samples: list[float] = []
    for rnd in range(repeats + 1):  # round 0: warm-up, discarded
        order = sizes if rnd % 2 == 0 else sizes[::-1]
        if progress:
            progress(f"round {rnd} of {repeats}" if rnd else "warm-up round")
        for b in order:
            ms = float(engine.measure_verify_ms(b - 1, repeats=1))
            if rnd:
                samples[b].append(ms)
            if engine.draft is not None and b in (1, max_batch // 2, max_batch):  # interleaved with the target's
                dms = _draft_decode_ms(engine, tok)
                if rnd:
                    draft_samples.append(dms)
    verify = tuple(statistics.median(samples[b]) for b in sizes)
    spread = tuple((max(samples[b]) - min(samples[b])) / statistics.median(samples[b]) for b in sizes)
    load1 = load_average()
    oc = others.sample()
    target = _facts(engine.target_info)
    draft = _facts(engine.draft_info) if engine.draft is not None else None
    return ProbeResult(
        target=target, draft=draft, threads=int(engine.threads), machine=machine_key(),
        decode_ms=verify[0], verify_ms_by_batch=verify,
        draft_decode_ms=statistics.median(draft_samples) if draft_samples else 0.0,
        repeats=repeats, context_tokens=context_tokens,
        loadavg=tuple(max(a, b) for a, b in zip(load0, load1)),  # type: ignore[arg-type]
        others_cpu=oc, measured_at=time.time(), wall_s=time.perf_counter() - t_start, spread_by_batch=spread,
    )


# ---------------------------------------------------------------- the cache


load_cached = ProbeResult.load_cached  # (path, key): the cached result, None when absent or another key's
PROBE = Measurement(ProbeResult, key=lambda e, p: cache_key(e, p["max_batch"]), measure=lambda e, p: measure(e, **p),
                    busy="the cached probe was")


def cached_or_measure(engine, *, max_batch: int = DEFAULT_MAX_BATCH, repeats: int = DEFAULT_REPEATS,
                      refresh: bool = False, directory: Path | None = None,
                      warn: Callable[[str], None] | None = None,
                      progress: Callable[[str], None] | None = None,
                      now_quiet: Callable[[int], bool] | None = None, stop=None) -> ProbeResult:
    """The probe result for this engine on this machine: from the cache, or measured now (and stored).

    Its curve reaches auto k and the faces with the run: ``engine.run(..., probe=result.machine_probe())``.

    Args:
        engine: the loaded engine; max_batch, repeats, progress, stop: as ``measure`` (a stopped measurement
            caches nothing).
        refresh: measure again even when a cached result exists; directory: the cache folder.
        warn: gets the one-line messages (a corrupt cache file; a cached result measured under load that is
            measured again because the machine is quiet now).
        now_quiet: ``now_quiet(threads)``, whether the machine is quiet at this moment (default: the 1-min
            load average is at most threads + 0.5).

    Returns:
        The ProbeResult, ``cached`` when it came from the cache.
    """
    params = {"max_batch": max_batch, "repeats": repeats, "progress": progress, "stop": stop}
    return PROBE.get(engine, params, refresh=refresh, directory=directory, warn=warn, now_quiet=now_quiet)


def cached_only(engine, *, max_batch: int = DEFAULT_MAX_BATCH, directory: Path | None = None,
                warn: Callable[[str], None] | None = None,
                now_quiet: Callable[[int], bool] | None = None) -> tuple[ProbeResult | None, bool]:
    """What a run starts from, measuring nothing (a run never waits for the probe: docs/probe-and-sweep.md):
    the cached result for this engine on this machine, or None, and whether it is worth measuring (when
    idle: after the run) because there is none or it was measured busy and the machine is quiet now."""
    return PROBE.cached(engine, {"max_batch": max_batch}, directory=directory, warn=warn, now_quiet=now_quiet)


# ---------------------------------------------------------------- text


def chart(r: ProbeResult, width: int = CHART_WIDTH) -> list[str]:
    """Verify cost by batch size as plain-text bars against the flat line memory-bound verification
    would give ('|' at one decode's time)."""
    top = max(r.verify_ms_by_batch)
    scale = width / top if top > 0 else 0.0
    flat = max(1, round(r.decode_ms * scale))
    lines = [f"verify cost by batch size (ms; '|' = one decode, {r.decode_ms:.1f} ms: the flat line "
             "memory-bound verification would give)"]
    for b, ms in enumerate(r.verify_ms_by_batch, start=1):
        n = max(1, round(ms * scale))
        bar = ["#"] * n + [" "] * max(0, flat - n)
        bar[flat - 1] = "|"
        lines.append(f"{b:>3} {ms:>8.1f} ms {r.ratio(b):>5.2f}x {''.join(bar)}")
    return lines


def render(r: ProbeResult) -> str:
    """What ``spectui probe`` prints: the models and the machine, the figures, the chart, the verdict.

    Args:
        r: the probe result.

    Returns:
        The lines, joined; a model's, the CPU's and a cache file's words made visible.
    """
    v = r.verdict()
    t = r.target
    out = []
    src = f"cached, measured {time.strftime('%Y-%m-%d %H:%M', time.localtime(r.measured_at))}" if r.cached else (
        f"measured now in {r.wall_s:.1f} s")
    cpu = visible_line(r.machine.get("cpu") or "this machine")  # a cache file's words, like the GGUF's
    out.append(f"spectui probe: {model_label(t.name, '', t.path)} ({visible_line(t.quantization)}, "
               f"{t.size_bytes / 1e9:.2f} GB) on {cpu}, {visible_line(t.backend or 'CPU')}, "
               f"{r.threads} threads ({src}; median of {r.repeats} rounds at {r.context_tokens} tokens of context)")
    out.append(f"target decode, 1 token: {r.decode_ms:.2f} ms ({1000 / r.decode_ms:.1f} tokens/s); weights read "
               f"at up to {r.bandwidth_gb_s:.1f} GB/s (file bytes / decode time: an upper-bound estimate)")
    out.append(f"verify of {r.max_batch} tokens: {r.verify_ms_by_batch[-1]:.1f} ms ({r.ratio(r.max_batch):.2f} "
               f"decodes), {r.per_token_ms:.2f} ms a token")
    if r.draft is not None:
        name = model_label(r.draft.name, r.draft.quantization, r.draft.path)
        out.append(f"draft decode, 1 token: {r.draft_decode_ms:.2f} ms ({name}); cost ratio c = {r.cost_ratio:.2f}")
    else:
        out.append("no draft model: the figures below assume free drafts (prompt lookup)")
    out.append("")
    out.extend(chart(r))
    out.append("")
    out.append(v.sentence)
    out.append("")
    out.append(r.load_line())
    w = r.warning()
    if w:
        out.append(w)
    if r.cache_file:
        out.append(f"cache: {r.cache_file}" + (" (--refresh measures again)" if r.cached else ""))
    return "\n".join(out)
