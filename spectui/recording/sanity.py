"""What a run trace's events may say, checked as the reader reads them: a trace is a stranger's file, and its
well-typed values can still lie (k = 10^9, more tokens emitted than its verdicts allow, a probability of 7.5, a
second run in the middle). ``Lies.check`` returns each event as a run could have recorded it (clamped), or None
for one that is skipped; ``Lies.warnings`` is one line per kind of lie, naming where it first occurs and
counting the rest. The rules are in docs/untrusted-input.md. Every face reads through the reader, so they all
get the same cleaned stream. No Textual import.
"""

from __future__ import annotations

from typing import Any

from ..contract.draft_length import DRAFT_MAX_LIMIT
from ..contract.events import (
    ACCEPTED,
    DISCARDED,
    Candidate,
    DraftToken,
    Event,
    Inspection,
    PassEvent,
    RunEnded,
    RunStarted,
    Settings,
    SettingsChanged,
    Token,
)
from ..contract.params import INSPECT_TOP_LIMIT

MAX_CTX = (1 << 31) - 1  # llama.cpp counts context cells and tokens in an int32
MAX_THREADS = 1 << 16  # threads a run used, cores other processes kept busy
MAX_UNIX_TIME = 253402300799.0  # 9999-12-31: a start time past it is no date


def _with(obj: Any, **fix: Any) -> Any:
    """A copy of the frozen event ``obj`` with ``fix`` applied (what dataclasses.replace does, without its cost)."""
    new = object.__new__(type(obj))
    new.__dict__.update(obj.__dict__)
    new.__dict__.update(fix)
    return new


def _prob_ok(p: float) -> bool:
    return 0.0 <= p <= 1.0


def _clamp_prob(p: float, unset: float | None = None) -> float:
    """A probability into 0..1; ``unset`` (-1: not measured) stays as it is."""
    if unset is not None and p == unset:
        return p
    return min(1.0, max(0.0, p))


