"""The cost model of a chain under ``--draft-max auto`` (spectui/analysis/cost/chain_cost.py), fed passes with
measured-style figures (the Qwen2.5-Coder pair on 2 cores: a target decode of 85 ms, a draft decode of 21 ms, an
n-gram lookup of 0.05 ms): each member is priced by its own draft cost and its own acceptance, a member whose
tokens/s fall below the target alone's is left out, the others keep drafting, and the policy says so in one line."""

from __future__ import annotations

import json

import pytest

from spectui.analysis.cost.chain_cost import ChainCost, is_chain, model_free
from spectui.analysis.cost.draft_policy import CostPolicy, PolicyByMode
from spectui.analysis.drafter_stats import ByDrafter, drafter_dicts, drafter_lines
from spectui.contract.event_json import EventFormatError, from_dict, to_dict
from spectui.contract.events import (
    ACCEPTED,
    REJECTED,
    DraftToken,
    PassEvent,
    RunStarted,
    Settings,
    SettingsChanged,
    TargetToken,
    Timing,
    Token,
)

CHAIN = "ngram-mod,model"
TARGET_MS, DRAFT_MS, LOOKUP_MS = 85.0, 21.0, 0.05
SETTINGS = Settings(draft_max=4, auto="cost", drafter=CHAIN)


def _verify_ms(k: int) -> float:
    """A verify curve where a batch is cheap (each extra token a tenth of a decode: more cores than two), so that
    a draft that is mostly accepted pays."""
    return TARGET_MS * (1.0 + 0.1 * k)


def _pass(index: int, drafter: str, k: int, n_drafted: int, n_acc: int, draft_ms: float,
          left_out: tuple[str, ...] = ()) -> PassEvent:
    drafts = tuple(DraftToken(id=i, text="x", prob=1.0, verdict=ACCEPTED if i < n_acc else REJECTED)
                   for i in range(n_drafted))
    verify = _verify_ms(n_drafted)
    other = 0.5
    emitted = tuple(Token(id=i, text="x") for i in range(n_acc + 1))
    return PassEvent(index=index, settings=SETTINGS, k=k, drafts=drafts, n_accepted=n_acc, emitted=emitted,
                     target=TargetToken(id=0, text="x"), drafter=drafter if drafts else "", left_out=left_out,
                     timing=Timing(draft_ms=draft_ms, verify_ms=verify, other_ms=other,
                                   wall_ms=draft_ms + verify + other))


def _run(policy, n_passes: int, model_acc: float, model_draft_ms: float, mod_every: int = 3):
    """Feed ``n_passes`` passes as the engine would: each pass the policy chooses, then sees the pass. ngram-mod
    finds a draft every ``mod_every`` passes (4 tokens, 3 accepted); otherwise the draft model drafts (if not left
    out) with acceptance ``model_acc`` per draft. Returns the per-pass (k, members)."""
    policy.observe(RunStarted(settings=SETTINGS, target_decode_ms=TARGET_MS, draft_decode_ms=DRAFT_MS))
    seen = []
    for i in range(1, n_passes + 1):
        k = policy.choose(SETTINGS)
        caps = dict(policy.members())
        left = tuple(n for n, c in caps.items() if c <= 0)
        seen.append((k, caps))
        if k > 0 and caps.get("ngram-mod", k) > 0 and i % mod_every == 0:
            n = min(4, caps.get("ngram-mod", k))
            ev = _pass(i, "ngram-mod", k, n, min(n, 3), LOOKUP_MS, left)  # its first three drafts accepted
        elif k > 0 and caps.get("model", k) > 0:
            n = caps.get("model", k)
            acc = 0
            while acc < n and (i * 7 + acc * 3) % 100 < 100 * model_acc:  # a deterministic acceptance pattern
                acc += 1
            lookups = LOOKUP_MS if caps.get("ngram-mod", k) > 0 else 0.0
            ev = _pass(i, "model", k, n, acc, lookups + n * model_draft_ms, left)
        else:
            ev = _pass(i, "", k, 0, 0, LOOKUP_MS if k > 0 else 0.0, left)
        policy.observe(ev)
    return seen


def test_names():
    assert is_chain(CHAIN) and not is_chain("model")
    assert model_free("ngram-mod") and model_free("suffix") and model_free("ngram")
    assert not model_free("model") and not model_free("eagle3") and not model_free("no-such-drafter")


def test_a_draft_model_that_loses_is_left_out_and_ngram_mod_keeps_drafting():
    """21 ms a draft token and 30% of its drafts accepted: the draft model loses to the 85 ms target decode even
    on this cheap verify curve; ngram-mod's drafts cost a lookup and three in four are accepted: it pays."""
    policy = CostPolicy()
    seen = _run(policy, 120, model_acc=0.3, model_draft_ms=DRAFT_MS)
    late = seen[60:]
    assert all(caps["model"] == 0 for _, caps in late), late
    assert all(caps["ngram-mod"] > 0 for _, caps in late), late
    assert all(k > 0 for k, _ in late)  # the chain still drafts: with the member that pays
    assert policy.chain is not None and policy.chain.left_out() == ("model",)
    why = policy.last_reason
    assert why.startswith("chain: ngram-mod k = ") and "model left out" in why and "target alone" in why, why
    # each member priced by its own cost: ngram-mod by its lookup, the draft model by its decodes
    mod, model = policy.chain.policies["ngram-mod"], policy.chain.policies["model"]
    assert mod.draft_ms_per_token < 0.1 < 15.0 < model.draft_ms_per_token < 25.0


