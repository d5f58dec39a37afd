"""The inspector's numbers are the logits' numbers (issue 11): every figure the engine records per pass
(target and draft top-N with their probabilities, the top-two margin, min(1, p/q) and u, the residual's
top-N, the confidence that stopped drafting) is recomputed here, in float64, from the raw logit rows the
engine saw (its debug hook), for greedy and sampled runs, the model and the n-gram drafter; and
``--draft-p-min`` / ``--draft-min`` obey llama.cpp's rule and keep greedy output lossless."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
from greedy_checks import assert_lossless, emitted_ids, reference, run_with_hook

from spectui.contract.control import RunControl
from spectui.contract.event_json import to_dict
from spectui.contract.events import (
    ACCEPTED,
    DISCARDED,
    DRAFT_STOP_K,
    DRAFT_STOP_NO_MATCH,
    DRAFT_STOP_P_MIN,
    REJECTED,
    PassEvent,
    RunStarted,
    Settings,
)
from spectui.recording.trace import TraceWriter, read_trace
from spectui.views.inspector_model import render_pass

PROMPT = "the hash map handles collisions"
N_TOP = 5
REL = 2e-4  # float32 logits and softmax in the engine, float64 here


def softmax64(row, t):
    x = np.asarray(row, dtype=np.float64) / (t if t > 0 else 1.0)
    x = np.exp(x - x.max())
    return x / x.sum()


def top(row, n):
    return [int(i) for i in np.argsort(-np.asarray(row, dtype=np.float64), kind="stable")[:n]]


def llama_conf(row):
    """llama.cpp's draft confidence: the top probability after top-k 10, at temperature 1."""
    v = np.sort(np.asarray(row, dtype=np.float64))[::-1][:10]
    return float(1.0 / np.exp(v - v[0]).sum())


def check_candidates(cands, row, t, n=N_TOP):
    p = softmax64(row, t)
    assert [c.id for c in cands] == top(row, n)
    for c in cands:
        assert c.prob == pytest.approx(p[c.id], rel=REL, abs=1e-7)


def check_pass(ev: PassEvent, rec: dict, drafter: str) -> None:
    """Every number of ev.inspect against the hook's record of the same pass."""
    t = rec["temperature"]
    rows = rec["target_logits_all"]
    ids = rec["draft_ids"]
    assert [d.id for d in ev.drafts] == ids
    assert len(ev.inspect) == len(ids) + 1 == rows.shape[0]
    for i, ins in enumerate(ev.inspect):
        assert ins.position == i
        row = rows[i].astype(np.float64)
        check_candidates(ins.target_top, row, t)
        s = np.sort(row)
        assert ins.margin == pytest.approx(s[-1] - s[-2], abs=1e-5)
        if i == len(ids):
            assert ins.draft_top == ()
        elif drafter == "ngram":
            assert [(c.id, c.prob) for c in ins.draft_top] == [(ids[i], 1.0)]
        else:
            check_candidates(ins.draft_top, rec["draft_logits"][i], t)
    v = rec["verdict"]
    n_acc = ev.n_accepted
    if t <= 0:
        for i in range(n_acc):
            assert ev.inspect[i].target_top[0].id == ids[i]
        assert ev.inspect[n_acc].target_top[0].id == ev.target.id
        assert all(ins.u == -1.0 and ins.accept_p == -1.0 and ins.residual_top == () for ins in ev.inspect)
        return
    for i, ins in enumerate(ev.inspect):
        if i > min(n_acc, len(ids) - 1):  # not judged: after the rejection, or the bonus row
            assert ins.accept_p == -1.0 and ins.u == -1.0
            continue
        p = softmax64(rows[i], t)
        q = 1.0 if drafter == "ngram" else softmax64(rec["draft_logits"][i], t)[ids[i]]
        a = min(1.0, p[ids[i]] / q)
        assert ins.accept_p == pytest.approx(a, rel=REL, abs=1e-6)
        if ins.u < 0:  # no draw: p >= q
            assert a == pytest.approx(1.0, abs=1e-5) and ev.drafts[i].verdict == ACCEPTED
        elif ev.drafts[i].verdict == ACCEPTED:
            assert 0.0 <= ins.u < ins.accept_p
        else:
            assert ev.drafts[i].verdict == REJECTED and ins.u >= ins.accept_p
    if n_acc < len(ids):  # a rejection: the residual norm(max(0, p - q)) and the correction drawn from it
        p = softmax64(rows[n_acc], t)
        if drafter == "ngram":
            r = p.copy()
            r[ids[n_acc]] = 0.0
        else:
            r = np.maximum(p - softmax64(rec["draft_logits"][n_acc], t), 0.0)
        r /= r.sum()
        res = ev.inspect[n_acc].residual_top
        assert [c.id for c in res] == top(r, N_TOP)
        for c in res:
            assert c.prob == pytest.approx(r[c.id], rel=1e-3, abs=1e-6)
        assert r[ev.target.id] > 0 and ev.target.id == v.token
    else:
        assert all(ins.residual_top == () for ins in ev.inspect)


