"""--pipeline in the commands: the race's and the bench's settings, the options' one-line errors, a headless
pipelined run and --pipeline auto's recorded choice on the tiny llama.cpp models (in process)."""

from __future__ import annotations

import json

import pytest
from in_process import spectui_in_process

from spectui.bench.plan import make_settings, parse_pipelines
from spectui.contract.errors import SpectuiError
from spectui.contract.events import RunStarted
from spectui.race.spec import parse_spec, slug, spec_settings
from spectui.views.race_timeline import setting_text


@pytest.fixture
def cli():
    return lambda *args: spectui_in_process(*args, env={"NO_COLOR": "1"})


def test_race_and_bench_settings():
    assert parse_spec("k=3 pipeline=on") == {"k": 3, "pipeline": True}
    s = spec_settings(parse_spec("k=3 pipeline=on"), have_draft=True)
    assert s.pipeline and slug(s) == "k3-model-pipelined"
    assert setting_text(RunStarted(settings=s, pipeline_threads=(1, 1))) == "draft model k=3 T=0 pipelined 1+1"
    with pytest.raises(SpectuiError, match="bad pipeline"):
        parse_spec("pipeline=yes")
    with pytest.raises(SpectuiError, match="needs drafter=model"):
        spec_settings(parse_spec("k=3 drafter=ngram pipeline=on"), have_draft=True)
    assert parse_pipelines("off,on", True) == [False, True] and parse_pipelines(None, False) == [False]
    with pytest.raises(SpectuiError, match="needs a draft model"):
        parse_pipelines("on", False)
    with pytest.raises(SpectuiError, match="takes off, on or off,on"):
        parse_pipelines("maybe", True)
    rows = make_settings([2], [0.0], ["model", "ngram"], [False, True])
    assert [r.label for r in rows] == ["target only", "model k=2", "model k=2 pipelined", "ngram k=2"]
    assert rows[2].tag == "model-k2-t0-pipe"


def test_pipeline_on_without_a_draft_model_is_one_line_exit_2(cli, tiny_target):
    r = cli("-m", str(tiny_target), "-p", "x", "-n", "4", "--headless", "--pipeline", "on", "-t", "1")
    assert r.returncode == 2 and "--pipeline on needs a draft model" in r.stderr
    r = cli("-m", str(tiny_target), "-p", "x", "-n", "4", "--headless", "--pipeline", "sometimes")
    assert r.returncode == 2


def test_headless_pipelined_run_and_auto(cli, tiny_target, tiny_draft_noisy):
    args = ("-m", str(tiny_target), "-md", str(tiny_draft_noisy), "-p", "the hash map", "-n", "24", "-t", "1",
            "-td", "1", "--json")
    r = cli(*args, "--pipeline", "on")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["pipeline"]["passes"] > 0 and d["pipeline"]["threads"] == [1, 1]
    assert d["start"]["settings"]["pipeline"] is True and d["start"]["threads_draft"] == 1
    r = cli(*args, "--pipeline", "auto")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["start"]["pipeline_choice"].startswith("auto: ")  # what it chose, with its figures
    assert d["start"]["pipeline_choice"].startswith("auto: pipelined") == d["start"]["settings"]["pipeline"]


def test_a_race_of_sequential_against_pipelined(cli, tmp_path, tiny_target, tiny_draft_noisy):
    """`spectui race --a "pipeline=off" --b "pipeline=on"`: both recorded one after the other on one engine, raced
    on one clock; at T = 0 the same tokens (the pipeline is lossless), the B lane's trace records its passes."""
    from spectui.recording.trace import read_trace

    out = tmp_path / "rec"
    r = cli("race", "--target", str(tiny_target), "--draft", str(tiny_draft_noisy), "-p", "the hash map handles",
            "-n", "24", "--a", "k=3 pipeline=off", "--b", "k=3 pipeline=on", "--record-dir", str(out), "-t", "1",
            "--headless", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    a, b = d["lanes"]
    assert "pipelined" not in a["label"] and "pipelined" in b["label"]
    assert d["same_tokens"], d
    trace = read_trace(out / "race-B-k3-model-pipelined.jsonl.gz")
    passes = [e for e in trace.events if e.type == "pass" and not e.prefill]
    assert passes and all(p.settings.pipeline and p.pipeline is not None for p in passes if p.k)


def test_bench_runs_both_side_by_side(cli, tmp_path, tiny_target, tiny_draft_noisy):
    q = tmp_path / "q.jsonl"
    q.write_text('{"question_id": 1, "category": "coding", "turns": ["the hash map handles"]}\n')
    r = cli("bench", "-m", str(tiny_target), "-md", str(tiny_draft_noisy), "--prompts", str(q), "-n", "16", "-k",
            "2", "-t", "1", "--pipeline", "off,on", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    labels = {(s["setting"]["label"], s["setting"]["pipeline"]) for s in d["summaries"]}
    assert {("model k=2", False), ("model k=2 pipelined", True)} <= labels, labels
    assert {run["pipeline"] for run in d["runs"]} == {False, True}
