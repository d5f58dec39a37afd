"""``spectui replay FILE --explain PASS[:TOKEN]`` (the token inspector as text or JSON) and the inspector's and
confidence statistics in the headless ``--json`` / text summary, on real runs of the tiny models: the
replayed trace explains every token exactly as the live events do."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from spectui.cli import main as cli_main
from spectui.commands.replay import replay_cmd
from spectui.contract.control import RunControl
from spectui.contract.event_json import to_dict
from spectui.contract.events import (
    ACCEPTED,
    DRAFT_STOP_P_MIN,
    REJECTED,
    AttachEnded,
    AttachStarted,
    MetricsScraped,
    PassEvent,
    Settings,
    Target,
)
from spectui.recording.trace import SCHEMA, TraceWriter, write_trace
from spectui.views.inspector_model import NO_DATA, explain, render_pass, render_view, slots

EDGES = (0.3, 0.5, 0.7, 0.9)  # the test's own copy of the confidence buckets: <0.3, 0.3-0.5, ..., >=0.9


def _record(engine, path, temperature, k=3, n=40, prompt="the cat", **settings):
    events = list(engine.run(prompt, RunControl(Settings(draft_max=k, temperature=temperature, seed=3, **settings)), n))
    with TraceWriter(path) as w:
        for ev in events:
            w.write(ev)
    return events


@pytest.fixture(scope="module")
def runs(make_engine, tiny_target, tiny_draft_noisy, tmp_path_factory):
    """A greedy and a sampled run (k = 3, --inspect-top 5), their live events and their traces."""
    engine = make_engine(tiny_target, tiny_draft_noisy, inspect_top=5)
    d = tmp_path_factory.mktemp("explain")
    out = {}
    for name, temp in (("greedy", 0.0), ("sampled", 0.8)):
        path = d / f"{name}.jsonl"
        out[name] = (_record(engine, path, temp), path)
    return out


def _invoke(*args):
    return CliRunner().invoke(replay_cmd, [str(a) for a in args])


def _passes(events):
    return [e for e in events if isinstance(e, PassEvent)]


def _one_line_error(res, *fragments):
    assert res.exit_code == 2, res.output
    assert res.stdout == ""
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("spectui: error: "), res.stderr
    for f in fragments:
        assert f in lines[0]


@pytest.mark.parametrize("name", ["greedy", "sampled"])
def test_explain_prints_every_token_of_the_pass_as_the_live_events_explain_it(runs, name):
    events, path = runs[name]
    passes = _passes(events)
    assert any(p.drafts for p in passes) and all(p.inspect for p in passes)
    for ev in passes:
        res = _invoke(path, "--explain", ev.index)  # --explain implies --headless
        assert res.exit_code == 0, res.output + res.stderr
        assert res.stdout == "\n".join(render_pass(ev, 100)) + "\n"  # identical: live events vs the trace
        out = res.stdout
        assert out.startswith(f"pass {ev.index}")
        for i in range(len(slots(ev))):
            v = explain(ev, i)
            assert v.available
            if v.q >= 0:
                assert f"draft q(x) {v.q:.3f}" in out
            if v.p >= 0:
                assert f"target p(x) {v.p:.3f}" in out
            assert "rule: " + v.rule in out and "→ " + v.outcome in out
            assert f"top-two margin {v.margin:.3f}" in out
            for m in v.target_top:
                assert f"p {m.cand.prob:.3f}" in out
            for m in v.draft_top:
                assert f"q {m.cand.prob:.3f}" in out
    with_headless = _invoke(path, "--headless", "--explain", passes[1].index)
    assert with_headless.stdout == _invoke(path, "--explain", passes[1].index).stdout


def test_greedy_rejection_is_an_argmax_mismatch(runs):
    events, path = runs["greedy"]
    ev = next(p for p in _passes(events) if any(d.verdict == REJECTED for d in p.drafts))
    out = _invoke(path, "--explain", ev.index).stdout
    assert "T = 0, argmax mismatch" in out and "T = 0: the target's argmax at the first mismatch" in out


def test_sampled_rejection_shows_u_the_ratio_and_the_residual(runs):
    events, path = runs["sampled"]
    ev = next(p for p in _passes(events) if any(d.verdict == REJECTED for d in p.drafts))
    j = ev.n_accepted
    d = ev.drafts[j]
    ins = ev.inspect[j]
    assert d.verdict == REJECTED and ins.u >= 0 and ins.residual_top
    out = _invoke(path, "--explain", ev.index).stdout
    p, q = d.target_prob, d.prob
    assert (f"u = {ins.u:.3f} >= min(1, p/q) = min(1, {p:.3f}/{q:.3f}) = {min(1.0, p / q):.3f}") in out
    assert ins.accept_p == pytest.approx(min(1.0, p / q), abs=1e-6)
    assert "residual (r)" in out and "drawn from the residual norm(max(0, p - q))" in out
    for c in ins.residual_top:
        assert f"r {c.prob:.3f}" in out
    # one token: PASS:TOKEN (1-based) prints the pass's header and that token alone
    res = _invoke(path, "--explain", f"{ev.index}:{j + 1}")
    assert res.exit_code == 0, res.stderr
    head = render_pass(ev, 100)
    head = head[: head.index("")]
    assert res.stdout == "\n".join([*head, "", *render_view(explain(ev, j), 100)]) + "\n"
    assert f"u = {ins.u:.3f} >= min(1, p/q)" in res.stdout and res.stdout.count("\npass ") == 1


@pytest.mark.parametrize("name", ["greedy", "sampled"])
def test_explain_json_is_the_pass_and_every_explained_token(runs, name):
    events, path = runs[name]
    ev = next(p for p in _passes(events) if len(p.drafts) >= 2)
    res = _invoke(path, "--explain", ev.index, "--json")
    assert res.exit_code == 0, res.stderr
    d = json.loads(res.stdout)
    base = to_dict(ev)
    assert {k: d[k] for k in base} == json.loads(json.dumps(base))
    assert d["inspector_data"] is True and len(d["inspect"]) == len(ev.inspect) > 0
    assert len(d["explain"]) == len(slots(ev))
    for i, x in enumerate(d["explain"]):
        v = explain(ev, i)
        assert x["token"] == i + 1 and x["verdict"] == v.slot.verdict and x["is_draft"] == v.slot.is_draft
        assert (x["q"], x["p"], x["rule"], x["outcome"]) == (v.q, v.p, v.rule, v.outcome)
        assert (x["near_tie"], x["margin"], x["u"], x["accept_p"]) == (v.near_tie, v.margin, v.u, v.accept_p)
        for key in ("target_top", "draft_top", "residual_top"):
            assert x[key] == [{"id": m.cand.id, "text": m.cand.text, "prob": m.cand.prob, "drafted": m.drafted,
                               "chosen": m.chosen} for m in getattr(v, key)]
    one = json.loads(_invoke(path, "--explain", f"{ev.index}:2", "--json").stdout)
    assert one["explain"] == [d["explain"][1]]


def test_bad_pass_values_are_one_line_errors(runs):
    events, path = runs["greedy"]
    n = len(_passes(events))
    _one_line_error(_invoke(path, "--explain", n + 5), f"no pass {n + 5}", f"the trace has {n} passes")
    for bad in ("x", "1:a", "", "1:2:3", "1.5"):
        _one_line_error(_invoke(path, "--explain", bad), "--explain takes PASS or PASS:TOKEN")
    _one_line_error(_invoke(path, "--explain", "-1"), "no pass -1")
    _one_line_error(_invoke(path, "--explain", "1:0"), "no token 0")
    ev = _passes(events)[1]
    _one_line_error(_invoke(path, "--explain", f"1:{len(slots(ev)) + 1}"), f"pass 1 has {len(slots(ev))} token")
    # a bad value fails before the file is read
    _one_line_error(_invoke(path.parent / "missing.jsonl", "--explain", "x"), "--explain takes")
    _one_line_error(_invoke(path.parent / "missing.jsonl", "--explain", "1"), "no such file")


def test_attach_trace_cannot_be_explained(tmp_path):
    p = tmp_path / "attach.jsonl"
    write_trace(p, [AttachStarted(started_at=1_700_000_000.0, targets=(Target("http://a:1"),)),
                    MetricsScraped(url="http://a:1", t=1.0, error="connection refused"), AttachEnded(t=2.0)])
    _one_line_error(_invoke(p, "--explain", "0"), "attach trace")


def test_version_2_trace_explains_with_the_no_data_line(runs, tmp_path):
    """A trace older than version 3: no inspector fields at all; the pass is explained from what is there."""
    events, _ = runs["sampled"]
    p = tmp_path / "v2.jsonl"
    lines = [{"schema": SCHEMA, "version": 2, "spectui": "0.1.0", "created": "2024-01-01T00:00:00+00:00"}]
    for ev in events:
        d = to_dict(ev)
        d.pop("inspect", None), d.pop("draft_stop", None), d.pop("draft_stop_p", None), d.pop("inspect_top", None)
        for key in ("settings",):
            if key in d:
                d[key].pop("draft_p_min"), d[key].pop("draft_min")
        lines.append(d)
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    ev = next(e for e in _passes(events) if e.drafts)
    res = _invoke(p, "--explain", ev.index)
    assert res.exit_code == 0, res.stderr
    out = res.stdout.splitlines()
    assert out[0].startswith(f"pass {ev.index}: k = {ev.k}, drafted {len(ev.drafts)}")
    assert NO_DATA in out and "rule: " + NO_DATA in out
    assert f"draft q(x) {ev.drafts[0].prob:.3f}" in res.stdout  # what the event itself holds is still shown
    d = json.loads(_invoke(p, "--explain", ev.index, "--json").stdout)
    assert d["inspector_data"] is False and d["inspect"] == []
    assert all(x["available"] is False and x["rule"] == NO_DATA for x in d["explain"])


# ------------------------------------------------------------------ headless --json and the text summary


def _headless(target, draft, *extra):
    res = CliRunner().invoke(cli_main, ["--target", str(target), "--draft", str(draft), "--headless", "-n", "16",
                                        "--no-probe", "-t", "1", "-c", "512", "-p", "the cat", *extra])
    assert res.exit_code == 0, res.output + res.stderr
    return res.stdout


def _recount(passes: list[dict]) -> list[tuple[int, int]]:
    """(judged, accepted) per confidence bucket, from the passes' drafts (DraftToken.prob and verdict)."""
    out = [[0, 0] for _ in range(len(EDGES) + 1)]
    for p in passes:
        if p["prefill"]:
            continue
        for d in p["drafts"]:
            if d["verdict"] not in (ACCEPTED, REJECTED):
                continue
            b = sum(1 for e in EDGES if d["prob"] >= e)
            out[b][0] += 1
            out[b][1] += d["verdict"] == ACCEPTED
    return [tuple(x) for x in out]