def passes_and_records(events, records):
    passes = [e for e in events if isinstance(e, PassEvent)]
    assert len(passes) == len(records)
    return list(zip(passes, records))


@pytest.mark.parametrize("overlap", [False, True], ids=["inline", "overlapped"])
@pytest.mark.parametrize("temp", [0.0, 0.8])
def test_every_number_recomputed_from_the_logits_model_drafter(make_engine, tiny_target, tiny_draft_noisy, temp,
                                                               overlap):
    eng = make_engine(tiny_target, tiny_draft_noisy, spare_core=True)
    for d in eng.parts().drafters.values():
        d.keep_rows = True
    events, records = run_with_hook(eng, Settings(draft_max=4, temperature=temp, seed=3), n_predict=60,
                                    overlap=overlap)
    assert events[0].inspect_top == N_TOP
    pairs = passes_and_records(events, records)
    verdicts = [d.verdict for ev, _ in pairs for d in ev.drafts]
    assert ACCEPTED in verdicts and REJECTED in verdicts and DISCARDED in verdicts  # the test is not vacuous
    for ev, rec in pairs:
        if ev.prefill:
            assert len(ev.inspect) == 1 and ev.inspect[0].draft_top == ()
            check_candidates(ev.inspect[0].target_top, rec["target_logits_all"][0], temp)
            continue
        check_pass(ev, rec, "model")
    if temp > 0:
        assert any(ev.inspect[ev.n_accepted].residual_top for ev, _ in pairs if ev.n_accepted < len(ev.drafts))
        assert any(0 <= ins.u for ev, _ in pairs for ins in ev.inspect)


@pytest.mark.parametrize("overlap", [False, True], ids=["inline", "overlapped"])
@pytest.mark.parametrize("temp", [0.0, 0.9])
def test_every_number_recomputed_from_the_logits_ngram_drafter(make_engine, tiny_target, temp, overlap):
    eng = make_engine(tiny_target, spare_core=True)
    prompt = "a b c d a b c d a b c d a b c"
    events, records = run_with_hook(eng, Settings(draft_max=3, temperature=temp, drafter="ngram", seed=1),
                                    n_predict=50, prompt=prompt, overlap=overlap)
    pairs = passes_and_records(events, records)
    assert any(ev.drafts for ev, _ in pairs)
    for ev, rec in pairs:
        if not ev.prefill:
            check_pass(ev, rec, "ngram")
            if ev.k > 0:
                assert ev.draft_stop == (DRAFT_STOP_K if len(ev.drafts) == ev.k else DRAFT_STOP_NO_MATCH)


def test_inspect_top_zero_records_nothing_and_n_sets_the_length(make_engine, tiny_target, tiny_draft_noisy):
    eng = make_engine(tiny_target, tiny_draft_noisy, inspect_top=0)
    events = list(eng.run(PROMPT, None, 20))
    assert events[0].inspect_top == 0
    assert all(ev.inspect == () for ev in events if isinstance(ev, PassEvent))
    eng.inspect_top = 2
    events = list(eng.run(PROMPT, None, 20))
    passes = [ev for ev in events if isinstance(ev, PassEvent)]
    assert all(len(ins.target_top) == 2 for ev in passes for ins in ev.inspect)
    assert all(len(ins.draft_top) == 2 for ev in passes for ins in ev.inspect[: len(ev.drafts)])


def test_bad_inspect_top_is_one_line(make_engine, tiny_target):
    from spectui.contract.errors import SpectuiError

    for bad in (-1, 51, "x"):
        with pytest.raises(SpectuiError, match="--inspect-top"):
            make_engine(tiny_target, inspect_top=bad)


