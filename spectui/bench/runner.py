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

from ..analysis.lossless import margins_of
from ..analysis.stats import compute
from ..contract.control import RunControl
from ..contract.events import STOP_ERROR, STOP_USER, PassEvent, RunEnded, Settings
from ..engine.files.chat import chat_messages
from .aggregate import BenchRow
from .datasets import Prompt
from .plan import BenchOptions, Job, Setting

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
        # first turns rendered: every setting asks the same one, and each render is a child process (bounded:
        # spectui.engine.files.chat); as large as the prompt set, whose turns are held anyway
        self._first: dict[tuple[str, ...], str] = {}

    @property
    def label(self) -> str:
        return self.template.label if self.template is not None else ""

    def __call__(self, turns: Sequence[str], answers: Sequence[str]) -> str:
        if self.template is None:
            return raw_prompt(turns, answers)
        if answers:
            return self.template.render(chat_messages(turns, answers, self.system))
        key = tuple(turns)
        if key not in self._first:
            self._first[key] = self.template.render(chat_messages(turns, answers, self.system))
        return self._first[key]


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


def run_bench(engine, prompts: Sequence[Prompt], jobs: Sequence[Job], o: BenchOptions, *,
              templater: Callable[[Sequence[str], Sequence[str]], str] | None = None,
              open_trace: Callable[[str, dict], object] | None = None,
              on_job: Callable[[int, Job], None] | None = None,
              near_tie: Callable[[Setting], float] | None = None) -> BenchResult:
    """Run the jobs; see the module docstring.

    Args:
        engine: the loaded engine (``spectui.engine.Engine``), every job's run on it.
        prompts, jobs: the prompt set and the runs to do (``bench.plan.make_jobs``: setting x prompt x repeat).
        o: the bench's options: -n, the seed, and the turns: "first" (turns[0] only) or "all" (every turn, each
            after the model's own answer).
        templater: ``(turns, answers) -> text`` (the chat template, or the raw turns); its ``label`` (a
            ``Templater``'s) is recorded as the runs' chat template.
        open_trace: ``(name, header_extra) -> TraceWriter`` to keep each run's trace (``--record-dir``).
        on_job: told of each job as it starts (progress).
        near_tie: a speculative temperature-0 setting's near-tie threshold (``NoiseResult.threshold``), kept
            in its rows for the lossless check.

    Returns:
        The rows (a prompt that does not fit: skipped rows, with the reason) and the status: "done",
        "interrupted" (the turns finished keep their rows) or "failed: ...".
    """
    templater = templater or (lambda t, a: raw_prompt(t, a))
    res = BenchResult(jobs_total=len(jobs))
    skip = _skip_what_does_not_fit(engine, prompts, jobs, o.n_predict, templater, res)
    n_turns = (lambda p: len(p.turns)) if o.turns == "all" else (lambda p: 1)
    run = _TurnRunner(engine, res, o, templater, open_trace, near_tie)
    for ji, job in enumerate(jobs):
        if job.prompt_index in skip:
            res.jobs_done += 1
            continue
        if on_job is not None:
            on_job(ji, job)
        p = prompts[job.prompt_index]
        answers: list[str] = []
        try:
            for t in range(n_turns(p)):
                row, error = run(p, t, job, answers)
                if error is not None:
                    res.status = f"failed: {error}"
                    res.stopped_at = where(job, prompts, len(jobs), ji)
                    return res
                res.rows.append(row)
                if row.skipped:
                    break
                answers.append(row.text)
        except KeyboardInterrupt:
            res.status = "interrupted"
            res.stopped_at = where(job, prompts, len(jobs), ji)
            return res  # the interrupted turn has no row; turns finished before it keep theirs
        res.jobs_done += 1
    return res


def _skip_what_does_not_fit(engine, prompts: Sequence[Prompt], jobs: Sequence[Job], n_predict: int, templater,
                            res: BenchResult) -> dict[int, str]:
    """Pre-flight: the first turn of every prompt must fit (the same text for every setting). A prompt that
    does not gets a skipped row per setting, with the reason; returns {prompt index: reason}."""
    skip: dict[int, str] = {}
    first_tokens: dict[int, int] = {}
    for i, p in enumerate(prompts):
        n = len(engine.tokenize(templater(p.turns[:1], [])))
        first_tokens[i] = n
        why = fits(n, n_predict, engine.n_ctx)
        if why:
            skip[i] = why
    settings_seen: list[Setting] = []
    for j in jobs:
        if j.setting not in settings_seen:
            settings_seen.append(j.setting)
    for i, why in skip.items():
        for s in settings_seen:
            res.rows.append(BenchRow(prompts[i], 0, s, 0, None, prompt_tokens=first_tokens[i], skipped=why))
    return skip


