"""Chat templates (spectui.engine.files.chat), as llama-cli / llama-server apply them: the GGUF's
tokenizer.chat_template rendered with the bindings' Jinja formatter, generation prompt on, no system message
unless asked, BOS not doubled; the live run's --chat / --no-chat (default: on when the model has a template),
recorded in the trace.
Real llama.cpp on a tiny GGUF written with a template (tests/tinymodels.py CHAT_TEMPLATE)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from spectui.contract import event_json
from spectui.contract.control import RunControl
from spectui.contract.events import PassEvent, RunStarted, Settings
from spectui.engine.files.chat import ChatTemplate, chat_messages
from spectui.recording.trace import iter_trace


def ids(events):
    return [t.id for ev in events if isinstance(ev, PassEvent) for t in ev.emitted]


def test_template_read_and_rendered(make_engine, tiny_chat_target, tiny_target):
    eng = make_engine(tiny_chat_target)
    tpl = eng.chat_template
    assert isinstance(tpl, ChatTemplate) and tpl.bos_token == "<s>" and tpl.add_bos  # noqa: S105 - a token
    assert tpl.label.startswith("tokenizer.chat_template sha256:") and len(tpl.sha) == 12
    text, label = eng.chat_prompt(chat_messages(["the hash map"]))
    # the template writes BOS first; the tokenizer adds it, so the rendered text drops it (llama.cpp's rule)
    assert text == "the user: the hash map\nthe answer:" and label == tpl.label
    assert eng.tokenize(text).count(1) == 1  # one BOS (id 1)
    with_system = tpl.render(chat_messages(["hi"], system="be brief"))
    assert with_system == "system: be brief\nthe user: hi\nthe answer:"
    two = tpl.render(chat_messages(["a", "b"], ["answer one"]))
    assert two == "the user: a\nthe answer: answer one\nthe user: b\nthe answer:"
    assert make_engine(tiny_target).chat_template is None


def test_run_records_the_template_and_counts_templated_tokens(make_engine, tiny_chat_target):
    eng = make_engine(tiny_chat_target)
    text, label = eng.chat_prompt(chat_messages(["the hash map handles collisions"]))
    evs = list(eng.run(text, RunControl(Settings(draft_max=0, drafter="none")), 12, chat_template=label))
    start = evs[0]
    assert isinstance(start, RunStarted) and start.chat_template == label and start.prompt == text
    assert start.prompt_tokens == len(eng.tokenize(text))
    raw = list(eng.run(text, RunControl(Settings(draft_max=0, drafter="none")), 12))
    assert raw[0].chat_template == "" and ids(raw) == ids(evs)  # the label is recorded, nothing else changes


def test_old_trace_without_the_field_reads():
    d = event_json.to_dict(RunStarted(prompt="x"))
    del d["chat_template"]
    assert event_json.from_dict(d).chat_template == ""


def run_cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "spectui", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.slow
def test_live_run_chat_default_and_no_chat(tmp_path, tiny_chat_target, tiny_target):
    on = tmp_path / "on.jsonl"
    r = run_cli("-m", tiny_chat_target, "--drafter", "ngram", "--headless", "--json", "-n", "6", "-t", "1",
                "-p", "the hash map", "--record", on)
    assert r.returncode == 0, r.stderr
    start = json.loads(r.stdout)["start"]
    assert start["chat_template"].startswith("tokenizer.chat_template sha256:")
    assert start["prompt"] == "the user: the hash map\nthe answer:"
    assert next(iter_trace(str(on))[1]).chat_template == start["chat_template"]

    r = run_cli("-m", tiny_chat_target, "--drafter", "ngram", "--headless", "--json", "-n", "6", "-t", "1",
                "-p", "the hash map", "--no-chat")
    assert r.returncode == 0, r.stderr
    start = json.loads(r.stdout)["start"]
    assert start["chat_template"] == "" and start["prompt"] == "the hash map"

    r = run_cli("-m", tiny_chat_target, "--drafter", "ngram", "--headless", "--json", "-n", "4", "-t", "1",
                "-p", "hi", "--system", "be brief")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["start"]["prompt"] == "system: be brief\nthe user: hi\nthe answer:"

    # a model without a template: raw text by default, --chat is a one-line error (exit 2)
    r = run_cli("-m", tiny_target, "--drafter", "ngram", "--headless", "--json", "-n", "4", "-t", "1", "-p", "hi")
    assert r.returncode == 0 and json.loads(r.stdout)["start"]["chat_template"] == ""
    r = run_cli("-m", tiny_target, "--drafter", "ngram", "--headless", "-n", "4", "-t", "1", "-p", "hi", "--chat")
    assert r.returncode == 2 and "no chat template" in r.stderr and len(r.stderr.strip().splitlines()) == 1
