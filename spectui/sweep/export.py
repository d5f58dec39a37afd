"""The sweep as data: ``--csv`` (one line per run) and ``--json`` (runs, cells, report, prediction)."""

from __future__ import annotations

import csv
import io
from dataclasses import asdict
from typing import Sequence

from ..analysis.stats import CONFIDENCE_EDGES, ConfidenceBucket
from .aggregate import Cell, SweepRun, speedups


def _conf_names() -> tuple[str, ...]:
    """CSV columns of acceptance by draft confidence: conf_<lo>_<hi>_judged / _accepted per bucket."""
    edges = (0.0, *CONFIDENCE_EDGES, 1.0)
    out: list[str] = []
    for lo, hi in zip(edges, edges[1:]):
        out += [f"conf_{lo:g}_{hi:g}_judged", f"conf_{lo:g}_{hi:g}_accepted"]
    return tuple(out)


CONFIDENCE_FIELDS = _conf_names()
CSV_FIELDS = (
    "repeat", "temperature", "k", "drafter", "acceptance_rate", "mean_acceptance_length", "tokens_per_second",
    "speedup", "itl_ms_p50", "itl_ms_p95", "ttft_ms", "n_emitted", "n_drafted", "n_accepted", "n_passes",
    "tokens_per_pass", "stop_reason", "trace", *CONFIDENCE_FIELDS,
)


def confidence_records(buckets: Sequence[ConfidenceBucket]) -> list[dict]:
    """Acceptance by draft confidence as JSON records (label, lo, hi, judged, accepted, rate)."""
    return [{"label": b.label, "lo": b.lo, "hi": b.hi, "judged": b.judged, "accepted": b.accepted, "rate": b.rate}
            for b in buckets]


def run_record(r: SweepRun, speedup: float) -> dict:
    """One run as a flat record (the CSV line; the JSON adds per-position and per-k detail)."""
    s = r.stats
    return {
        "repeat": r.repeat + 1, "temperature": r.temperature, "k": r.k, "drafter": r.drafter,
        "acceptance_rate": s.acceptance_rate, "mean_acceptance_length": s.mean_acceptance_length,
        "tokens_per_second": s.tokens_per_second, "speedup": speedup, "itl_ms_p50": s.itl_ms_p50,
        "itl_ms_p95": s.itl_ms_p95, "ttft_ms": s.ttft_ms, "n_emitted": s.n_emitted, "n_drafted": s.n_drafted,
        "n_accepted": s.n_accepted, "n_passes": s.n_passes, "tokens_per_pass": s.tokens_per_pass,
        "stop_reason": s.stop_reason, "trace": r.trace,
        **_confidence_columns(s.confidence),
    }


def _confidence_columns(buckets: Sequence[ConfidenceBucket]) -> dict:
    out = {}
    for b, (judged, accepted) in zip(buckets, zip(CONFIDENCE_FIELDS[::2], CONFIDENCE_FIELDS[1::2])):
        out[judged] = b.judged
        out[accepted] = b.accepted
    return out


def to_csv(runs: Sequence[SweepRun]) -> str:
    """One line per run, CSV_FIELDS as the header."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n")
    w.writeheader()
    for r, sp in zip(runs, speedups(runs)):
        w.writerow(run_record(r, sp))
    return buf.getvalue()


def to_json(
    runs: Sequence[SweepRun], cells: Sequence[Cell], report: Sequence[str], params: dict, prediction=None
) -> dict:
    """The ``--json`` object: parameters, every run, every cell, the report and the prediction."""
    def cell_dict(c: Cell) -> dict:
        d = asdict(c)
        d["label"] = c.label
        d["confidence"] = confidence_records(c.confidence)
        return d

    runs_out = []
    for r, sp in zip(runs, speedups(runs)):
        rec = run_record(r, sp)
        rec["acceptance_by_position"] = [
            {"position": p.position, "drafted": p.drafted, "accepted": p.accepted, "rate": p.rate}
            for p in r.stats.acceptance_by_position
        ]
        rec["verify_ms_by_k"] = [{"k": k, "mean_ms": ms, "count": n} for k, ms, n in r.stats.verify_ms_by_k]
        for name in CONFIDENCE_FIELDS:  # the JSON has them as a list instead
            del rec[name]
        rec["confidence"] = confidence_records(r.stats.confidence)
        runs_out.append(rec)
    out = {"params": params, "runs": runs_out, "cells": [cell_dict(c) for c in cells], "report": list(report)}
    if prediction is not None:
        out["prediction"] = {
            "tps_by_k": list(prediction.tps_by_k),
            "speedup_by_k": list(prediction.speedup_by_k),
            "verify_ms_by_k": list(prediction.verify_ms_by_k),
            "verify_measured_by_k": list(prediction.verify_measured_by_k),
            "best_k": prediction.best_k,
            "advice": prediction.advice,
        }
    return out