class _TurnRunner:
    """One turn of one job: its text, its run on the engine (recorded when asked, its wall time added to
    ``res.run_wall_s``), its row."""

    def __init__(self, engine, res: BenchResult, o: BenchOptions, templater, open_trace, near_tie) -> None:
        self.engine, self.res, self.n_predict, self.seed, self.templater = engine, res, o.n_predict, o.seed, templater
        self.chat_label = getattr(templater, "label", "")  # a Templater's chat template, recorded in RunStarted
        self.open_trace, self.near_tie = open_trace, near_tie
        self.seq = 0  # runs so far: the traces' names are numbered in run order

    def __call__(self, p: Prompt, t: int, job: Job, answers: list[str]) -> tuple[BenchRow | None, str | None]:
        """(the turn's row, None), a skipped row when its text does not fit, or (None, why) when the run failed.
        KeyboardInterrupt when the run was stopped."""
        s = job.setting
        text = self.templater(p.turns[: t + 1], answers)
        n_tok = len(self.engine.tokenize(text))
        why = fits(n_tok, self.n_predict, self.engine.n_ctx)
        if why:
            return BenchRow(p, t, s, job.repeat, None, prompt_tokens=n_tok, skipped=why), None
        self.seq += 1
        events, trace = self._run(text, p, t, job)
        end = next((e for e in reversed(events) if isinstance(e, RunEnded)), None)
        if end is not None:
            self.res.run_wall_s += end.wall_s
        if end is None or end.reason == STOP_USER:
            raise KeyboardInterrupt
        if end.reason == STOP_ERROR:
            return None, end.error or "the run failed"
        return self._row(p, t, job, events, n_tok, trace), None

    def _run(self, text: str, p: Prompt, t: int, job: Job) -> tuple[list, str]:
        """The run's events, each written to its trace when traces are kept (closed on every way out)."""
        s = job.setting
        writer = None
        trace = ""
        if self.open_trace is not None:
            cat = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in p.category)
            qid = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in str(p.question_id))
            name = f"{self.seq:04d}-{cat}-q{qid}-turn{t + 1}-{s.tag}-r{job.repeat + 1}.jsonl"
            writer = self.open_trace(name, {"bench": {
                "category": p.category, "question_id": p.question_id, "turn": t + 1,
                "drafter": s.drafter, "k": s.k, "temperature": s.temperature, "repeat": job.repeat + 1,
            }})
            trace = str(getattr(writer, "path", name))
        settings = Settings(draft_max=s.k, temperature=s.temperature, drafter=s.drafter, seed=self.seed,
                            pipeline=s.pipeline)
        events = []
        try:
            for ev in self.engine.run(text, RunControl(settings), self.n_predict, chat_template=self.chat_label,
                                      overlap=True):
                events.append(ev)
                if writer is not None:
                    writer.write(ev)
        finally:
            if writer is not None:
                writer.close()
        return events, trace

    def _row(self, p: Prompt, t: int, job: Job, events: list, n_tok: int, trace: str) -> BenchRow:
        """A finished run's row: its statistics, its tokens and text (the lossless check's), the baseline's
        margins at temperature 0, a speculative temperature-0 setting's near-tie threshold."""
        s = job.setting
        ids = tuple(tk.id for ev in events if isinstance(ev, PassEvent) for tk in ev.emitted)
        out_text = "".join(tk.text for ev in events if isinstance(ev, PassEvent) for tk in ev.emitted)
        margins = None
        if s.is_baseline and s.temperature == 0:
            m = margins_of(events)
            margins = tuple(m) if m is not None else None
        pieces = tuple(tk.text for ev in events if isinstance(ev, PassEvent) for tk in ev.emitted)
        tie = self.near_tie(s) if self.near_tie is not None and not s.is_baseline and s.temperature == 0 else None
        return BenchRow(p, t, s, job.repeat, compute(events), ids, out_text, margins, n_tok, trace, near_tie=tie,
                        pieces=pieces)
