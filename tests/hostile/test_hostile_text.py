"""Outside text never reaches the terminal as control characters (issue 26, part 1).

A property test feeds random code points (hypothesis) as token texts, model names, a prompt and the end
event's error through every face: headless replay (text and JSON), the race's text and JSON, attach's
headless text and JSON (a server's label values, error and streamed text), a cast file, and the TUI itself
(the replay app rendered by Textual's run_test through the cast's capture driver: the very bytes a
terminal would get). None of the forbidden code points (C0 but tab and newline, DEL, C1, the bidi
embeddings, overrides and isolates, lone surrogates) is found in any output stream; the JSON stays strict
RFC 8259 and parses back to the same text.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import math
import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from spectui.contract import events as ev
from spectui.contract.text import FORBIDDEN_RE, is_forbidden, json_text, visible, visible_line
from spectui.recording.trace import synthetic_run
from spectui.text.run import consume

# the report's attacks: OSC 0 (title), OSC 52 (clipboard), CSI 2J, CSI 6n (DSR), OSC 8, C1 CSI, BS CR BEL, RLO
ATTACKS = [
    "\x1b]0;PWNED\x07", "\x1b]52;c;cm0gLXJmIH4=\x07", "\x1b[2J", "\x1b[6n", "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\",
    "\x9b31m", "\x08\r\x07", "\u202eevil", "\ud800", "\udfff lone", "\x00\x7f\x85\u2066\u2069",
]
ALL_FORBIDDEN = "".join(chr(c) for c in [*range(0, 9), *range(11, 32), *range(0x7F, 0xA0), *range(0x202A, 0x202F),
                                       *range(0x2066, 0x206A), 0xDC00, 0xDFFF, 0xD800, 0xDBFF])

# any code point, with the dangerous ones often
outside = st.text(
    alphabet=st.one_of(st.characters(codec=None, exclude_categories=()),
                       st.sampled_from(list(ALL_FORBIDDEN)), st.sampled_from(["\x1b", "[", "]", ";", "\x07", "\n"])),
    max_size=24,
)


def forbidden_in(s: str) -> list[str]:
    return sorted({hex(ord(c)) for c in s if is_forbidden(c)})


def test_visible_makes_every_forbidden_code_point_visible():
    out = visible(ALL_FORBIDDEN + "\tok\n")
    assert not forbidden_in(out)
    assert out.endswith("\tok\n")  # tab and newline kept
    assert visible("\x1b]0;X\x07") == "\\x1b]0;X\\x07"
    assert visible("\u202e") == "\\u202e" and visible("\ud800") == "\\ud800" and visible("\x9b") == "\\x9b"
    assert visible_line("a\nb\tc") == "a\\nb\\tc"
    assert visible("plain ré 🙂 中文") == "plain ré 🙂 中文"  # printable text is untouched
    for c in ALL_FORBIDDEN:
        assert FORBIDDEN_RE.fullmatch(c)


def test_json_text_is_strict_and_keeps_the_value():
    obj = {"t": ALL_FORBIDDEN, "nan": math.nan, "inf": [math.inf, -math.inf, 1.5]}
    s = json_text(obj)
    assert not forbidden_in(s)
    back = json.loads(s, parse_constant=lambda c: pytest.fail(f"bare {c} in JSON"))
    assert back == {"t": ALL_FORBIDDEN, "nan": None, "inf": [None, None, 1.5]}


def poisoned(texts: list[str], n_passes: int = 4) -> list[ev.Event]:
    """A small well-formed run whose every outside word is one of ``texts`` (cycled)."""
    it = iter(texts * 50)
    out = []
    for e in synthetic_run(n_passes, seed=1):
        if isinstance(e, ev.RunStarted):
            e = dataclasses.replace(e, prompt=next(it),
                                    target=dataclasses.replace(e.target, name=next(it), path=next(it) + ".gguf"),
                                    draft=dataclasses.replace(e.draft, name=next(it)))
        elif isinstance(e, ev.PassEvent):
            e = dataclasses.replace(
                e, emitted=tuple(dataclasses.replace(t, text=next(it)) for t in e.emitted),
                drafts=tuple(dataclasses.replace(d, text=next(it)) for d in e.drafts),
                target=dataclasses.replace(e.target, text=next(it)) if e.target is not None else None)
        elif isinstance(e, ev.RunEnded):
            e = dataclasses.replace(e, error=next(it))
        out.append(e)
    return out


def headless_out(events, as_json: bool) -> str:
    buf = io.StringIO()
    consume(iter(events), buf, as_json=as_json)
    return buf.getvalue()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(outside, min_size=1, max_size=8))
@example(ATTACKS)
def test_headless_replay_text_and_json(texts):
    events = poisoned(texts)
    text = headless_out(events, as_json=False)
    assert not forbidden_in(text)
    js = headless_out(events, as_json=True)
    assert not forbidden_in(js)
    d = json.loads(js, parse_constant=lambda c: pytest.fail(f"bare {c}"))
    assert d["text"] == "".join(t.text for e in events if isinstance(e, ev.PassEvent) for t in e.emitted)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(outside, min_size=1, max_size=6))
@example(ATTACKS)
def test_race_text_and_json(tmp_path_factory, texts):
    from spectui.recording.trace import write_trace
    from spectui.text.race import print_outcome
    from spectui.views.race_outcome import outcome
    from spectui.views.race_timeline import Race, load_lane

    d = tmp_path_factory.mktemp("race")
    a, b = d / "a.jsonl", d / "b.jsonl"
    write_trace(a, poisoned(texts))
    write_trace(b, poisoned(list(reversed(texts))))
    race = Race([load_lane("A", a, on_warning=None), load_lane("B", b, on_warning=None)], any_prompt=True)
    for as_json in (False, True):
        buf = io.StringIO()
        print_outcome(race, outcome(race), buf, as_json=as_json)
        assert not forbidden_in(buf.getvalue())
        if as_json:
            json.loads(buf.getvalue(), parse_constant=lambda c: pytest.fail(f"bare {c}"))


def attach_events(texts: list[str]) -> list:
    it = iter(texts * 50)
    url = "http://127.0.0.1:1"
    counters = ev.EngineCounters(engine=next(it), model=next(it), speculation=True, num_drafts=10,
                                 num_draft_tokens=20, num_accepted_tokens=9)
    counters2 = dataclasses.replace(counters, num_drafts=20, num_draft_tokens=40, num_accepted_tokens=19)
    return [
        ev.AttachStarted(started_at=1.0, targets=(ev.Target(url),), interval=1.0, prompt=next(it), n_predict=4),
        ev.MetricsScraped(url=url, t=0.0, kind=ev.KIND_VLLM, engines=(counters,)),
        ev.RequestStarted(url=url, t=0.1, api="openai", prompt=next(it), n_predict=4),
        ev.RequestChunk(t=0.2, text=next(it), n_tokens=1),
        ev.RequestChunk(t=0.3, text=next(it), n_tokens=1),
        ev.MetricsScraped(url=url, t=1.0, kind=ev.KIND_VLLM, engines=(counters2,)),
        ev.MetricsScraped(url=url, t=2.0, kind=ev.KIND_VLLM, error="HTTP 500: " + next(it)),
        ev.RequestEnded(t=0.4, reason=ev.REQ_ERROR, error=next(it), n_tokens=2),
        ev.AttachEnded(t=2.0, reason="done"),
    ]


@settings(max_examples=60, deadline=None)
@given(st.lists(outside, min_size=1, max_size=6))
@example(ATTACKS)
@example(["\u2028", "\u2029"])  # line and paragraph separators: str.splitlines cut a --json line at them (found)
def test_attach_headless_text_and_json(texts):
    from spectui.text.attach import HeadlessFace

    for as_json in (False, True):
        buf = io.StringIO()
        face = HeadlessFace(buf, as_json)
        face.request_mode = False
        for e in attach_events(texts):
            face(e)
        face.request_mode = False
        face.tick()
        out = buf.getvalue()
        assert not forbidden_in(out), out
        if as_json:
            for line in out.splitlines():
                json.loads(line, parse_constant=lambda c: pytest.fail(f"bare {c}"))


# What Textual itself writes: SGR colours, cursor moves, private modes, OSC 22 (the pointer's shape).
TEXTUAL_OWN = re.compile(r"\x1b\[[0-9;]*[mHK]|\x1b\[\?[0-9;]*[hl]|\x1b\]22;[a-z-]*\x07")


def terminal_forbidden(stream: str) -> list[str]:
    return forbidden_in(TEXTUAL_OWN.sub("", stream))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(outside, min_size=1, max_size=6))
@example(ATTACKS)
@pytest.mark.slow  # a cast rendered whole
def test_tui_replay_stream_and_cast_file(tmp_path_factory, texts):
    """The replay TUI under Textual's run_test (the cast's capture driver records every byte the app
    writes), then the cast file made of it: Textual's own sequences only."""
    from spectui.commands.cast import frames, render_cast
    from spectui.tui.run.cast_render import capture

    events = poisoned(texts, n_passes=3)
    chunks, _ = asyncio.run(capture(events, frames(events, 8.0), 100, 30, 8.0, None))
    stream = "".join(c for _, c in chunks)
    assert "REPLAY" in stream
    assert not terminal_forbidden(stream)
    out = tmp_path_factory.mktemp("cast") / "x.cast"
    render_cast(events, out, cols=100, rows=30, speed=8.0)
    lines = out.read_text(encoding="utf-8").splitlines()
    assert not forbidden_in(lines[0])  # the header: the title holds the model names
    frames_out = [json.loads(line)[2] for line in lines[1:]]
    assert frames_out[0] == "\x1b[?25l\x1b[2J\x1b[H" and frames_out[-1] == "\x1b[?25h"  # spectui's own
    for data in frames_out[1:-1]:
        assert not terminal_forbidden(data)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(outside, min_size=1, max_size=6))
