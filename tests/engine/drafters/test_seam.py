"""The drafter seam on the real llama.cpp (tiny models): every drafter module's SPEC is well formed and makes its
drafter; llama.cpp's n-gram types and chains run end to end, lossless at T = 0, each pass naming the drafter that
proposed it (PassEvent.drafter); options spelled as llama.cpp's reach the types and bad ones are refused."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from greedy_checks import assert_argmax_of_verify_pass, assert_lossless, emitted_ids, reference, run_with_hook

from spectui.contract.events import PassEvent, Settings
from spectui.engine import drafters as D
from spectui.engine.drafters import spec_params
from spectui.engine.drafters.base import NEEDS, SHAPES, DrafterResources

ROOT = Path(__file__).resolve().parents[3]
PROMPT = "at if false same it true at if false same"
SMALL = (("spec_ngram_simple_size_n", 2), ("spec_ngram_simple_size_m", 4),
         ("spec_ngram_map_k_size_n", 2), ("spec_ngram_map_k_size_m", 4),
         ("spec_ngram_map_k4v_size_n", 2), ("spec_ngram_map_k4v_size_m", 4),
         ("spec_ngram_mod_n_match", 2), ("spec_ngram_mod_n_min", 1), ("spec_ngram_mod_n_max", 4))
LLAMA_NGRAMS = ("ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache")


def test_every_spec_is_well_formed_and_names_are_unique():
    specs = D.specs()
    assert len({s.name for s in specs}) == len(specs)
    assert {s.spec_type for s in specs if s.spec_type} >= {"draft-simple", "draft-eagle3", "draft-mtp", *LLAMA_NGRAMS}
    for s in specs:
        assert s.needs in NEEDS and s.shape in SHAPES and s.summary and callable(s.make)
        assert D.by_name(s.name) is s and (not s.spec_type or D.by_name(s.spec_type) is s)
    assert [s.order for s in specs] == sorted(s.order for s in specs)


@pytest.mark.parametrize("written, canonical", [
    ("draft-simple", "model"), ("ngram-mod,draft-simple", "ngram-mod,model"), ("model,ngram-mod", "ngram-mod,model"),
    ("ngram-cache,ngram-simple,ngram-simple", "ngram-simple,ngram-cache"), ("NGRAM", "ngram"),
])
def test_chains_take_llama_cpp_spelling_and_priority(written, canonical):
    assert D.canonical(written) == canonical


@pytest.mark.parametrize("bad", ["foo", "ngram,none", "", "draft-dflash-x"])
def test_unknown_names_and_none_in_a_chain_are_refused(bad):
    with pytest.raises(ValueError):
        D.canonical(bad)


@pytest.mark.parametrize("drafter", LLAMA_NGRAMS)
def test_llama_ngram_types_are_lossless_and_draft_what_the_type_drafts(make_engine, tiny_target, tiny_draft_noisy,
                                                                        drafter):
    """Lossless at T = 0, and every pass's drafts are exactly what the type itself (tests/engine/drafters/
    test_ngram_llama.py checks it against llama.cpp's code) drafts from the same accepted text, cut to k: llama.cpp's
    begin on the prompt, accept after each pass once it has drafted (impl_last)."""
    with make_engine(tiny_target, tiny_draft_noisy, spec_options=SMALL) as e:
        ref = reference(e, 64, prompt=PROMPT)
        events, records = run_with_hook(e, Settings(draft_max=4, drafter=drafter), 64, prompt=PROMPT)
        prompt_ids = e.tokenize(PROMPT)
    assert_argmax_of_verify_pass(records)
    assert_lossless(emitted_ids(events), *ref)
    spec = D.by_name(drafter)
    algo = spec.make(DrafterResources(target=None, params=spec_params(SMALL))).algo
    algo.begin(list(prompt_ids[:-1]))  # as llama-speculative-simple starts (point_mass.PointMassDrafter.prefill)
    algo.draft(list(prompt_ids), -1)
    context, drafted_once, n_drafted = list(prompt_ids), False, 0
    for p in (ev for ev in events if isinstance(ev, PassEvent)):
        if not p.prefill:
            want = algo.draft(list(context), p.k)[: p.k]
            assert [d.id for d in p.drafts] == want, (drafter, p.index)
            assert p.drafter == (drafter if want else "") and all(d.prob == 1.0 for d in p.drafts)
            drafted_once = drafted_once or bool(want)
            n_drafted += len(want)
            if drafted_once:
                algo.accept(p.n_accepted)
        context += [t.id for t in p.emitted]
    if drafter in ("ngram-simple", "ngram-map-k", "ngram-map-k4v"):  # their 2-token keys recur in this text
        assert n_drafted > 0, drafter


def test_a_chain_drafts_with_its_first_member_that_proposes(make_engine, tiny_target, tiny_draft_noisy):
    with make_engine(tiny_target, tiny_draft_noisy, spec_options=SMALL) as e:
        ref = reference(e, prompt=PROMPT)
        events, records = run_with_hook(e, Settings(draft_max=3, drafter="ngram-simple,model"), prompt=PROMPT)
    assert_argmax_of_verify_pass(records)
    assert_lossless(emitted_ids(events), *ref)
    passes = [ev for ev in events if isinstance(ev, PassEvent) and not ev.prefill and ev.drafts]
    by = {p.drafter for p in passes}
    assert by == {"ngram-simple", "model"}, by  # the n-gram type where its key matched, the model elsewhere
    # a point mass from the n-gram type, the draft model's own q otherwise
    assert all(d.prob == 1.0 for p in passes if p.drafter == "ngram-simple" for d in p.drafts)
    assert any(d.prob < 1.0 for p in passes if p.drafter == "model" for d in p.drafts)


def test_llama_cpp_option_out_of_range_is_one_line_before_loading(tiny_target):
    r = subprocess.run([sys.executable, "-m", "spectui", "-m", str(tiny_target), "--headless", "-n", "2",
                        "--spec-type", "ngram-mod", "--spec-ngram-mod-n-match", "0"],
                       capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "spectui: error: Invalid value for '--spec-ngram-mod-n-match': 0 is not in the range 1<=x<=1024."]


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_spec_type_chain_runs_headless_and_says_who_drafted(tiny_target, tiny_draft_noisy, tmp_path):
    trace = tmp_path / "chain.jsonl"
    r = subprocess.run([sys.executable, "-m", "spectui", "-m", str(tiny_target), "-md", str(tiny_draft_noisy),
                        "--headless", "-p", PROMPT, "-n", "24", "-t", "1", "--spec-type", "draft-simple,ngram-simple",
                        "--spec-ngram-simple-size-n", "2", "--spec-ngram-simple-size-m", "4", "--record", str(trace)],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    from spectui.recording.trace import read_trace

    events = read_trace(trace).events
    passes = [ev for ev in events if isinstance(ev, PassEvent) and ev.drafts]
    assert {p.drafter for p in passes} == {"ngram-simple", "model"}
    assert passes[0].settings.drafter == "ngram-simple,model"
    for name in ("ngram-simple", "model"):  # the summary's per-drafter line, counted from the trace
        mine = [p for p in passes if p.drafter == name]
        drafted = sum(len(p.drafts) for p in mine)
        accepted = sum(1 for p in mine for d in p.drafts if d.verdict == "accepted")
        line = f"drafter {name}: {len(mine)} passes, {drafted} drafted, {accepted} accepted"
        assert any(x.startswith(line) for x in r.stdout.splitlines()), (line, r.stdout)
    replayed = subprocess.run([sys.executable, "-m", "spectui", "replay", "--json", str(trace)], capture_output=True,
                              text=True, cwd=ROOT, timeout=60)
    assert replayed.returncode == 0, replayed.stderr
    by = {d["drafter"]: d for d in json.loads(replayed.stdout)["by_drafter"]}
    assert set(by) == {"ngram-simple", "model"}
    assert sum(d["drafted"] for d in by.values()) == sum(len(p.drafts) for p in passes)


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
async def test_the_ribbon_names_the_member_that_drafted_each_pass_of_a_chain(make_engine, tiny_target,
                                                                             tiny_draft_noisy):
    """A chain's passes on the ribbon: the member that drafted each (initials in the compact ribbon, the whole
    name when detailed), "-" where none did; a single drafter's passes carry no tag."""
    from spectui.contract.control import RunControl
    from spectui.tui.run.app import SpectuiApp
    from spectui.tui.shared.pass_ribbon import PassRibbon, drafter_tag

    assert drafter_tag("ngram-simple", "ngram-simple,model", False) == "ns "
    assert drafter_tag("model", "ngram-simple,model", False) == "m  "
    assert drafter_tag("", "ngram-simple,model", False) == "-  "
    assert drafter_tag("model", "ngram-simple,model", True) == "model        "
    with make_engine(tiny_target, tiny_draft_noisy, spec_options=SMALL) as e:
        events, _ = run_with_hook(e, Settings(draft_max=3, drafter="ngram-simple,model"), prompt=PROMPT)
    app = SpectuiApp(lambda c, p: iter(events), RunControl())
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        app.refresh_from_state()
        await pilot.pause()
        lines = app.query_one(PassRibbon).render().plain.splitlines()
    tagged = [line for line in lines if line.startswith("#") and "prefill" not in line]
    assert tagged and all(line.split()[1].startswith("k=") for line in tagged)
    tags = {line.split()[2] for line in tagged}
    assert {"ns", "m"} <= tags, tags


