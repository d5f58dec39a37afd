"""spectui bench on the real llama.cpp with the tiny GGUF pair: the plan's ABBA order, the measurement (baseline and
settings through the same loop, equal outputs at temperature 0 by the tests' own near-tie rule), the report's
numbers against the recorded traces replayed with ``spectui replay --headless --json``, the exports, and the
faults (a prompt that does not fit, a missing category, Ctrl+C)."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from greedy_checks import reference

from spectui.analysis.cost.costmodel import leviathan
from spectui.analysis.lossless import check, first_near_tie, margins_of
from spectui.bench.aggregate import OVERALL
from spectui.bench.plan import BASELINE, Setting, make_jobs, make_settings, parse_drafters
from spectui.bench.report import break_even_acceptance
from spectui.contract.control import RunControl
from spectui.contract.errors import SpectuiError
from spectui.contract.events import Settings

PROMPTS = [
    {"question_id": 1, "category": "lookup", "turns": ["the hash map key value table bucket chain the hash map key",
                                                       "and the table again"]},
    {"question_id": 2, "category": "lookup", "turns": ["code python function return def class if else while loop"]},
    {"question_id": 3, "category": "free", "turns": ["the a an of to in and is it that for on with as was at by"]},
    {"question_id": 4, "category": "free", "turns": ["collision collisions handles handle step explanation how"]},
]


def write_prompts(path, records=PROMPTS):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def bench(*args, timeout=300, **kw):
    return subprocess.run([sys.executable, "-m", "spectui", "bench", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, **kw)


def test_plan_abba_and_settings():
    settings = make_settings([2, 4], [0.0], ["model", "ngram"])
    assert settings[0] == Setting(BASELINE, 0, 0.0) and len(settings) == 5
    jobs = make_jobs(3, settings, 2)
    assert len(jobs) == 3 * 5 * 2
    first, second = [j.setting for j in jobs[:5]], [j.setting for j in jobs[5:10]]
    assert second == list(reversed(first))  # A B B A
    assert [j.setting for j in jobs[15:20]] == second  # repeat 2 starts the other way round
    with pytest.raises(SpectuiError, match="above 0"):
        make_settings([0], [0.0], ["ngram"])
    with pytest.raises(SpectuiError, match="needs --draft"):
        parse_drafters("model", have_draft=False)
    assert parse_drafters(None, have_draft=False) == ["ngram"]
    # "+" joins a chain (spectui's names, llama.cpp's too, in the chain's priority order); "," separates settings
    assert parse_drafters("model+ngram-mod,model, draft-simple", have_draft=True) == ["ngram-mod,model", "model"]
    assert Setting("ngram-mod,model", 8, 0.0).label == "ngram-mod+model k=8"
    assert Setting("ngram-mod,model", 8, 0.0).tag == "ngram-mod+model-k8-t0"
    for bad, match in (("ngram+none", "cannot be part of a chain"), ("ngram+nope", "no drafter is named 'nope'"),
                       ("none", "runs the target alone anyway"), ("ngram-mod+model", "needs --draft")):
        with pytest.raises(SpectuiError, match=match):
            parse_drafters(bad, have_draft=False)


def test_break_even_acceptance():
    assert break_even_acceptance(0.9, 2) == 0.0
    assert break_even_acceptance(3.5, 2) is None  # more than k + 1 tokens needed
    a = break_even_acceptance(1.6, 2)
    assert abs(leviathan(a, 2) - 1.6) < 1e-9


def test_margins_rule_is_the_tests_rule(make_engine, tiny_target):
    """The bench's lossless check reads the margins from the events (--inspect-top); they are the debug hook's
    top-two logit margins the engine tests use, and the cut is the same first near tie."""
    eng = make_engine(tiny_target, inspect_top=1)
    ref_toks, ref_margins = reference(eng, n_predict=40)
    evs = list(eng.run("the hash map handles collisions", RunControl(Settings(draft_max=0, drafter="none")), 40))
    m = margins_of(evs)
    assert m is not None and len(m) == len(ref_margins)
    assert m == pytest.approx(ref_margins, abs=1e-4)
    assert first_near_tie(m) == first_near_tie(ref_margins)
    assert check(ref_toks, ref_toks, m).equal
    changed = ref_toks[:-1] + [ref_toks[-1] + 1]  # the last token differs
    c = check(changed, ref_toks, m)
    if first_near_tie(m) == len(m):  # no near tie: the difference counts
        assert not c.equal and c.first_difference == len(ref_toks) - 1 and c.checked == len(ref_toks)
    else:  # it lies past the first near tie: not judged
        assert c.checked == first_near_tie(m) and c.equal == (c.checked < len(ref_toks))


@pytest.mark.slow
def test_bench_end_to_end(tmp_path, tiny_target, tiny_draft_noisy):
    prompts = write_prompts(tmp_path / "q.jsonl")
    rec = tmp_path / "traces"
    out_json, out_csv, out_md = tmp_path / "b.json", tmp_path / "b.csv", tmp_path / "b.md"
    r = bench("-m", tiny_target, "-md", tiny_draft_noisy, "--prompts", prompts, "-n", "24", "-k", "2",
              "--drafter", "model,ngram", "-t", "1", "--record-dir", rec, "--json", out_json, "--csv", out_csv,
              "--markdown", out_md, "--repeat", "2")
    assert r.returncode == 0, r.stderr
    data = json.loads(out_json.read_text())
    assert data["status"]["status"] == "done"
    runs = data["runs"]
    assert len(runs) == 4 * 3 * 2  # prompts x (baseline + 2 settings) x repeats
    summ = {(s["category"], s["setting"]["label"]): s for s in data["summaries"]}
    # greedy speculation is lossless: every speculative run equals its baseline up to the first near tie
    for label in ("model k=2", "ngram k=2"):
        ov = summ[(OVERALL, label)]
        assert ov["compared"] == 8 and ov["equal"] == 8, ov["unequal"]
        assert ov["prompts"] == 4 and ov["runs"] == 8
        assert 1.0 <= ov["mean_accepted_tokens"] <= 3.0
    # speedup = mean spec tokens/s / mean baseline tokens/s of the same runs
    for cat in ("lookup", "free"):
        s = summ[(cat, "model k=2")]
        spec_tps = [x["tokens_per_second"] for x in runs if x["category"] == cat and x["drafter"] == "model"]
        base_tps = [x["tokens_per_second"] for x in runs if x["category"] == cat and x["drafter"] == "none"]
        assert s["speedup"] == pytest.approx((sum(spec_tps) / len(spec_tps)) / (sum(base_tps) / len(base_tps)))
        assert s["speedup_range"]["lo"] <= s["speedup_range"]["median"] <= s["speedup_range"]["hi"]

    # the category's mean accepted tokens equals the one recomputed from its traces by spectui replay
    traces = sorted(rec.iterdir())
    assert len(traces) == len(runs) and all(x["trace"] for x in runs)
    for cat in ("lookup", "free"):
        acc = drafted_passes = 0
        for x in runs:
            if x["category"] != cat or x["drafter"] != "model":
                continue
            rep = subprocess.run([sys.executable, "-m", "spectui", "replay", x["trace"], "--headless", "--json"],
                                 capture_output=True, text=True, timeout=60)
            assert rep.returncode == 0, rep.stderr
            j = json.loads(rep.stdout)
            acc += j["n_accept"]
            drafted_passes += sum(1 for p in j["passes"] if p["drafts"])
        assert summ[(cat, "model k=2")]["mean_accepted_tokens"] == pytest.approx(1 + acc / drafted_passes, abs=1e-12)

    lines = list(csv.DictReader(io.StringIO(out_csv.read_text())))
    assert len(lines) == len(runs) and {ln["drafter"] for ln in lines} == {"none", "model", "ngram"}
    md = out_md.read_text().splitlines()
    assert md[0] == "<!-- spectui bench report -->"  # spectui's own file: a later bench may replace it
    assert md[2] == "| Method | Temp | lookup | free | #Mean accepted tokens | Overall |"
    assert md[4].startswith("| model k=2 | 0 | ") and md[4].endswith("x |")
    # the terminal: table, chart and one sentence per category saying which setting is best
    assert "mean acc." in r.stdout and "speedup over the target alone" in r.stdout
    for cat in ("lookup", "free", "Overall"):
        line = next(ln for ln in r.stdout.splitlines() if ln.startswith(f"{cat}: "))
        assert ("wins" in line) or ("target only is best" in line)
    assert "Equal outputs (temp 0): 16 of 16" in r.stdout


@pytest.mark.slow
def test_a_chain_setting_end_to_end(tmp_path, tiny_target, tiny_draft_noisy):
    """--drafter ngram-simple+model,model: the chain is one setting beside the draft model alone, its passes drafted by
    its members (each pass names who), its outputs equal the baseline's, and the report names each category's
    winner among both settings and the target alone (the terminal, --json's winners, the --markdown export)."""
    prompts = write_prompts(tmp_path / "q.jsonl", [PROMPTS[0], PROMPTS[2]])
    rec = tmp_path / "traces"
    r = bench("-m", tiny_target, "-md", tiny_draft_noisy, "--prompts", prompts, "-n", "24", "-k", "3", "-t", "1",
              "--drafter", "ngram-simple+model,model", "--record-dir", rec, "--json", tmp_path / "b.json")
    assert r.returncode == 0, r.stderr
    data = json.loads((tmp_path / "b.json").read_text())
    assert data["params"]["drafters"] == ["ngram-simple,model", "model"]
    runs = data["runs"]
    assert sorted({x["drafter"] for x in runs}) == ["model", "ngram-simple,model", "none"] and len(runs) == 6
    summ = {(s["category"], s["setting"]["label"]): s for s in data["summaries"]}
    chain = summ[(OVERALL, "ngram-simple+model k=3")]
    assert chain["compared"] == 2 and chain["equal"] == 2, chain["unequal"]
    assert chain["passes_drafted"] > 0 and chain["n_passes"] >= chain["passes_drafted"]
    from spectui.contract.events import PassEvent
    from spectui.recording.trace import iter_trace

    chain_traces = [x["trace"] for x in runs if x["drafter"] == "ngram-simple,model"]
    assert all("ngram-simple+model-k3" in x for x in chain_traces)
    proposers = {ev.drafter for t in chain_traces for ev in iter_trace(t)[1]
                 if isinstance(ev, PassEvent) and ev.drafter}
    assert proposers and proposers <= {"ngram-simple", "model"}
    # a verdict per category and overall: the fastest setting (or the target alone), with every setting's word
    winners = {w["category"]: w for w in data["winners"]}
    assert set(winners) == {"lookup", "free", OVERALL}
    for cat, w in winners.items():
        spec = {lb: summ[(cat, lb)]["speedup"] for lb in ("ngram-simple+model k=3", "model k=3")}
        fastest = max(spec, key=spec.get)
        assert w["winner"] == (fastest if round(spec[fastest], 2) > 1.0 else "the target alone")
        assert {o["label"] for o in w["settings"]} == set(spec)
        assert all(o["outcome"] in ("wins", "loses", "ties", "never drafted") for o in w["settings"])
        assert w["sentence"] in r.stdout.replace("\n", " ") or w["sentence"][:60] in r.stdout
    r = bench("-m", tiny_target, "-md", tiny_draft_noisy, "--prompts", prompts, "-n", "8", "-k", "3", "-t", "1",
              "--drafter", "ngram-simple+model", "--markdown")
    assert r.returncode == 0, r.stderr
    assert "| ngram-simple+model k=3 | 0 | " in r.stdout
    assert any(ln.startswith("- ") and " wins lookup" in ln for ln in r.stdout.splitlines())


@pytest.mark.slow
def test_multi_turn_follows_the_models_own_answer(tmp_path, tiny_chat_target):
    prompts = write_prompts(tmp_path / "q.jsonl", PROMPTS[:1])
    rec = tmp_path / "traces"
    r = bench("-m", tiny_chat_target, "--prompts", prompts, "-n", "8", "-k", "2", "-t", "1", "--turns", "all",
              "--record-dir", rec, "--json", tmp_path / "b.json")
    assert r.returncode == 0, r.stderr
    runs = json.loads((tmp_path / "b.json").read_text())["runs"]
    assert sorted((x["drafter"], x["turn"]) for x in runs) == [("ngram", 1), ("ngram", 2), ("none", 1), ("none", 2)]
    from spectui.recording.trace import iter_trace

    for x in runs:
        if x["turn"] != 2:
            continue
        first = next(y for y in runs if y["drafter"] == x["drafter"] and y["turn"] == 1)
        start = next(iter_trace(x["trace"])[1])
        assert start.chat_template.startswith("tokenizer.chat_template")
        assert start.prompt == (f"the user: {PROMPTS[0]['turns'][0]}\nthe answer: {first['text']}\n"
                                f"the user: {PROMPTS[0]['turns'][1]}\nthe answer:")


@pytest.mark.slow
def test_faults(tmp_path, tiny_target):
    prompts = write_prompts(tmp_path / "q.jsonl", [
        *PROMPTS[2:],
        {"question_id": 9, "category": "free", "turns": [" ".join(["collision"] * 300)]},
    ])
    r = bench("-m", tiny_target, "--prompts", prompts, "--categories", "free,rag", "-t", "1")
    assert r.returncode == 2 and "has no category rag" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = bench("-m", tiny_target, "--prompts", tmp_path / "absent.jsonl", "-t", "1")
    assert r.returncode == 2 and "not found" in r.stderr
    # the long prompt does not fit -c 256 with -n 16: skipped with its reason, the others run
    r = bench("-m", tiny_target, "--prompts", prompts, "-n", "16", "-c", "256", "-t", "1",
              "--json", tmp_path / "s.json")
    assert r.returncode == 0, r.stderr
    assert "Skipped: free q9 turn 1 (does not fit the context:" in r.stdout
    data = json.loads((tmp_path / "s.json").read_text())
    assert sum(1 for x in data["runs"] if x["skipped"]) == 2 and sum(1 for x in data["runs"] if not x["skipped"]) == 4
    # nothing fits: exit 1
    r = bench("-m", tiny_target, "--prompts", prompts, "--categories", "free", "--limit", "3", "-n", "300", "-c",
              "256", "-t", "1")
    assert r.returncode == 1
    # an export never overwrites an input
    r = bench("-m", tiny_target, "--prompts", prompts, "-t", "1", "--json", prompts)
    assert r.returncode == 2 and "one of this run's inputs" in r.stderr
    assert prompts.read_text().startswith('{"question_id": 3')


@pytest.mark.slow
def test_ctrl_c_prints_and_writes_the_partial_report(tmp_path, tiny_target, tiny_draft_noisy):
    prompts = write_prompts(tmp_path / "q.jsonl", PROMPTS * 5)
    rec = tmp_path / "traces"
    out = tmp_path / "partial.json"
    proc = subprocess.Popen([sys.executable, "-m", "spectui", "bench", "-m", str(tiny_target), "-md",
                             str(tiny_draft_noisy), "--prompts", str(prompts), "-n", "400", "-c", "1024", "-t", "1",
                             "--record-dir", str(rec), "--json", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not rec.exists() or len(os.listdir(rec)) < 4):
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    data = json.loads(out.read_text())
    assert data["status"]["status"] == "interrupted" and data["status"]["jobs_done"] >= 3
    assert len(data["runs"]) == data["status"]["jobs_done"]
    assert "Interrupted (Ctrl+C) at job" in stdout


@pytest.mark.slow  # bench runs for each export
def test_exports_never_destroy_a_file(tmp_path, tiny_target):
    """The bench's exports follow the project's output rule: a file that is not a spectui report of the same
    kind is refused (one line, exit 2) before any model loads, unless --force; its own file is replaced."""
    prompts = write_prompts(tmp_path / "q.jsonl", PROMPTS[2:3])
    keep = tmp_path / "notes.md"
    keep.write_text("my notes\n", encoding="utf-8")
    r = bench("-m", tiny_target, "--prompts", prompts, "-n", "4", "-t", "1", "--markdown", keep)
    assert r.returncode == 2 and "refusing to replace" in r.stderr and keep.read_text() == "my notes\n"
    out = tmp_path / "b.json"
    for _ in range(2):  # the second bench replaces the first one's JSON (its own kind)
        r = bench("-m", tiny_target, "--prompts", prompts, "-n", "4", "-t", "1", "--json", out)
        assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["schema"] == "spectui.bench"
    r = bench("-m", tiny_target, "--prompts", prompts, "-n", "4", "-t", "1", "--markdown", keep, "--force")
    assert r.returncode == 0 and keep.read_text().startswith("<!-- spectui bench report -->")