@example(ATTACKS)
def test_attach_tui_stream(texts):
    """The attach TUI (its cast capture: the real app under run_test) on a server's hostile words."""
    from spectui.tui.attach.cast_render import capture_attach

    chunks, _ = asyncio.run(capture_attach(attach_events(texts), 100, 30, 8.0, None))
    stream = "".join(c for _, c in chunks)
    assert not terminal_forbidden(stream)


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_replay_headless_cli_on_a_poisoned_trace(tmp_path):
    """The command itself (a subprocess, stdout a pipe): exit 0, no forbidden byte, the surrogate too."""
    import subprocess
    import sys

    from spectui.recording.trace import write_trace

    trace = tmp_path / "esc.jsonl"
    write_trace(trace, poisoned(ATTACKS))
    for extra in ([], ["--json"], ["--explain", "2"], ["--explain", "2:1", "--json"]):
        r = subprocess.run([sys.executable, "-m", "spectui", "replay", str(trace), "--headless", *extra],
                           capture_output=True, timeout=120)
        assert r.returncode == 0, r.stderr
        out = r.stdout.decode("utf-8")
        assert not forbidden_in(out) and not forbidden_in(r.stderr.decode("utf-8"))
        if "--json" in extra:
            json.loads(out, parse_constant=lambda c: pytest.fail(f"bare {c}"))
        if "--explain" not in extra:
            assert "\\x1b]52;c;" in out or "\\u001b]52;c;" in out  # shown, made visible