def test_a_draft_model_that_pays_keeps_drafting():
    """A draft token at 2 ms with 90% accepted pays on the same curve: nobody is left out."""
    policy = PolicyByMode()
    seen = _run(policy, 120, model_acc=0.9, model_draft_ms=2.0)
    late = seen[60:]
    assert all(caps["model"] > 0 and caps["ngram-mod"] > 0 for _, caps in late), late
    assert policy.current("cost").chain.left_out() == ()


def test_a_single_drafter_has_no_members():
    policy = PolicyByMode()
    policy.observe(RunStarted(settings=Settings(auto="cost", drafter="model"), target_decode_ms=TARGET_MS,
                              draft_decode_ms=DRAFT_MS))
    policy.choose(Settings(auto="cost", drafter="model"))
    assert policy.members() == ()
    chain = ChainCost(CHAIN, CostPolicy)
    assert chain.choose(SETTINGS) >= 0 and [n for n, _ in chain.caps] == ["ngram-mod", "model"]


def test_the_statistics_count_the_passes_a_member_was_left_out_of():
    by = ByDrafter()
    by.add(_pass(1, "model", 2, 2, 0, 42.0))
    by.add(_pass(2, "ngram-mod", 4, 4, 3, LOOKUP_MS, ("model",)))
    by.add(_pass(3, "", 4, 0, 0, LOOKUP_MS, ("model",)))
    snap = {s.name: s for s in by.snapshot()}
    assert (snap["model"].passes, snap["model"].left_out) == (1, 2)
    assert (snap["ngram-mod"].passes, snap["ngram-mod"].left_out) == (1, 0)
    lines = drafter_lines(by.snapshot())
    assert lines[0].endswith("; auto left it out of 2 passes (its predicted tokens/s below the target alone's)")
    assert "left out" not in lines[1]
    assert [d["left_out"] for d in drafter_dicts(by.snapshot())] == [2, 0]


def test_left_out_goes_through_a_trace_and_a_forged_name_is_refused():
    ev = _pass(3, "ngram-mod", 4, 4, 3, LOOKUP_MS, ("model",))
    assert from_dict(json.loads(json.dumps(to_dict(ev)))) == ev
    old = to_dict(ev)
    del old["left_out"]  # a trace from before the field
    assert from_dict(old).left_out == ()
    for bad in (["model\x1b[2J"], "model", [3], ["A" * 40]):
        with pytest.raises(EventFormatError, match="left_out"):
            from_dict({**to_dict(ev), "left_out": bad})


def test_a_model_free_drafter_is_priced_per_pass_and_a_model_per_token():
    policy = CostPolicy()
    _run(policy, 60, model_acc=0.9, model_draft_ms=2.0)
    mod, model = (policy.chain.policies[n].prediction() for n in ("ngram-mod", "model"))
    assert mod.draft_ms_per_token == 0.0 and abs(mod.draft_ms_fixed - LOOKUP_MS) < 1e-9, mod.draft_ms_fixed
    assert model.draft_ms_fixed == 0.0 and 1.5 < model.draft_ms_per_token < 2.5, model.draft_ms_per_token


def test_a_verify_time_below_the_target_alones_is_raised_to_it():
    """A stale or noisy verify figure never makes a drafting pass look cheaper than a plain one: with acceptance
    near 0, k = 0 stays best even where a k = 1 verify was once measured below the k = 0 one."""
    policy = CostPolicy()
    s = Settings(draft_max=1, auto="cost", drafter="model")
    policy.observe(RunStarted(settings=s, target_decode_ms=TARGET_MS, draft_decode_ms=0.0))
    policy.verify_ms.update({0: TARGET_MS, 1: 0.5 * TARGET_MS})
    pred = policy.prediction()
    assert pred.verify_ms_by_k[1] >= pred.verify_ms_by_k[0] == TARGET_MS
    assert pred.best_k == 0


def test_a_switch_to_a_chain_mid_run_prices_its_members():
    policy = PolicyByMode()
    single = Settings(draft_max=4, auto="cost", drafter="model")
    policy.observe(RunStarted(settings=single, target_decode_ms=TARGET_MS, draft_decode_ms=DRAFT_MS))
    policy.choose(single)
    assert policy.members() == ()
    policy.observe(SettingsChanged(before_pass=2, old=single, new=SETTINGS))
    policy.choose(SETTINGS)
    assert [name for name, _ in policy.members()] == ["ngram-mod", "model"]
    assert policy.current("cost").chain.policies["model"].calib_draft_ms == DRAFT_MS
