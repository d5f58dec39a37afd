"""``--draft-max auto`` with a chain on the real llama.cpp (tiny models): each member is priced by its own cost and
acceptance (spectui/analysis/cost/chain_cost.py); a member that loses here is left out of the passes
(``PassEvent.left_out``: it is not asked, its model does not decode) while the members that pay keep drafting; the
output stays the target's own at T = 0; a pass in which nothing drafted is one target decode of one token; the
summary says which member auto left out and why."""

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


def test_auto_leaves_out_the_member_that_loses_and_keeps_the_one_that_pays(make_engine, tiny_target,
                                                                          tiny_draft_wrong):
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
    # ngram-mod, whose drafts the target takes on this looping text (a third of them), keeps drafting there
    mod = [p for p in late if p.drafter == "ngram-mod"]
    assert len(mod) >= 5 and sum(p.n_accepted for p in mod) > 0, [(p.index, len(p.drafts), p.n_accepted) for p in mod]
    assert "ngram-mod" not in {name for p in late for name in p.left_out}
    # a member left out of a pass does not draft it, and its model decodes nothing in it
    by_index = {p.index: i for i, p in enumerate(_decode_passes(events))}
    for p in passes:
        assert not (p.drafter and p.drafter in p.left_out), p
        i = by_index[p.index]
        if "model" in p.left_out and i > 0:
            assert model_kv[i + 1] == model_kv[i], (p.index, model_kv[i], model_kv[i + 1])  # +1: the prefill's
    # a pass in which no member drafted is one target decode of one token
    for r in records[1:]:
        if not r["draft_ids"]:
            assert r["target_logits_all"].shape[0] == 1, r["index"]




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
    assert by["model"]["left_out"] > 0 and by["ngram-mod"]["left_out"] == 0, by
