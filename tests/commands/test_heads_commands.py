"""EAGLE-3 heads and MTP layers in every command that loads models (issue 27 item 1): sweep, bench, race and probe
draft with ``--drafter eagle3 | mtp`` under one convention (``--draft`` is the separate draft model, or the head
itself as llama.cpp's -md; ``--head FILE`` is an EAGLE-3 head beside it; MTP needs no file), on the tiny GGUFs
benchmarks/make_spec_models.py writes (their agreeing variants, so the heads' drafts are accepted) and a tiny
draft model of the same vocabulary (tests/tinymodels.py).

- each command with each head kind exits 0, its output names the kind, and its JSON has the fields;
- one engine holds a draft model and a head, and each drafter's run in it equals its run in an engine of its own
  (the head reads the target's decodes only in the runs it drafts: the others pay nothing for it);
- what a command cannot draft with gets one line and exit 2, before any weights load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tinymodels
from in_process import spectui_in_process

from spectui.contract.control import RunControl
from spectui.contract.events import PassEvent, RunEnded, RunStarted, Settings
from spectui.engine.loop import Engine
from spectui.recording.trace import read_trace

ROOT = Path(__file__).resolve().parents[2]
MAKER = ROOT / "benchmarks" / "make_spec_models.py"
PROMPT = "the hash map"
KINDS = ("eagle3", "mtp")
CLI_KINDS = ("eagle3", pytest.param("mtp", marks=pytest.mark.slow))  # fast lane: eagle3 (one CLI path for both)


def _build(d: Path) -> None:
    r = subprocess.run([sys.executable, str(MAKER), str(d), "--eagle3-agree", "0.5", "--mtp-agree", "0.5"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    tinymodels.build_model(d / "draft.gguf", seed=0, noise=0.1)


@pytest.fixture(scope="module")
def spec_dir(tiny_dir) -> Path:
    """The models, made once per test run for every pytest-xdist worker (``tinymodels.shared_folder``): read only."""
    key = b"".join(p.read_bytes() for p in (Path(__file__), MAKER, ROOT / "benchmarks" / "make_block_models.py",
                                             Path(tinymodels.__file__)))
    return tinymodels.shared_folder(tiny_dir, "heads-commands", key, _build)


def _files(d: Path, kind: str) -> list[str]:
    """The model options of a command that drafts with ``kind`` beside the separate draft model."""
    if kind == "eagle3":
        return ["--target", str(d / "eagle3-agree-target.gguf"), "--draft", str(d / "draft.gguf"),
                "--head", str(d / "eagle3-agree-draft.gguf")]
    return ["--target", str(d / "mtp-agree-target.gguf"), "--draft", str(d / "draft.gguf")]


def _spectui(*args: str, cache: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))  # the probe's caches of this test, never the user's
    return subprocess.run([sys.executable, "-m", "spectui", *args, "-t", "1"], capture_output=True, text=True,
                          timeout=timeout, env=env)


def _in_process(*args: str, cache: Path) -> subprocess.CompletedProcess:
    return spectui_in_process(*args, "-t", "1", env={"XDG_CACHE_HOME": str(cache)})


@pytest.fixture(params=["in_process", pytest.param("process", marks=pytest.mark.slow)])
def cli(request):
    """How the commands run: in this process (the fast lane) or each as its own process (the full suite)."""
    return _in_process if request.param == "in_process" else _spectui


def _trace_drafter(path: str) -> str:
    """The drafter a recorded run started with (its RunStarted, read back by the trace reader)."""
    start = next(ev for ev in read_trace(path).events if isinstance(ev, RunStarted))
    return start.settings.drafter


@pytest.mark.parametrize("kind", CLI_KINDS)
def test_bench_runs_model_ngram_and_the_head_side_by_side(cli, spec_dir, tmp_path, kind):
    r = cli("bench", *_files(spec_dir, kind), "--drafter", f"model,ngram,{kind}", "-n", "12", "-k", "3",
                 "--limit", "2", "--json", cache=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["params"]["drafters"] == ["model", "ngram", kind]
    if kind == "eagle3":
        assert doc["params"]["head"] == str(spec_dir / "eagle3-agree-draft.gguf")
    runs = {d: [x for x in doc["runs"] if x["drafter"] == d] for d in ("none", "model", "ngram", kind)}
    assert all(len(v) == 2 for v in runs.values()), {d: len(v) for d, v in runs.items()}
    head_runs = runs[kind]
    assert sum(x["n_drafted"] for x in head_runs) > 0 and sum(x["n_accepted"] for x in head_runs) > 0
    assert all(x["equal"] is True for x in head_runs)  # lossless: each equals its baseline's output
    overall = [s for s in doc["summaries"] if s["category"] == "overall" and s["setting"]["drafter"] == kind]
    assert len(overall) == 1 and overall[0]["equal"] == overall[0]["compared"] == 2
    labels = {s["setting"]["label"] for s in doc["summaries"]}
    assert f"{kind} k=3" in labels and "model k=3" in labels
    text = cli("bench", *_files(spec_dir, kind), "--drafter", kind, "-n", "8", "-k", "2", "--limit", "1",
                    cache=tmp_path)
    assert text.returncode == 0, text.stderr
    assert f"{kind} k=2" in text.stdout


@pytest.mark.parametrize("kind", CLI_KINDS)
def test_sweep_takes_k_over_a_head(cli, spec_dir, tmp_path, kind):
    r = cli("sweep", *_files(spec_dir, kind), "--drafter", kind, "-n", "12", "-k", "1,3", "--temp", "0",
                 "-p", PROMPT, "--json", "--record-dir", str(tmp_path / "traces"), cache=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["params"]["drafter"] == kind
    spec = [x for x in doc["runs"] if x["drafter"] == kind]
    assert sorted(x["k"] for x in spec) == [1, 3]
    assert all(x["n_drafted"] > 0 for x in spec) and sum(x["n_accepted"] for x in spec) > 0
    assert {_trace_drafter(x["trace"]) for x in spec} == {kind}


def test_sweep_with_a_head_alone_detects_it(cli, spec_dir, tmp_path):
    """--draft as the head (llama.cpp's -md): the sweep drafts with the kind its header says."""
    r = cli("sweep", "--target", str(spec_dir / "eagle3-agree-target.gguf"), "--draft",
                 str(spec_dir / "eagle3-agree-draft.gguf"), "-n", "8", "-k", "2", "--temp", "0", "-p", PROMPT,
                 "--json", cache=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["params"]["drafter"] == "eagle3"


@pytest.mark.parametrize("kind", CLI_KINDS)
def test_race_a_head_lane_against_a_draft_model_lane(cli, spec_dir, tmp_path, kind):
    rec = tmp_path / "race"
    r = cli("race", *_files(spec_dir, kind), "--a", "k=3 drafter=model", "--b", f"k=3 drafter={kind}",
                 "-p", PROMPT, "-n", "16", "--json", "--record-dir", str(rec), cache=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    a, b = doc["lanes"]
    assert "draft model k=3" in a["label"] and f"{kind} k=3" in b["label"]
    assert b["drafted"] > 0 and b["acceptance_rate"] > 0
    assert _trace_drafter(a["path"]) == "model" and _trace_drafter(b["path"]) == kind


def test_race_defaults_to_the_head_against_the_draft_model(cli, spec_dir, tmp_path):
    """--draft and --head given, no --a/--b: lane A drafts with the model, lane B with the head."""
    r = cli("race", *_files(spec_dir, "eagle3"), "-p", PROMPT, "-n", "8", "--json", "--record-dir",
                 str(tmp_path / "race"), cache=tmp_path)
    assert r.returncode == 0, r.stderr
    a, b = json.loads(r.stdout)["lanes"]
    assert _trace_drafter(a["path"]) == "model" and _trace_drafter(b["path"]) == "eagle3"


@pytest.mark.parametrize("kind", CLI_KINDS)
def test_probe_measures_a_head_beside_the_draft_model_and_caches_it(cli, spec_dir, tmp_path, kind):
    args = [*_files(spec_dir, kind), *(["--drafter", "mtp"] if kind == "mtp" else []), "--max-batch", "3",
            "--repeats", "2"]
    r = cli("probe", *args, "--json", cache=tmp_path)
    assert r.returncode == 0, r.stderr
    head = json.loads(r.stdout)["head"]
    assert head["kind"] == kind and head["k"] >= 1 and not head["cached"]
    assert head["head_step_ms"] > 0 and head["head_read_ms"] > 0 and head["target_ms"] > 0
    assert head["draft_step_ms"] > 0  # the separate draft model's step, measured in the same run
    assert head["head_ratio"] == pytest.approx(head["head_step_ms"] / head["target_ms"])
    assert head["draft_ratio"] == pytest.approx(head["draft_step_ms"] / head["target_ms"])
    assert Path(head["cache_file"]).is_file() and Path(head["cache_file"]).is_relative_to(tmp_path)
    again = cli("probe", *args, cache=tmp_path)  # the text, from the cache
    assert again.returncode == 0, again.stderr
    word = {"eagle3": "EAGLE-3 head (eagle3)", "mtp": "MTP head (mtp)"}[kind]
    assert f"{word}, 1 draft step" in again.stdout and "separate draft model, 1 draft step" in again.stdout
    assert "draft step cost, k=4 (cached" in again.stdout
    fresh = cli("probe", *args, "--json", "--refresh", cache=tmp_path)
    assert fresh.returncode == 0 and not json.loads(fresh.stdout)["head"]["cached"]


def test_probe_without_a_head_prints_no_head_cost(cli, spec_dir, tmp_path):
    r = cli("probe", "--target", str(spec_dir / "eagle3-agree-target.gguf"), "--draft",
                 str(spec_dir / "draft.gguf"), "--max-batch", "3", "--repeats", "1", "--json", cache=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "head" not in json.loads(r.stdout)


@pytest.mark.parametrize("extra, drafter", [([], "eagle3"), (["--drafter", "model"], "model")])
def test_the_live_run_takes_a_head_beside_a_draft_model(cli, spec_dir, tmp_path, extra, drafter):
    """spectui run: --head beside --draft loads both (the TUI's d switches between them); the run starts with
    the head unless --drafter says otherwise, and its trace records what drafted."""
    trace = tmp_path / "run.trace"
    r = cli(*_files(spec_dir, "eagle3"), *extra, "--headless", "-n", "12", "-p", PROMPT, "--no-probe",
                 "--record", str(trace), cache=tmp_path)
    assert r.returncode == 0, r.stderr
    assert ("drafter                eagle3 (" in r.stdout) == (drafter == "eagle3")  # the summary names a head
    assert "draft  tiny-s0-n0.1" in r.stdout  # the draft model is loaded beside the head either way
    assert _trace_drafter(str(trace)) == drafter


@pytest.mark.slow  # four CLI runs
def test_a_missing_head_file_is_one_line(spec_dir, tmp_path):
    for cmd in (["sweep", "-n", "4"], ["bench", "-n", "4"], ["probe"], ["--headless", "-n", "4"]):
        r = _spectui(*cmd, "--target", str(spec_dir / "eagle3-agree-target.gguf"), "--head",
                     str(tmp_path / "missing.gguf"), cache=tmp_path)
        assert r.returncode == 2, (cmd, r.stderr)
        assert "head file not found" in r.stderr and len(r.stderr.strip().splitlines()) == 1, (cmd, r.stderr)


def _run(e: Engine, drafter: str, n: int = 16):
    evs = list(e.run(PROMPT, RunControl(Settings(draft_max=3, drafter=drafter)), n))
    end = evs[-1]
    assert isinstance(evs[0], RunStarted) and isinstance(end, RunEnded) and end.error == ""
    return [t.id for ev in evs if isinstance(ev, PassEvent) for t in ev.emitted], end.n_drafted, end.n_accepted


@pytest.mark.parametrize("kind", KINDS)
def test_one_engine_holds_a_draft_model_and_a_head(spec_dir, kind):
    """Each drafter's run in the shared engine equals its run in an engine of its own (tokens, drafted and
    accepted totals): the head reads no decode of the model's or the target-alone runs, and they none of its."""
    target = str(spec_dir / f"{kind}-agree-target.gguf")
    head = str(spec_dir / "eagle3-agree-draft.gguf") if kind == "eagle3" else None
    draft = str(spec_dir / "draft.gguf")
    kw = dict(n_ctx=256, threads=1, warn=lambda m: None)
    with Engine(target, draft, head=kind, head_file=head or target, head_in_every_run=False, **kw) as both:
        assert both.draft is not None and both.head == kind and both.head_file == (head or target)
        shared = {d: _run(both, d) for d in ("none", kind, "model", "ngram")}
    with Engine(target, draft, **kw) as plain:
        alone = {d: _run(plain, d) for d in ("none", "model", "ngram")}
    with Engine(target, head, head=kind, **kw) as own:
        alone[kind] = _run(own, kind)
    assert shared == alone
    assert shared[kind][0] == shared["none"][0] and shared[kind][2] > 0  # lossless, and the head is accepted


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("every_run", [False, True])
def test_a_run_without_the_head_pays_nothing_for_it_where_it_cannot_switch(spec_dir, kind, every_run):
    """head_in_every_run False (bench, sweep, race, probe): a run that does not draft with the head leaves the
    head's cache empty (it read none of the target's decodes); True (spectui run, whose TUI may switch to the
    head mid-run): the head has read every target decode, the prompt's and each pass's."""
    from spectui.engine.llama.llama_lib import llama

    target = str(spec_dir / f"{kind}-agree-target.gguf")
    head = str(spec_dir / "eagle3-agree-draft.gguf") if kind == "eagle3" else None
    with Engine(target, head, n_ctx=256, threads=1, head=kind, head_in_every_run=every_run,
                warn=lambda m: None) as e:
        ids, _, _ = _run(e, "none")
        pos_max = llama().llama_memory_seq_pos_max(e.parts().head.head.mem, 0)
        n_prompt = len(e.tokenize(PROMPT))
        if every_run:  # the prompt and every pass's tokens (EAGLE-3's cache lags the target's by one position)
            assert pos_max >= n_prompt + len(ids) - 3, (pos_max, n_prompt, len(ids))
        else:
            assert pos_max == -1, pos_max
        _run(e, kind)  # the next run drafting with it starts from an empty cache either way
        assert llama().llama_memory_seq_pos_max(e.parts().head.head.mem, 0) >= n_prompt


def test_a_run_that_did_not_start_with_the_head_cannot_switch_to_it(spec_dir):
    target = str(spec_dir / "mtp-agree-target.gguf")
    with Engine(target, None, n_ctx=256, threads=1, head="mtp", head_in_every_run=False,
                warn=lambda m: None) as e:
        control = RunControl(Settings(draft_max=3, drafter="ngram"))
        evs = []
        for ev in e.run(PROMPT, control, 16):
            evs.append(ev)
            if isinstance(ev, PassEvent) and ev.index == 1:
                control.update(drafter="mtp")
    end = evs[-1]
    assert isinstance(end, RunEnded) and end.reason == "error" and "only in runs that start with it" in end.error


@pytest.mark.parametrize("args, message", [
    (["bench", "--drafter", "eagle3,mtp"], "drafts with one head at a time: give eagle3 or mtp, not both"),
    (["bench", "--drafter", "model,eagle3", "--draft", "{head}"],
     "--draft {head} is an EAGLE-3 head: give it as --head"),
    (["sweep", "--drafter", "eagle3", "--draft", "{draft}"], "--drafter eagle3 needs an EAGLE-3 head"),
    (["sweep", "--drafter", "model", "--draft", "{draft}", "--head", "{head}"], "--head {head} is the EAGLE-3 head for --drafter eagle3"),  # noqa: E501
    (["race", "--draft", "{head}", "--head", "{head}", "-p", "x"], "is itself a head (eagle3): give the head once"),
    (["probe", "--drafter", "mtp"], "--drafter mtp needs a target with MTP (NextN) layers"),
    (["sweep", "--drafter", "mtp", "--draft", "{head}"], "is an EAGLE-3 head (drop it, or use --drafter eagle3)"),
])
def test_what_a_command_cannot_draft_with_is_one_line(cli, spec_dir, tmp_path, args, message):
    names = {"head": str(spec_dir / "eagle3-agree-draft.gguf"), "draft": str(spec_dir / "draft.gguf")}
    r = cli(*[a.format(**names) for a in args], "--target", str(spec_dir / "eagle3-agree-target.gguf"),
                 cache=tmp_path)
    assert r.returncode == 2, (args, r.stderr)
    assert message.format(**names) in r.stderr, (args, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