def test_the_inspector_says_which_member_of_a_chain_drafted(make_engine, tiny_target, tiny_draft_noisy):
    from spectui.views.heads import drafted_by

    with make_engine(tiny_target, tiny_draft_noisy, spec_options=SMALL) as e:
        events, _ = run_with_hook(e, Settings(draft_max=3, drafter="ngram-simple,model"), prompt=PROMPT)
    passes = [p for p in events if isinstance(p, PassEvent) and p.drafts]
    for p in passes:
        assert drafted_by(p, 0) == f"drafted by {p.drafter} (chain ngram-simple,model)"
        assert drafted_by(p, len(p.drafts)) == ""  # the target's own token
    with make_engine(tiny_target, tiny_draft_noisy) as e:
        events, _ = run_with_hook(e, Settings(draft_max=3), prompt=PROMPT)
    single = [p for p in events if isinstance(p, PassEvent) and p.drafts]
    assert single and all(drafted_by(p, 0) == "" for p in single)  # one drafter: nothing to tell apart


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
async def test_the_acceptance_panel_has_a_line_per_drafter_of_a_chain(make_engine, tiny_target, tiny_draft_noisy):
    from spectui.analysis.stats import compute
    from spectui.contract.control import RunControl
    from spectui.tui.run.acceptance_by_position import AcceptanceByPosition
    from spectui.tui.run.app import SpectuiApp

    with make_engine(tiny_target, tiny_draft_noisy, spec_options=SMALL) as e:
        events, _ = run_with_hook(e, Settings(draft_max=3, drafter="ngram-simple,model"), prompt=PROMPT)
    by = {d.name: d for d in compute(events).by_drafter}
    assert set(by) == {"ngram-simple", "model"}
    app = SpectuiApp(lambda c, p: iter(events), RunControl())
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        app.refresh_from_state()
        await pilot.pause()
        text = app.query_one(AcceptanceByPosition).draw(40, 12).plain
    for name, d in by.items():
        assert f"{name}: {d.passes} passes {100 * d.acceptance_rate:.0f}%" in text, text
