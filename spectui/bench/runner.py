"""Running a bench on one loaded engine: every job (prompt x setting x repeat, in the plan's ABBA order) runs
each turn asked through ``engine.run`` and keeps its statistics from its own events (``stats.compute``), the
tokens it emitted and, for the baseline at temperature 0, the margin that decided each token (for the
lossless check).

Turns: ``turns="first"`` asks ``turns[0]`` only; ``"all"`` asks every turn, the second following the model's
own first answer in the chat (Spec-Bench / MT-bench), so each setting answers its own conversation.
Prompts are rendered with the target's chat template (``chat=True``) or used as raw text (later turns then
join the earlier turns and answers with blank lines). A prompt whose tokens plus -n do not fit the context is
skipped (a row with ``skipped`` set, for every setting), never run to a truncated end.

The run stops early on Ctrl+C (``status`` "interrupted"), or when the engine fails (``status`` "failed: ...");
rows already measured are returned either way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from ..contract.control import RunControl
from ..engine.chat import chat_messages
from ..contract.events import STOP_ERROR, STOP_USER, PassEvent, RunEnded, Settings
from ..analysis.lossless import margins_of
from ..analysis.stats import compute
from .aggregate import BenchRow
from .datasets import Prompt
from .plan import Job, Setting

TURNS = ("first", "all")


@dataclass
class BenchResult:
    rows: list[BenchRow] = field(default_factory=list)
    status: str = "done"  # "done", "interrupted", or "failed: <why>"
    stopped_at: str = ""  # where it stopped ("prompt 3 of 12 (code q2), model k=2, temp 0, repeat 1")
    jobs_done: int = 0
    jobs_total: int = 0
    run_wall_s: float = 0.0  # summed RunEnded.wall_s: time inside the runs themselves


def raw_prompt(turns: Sequence[str], answers: Sequence[str]) -> str:
    """Without a chat template: the turns so far and the answers between them, joined by blank lines."""
    parts: list[str] = []
    for i, a in enumerate(answers):
        parts += [turns[i], a]
    parts.append(turns[len(answers)])
    return "\n\n".join(parts)


class Templater:
    """Turns (and earlier answers) -> (prompt text, chat-template label) for one engine."""

    def __init__(self, engine, chat: bool, system: str | None = None) -> None:
        self.template = engine.chat_template if chat else None
        self.system = system

    @property
    def label(self) -> str:
        return self.template.label if self.template is not None else ""

    def __call__(self, turns: Sequence[str], answers: Sequence[str]) -> str:
        if self.template is None:
            return raw_prompt(turns, answers)
        return self.template.render(chat_messages(turns, answers, self.system))


def fits(n_prompt: int, n_predict: int, n_ctx: int) -> str:
    """"" when a prompt of ``n_prompt`` tokens leaves room for ``n_predict`` in ``n_ctx``, else why not."""
    if n_prompt == 0:
        return "the prompt is empty (no tokens)"
    if n_prompt + n_predict > n_ctx:
        return f"does not fit the context: {n_prompt} prompt tokens + -n {n_predict} > -c {n_ctx}"
    return ""


def where(job: Job, prompts: Sequence[Prompt], n_jobs: int, i: int) -> str:
    p = prompts[job.prompt_index]
    return (f"job {i + 1} of {n_jobs}: prompt {job.prompt_index + 1} of {len(prompts)} ({p.category} "
            f"q{p.question_id}), {job.setting.full_label}, repeat {job.repeat + 1}")


def run_bench(
    engine,
    prompts: Sequence[Prompt],
    jobs: Sequence[Job],
    n_predict: int,
    seed: int = 0,
    *,
    turns: str = "first",
    templater: Callable[[Sequence[str], Sequence[str]], str] | None = None,
    chat_label: str = "",
    open_trace: Callable[[str, dict], object] | None = None,
    on_job: Callable[[int, Job], None] | None = None,
    on_event: Callable[[object], None] | None = None,
    near_tie: Callable[[Setting], float] | None = None,
) -> BenchResult:
    """Run the jobs; see the module docstring. ``open_trace(name, header_extra)`` returns a TraceWriter.
    ``near_tie(setting)``: the near-tie threshold of a speculative temperature-0 setting (the kernels' noise
    measured at its k, ``analysis.noise.NoiseResult.threshold``), kept in its rows for the lossless check."""
    templater = templater or (lambda t, a: raw_prompt(t, a))
    res = BenchResult(jobs_total=len(jobs))
    n_ctx = engine.n_ctx
    # Pre-flight: the first turn of every prompt must fit (the same text for every setting).
    skip: dict[int, str] = {}
    first_tokens: dict[int, int] = {}
    for i, p in enumerate(prompts):
        n = len(engine.tokenize(templater(p.turns[:1], [])))
        first_tokens[i] = n
        why = fits(n, n_predict, n_ctx)
        if why:
            skip[i] = why
    settings_seen: list[Setting] = []
    for j in jobs:
        if j.setting not in settings_seen:
            settings_seen.append(j.setting)
    for i, why in skip.items():
        for s in settings_seen:
            res.rows.append(BenchRow(prompts[i], 0, s, 0, None, prompt_tokens=first_tokens[i], skipped=why))
    n_turns = (lambda p: len(p.turns)) if turns == "all" else (lambda p: 1)
    seq = 0
    for ji, job in enumerate(jobs):
        if job.prompt_index in skip:
            res.jobs_done += 1
            continue
        if on_job is not None:
            on_job(ji, job)
        p = prompts[job.prompt_index]
        s = job.setting
        answers: list[str] = []
        try:
            for t in range(n_turns(p)):
                text = templater(p.turns[: t + 1], answers)
                n_tok = len(engine.tokenize(text))
                why = fits(n_tok, n_predict, n_ctx)
                if why:
                    res.rows.append(BenchRow(p, t, s, job.repeat, None, prompt_tokens=n_tok, skipped=why))
                    break
                seq += 1
                writer = None
                trace = ""
                if open_trace is not None:
                    cat = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in p.category)
                    qid = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in str(p.question_id))
                    name = f"{seq:04d}-{cat}-q{qid}-turn{t + 1}-{s.tag}-r{job.repeat + 1}.jsonl"
                    writer = open_trace(name, {"bench": {
                        "category": p.category, "question_id": p.question_id, "turn": t + 1,
                        "drafter": s.drafter, "k": s.k, "temperature": s.temperature, "repeat": job.repeat + 1,
                    }})
                    trace = str(getattr(writer, "path", name))
                settings = Settings(draft_max=s.k, temperature=s.temperature, drafter=s.drafter, seed=seed,
                                    pipeline=s.pipeline)
                events = []
                try:
                    for ev in engine.run(text, RunControl(settings), n_predict, chat_template=chat_label, overlap=True):
                        events.append(ev)
                        if writer is not None:
                            writer.write(ev)
                        if on_event is not None:
                            on_event(ev)
                finally:
                    if writer is not None:
                        writer.close()
                end = next((e for e in reversed(events) if isinstance(e, RunEnded)), None)
                if end is not None:
                    res.run_wall_s += end.wall_s
                if end is None or end.reason == STOP_USER:
                    raise KeyboardInterrupt
                if end.reason == STOP_ERROR:
                    res.status = f"failed: {end.error or 'the run failed'}"
                    res.stopped_at = where(job, prompts, len(jobs), ji)
                    return res
                ids = tuple(tk.id for ev in events if isinstance(ev, PassEvent) for tk in ev.emitted)
                out_text = "".join(tk.text for ev in events if isinstance(ev, PassEvent) for tk in ev.emitted)
                margins = None
                if s.is_baseline and s.temperature == 0:
                    m = margins_of(events)
                    margins = tuple(m) if m is not None else None
                pieces = tuple(tk.text for ev in events if isinstance(ev, PassEvent) for tk in ev.emitted)
                tie = near_tie(s) if near_tie is not None and not s.is_baseline and s.temperature == 0 else None
                res.rows.append(BenchRow(p, t, s, job.repeat, compute(events), ids, out_text, margins,
                                         n_tok, trace, near_tie=tie, pieces=pieces))
                answers.append(out_text)
        except KeyboardInterrupt:
            res.status = "interrupted"
            res.stopped_at = where(job, prompts, len(jobs), ji)
            return res  # the interrupted turn has no row; turns finished before it keep theirs
        res.jobs_done += 1
    return res