# ------------------------------------------------------------------ --draft-p-min / --draft-min
@pytest.mark.parametrize("p_min,n_min,temp", [(0.3, 0, 0.0), (0.3, 2, 0.0), (0.5, 1, 0.8)])
def test_draft_p_min_stops_as_llama_cpp(make_engine, tiny_target, tiny_draft_noisy, p_min, n_min, temp):
    eng = make_engine(tiny_target, tiny_draft_noisy)
    for d in eng.parts().drafters.values():
        d.keep_rows = True
    s = Settings(draft_max=5, temperature=temp, draft_p_min=p_min, draft_min=n_min, seed=2)
    events, records = run_with_hook(eng, s, n_predict=60)
    stops = []
    for ev, rec in passes_and_records(events, records):
        if ev.prefill or ev.k == 0:
            continue
        stops.append(ev.draft_stop)
        for i, row in enumerate(rec["draft_logits"] or []):  # every drafted position past n_min was confident
            if i >= n_min:
                assert llama_conf(row) >= p_min
        if ev.draft_stop == DRAFT_STOP_P_MIN:
            assert len(ev.drafts) < ev.k and len(ev.drafts) >= n_min
            conf = llama_conf(rec["draft_stop_logits"])
            assert conf < p_min and ev.draft_stop_p == pytest.approx(conf, rel=1e-5)
        else:
            assert ev.draft_stop == DRAFT_STOP_K and len(ev.drafts) == ev.k and ev.draft_stop_p == -1.0
    assert DRAFT_STOP_P_MIN in stops and DRAFT_STOP_K in stops  # both branches ran


def test_draft_p_min_keeps_greedy_lossless(make_engine, tiny_target, tiny_draft_noisy):
    ref_eng = make_engine(tiny_target)
    ref, margins = reference(ref_eng, n_predict=80, prompt=PROMPT)
    eng = make_engine(tiny_target, tiny_draft_noisy)
    for p_min in (0.2, 0.6):
        events, _ = run_with_hook(eng, Settings(draft_max=4, draft_p_min=p_min), n_predict=80, prompt=PROMPT)
        assert_lossless(emitted_ids(events), ref, margins)
        assert any(ev.draft_stop == DRAFT_STOP_P_MIN for ev in events if isinstance(ev, PassEvent))


def test_p_min_changed_mid_run_takes_effect_next_pass(make_engine, tiny_target, tiny_draft_noisy):
    eng = make_engine(tiny_target, tiny_draft_noisy)

    def on_pass(control, ev):
        if ev.index == 5:
            control.update(draft_p_min=1.0)  # no confidence reaches 1.0 (unless n_min): drafting stops at once

    events, _ = run_with_hook(eng, Settings(draft_max=3), n_predict=40, on_pass=on_pass)
    passes = [ev for ev in events if isinstance(ev, PassEvent) and not ev.prefill]
    assert all(ev.settings.draft_p_min == 0.0 and ev.draft_stop == DRAFT_STOP_K for ev in passes if ev.index <= 5)
    late = [ev for ev in passes if ev.index > 5 and ev.k > 0]
    assert late and all(ev.drafts == () and ev.draft_stop == DRAFT_STOP_P_MIN for ev in late)


# ------------------------------------------------------------------ traces keep it: the same view replayed
def test_replayed_trace_explains_every_pass_identically(make_engine, tiny_target, tiny_draft_noisy, tmp_path):
    eng = make_engine(tiny_target, tiny_draft_noisy)
    path = tmp_path / "run.jsonl.gz"
    events = []
    with TraceWriter(path) as w:
        for ev in eng.run(PROMPT, RunControl(Settings(draft_max=3, temperature=0.7, seed=5)), 40):
            w.write(ev)
            events.append(ev)
    tr = read_trace(path)
    assert tr.header["version"] == 3 and tr.warnings == []
    live = [e for e in events if isinstance(e, PassEvent)]
    replayed = [e for e in tr.events if isinstance(e, PassEvent)]
    assert replayed == live  # field for field, the inspector's data included
    for a, b in zip(live, replayed):
        assert render_pass(a) == render_pass(b)


def test_version_2_trace_reads_without_inspector_data(make_engine, tiny_target, tiny_draft_noisy, tmp_path):
    eng = make_engine(tiny_target, tiny_draft_noisy)
    events = list(eng.run(PROMPT, None, 12))
    old_fields = ("inspect", "draft_stop", "draft_stop_p")
    lines = [json.dumps({"schema": "spectui.trace", "version": 2, "spectui": "0.1.0"})]
    for ev in events:
        d = to_dict(ev)
        for f in old_fields:
            d.pop(f, None)
        d.pop("inspect_top", None)
        if "settings" in d:
            d["settings"].pop("draft_p_min")
            d["settings"].pop("draft_min")
        lines.append(json.dumps(d))
    p = tmp_path / "v2.jsonl.gz"
    with gzip.open(p, "wt") as f:
        f.write("\n".join(lines) + "\n")
    tr = read_trace(p)
    assert tr.header["version"] == 2 and tr.warnings == []
    assert isinstance(tr.events[0], RunStarted) and tr.events[0].inspect_top == 0
    passes = [e for e in tr.events if isinstance(e, PassEvent)]
    assert passes and all(e.inspect == () and e.draft_stop == "" for e in passes)
    assert "no inspector data" in "\n".join(render_pass(passes[1]))