class Lies:
    """The semantic checks of one run trace (see the module docstring).

    Args:
        path: the trace, as the warnings name it.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.found: dict[str, list] = {}  # kind -> [where, what, how many]
        self.n_ctx = 0  # the run's context (RunStarted.n_ctx): the bound of n_ctx_used
        self.started = False
        self.over = ""  # set when the run is over (its end, a second start): the rest of the file is skipped
        self.n_after = 0  # events skipped after that
        self.after_line = 0
        self._settings: dict[tuple, tuple[Settings, list[tuple[str, str]]]] = {}

    # ------------------------------------------------------------------ reporting
    def _note(self, kind: str, where: str | tuple[int, int], what: str) -> None:
        """Count a lie; ``where`` is a place in words, or (line, pass index)."""
        seen = self.found.get(kind)
        if seen is None:
            if type(where) is tuple:
                where = f"line {where[0]}, pass {where[1]}"
            self.found[kind] = [where, what, 1]
        else:
            seen[2] += 1

    def take_warnings(self) -> list[str]:
        """One line per kind of lie found since the last call: where it first occurs, what it was and what was
        read instead, and how many more events said the like."""
        if self.n_after:
            more = f"; the {self.n_after:,} event{'s' if self.n_after != 1 else ''} from here skipped (a trace " \
                   "holds one run)"
            self.found["over"] = [f"line {self.after_line}", self.over + more, 1]
            self.n_after = 0
        out = []
        for where, what, n in self.found.values():
            more = f" (and {n - 1:,} more like it)" if n > 1 else ""
            out.append(f"{self.path}: {where}: {what}{more}")
        self.found.clear()
        return out

    def _skip_after(self, line: int) -> None:
        """An event after the run was over (``over``): skipped, counted in one warning."""
        if not self.n_after:
            self.after_line = line
        self.n_after += 1

    # ------------------------------------------------------------------ checking
    def check(self, ev: Event, line: int) -> Event | None:
        """``ev`` (read from ``line``) as a run could have recorded it, or None to skip it.

        Args:
            ev: an event as the JSON form gives it (its types checked already).
            line: its line in the file (the warnings name it).

        Returns:
            The event, unchanged when it holds no lie; a clamped copy; or None (skip it).
        """
        if self.over:
            self._skip_after(line)
            return None
        if type(ev) is PassEvent:
            return self._pass(ev, line)
        if type(ev) is RunStarted:
            if self.started:
                self.over = "a second run starts here (the first run's `start` is earlier)"
                self._skip_after(line)
                return None
            self.started = True
            return self._start(ev, f"line {line}")
        if type(ev) is RunEnded:
            self.over = f"events after the run's `end` (line {line})"
            return self._end(ev, f"line {line}")
        if type(ev) is SettingsChanged:
            old = self._sane_settings(ev.old, f"line {line}")
            new = self._sane_settings(ev.new, f"line {line}")
            before = ev.before_pass if ev.before_pass >= 0 else 0
            if old is ev.old and new is ev.new and before == ev.before_pass:
                return ev
            if before != ev.before_pass:
                self._note("before_pass", f"line {line}", f"before_pass = {ev.before_pass} is no pass; read as 0")
            return _with(ev, old=old, new=new, before_pass=before)
        return ev

    def _count(self, kind: str, where: str, value: int, high: int, bound: str = "") -> int:
        """An integer field into 0..high, noted when it was not (``bound``: what ``high`` is, in words)."""
        if 0 <= value <= high:
            return value
        fixed = min(high, max(0, value))
        what = "negative" if value < 0 else f"more than {bound or f'{high:,}'}"
        self._note(kind, where, f"{kind} = {value:,} is {what}; read as {fixed:,}")
        return fixed

    def _start(self, ev: RunStarted, where: str) -> RunStarted:
        fix: dict[str, Any] = {}
        for name, high in (("n_ctx", MAX_CTX), ("prompt_tokens", MAX_CTX), ("n_predict", MAX_CTX),
                           ("threads", MAX_THREADS), ("threads_draft", MAX_THREADS),
                           ("inspect_top", INSPECT_TOP_LIMIT)):
            v = getattr(ev, name)
            c = self._count(f"start's {name}", where, v, high)
            if c != v:
                fix[name] = c
        for name in ("target_decode_ms", "draft_decode_ms"):
            if getattr(ev, name) < 0:
                self._note(f"start's {name}", where, f"start's {name} = {getattr(ev, name):g} is negative; read as 0")
                fix[name] = 0.0
        if not 0.0 <= ev.started_at <= MAX_UNIX_TIME:
            self._note("started_at", where, f"start's started_at = {ev.started_at:g} is no date; read as unknown")
            fix["started_at"] = 0.0
        settings = self._sane_settings(ev.settings, where)
        if settings is not ev.settings:
            fix["settings"] = settings
        self.n_ctx = fix.get("n_ctx", ev.n_ctx)
        return _with(ev, **fix) if fix else ev

    def _end(self, ev: RunEnded, where: str) -> RunEnded:
        fix: dict[str, Any] = {}
        for name in ("n_passes", "n_emitted", "n_drafted", "n_accepted"):
            v = getattr(ev, name)
            c = self._count(f"end's {name}", where, v, 1 << 62)
            if c != v:
                fix[name] = c
        if ev.wall_s < 0:
            self._note("end's wall_s", where, f"end's wall_s = {ev.wall_s:g} is negative; read as 0")
            fix["wall_s"] = 0.0
        return _with(ev, **fix) if fix else ev

    def _sane_settings(self, s: Settings, where: str | tuple[int, int]) -> Settings:
        """``s`` with its knobs in range, one shared object per distinct value (a million passes hold a few)."""
        key = (s.draft_max, s.temperature, s.drafter, s.seed, s.auto, s.draft_p_min, s.draft_min, s.pipeline)
        known = self._settings.get(key)
        if known is None:
            lies: list[tuple[str, str]] = []
            fix: dict[str, Any] = {}
            for name in ("draft_max", "draft_min"):
                v = getattr(s, name)
                if not 0 <= v <= DRAFT_MAX_LIMIT:
                    fix[name] = min(DRAFT_MAX_LIMIT, max(0, v))
                    lies.append((f"settings.{name}", f"settings.{name} = {v} is no draft length "
                                                     f"(0..{DRAFT_MAX_LIMIT}); read as {fix[name]}"))
            if s.temperature < 0:
                fix["temperature"] = 0.0
                lies.append(("settings.temperature", f"settings.temperature = {s.temperature:g} is negative; "
                                                     "read as 0"))
            if not _prob_ok(s.draft_p_min):
                fix["draft_p_min"] = _clamp_prob(s.draft_p_min)
                lies.append(("settings.draft_p_min", f"settings.draft_p_min = {s.draft_p_min:g} is no probability "
                                                     f"(0..1); read as {fix['draft_p_min']:g}"))
            known = self._settings[key] = (_with(s, **fix) if fix else s, lies)
        for kind, what in known[1]:
            self._note(kind, where, what)
        return known[0]

    def _pass(self, ev: PassEvent, line: int) -> PassEvent | None:
        # the pass was built from its line just now and nothing else holds it: its settings become the one shared
        # object of that value in place (a million passes hold a few settings, not a million copies)
        ev.__dict__["settings"] = self._sane_settings(ev.settings, (line, ev.index))
        if self._plausible(ev):  # the common case, checked in one go
            return ev
        where = f"line {line}, pass {ev.index}"
        drafts = ev.drafts
        nd = len(drafts)
        if nd > DRAFT_MAX_LIMIT or (ev.prefill and nd):
            what = "the prefill pass has drafts" if nd <= DRAFT_MAX_LIMIT else \
                f"{nd} drafts, more than any run drafts in a pass ({DRAFT_MAX_LIMIT})"
            self._note("too many drafts", where, what + "; pass skipped")
            return None
        fix: dict[str, Any] = {}
        k = ev.k
        if not 0 <= k <= DRAFT_MAX_LIMIT:
            k = min(DRAFT_MAX_LIMIT, max(0, k))
            self._note("k", where, f"k = {ev.k} is no draft length (0..{DRAFT_MAX_LIMIT}); read as {k}")
        if nd > k:
            self._note("drafts > k", where, f"{nd} drafts, more than its k = {k}; k read as {nd}")
            k = nd
        if k != ev.k:
            fix["k"] = k
        self._verdicts(ev, where, fix)
        self._probabilities(ev, where, fix)
        self._ids(ev, where, fix)
        cap = self.n_ctx if self.n_ctx > 0 else MAX_CTX
        if not 0 <= ev.n_ctx_used <= cap:
            fix["n_ctx_used"] = self._count("n_ctx_used", where, ev.n_ctx_used, cap,
                                            f"the run's context ({cap:,})" if self.n_ctx > 0 else "")
        if not (ev.others_cpu == -1.0 or 0.0 <= ev.others_cpu <= MAX_THREADS):
            self._note("others_cpu", where, f"others_cpu = {ev.others_cpu:g} is no count of cores; read as not "
                                            "measured")
            fix["others_cpu"] = -1.0
        return _with(ev, **fix) if fix else ev

    def _plausible(self, ev: PassEvent) -> bool:
        """Every rule of ``_pass`` holds (most passes): a draft length, the verdicts in order and counted, what was
        emitted, every probability and token id, the context used, the other processes' cores."""
        drafts, target = ev.drafts, ev.target
        nd = len(drafts)
        if not nd <= ev.k <= DRAFT_MAX_LIMIT or (nd and ev.prefill):
            return False
        n_acc, refused = 0, False
        for d in drafts:
            if d.verdict == ACCEPTED:
                if refused:
                    return False
                n_acc += 1
            else:
                refused = True
            if not (0.0 <= d.prob <= 1.0 and 0.0 <= d.target_prob <= 1.0 and 0 <= d.id <= MAX_CTX):
                return False
        if n_acc != ev.n_accepted or len(ev.emitted) > n_acc + (target is not None):
            return False
        for t in ev.emitted:
            if not (0.0 <= t.prob <= 1.0 and 0 <= t.id <= MAX_CTX):
                return False
        if target is not None and not (0.0 <= target.prob <= 1.0 and 0 <= target.id <= MAX_CTX):
            return False
        return (0 <= ev.n_ctx_used <= (self.n_ctx if self.n_ctx > 0 else MAX_CTX)
                and (ev.others_cpu == -1.0 or 0.0 <= ev.others_cpu <= MAX_THREADS)
                and (ev.draft_stop_p == -1.0 or 0.0 <= ev.draft_stop_p <= 1.0)
                and all(_inspection_ok(x) for x in ev.inspect))

    def _verdicts(self, ev: PassEvent, where: str, fix: dict[str, Any]) -> None:
        """Accepted drafts come first (one rejected, then discarded ones); n_accepted counts them; a pass emits
        at most those and the target's token."""
        drafts = ev.drafts
        n_acc = 0
        while n_acc < len(drafts) and drafts[n_acc].verdict == ACCEPTED:
            n_acc += 1
        if any(d.verdict == ACCEPTED for d in drafts[n_acc:]):
            self._note("verdicts", where, "a draft accepted after one the target refused; read as discarded")
            fix["drafts"] = drafts[:n_acc] + tuple(
                _with(d, verdict=DISCARDED) if d.verdict == ACCEPTED else d for d in drafts[n_acc:])
        if ev.n_accepted != n_acc:
            self._note("n_accepted", where, f"n_accepted = {ev.n_accepted}, but its verdicts accept {n_acc} "
                                            f"draft{'' if n_acc == 1 else 's'}; read as {n_acc}")
            fix["n_accepted"] = n_acc
        allowed = n_acc + (ev.target is not None)
        if len(ev.emitted) > allowed:
            self._note("emitted", where, f"{len(ev.emitted)} tokens emitted, more than its verdicts allow "
                                         f"({allowed}); the first {allowed} kept")
            fix["emitted"] = ev.emitted[:allowed]

    def _ids(self, ev: PassEvent, where: str, fix: dict[str, Any]) -> None:
        """Token ids in llama.cpp's range (an int32 >= 0): a face keeps them in 64-bit arrays."""
        drafts, emitted, target = fix.get("drafts", ev.drafts), fix.get("emitted", ev.emitted), fix.get("target",
                                                                                                          ev.target)
        tokens = (*drafts, *emitted) if target is None else (*drafts, *emitted, target)
        if all(0 <= t.id <= MAX_CTX for t in tokens):
            return
        bad = next(t.id for t in tokens if not 0 <= t.id <= MAX_CTX)
        self._note("token id", where, f"token id {bad} is no token id (0..{MAX_CTX:,}); read as "
                                      f"{min(MAX_CTX, max(0, bad)):,}")

        def ok(t: Any) -> Any:
            return t if 0 <= t.id <= MAX_CTX else _with(t, id=min(MAX_CTX, max(0, t.id)))

        fix["drafts"] = tuple(ok(d) for d in drafts)
        fix["emitted"] = tuple(ok(t) for t in emitted)
        if target is not None:
            fix["target"] = ok(target)

    def _probabilities(self, ev: PassEvent, where: str, fix: dict[str, Any]) -> None:
        """Every probability of the pass in 0..1 (the inspector's -1, not measured, allowed where it means that)."""
        drafts = fix.get("drafts", ev.drafts)
        emitted = fix.get("emitted", ev.emitted)
        target = ev.target
        bad = not all(_prob_ok(d.prob) and _prob_ok(d.target_prob) for d in drafts) \
            or not all(_prob_ok(t.prob) for t in emitted) or (target is not None and not _prob_ok(target.prob)) \
            or not (ev.draft_stop_p == -1.0 or _prob_ok(ev.draft_stop_p))
        if not bad and (not ev.inspect or all(_inspection_ok(x) for x in ev.inspect)):
            return
        first = _first_bad(ev, drafts, emitted)
        if first is None:
            return
        self._note("probability", where, f"{first[0]} = {first[1]:g} is no probability (0..1); read as "
                                         f"{_clamp_prob(first[1]):g}")
        fix["drafts"] = tuple(_with(d, prob=_clamp_prob(d.prob), target_prob=_clamp_prob(d.target_prob))
                              for d in drafts)
        fix["emitted"] = tuple(_clamp_token(t) for t in emitted)
        if target is not None:
            fix["target"] = _clamp_token(target)
        fix["draft_stop_p"] = _clamp_prob(ev.draft_stop_p, unset=-1.0)
        if ev.inspect:
            fix["inspect"] = tuple(_clamp_inspection(x) for x in ev.inspect)


