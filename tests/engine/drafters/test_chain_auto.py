"""``--draft-max auto`` with a chain on the real llama.cpp (tiny models): each member is priced by its own cost and
acceptance (spectui/analysis/cost/chain_cost.py); a member that loses here is left out of the passes
(``PassEvent.left_out``: it is not asked, its model does not decode) while the members that pay keep drafting; the
output stays the target's own at T = 0; a pass in which nothing drafted is one target decode of one token; the
summary says which member auto left out and why.

The tiny models are all the same size, so a draft model never pays here (each draft costs a target decode);
the member that pays is a model-free one whose drafts the target takes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from greedy_checks import assert_lossless, emitted_ids, reference, run_with_hook

from spectui.contract.events import PassEvent, Settings

ROOT = Path(__file__).resolve().parents[3]
# the tiny target's greedy text loops, so ngram-mod's pool matches it within a few dozen tokens
PROMPT = "at if false same it true at if false same"
MOD = (("spec_ngram_mod_n_match", 2), ("spec_ngram_mod_n_min", 1), ("spec_ngram_mod_n_max", 4))
N = 160


@pytest.fixture(scope="module")
def tiny_draft_wrong(tiny_model) -> Path:
    """A draft model of the target's vocabulary with other weights: its drafts are almost never accepted."""
    return tiny_model("draft-wrong.gguf", seed=7, name="tiny-draft-wrong")


def _decode_passes(events):
    return [ev for ev in events if isinstance(ev, PassEvent) and not ev.prefill]


@pytest.mark.timing  # auto decides from the passes' clocks (a load spike while it measures sways it)
def test_auto_leaves_out_the_member_that_loses(make_engine, tiny_target, tiny_draft_wrong):
    """A draft model whose drafts the target refuses: auto leaves it out once it has measured that. (Whether
    ngram-mod pays on this text is a close call on these models, where a Python lookup costs about what a target
    decode does; the next test has a member that pays.)"""
    model_kv = []  # the draft model's accepted context after each pass

    with make_engine(tiny_target, tiny_draft_wrong, spec_options=MOD) as e:
        ref = reference(e, N, prompt=PROMPT)
        draft_model = e.parts().drafters.get("model")
        events, records = run_with_hook(
            e, Settings(draft_max=4, auto="cost", drafter="ngram-mod,model"), N, prompt=PROMPT,
            on_pass=lambda control, ev: model_kv.append(draft_model.n_past))
    assert_lossless(emitted_ids(events), *ref)
    passes = _decode_passes(events)
    late = passes[len(passes) // 2:]
    # the draft model, whose drafts the target refuses, is left out of most of the second half of the run
    out = [p for p in late if "model" in p.left_out]
    assert len(out) >= 0.8 * len(late), [(p.index, p.k, p.drafter, p.left_out) for p in late]
    # a member left out of a pass does not draft it, and its model decodes nothing in it
    assert [p.index for p in passes] == list(range(1, len(model_kv)))  # model_kv[i]: after pass i (0: prefill)
    for p in passes:
        assert not (p.drafter and p.drafter in p.left_out), p
        if "model" in p.left_out:
            assert model_kv[p.index] == model_kv[p.index - 1], (p.index, model_kv[p.index - 1:p.index + 1])
    # a pass in which no member drafted is one target decode of one token
    for r in records[1:]:
        if not r["draft_ids"]:
            assert r["target_logits_all"].shape[0] == 1, r["index"]




@pytest.mark.timing  # auto decides from the passes' clocks (a load spike while it measures sways it)
def test_a_member_that_pays_keeps_drafting(make_engine, tiny_target, tiny_draft_wrong):
    """suffix with the session's earlier output in its global tree: the same prompt again at T = 0 repeats it, so
    its drafts are taken and it pays; auto never leaves it out, and it drafts nearly every pass."""
    with make_engine(tiny_target, tiny_draft_wrong) as e:
        ref = reference(e, 96, prompt=PROMPT)
        run_with_hook(e, Settings(draft_max=4, drafter="suffix"), 96, prompt=PROMPT)  # the global tree learns it
        events, _ = run_with_hook(e, Settings(draft_max=4, auto="cost", drafter="suffix,model"), 96, prompt=PROMPT)
    assert_lossless(emitted_ids(events), *ref)
    passes = _decode_passes(events)
    assert not any("suffix" in p.left_out for p in passes), [(p.index, p.k, p.left_out) for p in passes]
    by_suffix = [p for p in passes if p.drafter == "suffix"]
    assert len(by_suffix) >= 0.8 * len(passes), [(p.index, p.k, p.drafter) for p in passes]
    assert sum(p.n_accepted for p in by_suffix) >= 0.9 * sum(len(p.drafts) for p in by_suffix)
    assert len(passes) < 96 // 2  # more than two tokens a pass


@pytest.mark.timing  # auto decides from the passes' clocks
def test_the_summary_and_json_say_which_member_auto_left_out(tiny_target, tiny_draft_wrong):
    args = [sys.executable, "-m", "spectui", "-m", str(tiny_target), "-md", str(tiny_draft_wrong), "--headless",
            "-n", str(N), "-t", "1", "--temp", "0", "--draft-max", "auto", "--spec-type", "ngram-mod,draft-simple",
            "--spec-ngram-mod-n-match", "2", "--spec-ngram-mod-n-min", "1", "--spec-ngram-mod-n-max", "4",
            "-p", PROMPT]
    r = subprocess.run(args, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("drafter model:"))
    assert "auto left it out of" in line and "its predicted tokens/s below the target alone's" in line, line
    r = subprocess.run(args + ["--json"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    by = {d["drafter"]: d for d in json.loads(r.stdout)["by_drafter"]}
    assert by["model"]["left_out"] > 0 and by["model"]["accepted"] == 0 and "ngram-mod" in by, by


@pytest.mark.timing  # auto decides from the passes' clocks
async def test_the_acceptance_panel_says_how_often_auto_left_a_member_out(make_engine, tiny_target, tiny_draft_wrong):
    from spectui.analysis.stats import compute
    from spectui.contract.control import RunControl
    from spectui.tui.run.acceptance_by_position import AcceptanceByPosition
    from spectui.tui.run.app import SpectuiApp

    with make_engine(tiny_target, tiny_draft_wrong, spec_options=MOD) as e:
        events, _ = run_with_hook(e, Settings(draft_max=4, auto="cost", drafter="ngram-mod,model"), N, prompt=PROMPT)
    by = {d.name: d for d in compute(events).by_drafter}
    assert by["model"].left_out > 0, by
    app = SpectuiApp(lambda c, p: iter(events), RunControl())
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        app.refresh_from_state()
        await pilot.pause()
        text = app.query_one(AcceptanceByPosition).draw(60, 12).plain
    d = by["model"]
    assert f"model: {d.passes} passes {100 * d.acceptance_rate:.0f}% len {d.mean_acceptance_length:.2f} " \
           f"off {d.left_out}" in text, text
