"""Every face knows a tree pass (--drafter tree), on real tree runs of the tiny models: ``replay --explain`` lists and
explains every node (text within 80 columns, escapes shown as escapes; ``--json``'s ``tree_nodes``), the live run's
and the replay's ``--json`` carry each node's test, ``race --headless`` / ``--json`` give a tree lane's nodes per
pass and acceptance by depth, ``cast`` draws the ribbon's ⑂ and the inspector's node list, and ``bench`` reports a
tree setting's nodes per pass and acceptance length (its table, ``--json`` and ``--csv``)."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_cast import load_cast, screen_at

from spectui.analysis import stats
from spectui.commands.cast import frames, inspect_plan, parse_inspect, render_cast
from spectui.commands.replay import replay_cmd
from spectui.contract.control import RunControl
from spectui.contract.events import PassEvent, Settings
from spectui.recording.player import mark_replay
from spectui.recording.trace import read_trace, write_trace
from spectui.views.tree import TREE, tree_counts
from spectui.views.tree_inspector import chain_node, node_lines, render_tree, table_lines

pytestmark = pytest.mark.slow  # real runs, the CLI in subprocesses, a cast

ROOT = Path(__file__).resolve().parents[2]
PROMPT = "the cat sat on the mat and"


def _spectui(*args, timeout=180):
    return subprocess.run([sys.executable, "-m", "spectui", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)


@pytest.fixture(scope="module")
def traces(make_engine, tiny_target, tiny_draft_noisy, tmp_path_factory):
    """A tree run at T = 0.8 (-np 3, k = 6, --inspect-top 5) and a chain run, their events and traces."""
    d = tmp_path_factory.mktemp("tree-faces")
    out = {}
    for name, spec, drafter in (("tree", (("spec_tree_np", 3),), "tree"), ("chain", (), "model")):
        engine = make_engine(tiny_target, tiny_draft_noisy, inspect_top=5, spec_options=spec)
        control = RunControl(Settings(draft_max=6, drafter=drafter, temperature=0.8, seed=5))
        events = list(engine.run(PROMPT, control, 40))
        write_trace(d / f"{name}.jsonl", events)
        out[name] = (events, d / f"{name}.jsonl")
    return out


def _widest(events) -> PassEvent:
    return max((e for e in events if isinstance(e, PassEvent) and e.tree and e.drafts),
               key=lambda e: (len(e.tree), tree_counts(e)[1]))


def test_explain_lists_every_node_in_text_and_json(traces):
    events, path = traces["tree"]
    ev = _widest(events)
    r = CliRunner().invoke(replay_cmd, [str(path), "--explain", str(ev.index)])
    assert r.exit_code == 0, r.output
    out = r.output
    tree_part = out[out.index("tree: "):].splitlines()
    assert tree_part[: len(render_tree(ev))] == render_tree(ev)
    for i in range(len(ev.tree)):
        assert f"node {i} · " in out
    assert all(len(ln) <= 80 for ln in tree_part) and "\x1b" not in out
    # one token: its node explained after it
    r = CliRunner().invoke(replay_cmd, [str(path), "--explain", f"{ev.index}:1"])
    assert r.exit_code == 0 and "\n".join(node_lines(ev, chain_node(ev, 0))) in r.output
    # --json: every node, its test where it was judged
    r = CliRunner().invoke(replay_cmd, [str(path), "--explain", str(ev.index), "--json"])
    data = json.loads(r.output)
    nodes = data["tree_nodes"]
    assert [n["node"] for n in nodes] == list(range(len(ev.tree)))
    for n, nd in zip(nodes, ev.tree):
        assert n["q"] == nd.prob and n["p"] == nd.target_prob and n["text"] == nd.text
        assert (n["judged"] is None) == (nd.judged is None) and n["verdict"] in ("accepted", "rejected", "pruned")
        if nd.judged is not None:
            assert n["judged"]["u"] == nd.judged.u and n["judged"]["accept_p"] == nd.judged.accept_p
    assert any(n["judged"] is not None for n in nodes)  # T > 0: the root's children at least were judged
    one = json.loads(CliRunner().invoke(replay_cmd, [str(path), "--explain", f"{ev.index}:1", "--json"]).output)
    assert [n["node"] for n in one["tree_nodes"]] == [chain_node(ev, 0)]


def test_live_and_replayed_json_carry_each_nodes_test(traces, tiny_target, tiny_draft_noisy, tmp_path):
    trace = tmp_path / "live.jsonl"
    r = _spectui("-m", tiny_target, "-md", tiny_draft_noisy, "-np", "3", "-k", "6", "--temp", "0.8", "-s", "5",
                 "--headless", "--json", "-p", PROMPT, "-n", "32", "-t", "1", "--record", trace)
    assert r.returncode == 0, r.stderr
    live = json.loads(r.stdout)
    nodes = [n for p in live["passes"] for n in p["tree"]]
    assert nodes and live["tree"]["nodes"] == len(nodes)
    judged = [n for n in nodes if n["judged"] is not None]
    assert judged and all(n["verdict"] != "discarded" for n in judged)
    assert all(set(n["judged"]) == {"p", "r", "accept_p", "u"} for n in judged)
    replayed = _spectui("replay", "--json", trace, timeout=60)
    assert replayed.returncode == 0, replayed.stderr
    again = json.loads(replayed.stdout)
    assert [p["tree"] for p in again["passes"]] == [p["tree"] for p in live["passes"]]
    assert again["tree"] == live["tree"]


def test_race_headless_and_json_give_a_tree_lanes_figures(traces):
    (tree_events, tree_path), (_, chain_path) = traces["tree"], traces["chain"]
    tree = stats.compute(tree_events).tree
    r = _spectui("race", tree_path, chain_path, "--headless", timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert any(ln.startswith("A ") and f"tree nodes per pass    {tree.nodes_per_pass:.2f} verified" in ln
               for ln in lines), r.stdout
    assert any(ln.startswith("A ") and "acceptance by depth    1:" in ln for ln in lines)
    assert not any(ln.startswith("B ") and "tree nodes" in ln for ln in lines)
    # the lane's label names the tree and the draft model that drafts it
    assert any(ln.startswith("A: draft model tree k=6 T=0.8 · tiny-target + tiny-draft-noisy") for ln in lines)
    j = _spectui("race", tree_path, chain_path, "--json", timeout=60)
    assert j.returncode == 0, j.stderr
    lanes = json.loads(j.stdout)["lanes"]
    assert lanes[0]["tree"] == tree.record() and lanes[1]["tree"] is None


def test_cast_draws_the_tree_mark_and_the_inspectors_nodes(traces, tmp_path):
    events, _ = traces["tree"]
    evs = list(mark_replay(events))
    ev = _widest(events)
    spec = f"{ev.index}:1"
    out = tmp_path / "tree.cast"
    render_cast(evs, out, cols=100, rows=40, speed=8.0, inspect=spec)
    steps, (at, _, _, hold) = inspect_plan(evs, frames(evs, 8.0), *parse_inspect(spec))
    header, cast_events = load_cast(out)
    during = screen_at(header, cast_events, steps[at][1] + hold / 2)
    assert "token inspector" in during and f"tree: {len(ev.tree)} nodes verified" in during  # its nodes listed
    assert table_lines(ev, 80)[0].strip() in during
    assert TREE in screen_at(header, cast_events, cast_events[-1][0])  # the ribbon's mark of the tree passes


def test_bench_reports_a_tree_settings_nodes_and_acceptance_length(tiny_target, tiny_draft_noisy, tmp_path):
    prompts = tmp_path / "q.jsonl"
    prompts.write_text(json.dumps({"question_id": 1, "category": "free", "turns": [PROMPT]}) + "\n")
    out_json, out_csv = tmp_path / "b.json", tmp_path / "b.csv"
    r = _spectui("bench", "-m", tiny_target, "-md", tiny_draft_noisy, "--prompts", prompts, "-n", "24", "-k", "4",
                 "--drafter", "tree,model", "-np", "3", "-t", "1", "--record-dir", tmp_path / "rec",
                 "--json", out_json, "--csv", out_csv, timeout=300)
    assert r.returncode == 0, r.stderr
    data = json.loads(out_json.read_text())
    tree_run = next(x for x in data["runs"] if x["drafter"] == "tree")
    chain_run = next(x for x in data["runs"] if x["drafter"] == "model")
    assert chain_run["tree"] is None
    trace_tree = stats.compute(read_trace(tree_run["trace"]).events).tree
    assert tree_run["tree"] == trace_tree.record()
    summ = next(s for s in data["summaries"] if s["setting"]["drafter"] == "tree" and s["category"] == "overall")
    assert summ["tree"]["nodes_per_pass"] == pytest.approx(trace_tree.nodes_per_pass)
    assert summ["tree"]["mean_acceptance_length"] == pytest.approx(trace_tree.mean_acceptance_length)
    assert summ["mean_accepted_tokens"] == pytest.approx(summ["tree"]["mean_acceptance_length"])
    # the table: a column of tree nodes per pass, filled on the tree setting's rows
    row = next(ln for ln in r.stdout.splitlines() if "tree k=4" in ln and "overall" in ln)
    assert f"{summ['tree']['nodes_per_pass']:.2f}" in row.split("tree k=4", 1)[1]
    assert any("tree" in ln and "TTFT" in ln for ln in r.stdout.splitlines())
    rows = list(csv.DictReader(io.StringIO(out_csv.read_text())))
    tree_row = next(x for x in rows if x["drafter"] == "tree")
    assert float(tree_row["tree_nodes_per_pass"]) == pytest.approx(trace_tree.nodes_per_pass)
    assert next(x for x in rows if x["drafter"] == "model")["tree_nodes_per_pass"] == ""


def test_a_race_spec_of_trees_needs_the_draft_model():
    from spectui.contract.errors import SpectuiError
    from spectui.race.spec import parse_spec, spec_settings

    spec = parse_spec("drafter=tree,k=6")
    assert spec_settings(spec, temp=0.8, have_draft=True).drafter == "tree"
    with pytest.raises(SpectuiError, match="drafter=tree needs --draft PATH"):
        spec_settings(spec, have_draft=False)