def _clamp_token(t: Token) -> Token:
    return t if _prob_ok(t.prob) else _with(t, prob=_clamp_prob(t.prob))


def _candidates_ok(cands: tuple[Candidate, ...]) -> bool:
    return all(_prob_ok(c.prob) for c in cands)


def _inspection_ok(x: Inspection) -> bool:
    return (_candidates_ok(x.target_top) and _candidates_ok(x.draft_top) and _candidates_ok(x.residual_top)
            and (x.accept_p == -1.0 or _prob_ok(x.accept_p)) and (x.u == -1.0 or _prob_ok(x.u)))


def _clamp_inspection(x: Inspection) -> Inspection:
    if _inspection_ok(x):
        return x

    def cands(c: tuple[Candidate, ...]) -> tuple[Candidate, ...]:
        return tuple(_clamp_token(y) for y in c)

    return _with(x, target_top=cands(x.target_top), draft_top=cands(x.draft_top),
                 residual_top=cands(x.residual_top), accept_p=_clamp_prob(x.accept_p, unset=-1.0),
                 u=_clamp_prob(x.u, unset=-1.0))


def _first_bad(ev: PassEvent, drafts: tuple[DraftToken, ...], emitted: tuple[Token, ...]) -> tuple[str, float] | None:
    """The first probability out of range, named (for the warning), or None."""
    for i, d in enumerate(drafts, start=1):
        for name in ("prob", "target_prob"):
            if not _prob_ok(getattr(d, name)):
                return f"draft {i}'s {name}", getattr(d, name)
    if ev.target is not None and not _prob_ok(ev.target.prob):
        return "the target token's prob", ev.target.prob
    for t in emitted:
        if not _prob_ok(t.prob):
            return "an emitted token's prob", t.prob
    if not (ev.draft_stop_p == -1.0 or _prob_ok(ev.draft_stop_p)):
        return "draft_stop_p", ev.draft_stop_p
    for x in ev.inspect:
        for c in (*x.target_top, *x.draft_top, *x.residual_top):
            if not _prob_ok(c.prob):
                return f"an inspector candidate's prob (position {x.position})", c.prob
        for name in ("accept_p", "u"):
            v = getattr(x, name)
            if not (v == -1.0 or _prob_ok(v)):
                return f"the inspector's {name} (position {x.position})", v
    return None
