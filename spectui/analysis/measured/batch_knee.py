"""Where speculation stops paying as the batch grows: the batched cost curve, the prediction and the knee.

The curve (``spectui.engine.probes.batch_probe``) gives, on this machine and this target, the time of one step of
B sequences:

- ``plain(B)``: B sequences of one token each (plain batched decode, what a server without speculation runs);
- ``verify(B, k)``: B sequences of k + 1 tokens each (one verify step of B speculating requests);
- ``draft(B)``: the draft model's step of B sequences of one token (a drafting step; 0 for prompt lookup).

With a per-draft acceptance a, a speculating request gains ``leviathan(a, k)`` tokens a pass
(``spectui.analysis.cost.costmodel.leviathan``: the one place the expectation is written), so

    speedup(B, k) = leviathan(a, k) * plain(B) / (verify(B, k) + k * draft(B))

(tokens per ms of B speculating requests over tokens per ms of B plain ones: B cancels). The knee B* of a k
is the first measured B at which speedup(B, k) <= 1 after a B at which it was above (``Knee``); the
crossing interpolates log2 B linearly between the two measured neighbours. "Never pays": already <= 1 at
B = 1; "always pays": above 1 at every B measured.

The curve is cached beside ``spectui probe``'s own (the same directory and key, plus the batched sizes:
``<digest>-batched-<hash>.json``); an old probe cache is read as before.

No Textual imports.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from ...contract.errors import SpectuiError
from ...contract.prompt import DEFAULT_PROMPT
from ...contract.text import model_label
from ..cost.costmodel import break_even_acceptance, leviathan
from ..rates import mean_acceptance_length
from .cachefile import MAX_CACHE_BYTES, CachedRecord, CacheError, Measurement
from .machine import cache_key, load_average, machine_key, quiet_machine

BATCH_VERSION = 2  # 2: measured with a KV stream a sequence (llama-server's -np N), not one unified buffer
DRAFTER_MODEL = "model"
DRAFTER_LOOKUP = "ngram"  # prompt lookup (docs/conventions.md: --drafter model, ngram)


@dataclass(frozen=True)
class BatchCurve(CachedRecord):
    RECORD_VERSION, CACHE_NAME = BATCH_VERSION, "batched probe"
    RECORD_WHAT = "malformed batched curve"
    seqs: tuple[int, ...]  # B measured: 1, 2, 4, ...
    ks: tuple[int, ...]  # draft lengths measured
    plain_ms: tuple[float, ...]  # by seqs: B sequences of 1 token
    verify_ms: dict[int, tuple[float, ...]]  # k -> by seqs: B sequences of k + 1 tokens
    draft_ms: tuple[float, ...] = ()  # by seqs: the draft's B sequences of 1 token (empty: no draft model)
    target: str = ""
    draft: str = ""
    machine: dict = field(default_factory=dict)
    context_tokens: int = 0
    repeats: int = 0
    others_cpu: float = -1.0
    spread: dict[int, tuple[float, ...]] = field(default_factory=dict)  # n tokens -> by seqs
    version: int = BATCH_VERSION

    def __post_init__(self) -> None:
        n = len(self.seqs)
        if n == 0 or list(self.seqs) != sorted(set(self.seqs)) or self.seqs[0] < 1:
            raise ValueError("seqs must be increasing positive sizes")
        if len(self.plain_ms) != n or any(len(v) != n for v in self.verify_ms.values()):
            raise ValueError("every row must have one time per B")
        if sorted(self.verify_ms) != list(self.ks):
            raise ValueError("verify_ms must have one row per k")
        if self.draft_ms and len(self.draft_ms) != n:
            raise ValueError("draft_ms must have one time per B")
        if any(not (x > 0) for row in (self.plain_ms, self.draft_ms, *self.verify_ms.values()) for x in row):
            raise ValueError("times must be positive")

    def index(self, b: int) -> int:
        return self.seqs.index(b)

    def plain(self, b: int) -> float:
        return self.plain_ms[self.index(b)]

    def verify(self, b: int, k: int) -> float:
        return self.verify_ms[k][self.index(b)]

    def draft_step(self, b: int) -> float:
        return self.draft_ms[self.index(b)] if self.draft_ms else 0.0

    @property
    def has_draft(self) -> bool:
        return bool(self.draft_ms)

    @property
    def quiet(self) -> bool:
        return quiet_machine(self.others_cpu, self.loadavg, self.threads)

    # ---- JSON
    def to_dict(self) -> dict:
        d = asdict(self)
        d["seqs"], d["ks"] = list(self.seqs), list(self.ks)
        d["plain_ms"], d["draft_ms"] = list(self.plain_ms), list(self.draft_ms)
        d["verify_ms"] = {str(k): list(v) for k, v in self.verify_ms.items()}
        d["spread"] = {str(n): list(v) for n, v in self.spread.items()}
        d["loadavg"] = list(self.loadavg)
        return d

    @classmethod
    def _from_checked(cls, d: dict) -> "BatchCurve":
        return cls(
            seqs=tuple(int(x) for x in d["seqs"]), ks=tuple(int(x) for x in d["ks"]),
            plain_ms=tuple(float(x) for x in d["plain_ms"]),
            verify_ms={int(k): tuple(float(x) for x in v) for k, v in dict(d["verify_ms"]).items()},
            draft_ms=tuple(float(x) for x in d.get("draft_ms") or ()),
            target=str(d.get("target", "")), draft=str(d.get("draft", "")),
            machine=dict(d.get("machine") or {}), context_tokens=int(d.get("context_tokens", 0)),
            repeats=int(d.get("repeats", 0)), others_cpu=float(d.get("others_cpu", -1.0)),
            spread={int(n): tuple(float(x) for x in v) for n, v in dict(d.get("spread") or {}).items()},
            **cls.shared(d),
        )


# ---------------------------------------------------------------- the prediction


def speedup(curve: BatchCurve, b: int, k: int, acceptance: float, drafter: str = DRAFTER_MODEL) -> float:
    """Speculation at draft length k over plain batched decode, both with b sequences in a step."""
    draft = k * curve.draft_step(b) if drafter == DRAFTER_MODEL else 0.0
    return leviathan(acceptance, k) * curve.plain(b) / (curve.verify(b, k) + draft)


@dataclass(frozen=True)
class Knee:
    """Where speculation stops paying for one k (k = 0: the best k at each B)."""

    k: int
    pays_up_to: int  # the largest B before the first B where it does not pay (0: never pays)
    stops_at: int | None  # the first B where it does not pay (None: pays at every B measured)
    crossing: float | None  # B where the speedup crosses 1.0, log2-interpolated (None: no crossing measured)

    @property
    def never(self) -> bool:
        return self.pays_up_to == 0

    @property
    def always(self) -> bool:
        return self.stops_at is None

    def words(self, b_max: int, unit: str = "B") -> str:
        if self.never:
            return f"never pays (already at {unit} = 1)"
        if self.always:
            return f"pays at every {unit} measured (up to {b_max})"
        return (f"pays up to {unit} = {self.pays_up_to}, stops at {unit} = {self.stops_at} (crosses 1.0x near "
                f"{unit} = {self.crossing:.1f})")


def knee_of(seqs: Sequence[int], speedups: Sequence[float], k: int = 0) -> Knee:
    """The knee of a speedup row over the measured sizes (hand-checkable: tests/analysis/test_batch_knee.py)."""
    for i, s in enumerate(speedups):
        if s <= 1.0:
            if i == 0:
                return Knee(k, 0, seqs[0], None)
            lo, hi = speedups[i - 1], s
            x0, x1 = math.log2(seqs[i - 1]), math.log2(seqs[i])
            t = (lo - 1.0) / (lo - hi) if lo != hi else 0.0
            return Knee(k, seqs[i - 1], seqs[i], 2 ** (x0 + t * (x1 - x0)))
    return Knee(k, seqs[-1], None, None)


@dataclass(frozen=True)
class KneePrediction:
    acceptance: float
    drafter: str
    seqs: tuple[int, ...]
    ks: tuple[int, ...]
    speedup: dict[int, tuple[float, ...]]  # k -> by seqs
    knees: dict[int, Knee]  # k -> knee
    best_k: tuple[int, ...]  # by seqs: the k with the highest speedup
    best: Knee  # the knee of the best k at each B (k = 0)
    acceptance_source: str = ""

    def best_speedup(self, i: int) -> float:
        return self.speedup[self.best_k[i]][i]

    def k_schedule(self) -> list[list[int]]:
        """The draft length to use by batch size, in vLLM's ``num_speculative_tokens_per_batch_size`` form
        ([start_bs, end_bs, k]; k = 0: speculation off): each measured B_i covers B_i .. B_(i+1) - 1 (the last
        one itself only) with the best k there, or 0 where even the best k does not pay; equal neighbours merged."""
        out: list[list[int]] = []
        for i, b in enumerate(self.seqs):
            end = self.seqs[i + 1] - 1 if i + 1 < len(self.seqs) else b
            k = self.best_k[i] if self.best_speedup(i) > 1.0 else 0
            if out and out[-1][2] == k:
                out[-1][1] = end
            else:
                out.append([b, end, k])
        return out

    def to_dict(self) -> dict:
        return {
            "k_schedule": self.k_schedule(),
            "acceptance": self.acceptance, "acceptance_source": self.acceptance_source, "drafter": self.drafter,
            "seqs": list(self.seqs), "ks": list(self.ks),
            "speedup": {str(k): [round(x, 4) for x in v] for k, v in self.speedup.items()},
            "knees": {str(k): asdict(v) for k, v in self.knees.items()},
            "best_k": list(self.best_k), "best": asdict(self.best),
        }


def predict(curve: BatchCurve, acceptance: float, drafter: str | None = None, source: str = "") -> KneePrediction:
    """Speedup for every measured B and k, the knee of each k and of the best k at each B."""
    if not 0.0 <= acceptance <= 1.0:
        raise SpectuiError(f"the acceptance must be between 0 and 1, not {acceptance}")
    drafter = drafter or (DRAFTER_MODEL if curve.has_draft else DRAFTER_LOOKUP)
    if drafter == DRAFTER_MODEL and not curve.has_draft:
        raise SpectuiError("a draft model's step costs were not measured (no --draft): use --drafter ngram "
                           "(prompt lookup)")
    sp = {k: tuple(speedup(curve, b, k, acceptance, drafter) for b in curve.seqs) for k in curve.ks}
    knees = {k: knee_of(curve.seqs, sp[k], k) for k in curve.ks}
    best_k = tuple(max(curve.ks, key=lambda k, i=i: sp[k][i]) for i in range(len(curve.seqs)))
    best_row = [sp[k][i] for i, k in enumerate(best_k)]
    return KneePrediction(acceptance, drafter, curve.seqs, curve.ks, sp, knees, best_k,
                          knee_of(curve.seqs, best_row, 0), source)


def acceptance_from_tokens_per_pass(tokens_per_pass: float, k: int) -> float:
    """The constant per-draft rate a with leviathan(a, k) = tokens_per_pass (the one inverse, costmodel's)."""
    if k < 1:
        raise SpectuiError("an acceptance needs a draft length of at least 1")
    if tokens_per_pass >= k + 1:  # every draft accepted (the bisection would stop just short of 1)
        return 1.0
    return break_even_acceptance(tokens_per_pass, k)  # 0 at <= 1 token a pass


def acceptance_from_events(events, label: str) -> tuple[float, str]:
    """(per-draft acceptance, where it came from) from a run's events (a live run or a trace read by the caller):
    the constant rate whose Leviathan expectation at the run's k is the run's mean tokens a drafted pass."""
    from ..stats import compute  # noqa: PLC0415

    events = list(events)
    snap = compute(events)
    start = next((e for e in events if getattr(e, "type", "") == "start"), None)
    k = int(getattr(getattr(start, "settings", None), "draft_max", 0) or 0)
    if snap.n_drafted <= 0 or snap.passes_drafted <= 0 or k < 1:
        raise SpectuiError(f"--acceptance-from: {label} has no drafted tokens")
    a = acceptance_from_tokens_per_pass(mean_acceptance_length(snap.n_accepted, snap.passes_drafted), k)
    return a, f"{label} (k = {k}, {snap.n_accepted}/{snap.n_drafted} drafts accepted)"


def acceptance_from_json(path: str) -> tuple[float, str]:
    """(per-draft acceptance, where it came from) from a ``spectui bench --json`` report (at most 64 MiB)."""
    p = Path(path)
    try:
        if p.stat().st_size > 64 * 1024 * 1024:
            raise SpectuiError(f"--acceptance-from: {path} is larger than 64 MiB")
        doc = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpectuiError(f"--acceptance-from: no such file: {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SpectuiError(f"--acceptance-from: cannot read {path} as JSON ({type(exc).__name__})") from None
    return _acceptance_from_bench(doc, path)


def _acceptance_from_bench(doc, path: str) -> tuple[float, str]:
    if not isinstance(doc, dict) or not str(doc.get("schema", "")).startswith("spectui."):
        raise SpectuiError(f"--acceptance-from: {path} is not a spectui report")
    sweep = doc.get("concurrency_sweep")
    if isinstance(sweep, dict):  # spectui bench --concurrency 1,2,...: the lowest concurrency's measurement
        levels = [lv for lv in sweep.get("levels") or [] if isinstance(lv, dict) and lv.get("acceptance")]
        if levels:
            lv = min(levels, key=lambda x: x.get("concurrency", 0))
            rate = float(lv["acceptance"])
            k = int((sweep.get("params") or {}).get("k") or 0)
            where = f"bench {os.path.basename(path)} at concurrency {lv.get('concurrency')}"
            if k >= 1:  # accepted / drafted of fixed-k passes is (E - 1) / k
                return acceptance_from_tokens_per_pass(1.0 + k * rate, k), f"{where}, k = {k}"
            return rate, f"{where} (the raw rate)"
    rows = [r for r in doc.get("runs") or doc.get("rows") or [] if isinstance(r, dict)]
    drafted = sum(int(r.get("n_drafted") or 0) for r in rows)
    accepted = sum(int(r.get("n_accepted") or 0) for r in rows)
    passes = sum(int(r.get("passes_drafted") or 0) for r in rows)
    ks = {int(r.get("k") or 0) for r in rows if int(r.get("n_drafted") or 0) > 0}
    name = os.path.basename(path)
    if drafted <= 0:
        raise SpectuiError(f"--acceptance-from: {path} has no drafted tokens")
    if passes > 0 and len(ks) == 1 and min(ks) >= 1:  # one k: the rate whose expectation is the mean pass
        k = ks.pop()
        a = acceptance_from_tokens_per_pass(mean_acceptance_length(accepted, passes), k)
        return a, f"bench {name} (k = {k}, {accepted}/{drafted} drafts accepted)"
    return accepted / drafted, f"bench {name} ({accepted}/{drafted} drafts accepted, the raw rate)"


# ---------------------------------------------------------------- measuring and the cache


def measure_curve(engine, *, max_seqs: int, ks, repeats: int,
                  progress: Callable[[str], None] | None = None) -> BatchCurve:
    from ...engine.cpu import OthersCpu  # noqa: PLC0415
    from ...engine.probes.batch_probe import measure_batched  # noqa: PLC0415 - the engine only when measuring

    others = OthersCpu()
    others.sample()
    load0 = load_average()
    pts = measure_batched(engine, max_seqs=max_seqs, ks=ks, repeats=repeats, prompt=DEFAULT_PROMPT,
                          progress=progress)
    load1 = load_average()
    ns = (1,) + tuple(k + 1 for k in pts.ks)
    return BatchCurve(
        seqs=pts.seqs, ks=pts.ks, plain_ms=tuple(pts.target_ms[(b, 1)] for b in pts.seqs),
        verify_ms={k: tuple(pts.target_ms[(b, k + 1)] for b in pts.seqs) for k in pts.ks},
        draft_ms=tuple(pts.draft_ms[b] for b in pts.seqs) if pts.draft_ms else (),
        target=_label(engine.target_info), draft=_label(engine.draft_info) if engine.draft_info is not None else "",
        threads=int(engine.threads), machine=machine_key(), context_tokens=pts.context_tokens,
        repeats=pts.repeats, loadavg=tuple(max(a, b) for a, b in zip(load0, load1)),  # type: ignore[arg-type]
        others_cpu=others.sample(), measured_at=time.time(), wall_s=pts.wall_s,
        spread={n: tuple(pts.spread[(b, n)] for b in pts.seqs) for n in ns},
    )


def batched_cache_key(engine, max_seqs: int, ks, repeats: int) -> tuple[dict, str]:
    """The probe's own key (models, threads, placement, machine) plus the batched sizes."""
    from ...engine.probes.batch_probe import check_ks, fit_max_seqs, seq_sizes  # noqa: PLC0415

    base, digest = cache_key(engine)
    ks = check_ks(ks)
    key = {"probe": base, "batched": {"version": BATCH_VERSION, "seqs": list(seq_sizes(fit_max_seqs(max_seqs, ks))),
                                      "ks": list(ks)}}
    h = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]
    return key, f"{digest}-batched-{h}"


def sibling_curve(probe_cache_file: str, probe_key: str) -> dict | None:
    """The newest batched curve cached beside a probe cache file (same key), as a dict; None when there is none
    or it does not read back (a run then records the probe without it)."""
    if not probe_cache_file or not probe_key:
        return None
    try:
        found = sorted(Path(probe_cache_file).parent.glob(f"{probe_key}-batched-*.json"),
                       key=lambda p: p.stat().st_mtime)
        if not found or found[-1].stat().st_size > MAX_CACHE_BYTES:
            return None
        data = json.loads(found[-1].read_text(encoding="utf-8"))
        return BatchCurve.from_dict(data["result"]).to_dict()
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, CacheError):
        return None


BATCHED = Measurement(BatchCurve, key=lambda e, p: batched_cache_key(e, p["max_seqs"], p["ks"], p["repeats"]),
                      measure=lambda e, p: measure_curve(e, **p), busy="the cached batched curve was")


def cached_or_measure(engine, *, max_seqs: int, ks, repeats: int, refresh: bool = False,
                      directory: Path | None = None, warn: Callable[[str], None] | None = None,
                      progress: Callable[[str], None] | None = None,
                      now_quiet: Callable[[int], bool] | None = None) -> BatchCurve:
    """The batched curve from the cache, or measured now (and stored); a curve cached while the machine was busy
    is measured again once it is quiet (``now_quiet(threads)``, default ``machine.quiet_now``), as the probe's is."""
    params = {"max_seqs": max_seqs, "ks": ks, "repeats": repeats, "progress": progress}
    return BATCHED.get(engine, params, refresh=refresh, directory=directory, warn=warn, now_quiet=now_quiet)


def _label(info) -> str:
    """A model in the curve: its metadata's name and file type ("Qwen2.5 Coder 0.5B Instruct Q4_K_M")."""
    return model_label(info.name, info.quantization, info.path)