@pytest.mark.parametrize("temp", ["0", "0.8"])
def test_headless_json_has_the_inspector_data_and_the_confidence_buckets(tiny_target, tiny_draft_noisy, temp):
    d = json.loads(_headless(tiny_target, tiny_draft_noisy, "--json", "--temp", temp, "-k", "3"))
    assert d["inspect_top"] == 5 and d["draft_p_min"] == 0.0 and d["draft_min"] == 0
    passes = d["passes"]
    for p in passes:
        if p["target"] is not None:
            assert len(p["inspect"]) == len(p["drafts"]) + 1
            assert all(0 < len(i["target_top"]) <= 5 for i in p["inspect"])
    assert any(p["drafts"] for p in passes)
    conf = d["confidence"]
    assert [c["label"] for c in conf] == ["<0.3", "0.3-0.5", "0.5-0.7", "0.7-0.9", ">=0.9"]
    assert [(c["lo"], c["hi"]) for c in conf] == [(0.0, 0.3), (0.3, 0.5), (0.5, 0.7), (0.7, 0.9), (0.9, 1.0)]
    assert [(c["judged"], c["accepted"]) for c in conf] == _recount(passes)
    for c in conf:
        assert c["rate"] == pytest.approx(c["accepted"] / c["judged"] if c["judged"] else 0.0)
    assert sum(c["accepted"] for c in conf) == d["n_accept"]
    stops = {s["draft_stop"]: s["passes"] for s in d["draft_stops"]}
    assert stops == {"k": sum(1 for p in passes if not p["prefill"] and p["k"] > 0)}


