"""Headless face: print the text as it is generated, then a summary (or one JSON object).

A consumer of the event stream like any other: a live ``--headless`` run and ``spectui replay FILE
--headless`` both call :func:`consume` with the same events and therefore print the same summary.
Every number comes from :mod:`spectui.analysis.stats`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
from typing import IO, Callable, Iterable

from ..analysis.cost.costmodel import predict
from ..analysis.drafter_stats import drafter_dicts, drafter_lines
from ..analysis.stats import RunStats, StatsSnapshot
from ..analysis.tree_stats import TreeStats
from ..contract.event_json import event_fields, to_dict
from ..contract.events import DRAFT_STOP_P_MIN, Event, PassEvent
from ..contract.text import json_raw_safe, json_text, visible, visible_line
from ..views.heads import head_file, head_kind, step_cost
from ..views.pipeline import as_dict as pipeline_dict
from ..views.pipeline import summary as pipeline_summary
from ..views.placement import placement, placement_text

STOP_REASONS = {
    "eog": "end of generation",
    "n_predict": "reached -n/--n-predict",
    "ctx_full": "context full",
    "stopped": "stopped by the user",
    "error": "error",
}


def consume(
    events: Iterable[Event],
    out: IO[str] | None = None,
    *,
    as_json: bool = False,
    sink: Callable[[Event], None] | None = None,
) -> RunStats:
    """Drive the stream to its end. Streams text to ``out`` (unless as_json), then prints the summary.

    ``sink`` sees every event first (the trace recorder). Returns the statistics. Memory stays flat however long
    the run: the text summary streams the text, and the JSON's passes (its last key) go to a temporary file as
    they come, then follow the summary (a million passes are a gigabyte of JSON, not three of events).
    """
    out = out or sys.stdout
    stats = RunStats(keep_tokens=as_json)  # the text summary streams the text: no need to keep it
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="surrogatepass") if as_json \
            else contextlib.nullcontext() as spool:
        n_passes = 0
        for ev in events:
            if sink is not None:
                sink(ev)
            stats.update(ev)
            if as_json and isinstance(ev, PassEvent):  # each pass as the whole object would print it
                spool.write((", " if n_passes else "") + _pass_json(ev))
                n_passes += 1
            elif not as_json and isinstance(ev, PassEvent):
                text = "".join(t.text for t in ev.emitted)
                if text:
                    out.write(visible(text))  # text from the model or a trace: never a control sequence
                    out.flush()
        if as_json:
            _write_json(out, summary_dict(stats, [], with_tokens=False), stats.tokens, spool)
        else:
            out.write("\n\n" + visible(summary_text(stats)) + "\n")
    out.flush()
    return stats


_SAFE_TEXT: dict[str, bool] = {}  # token text -> json_raw_safe(text): a run's texts repeat


def _plain_texts(ev: PassEvent) -> bool:
    """Every free text of the pass (its tokens') needs no escape beyond json.dumps's (asked once per text); False
    for a pass with inspector or pipeline data (their texts are not looked at here)."""
    if ev.inspect or ev.pipeline is not None:
        return False
    safe = _SAFE_TEXT
    if len(safe) > 1 << 16:
        safe.clear()
    for t in (*ev.drafts, *ev.emitted, *((ev.target,) if ev.target is not None else ())):
        ok = safe.get(t.text)
        if ok is None:
            ok = safe[t.text] = json_raw_safe(t.text)
        if not ok:
            return False
    return True


def _pass_json(ev: PassEvent) -> str:
    """``json_text(to_dict(ev))``, the encoder walking the event itself, and no escaping pass over its text when
    none of its tokens needs one (a NaN or an infinity, which a live run may hold: through ``to_dict``, as null)."""
    try:
        if _plain_texts(ev):
            return json.dumps(ev, default=event_fields, check_circular=False, ensure_ascii=False, allow_nan=False)
        return json_text(ev, default=event_fields, check_circular=False)
    except ValueError:
        return json_text(to_dict(ev))


def _write_json(out: IO[str], summary: dict, tokens, spool: IO[str]) -> None:
    """The summary as one strict JSON object, its ``tokens`` (the first key) written from the ids in slices and its
    ``passes`` (the last) copied from ``spool``: the same text ``json_text`` makes of the whole object (each value
    is serialised alike on its own), without a million-element list in memory."""
    del summary["passes"], summary["tokens"]
    out.write('{"tokens": [')
    for i in range(0, len(tokens), 1 << 16):
        out.write((", " if i else "") + ", ".join(map(str, tokens[i:i + (1 << 16)])))
    head = json_text(summary)  # strict JSON, no control character
    out.write("], " + head[1:-1] + ', "passes": [')
    spool.seek(0)
    shutil.copyfileobj(spool, out, 1 << 20)
    out.write("]}\n")


def _prediction(snap: StatsSnapshot, current_k: int | None = None, probe=None):
    try:
        return predict(snap, current_k=current_k, curve=probe.curve if probe is not None else None)
    except Exception:  # noqa: BLE001 - advice must never break a summary
        return None


def measured(snap: StatsSnapshot) -> dict:
    """The JSON's figures that need something to measure, ``None`` (null) where there was nothing: ``ttft_ms``
    without a first token (the run never evaluated its prompt); tokens/s, tokens per pass and ITL without a
    decode pass after it; acceptance, the draft's ms per token and the draft cost ratio c without a drafted
    token, the mean acceptance length without a drafting pass. A null is "not measured", never a measurement
    of 0 (an instant first token, 0% accepted)."""
    decoded = snap.n_passes > 0
    return {
        "acceptance_rate": snap.acceptance_rate if snap.n_drafted else None,
        "mean_acceptance_length": snap.mean_acceptance_length if snap.passes_drafted else None,
        "tokens_per_pass": snap.tokens_per_pass if decoded else None,
        "tokens_per_second": snap.tokens_per_second if decoded else None,
        "ttft_ms": snap.ttft_ms,
        "itl_ms_p50": snap.itl_ms_p50 if decoded else None,
        "itl_ms_p95": snap.itl_ms_p95 if decoded else None,
        "draft_ms_per_token": snap.draft_ms_per_token if snap.n_drafted else None,
        "draft_cost_ratio": snap.draft_cost_ratio if snap.n_drafted and snap.target_decode_ms else None,
    }


def summary_dict(stats: RunStats, events: list[Event], *, with_tokens: bool = True) -> dict:
    """The run as ``--json`` prints it: llama.cpp's counts (``n_draft``, ``n_accept``, ...), the measured figures
    (``measured``: null where nothing was measured), the run's start, the cost model's advice and every pass.

    Args:
        stats: the statistics of the whole run.
        events: the run's events, for the passes (each as its trace line's object).
        with_tokens: False: ``tokens`` left empty (``consume`` writes a long run's token ids in slices).

    Returns:
        A JSON-ready dict, its keys in a fixed order.
    """
    snap = stats.snapshot()
    figures = measured(snap)
    start = stats.start
    end = stats.end
    probe = start.probe if start is not None else None  # the machine's verify curve, if measured
    pred = _prediction(snap, stats.last_draft_max, probe)
    return {
        "tokens": list(stats.tokens) if with_tokens else [],
        "text": stats.text,
        "n_draft": start.settings.draft_max if start else 0,
        "draft_p_min": start.settings.draft_p_min if start else 0.0,
        "draft_min": start.settings.draft_min if start else 0,
        "inspect_top": start.inspect_top if start else 0,
        "n_predict": snap.n_emitted,
        "n_drafted": snap.n_drafted,
        "n_accept": snap.n_accepted,
        "n_passes": snap.n_passes,
        "acceptance_rate": figures["acceptance_rate"],
        "mean_acceptance_length": figures["mean_acceptance_length"],
        "tokens_per_pass": figures["tokens_per_pass"],
        **_acceptance_dict(snap),
        "by_drafter": drafter_dicts(snap.by_drafter),
        "tree": tree_dict(snap.tree),
        "tokens_per_second": figures["tokens_per_second"],
        "ttft_ms": figures["ttft_ms"],
        "itl_ms_p50": figures["itl_ms_p50"],
        "itl_ms_p95": figures["itl_ms_p95"],
        "draft_ms_total": snap.draft_ms_total,
        "verify_ms_total": snap.verify_ms_total,
        "other_ms_total": snap.other_ms_total,
        "draft_ms_per_token": figures["draft_ms_per_token"],
        "target_decode_ms": snap.target_decode_ms,
        "draft_cost_ratio": figures["draft_cost_ratio"],
        "verify_ms_by_k": [{"k": k, "mean_ms": ms, "count": n} for k, ms, n in snap.verify_ms_by_k],
        "stop_reason": snap.stop_reason,
        "wait_policy": start.wait_policy if start else "",
        "error": end.error if end else "",
        "wall_s": end.wall_s if end else snap.elapsed_s,
        "start": to_dict(start) if start else None,
        "sampling": start.sampling if start else "",  # where the row math ran: graph | cpu (--sampling)
        **_where_dict(snap, start),
        "advice": pred.advice if pred is not None else "",
        "prediction": _prediction_dict(pred),
        "probe": json.loads(probe.report_json) if probe is not None and probe.report_json else None,
        # --pipeline: the pipelined passes' figures (views.pipeline), null without one
        "pipeline": pipeline_dict(snap.pipeline, start) if snap.pipeline is not None else None,
        "passes": [to_dict(e) for e in events if isinstance(e, PassEvent)],
    }


def _acceptance_dict(snap: StatsSnapshot) -> dict:
    """Acceptance by draft position and by the draft's confidence, why drafting stopped, and how far it went."""
    return {
        "acceptance_by_position": [
            {"position": p.position, "drafted": p.drafted, "accepted": p.accepted, "rate": p.rate}
            for p in snap.acceptance_by_position
        ],
        "confidence": [
            {"label": b.label, "lo": b.lo, "hi": b.hi, "judged": b.judged, "accepted": b.accepted, "rate": b.rate}
            for b in snap.confidence
        ],
        "draft_stops": [{"draft_stop": stop, "passes": n} for stop, n in snap.draft_stops],
        "draft_continue_by_position": [
            {"position": c.position, "asked": c.asked, "drafted": c.drafted, "rate": c.rate}
            for c in snap.draft_continue_by_position
        ],
    }


def _where_dict(snap: StatsSnapshot, start) -> dict:
    """Where the models ran (devices, threads) and how much other processes' load the run shared the CPU with."""
    return {
        "placement": {
            "target": placement(start.target) if start else None,
            "draft": placement(start.draft) if start and start.draft is not None else None,
            "threads": start.threads if start else 0,
        },
        "contention": {
            "contended_passes": snap.contended_passes,
            "peak_others_cpu": snap.contention_peak_others,
            "low_tokens_per_second": snap.contention_low_tps,
        },
    }


def _prediction_dict(pred) -> dict | None:
    """The cost model's figures by k (index k), drafting that stops early (--draft-p-min) included; None
    before it has what it needs."""
    if pred is None or not pred.ready:
        return None
    return {
        "tokens_per_second_by_k": list(pred.tps_by_k),
        "tokens_per_pass_by_k": list(pred.tokens_per_pass_by_k),
        "drafted_per_pass_by_k": list(pred.drafted_per_pass_by_k),
        "best_k": pred.best_k,
        "continue_note": pred.continue_note,
    }


def confidence_text(snap: StatsSnapshot) -> str:
    """Acceptance by the draft's confidence q, compact: "label rate (accepted/judged)" per non-empty bucket."""
    return "  ".join(f"{b.label}:{100 * b.rate:.0f}% ({b.accepted}/{b.judged})" for b in snap.confidence if b.judged)


def p_min_text(snap: StatsSnapshot, stats: RunStats) -> str:
    """How often drafting stopped for --draft-p-min and the mean drafted length against k ("" when never)."""
    stops = dict(snap.draft_stops)
    n = stops.get(DRAFT_STOP_P_MIN, 0)
    if not n:
        return ""
    asked = sum(stops.values())  # passes that asked for drafts
    start = stats.start
    s = start.settings if start is not None else None
    k = "auto" if s is not None and s.auto else str(s.draft_max if s is not None else stats.last_draft_max)
    mean = snap.n_drafted / asked if asked else 0.0
    rule = f" --draft-p-min {s.draft_p_min:g}" if s is not None and s.draft_p_min > 0 else " --draft-p-min"
    return (f"{n} of {asked} drafting passes ({100 * n / asked:.0f}%) stopped below{rule}; "
            f"mean drafted {mean:.2f} tokens per pass vs k = {k}")


def _stop_line(stats: RunStats) -> str:
    snap, end = stats.snapshot(), stats.end
    reason = STOP_REASONS.get(snap.stop_reason, snap.stop_reason or "unfinished (trace ends early)")
    if end is not None and end.error:
        reason += f": {visible_line(end.error)}"
    return f"stopped                {reason}"


def _nothing_decoded(stats: RunStats) -> list[str]:
    """The summary of a run that ended before its first pass: no timings exist, so none are printed."""
    start = stats.start
    return ["", f"n_draft   = {start.settings.draft_max if start else 0}", "n_predict = 0", "n_drafted = 0",
            "n_accept  = 0", "", "nothing was decoded: no tokens/s, TTFT or ITL to report", _stop_line(stats)]


def summary_text(stats: RunStats) -> str:
    """The summary the headless run prints after its text (and ``replay --headless``): where the models ran,
    the prompt's and the decode's times, llama-speculative-simple's counts under its own names, then
    acceptance, speed, the run's costs, why it stopped and the cost model's advice.

    Args:
        stats: the statistics of the whole run.

    Returns:
        The lines, joined; text from outside (model names, an error) already made visible.
    """
    snap = stats.snapshot()
    start = stats.start
    lines = _model_lines(snap, start)
    if snap.n_emitted == 0:
        return "\n".join(lines + _nothing_decoded(stats))
    decoded = snap.n_passes > 0
    dec_s = snap.decode_wall_ms / 1000.0
    if decoded:
        lines.append(
            f"decoded {max(0, snap.n_emitted - 1):4d} tokens in {dec_s:8.3f} seconds, "
            f"speed: {snap.tokens_per_second:8.3f} t/s"
        )
    else:  # the first token only (-n 1, or stopped / context full right after it): no decode to time
        lines.append("decoded    0 tokens after the first: no decode speed to report")
    lines.append("")
    # llama.cpp's llama-speculative-simple lines, same names and meaning
    lines.append(f"n_draft   = {start.settings.draft_max if start else 0}")
    lines.append(f"n_predict = {snap.n_emitted}")
    lines.append(f"n_drafted = {snap.n_drafted}")
    lines.append(f"n_accept  = {snap.n_accepted}")
    lines.append(f"accept    = {100.0 * snap.acceptance_rate:.3f}%" if snap.n_drafted else
                 "accept    = - (nothing drafted)")
    lines.append("")
    # ours
    lines += _drafter_lines(start)
    lines += _acceptance_lines(snap, stats, decoded)
    lines += drafter_lines(snap.by_drafter)
    lines += _speed_lines(snap, decoded)
    lines += _cost_lines(snap, start, decoded)
    if start is not None:
        lines.append(f"sampling               {start.sampling} ("
                     + ("llama.cpp backend sampler chains" if start.sampling == "graph" else "numpy") + ")")
    lines.append(_stop_line(stats))
    probe = start.probe if start is not None else None
    if probe is not None:
        lines.append(f"this machine           {probe.summary}")
    pred = _prediction(snap, stats.last_draft_max, probe)
    if pred is not None and getattr(pred, "advice", ""):
        lines.append(f"advice                 {pred.advice}")
    return "\n".join(lines)


def _model_lines(snap: StatsSnapshot, start) -> list[str]:
    """Where each model ran (and the GPU a CPU-only build left idle), and the prompt's prefill (the time to
    first token), as llama.cpp's tools say it."""
    lines: list[str] = []
    if start is None:
        return lines
    for role, info in (("target", start.target), ("draft ", start.draft)):
        where = placement_text(info, start.threads) if info is not None else ""
        if where:
            lines.append(f"{role} {visible_line(info.name or info.path)}: {where}")
    if start.gpu_note:  # a CPU-only build on a machine with a GPU it could use: how to rebuild, in one line
        lines.append(visible_line(start.gpu_note))
    if snap.n_emitted == 0 or snap.ttft_ms is None:  # no pass ran: no time (never "901 tokens in 0.000 s")
        lines.append(f"prompt  {start.prompt_tokens:4d} tokens, not evaluated: the run ended before its first pass")
    else:
        prompt_s = snap.ttft_ms / 1000.0
        lines.append(
            f"encoded {start.prompt_tokens:4d} tokens in {prompt_s:8.3f} seconds (prefill + first token = TTFT)"
        )
    return lines


def _drafter_lines(start) -> list[str]:
    """What drafted, where a head did (an EAGLE-3 head, the target's MTP layers), and each file when a draft
    model and a head were both loaded (the other drafters: nothing, as before)."""
    lines: list[str] = []
    if start is None:
        return lines
    heads = {"eagle3": "an EAGLE-3 head on the target's hidden states", "mtp": "the target's own MTP layers",
             "dflash": "a DFlash block drafter on the target's hidden states",
             "dspark": "a DSpark block drafter on the target's hidden states"}
    if start.settings.drafter in heads:
        head = start.head if start.head is not None and start.head.kind == start.settings.drafter else None
        kind = f": {head_kind(head)}" if head is not None else ""
        lines.append(f"drafter                {start.settings.drafter} ({heads[start.settings.drafter]}{kind})")
        if head is not None:
            lines.append(f"head file              {head_file(start)}")
    if start.head is not None and start.draft is not None:  # both loaded: name each
        lines.append(f"draft model            {visible_line(start.draft.name or start.draft.path)}"
                     f" ({visible_line(os.path.basename(start.draft.path))})")
        lines.append(f"head                   {start.head.kind} ({head_kind(start.head)}): {head_file(start)}")
    return lines


def tree_lines(t: TreeStats) -> list[str]:
    """The tree passes' figures (--drafter tree): nodes per pass, pruned, acceptance by depth, auto's chain passes.

    Args:
        t: the run's ``StatsSnapshot.tree``.

    Returns:
        Two lines (one when auto drafted only chains).
    """
    depth = t.depth_text()
    chains = f", {t.chain_passes} chain passes chosen by auto" if t.chain_passes else ""
    return [f"tree nodes per pass    {t.nodes_per_pass:.2f} verified ({t.pruned} of {t.nodes} pruned, "
            f"{t.passes} tree passes{chains})",
            f"acceptance by depth    {depth}"][: 2 if t.passes else 1]


def tree_dict(t: TreeStats | None) -> dict | None:
    """The tree passes' figures for --json (null: no tree pass).

    Args:
        t: the run's ``StatsSnapshot.tree``.

    Returns:
        passes, chain_passes (auto's), nodes, accepted, pruned, nodes_per_pass, mean_acceptance_length, by_depth.
    """
    return None if t is None else t.record()


def _acceptance_lines(snap: StatsSnapshot, stats: RunStats, decoded: bool) -> list[str]:
    """Passes, the mean acceptance length, tokens per pass, acceptance by position and by the draft's
    confidence, and how often --draft-p-min stopped drafting."""
    lines = [f"passes                 {snap.n_passes} (+1 prefill), {snap.passes_drafted} with drafts"]
    lines.append(f"mean acceptance length {snap.mean_acceptance_length:.3f} tokens per drafting pass"
                 if snap.passes_drafted else "mean acceptance length - (no drafting pass)")
    lines.append(f"tokens per pass        {snap.tokens_per_pass:.3f}" if decoded else
                 "tokens per pass        - (no decode pass)")
    if snap.acceptance_by_position:
        pos = "  ".join(
            f"{p.position}:{100 * p.rate:.0f}% ({p.accepted}/{p.drafted})" for p in snap.acceptance_by_position
        )
        lines.append(f"acceptance by position {pos}")
    if snap.tree is not None:
        lines.extend(tree_lines(snap.tree))
    conf = confidence_text(snap)
    if conf:
        lines.append(f"acceptance by draft confidence {conf}")
    p_min = p_min_text(snap, stats)
    if p_min:
        lines.append(f"draft-p-min stops      {p_min}")
    return lines


def _speed_lines(snap: StatsSnapshot, decoded: bool) -> list[str]:
    """Tokens/s, the time to first token and the inter-token latency (nothing measured: a dash and why)."""
    return [
        f"tokens/s (decode)      {snap.tokens_per_second:.2f}" if decoded else
        "tokens/s (decode)      - (no decode pass)",
        f"TTFT                   {snap.ttft_ms:.1f} ms (speculation cannot shorten it)"
        if snap.ttft_ms is not None else "TTFT                   - (no first token)",
        f"ITL p50 / p95          {snap.itl_ms_p50:.1f} / {snap.itl_ms_p95:.1f} ms" if decoded else
        "ITL p50 / p95          - (no token after the first)",
    ]


def _cost_lines(snap: StatsSnapshot, start, decoded: bool) -> list[str]:
    """Where the decode's time went (draft, verify, other), the draft cost ratio c, a head's step beside a
    target decode, verify time by k, and the other processes the run shared the CPU with."""
    lines: list[str] = []
    tot = snap.decode_wall_ms or 1.0
    if decoded:
        lines.append(
            f"time split             draft {snap.draft_ms_total:.0f} ms ({100 * snap.draft_ms_total / tot:.0f}%), "
            f"verify {snap.verify_ms_total:.0f} ms ({100 * snap.verify_ms_total / tot:.0f}%), "
            f"other {snap.other_ms_total:.0f} ms ({100 * snap.other_ms_total / tot:.0f}%)"
        )
    if snap.target_decode_ms and snap.n_drafted:
        lines.append(
            f"draft cost ratio c     {snap.draft_cost_ratio:.2f} (draft {snap.draft_ms_per_token:.1f} ms/token, "
            f"target {snap.target_decode_ms:.1f} ms/token)"
        )
    elif snap.target_decode_ms:
        lines.append(f"draft cost ratio c     - (nothing drafted; target {snap.target_decode_ms:.1f} ms/token)")
    if start is not None and start.head is not None and snap.target_decode_ms and snap.n_drafted:
        # a head's step beside a target decode, as measured in this run (its reading of each verify included)
        cost = step_cost(snap.draft_ms_per_token, snap.target_decode_ms, start.head.kind,
                         per_pass_ms=snap.draft_ms_total / max(1, snap.passes_drafted))
        lines.append(f"draft step cost        {cost}")
    if snap.verify_ms_by_k:
        vk = "  ".join(f"k={k}:{ms:.0f}ms" for k, ms, _ in snap.verify_ms_by_k)
        lines.append(f"verify time by k       {vk}")
    if snap.pipeline is not None:
        lines.append(f"pipeline               {pipeline_summary(snap.pipeline, start)}")
        if start is not None and start.pipeline_choice:
            lines.append(f"pipeline choice        {visible_line(start.pipeline_choice)}")
    if start is not None and start.wait_policy:
        lines.append(f"openmp wait policy     {visible_line(start.wait_policy)}")
    if snap.contended_passes:
        lines.append(
            f"contention             {snap.contended_passes} of {snap.n_passes} passes ran while other processes "
            f"kept up to {snap.contention_peak_others:.1f} cores busy (down to {snap.contention_low_tps:.1f} t/s): "
            "the figures above are not this machine's own; see README: -t, OMP_WAIT_POLICY"
        )
    return lines
