"""`spectui race --target T [--draft D] -p PROMPT [--a SPEC --b SPEC]`: the spec grammar (one-line errors,
exit 2), and for real on the tiny llama.cpp models the tests build (tests/conftest.py): two settings
recorded one after the other, both traces readable and raced; at temperature 0 the target alone and
speculation emit the same tokens (greedy speculation is lossless)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from spectui.contract.errors import SpectuiError
from spectui.race.spec import parse_spec, slug, spec_settings
from spectui.recording.trace import read_trace

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def spectui(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": REPO, "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "spectui", *args], capture_output=True, text=True, cwd=REPO, env=env,
                          timeout=timeout)


def test_spec_grammar():
    assert parse_spec("k=0") == {"k": 0}
    assert parse_spec("k=4 temp=0.8 drafter=ngram") == {"k": 4, "temp": 0.8, "drafter": "ngram"}
    assert parse_spec("k=auto, T=0.5, seed=3, p-min=0.6, draft-min=1") == {
        "k": "cost", "temp": 0.5, "seed": 3, "p_min": 0.6, "draft_min": 1}
    s = spec_settings(parse_spec("k=0"), have_draft=True)
    assert (s.draft_max, s.drafter) == (0, "none") and slug(s) == "target-alone"
    s = spec_settings(parse_spec("k=4 temp=0.8"), have_draft=True)
    assert (s.draft_max, s.temperature, s.drafter) == (4, 0.8, "model") and slug(s) == "k4-model-T0.8"
    s = spec_settings(parse_spec("k=auto drafter=ngram"))
    assert s.auto == "cost" and s.drafter == "ngram"


@pytest.mark.parametrize("text, says", [
    ("k=", "not key=value"), ("k", "not key=value"), ("speed=3", "unknown key"),
    ("k=99", "k values must be between 0 and 32, not 99"),
    ("temp=3", "bad temp"), ("drafter=magic", "bad drafter"), ("k=1 k=2", "twice"), ("", "empty"),
    ("p-min=2", "bad p-min"),
])
def test_bad_specs_are_one_line_errors(text, says):
    with pytest.raises(SpectuiError, match=says):
        parse_spec(text, "--b")


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_bad_spec_on_the_command_line_exits_2_before_loading(tmp_path):
    r = spectui("race", "--target", str(tmp_path / "missing.gguf"), "-p", "x", "--b", "k=4 speed=2")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "unknown key" in r.stderr
    r = spectui("race", "--target", str(tmp_path / "missing.gguf"), "-p", "x", "--b", "k=2 drafter=model")
    assert r.returncode == 2 and "needs --draft" in r.stderr
    r = spectui("race", "a.jsonl", "b.jsonl", "--a", "k=0")
    assert r.returncode == 2 and "need --target" in r.stderr


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_recorded_race_on_tiny_models(tmp_path, tiny_target, tiny_draft_same):
    out = tmp_path / "rec"
    prompt = "one two three four five six seven eight nine ten"
    r = spectui("race", "--target", str(tiny_target), "--draft", str(tiny_draft_same), "-p", prompt, "-n", "24",
                "--a", "k=0", "--b", "k=3", "--record-dir", str(out), "-t", "1", "--headless", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert "one after the other" in d["note"] and "contention, not speculation" in d["note"]
    a, b = d["lanes"]
    assert a["label"].startswith("A: target alone T=0") and b["label"].startswith("B: draft model k=3 T=0")
    assert a["drafted"] == 0 and b["drafted"] > 0
    assert d["same_tokens"], d  # greedy: speculation emits the target's own tokens
    files = sorted(os.listdir(out))
    assert files == ["race-A-target-alone.jsonl.gz", "race-B-k3-model.jsonl.gz"]
    for name in files:
        t = read_trace(out / name)
        assert t.header["race"]["sequential"] is True
        assert t.events[-1].type == "end" and t.events[-1].reason in ("n_predict", "eog")
    # a second recording into the same folder keeps the first (nothing already recorded is lost)
    r = spectui("race", "--target", str(tiny_target), "-p", prompt, "-n", "8", "--b", "k=2 drafter=ngram",
                "--record-dir", str(out), "-t", "1", "--headless")
    assert r.returncode == 0, r.stderr
    assert "race-A-target-alone~1.jsonl.gz" in os.listdir(out) and len(os.listdir(out)) == 4
    assert "recorded one after the other" in r.stdout
    # the recorded traces race as they are
    r = spectui("race", str(out / files[0]), str(out / files[1]), "--headless")
    assert r.returncode == 0, r.stderr
    assert re.search(r"^same \d+ tokens$", r.stdout, re.M), r.stdout


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_recorded_race_without_record_dir_names_its_temp_folder(tiny_target):
    r = spectui("race", "--target", str(tiny_target), "-p", "alpha beta gamma", "-n", "6", "--b", "k=2 drafter=ngram",
                "-t", "1", "--headless")
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stderr.splitlines() if "recording the race's traces in" in x)
    folder = line.split(" in ", 1)[1].split(" (")[0]
    assert os.path.isdir(folder) and len(os.listdir(folder)) == 2


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_a_prompt_that_does_not_fit_exits_1(tiny_target):
    r = spectui("race", "--target", str(tiny_target), "-p", "word " * 3000, "-n", "4", "-c", "256", "-t", "1",
                "--headless")
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "does not fit" in r.stderr