def test_headless_json_without_inspector_data(tiny_target, tiny_draft_noisy):
    d = json.loads(_headless(tiny_target, tiny_draft_noisy, "--json", "--inspect-top", "0"))
    assert d["inspect_top"] == 0 and d["start"]["inspect_top"] == 0
    assert d["passes"] and all(p["inspect"] == [] for p in d["passes"])
    assert sum(c["judged"] for c in d["confidence"]) > 0  # the buckets need only the drafts' own q


def test_p_min_run_json_and_text_summary(tiny_target, tiny_draft_noisy, tmp_path):
    trace = tmp_path / "pmin.jsonl"
    args = ("--temp", "0.8", "-k", "4", "--draft-p-min", "0.4", "--draft-min", "1")
    d = json.loads(_headless(tiny_target, tiny_draft_noisy, "--json", *args, "--record", str(trace)))
    assert d["draft_p_min"] == 0.4 and d["draft_min"] == 1
    stops = {s["draft_stop"]: s["passes"] for s in d["draft_stops"]}
    n_pmin = sum(1 for p in d["passes"] if p["draft_stop"] == DRAFT_STOP_P_MIN)
    assert n_pmin > 0 and stops[DRAFT_STOP_P_MIN] == n_pmin
    asked = sum(stops.values())
    text = _headless(tiny_target, tiny_draft_noisy, *args)
    conf = next(line for line in text.splitlines() if line.startswith("acceptance by draft confidence "))
    for c in d["confidence"]:
        if c["judged"]:
            assert f"{c['label']}:{100 * c['rate']:.0f}% ({c['accepted']}/{c['judged']})" in conf
        else:
            assert f"{c['label']}:" not in conf
    line = next(line for line in text.splitlines() if line.startswith("draft-p-min stops"))
    assert f"{n_pmin} of {asked} drafting passes" in line and "--draft-p-min 0.4" in line
    assert f"mean drafted {d['n_drafted'] / asked:.2f} tokens per pass vs k = 4" in line
    # the cost model's prediction counts the drafts a pass really makes: fewer than k where p-min stopped it
    pred = d["prediction"]
    assert pred is not None and len(pred["drafted_per_pass_by_k"]) == len(pred["tokens_per_second_by_k"])
    assert pred["drafted_per_pass_by_k"][0] == 0 and pred["drafted_per_pass_by_k"][4] < 4
    # the replayed trace gives the same JSON, the explained p-min pass says why drafting stopped
    res = _invoke(trace, "--headless", "--json")
    assert json.loads(res.stdout)["confidence"] == d["confidence"]
    ev = next(p for p in d["passes"] if p["draft_stop"] == DRAFT_STOP_P_MIN)
    out = _invoke(trace, "--explain", ev["index"]).stdout
    assert "fell below --draft-p-min 0.4" in out and f"drafted {len(ev['drafts'])} of k = 4" in out


def test_text_summary_without_p_min_has_no_p_min_line(tiny_target, tiny_draft_noisy):
    text = _headless(tiny_target, tiny_draft_noisy, "-k", "3")
    assert "acceptance by draft confidence " in text and "draft-p-min stops" not in text
