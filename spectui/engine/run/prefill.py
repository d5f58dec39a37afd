"""A run's start: its ``RunStarted`` (with both models' single-token decode times) and the prefill pass's pieces:
the prompt through the target (and a head, chunk by chunk) and the first token. Shared by every pass-loop
strategy (passes.py) and by the head's cost measurement (head_probe.py). No UI imports."""

from __future__ import annotations

import statistics
import time
import uuid

import numpy as np

from ...contract.events import RunStarted, Settings
from ..llama import omp
from ..llama.abort import DecodeAborted
from ..llama.devices import cpu_build_note
from ..llama.models import LoadedModel
from ..verify import logsumexp, sample, softmax
from .parts import RunParts, RunRequest

CALIBRATION_REPEATS = 3  # timed single decodes of each model in a run's start event, after one warm-up, at most
CALIBRATION_BUDGET_MS = 250.0  # ... and no more once the timed ones add up to this (a slow model: one is enough)


def single_decode_ms(model: LoadedModel, token: int, pos: int, repeats: int = CALIBRATION_REPEATS,
                     budget_ms: float = float("inf")) -> float:
    """Median time of single-token decodes, each rolled back (one warm-up decode first).

    Args:
        model: the model to time.
        token: the token decoded.
        pos: the position it is decoded at (cells from ``pos`` on are rolled back after each decode).
        repeats: timed decodes after the warm-up, at most.
        budget_ms: no further timed decode once those already timed add up to this (a run's start passes
            ``CALIBRATION_BUDGET_MS``: on a model whose decode takes seconds, one timed decode measures it to well
            under 1%, and the run starts seconds sooner).

    Returns:
        The median, in ms.
    """
    times: list[float] = []
    for i in range(repeats + 1):
        t = time.perf_counter()
        model.decode([token], pos, "last")
        dt = (time.perf_counter() - t) * 1000.0
        model.rollback(pos)
        if i:
            times.append(dt)
            if sum(times) >= budget_ms:
                break
    return statistics.median(times)


def first_token(row: np.ndarray, temperature: float, rng: np.random.Generator,
                graph: LoadedModel | None = None) -> tuple[int, float, np.ndarray]:
    """The prefill pass's token, its probability and the raw row: sampled at T > 0, argmax (temperature-1
    probability) at 0. ``graph`` (the target, its chain attached: graph_path.py): at T > 0 drawn from the
    chain's p with the run's RNG, and the raw row is the chain's row x T (the inspector's)."""
    if temperature > 0 and graph is not None:
        p = graph.probs_last()
        tok = sample(p, rng)
        return tok, float(p[tok]), row * np.float32(temperature)
    if temperature > 0:
        p = softmax(row, temperature)
        tok = sample(p, rng)
        return tok, float(p[tok]), row
    tok = int(np.argmax(row))
    return tok, float(np.exp(float(row[tok]) - logsumexp(row))), row


def decode_prompt(tgt: LoadedModel, head, prompt_tokens: list[int]) -> tuple[float, float]:
    """The prompt through the target; with an EAGLE-3 / MTP head, chunk by chunk, the head reading each chunk's
    hidden states before the next chunk overwrites them.

    Args:
        tgt: the target model (its KV cache empty).
        head: the head drafter that reads the target's decodes (``drafters.head.HeadDrafter``), or None.
        prompt_tokens: the prompt.

    Returns:
        (the target's ms, the head's ms).
    """
    t_v = time.perf_counter()
    if head is None:
        tgt.decode_chunked(prompt_tokens, 0)
        return (time.perf_counter() - t_v) * 1000.0, 0.0
    verify_ms = head_ms = 0.0
    n, step = len(prompt_tokens), max(1, min(tgt.n_batch, 512))
    for i in range(0, n, step):
        chunk = prompt_tokens[i:i + step]
        tgt.decode(chunk, i, "last" if i + step >= n else "none")
        t_h = time.perf_counter()
        verify_ms += (t_h - t_v) * 1000.0
        head.target_decoded(chunk, i)
        t_v = time.perf_counter()
        head_ms += (t_v - t_h) * 1000.0
    return verify_ms, head_ms


def run_started(parts: RunParts, request: RunRequest, prompt_tokens: list[int], settings: Settings,
                started_at: float) -> RunStarted:
    """A run's first event, with single-token decode times of both models measured at position 0.

    Args:
        parts: the engine's parts (models, facts, the head, the graph path).
        request: the run's request (prompt, n_predict, probe, chat template).
        prompt_tokens: the tokenized prompt.
        settings: the settings the run starts with.
        started_at: the unix time of the instant the run's clock starts (every event's ``t`` counts from it),
            taken before these decode times are measured.

    Returns:
        The run's ``RunStarted``.
    """
    calib_tok = prompt_tokens[0] if prompt_tokens else 0
    try:
        target_ms = single_decode_ms(parts.target, calib_tok, 0, budget_ms=CALIBRATION_BUDGET_MS)
        draft_ms = (single_decode_ms(parts.draft, calib_tok, 0, budget_ms=CALIBRATION_BUDGET_MS)
                    if parts.draft is not None else 0.0)
    except DecodeAborted:  # stopped while calibrating: the run starts stopped (no pass; nothing measured)
        target_ms = draft_ms = 0.0
    return RunStarted(
        run_id=uuid.uuid4().hex[:12], started_at=started_at, target=parts.target_info, draft=parts.draft_info,
        prompt=request.prompt, prompt_tokens=len(prompt_tokens), n_predict=request.n_predict, n_ctx=parts.n_ctx,
        threads=parts.threads, settings=settings, target_decode_ms=target_ms, draft_decode_ms=draft_ms,
        inspect_top=parts.inspect_top, probe=request.probe, chat_template=request.chat_template,
        head=parts.head.info if parts.head is not None else None,
        sampling="graph" if parts.graph is not None else "cpu",
        threads_draft=parts.pipeline.threads[1] if parts.pipeline is not None else 0,
        pipeline_threads=parts.pipeline.split if parts.pipeline is not None else (),
        pipeline_choice=request.pipeline_choice, wait_policy=omp.chosen(), gpu_note=cpu_build_note(),
    )
