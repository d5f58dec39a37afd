"""The graph sampling path (``--sampling graph``, spectui/engine/run/graph_path.py) against the CPU path on the real
llama.cpp with the tiny models: which path a run takes and records; at T > 0, for both paths, the emitted
tokens follow the target's law (a chi-square over many seeded runs), the recorded q(d) and p(d) are the
models' temperature softmax, the first draft is accepted at sum min(p, q), and the two paths' acceptance is
equal within sampling error. At T = 0 tests/engine/test_engine_overlap.py compares every recorded field. The
same checks on llama.cpp's Vulkan backend: tests/engine/test_graph_vulkan.py."""

from __future__ import annotations

import pytest
from graph_checks import check_runs, laws, sampled_runs, two_rates_z

from spectui.contract.control import RunControl
from spectui.contract.errors import SpectuiError
from spectui.contract.event_json import from_dict, to_dict
from spectui.contract.events import RunStarted, Settings
from spectui.engine.llama import models as M
from spectui.engine.run import graph_path as GP

TEMP = 0.9
N_RUNS = 1500


@pytest.fixture(scope="module")
def engines(make_engine, tiny_target, tiny_draft_noisy):
    return {path: make_engine(tiny_target, tiny_draft_noisy, n_ctx=256, sampling=path) for path in ("cpu", "graph")}


@pytest.fixture(scope="module")
def graph_p_engine(make_engine, tiny_target, tiny_draft_noisy):
    """The graph path with the target's p from its chain at T > 0 (a device's default, forced on the CPU)."""
    e = make_engine(tiny_target, tiny_draft_noisy, n_ctx=256, sampling="graph")
    e.parts().graph.target_p = "graph"
    return e


@pytest.fixture(scope="module")
def plain(tiny_target, tiny_draft_noisy):
    ms = [M.LoadedModel(str(p), r, n_ctx=256, threads=1, use_extra_bufts=True, n_batch=64)
          for p, r in ((tiny_target, "target"), (tiny_draft_noisy, "draft"))]
    yield ms
    for m in ms:
        m.close()


@pytest.fixture(scope="module")
def runs(engines, graph_p_engine):
    es = {**engines, "graph-p": graph_p_engine}
    return {path: sampled_runs(e, N_RUNS, TEMP, seed0=1000 * i) for i, (path, e) in enumerate(es.items())}


def test_the_run_records_its_path(engines):
    for path, e in engines.items():
        assert e.sampling == path
        evs = list(e.run("the hash map", RunControl(Settings(draft_max=2, drafter="model")), 4))
        start = evs[0]
        assert isinstance(start, RunStarted) and start.sampling == path
        assert from_dict(to_dict(start)).sampling == path
        assert e.target.chain_rows is False  # the chains come off with the run
    d = to_dict(evs[0])
    del d["sampling"]  # a trace from before the field
    assert from_dict(d).sampling == "cpu"


def test_which_path_auto_takes_and_a_refusal(engines, tiny_target):
    tgt = engines["cpu"].target
    assert GP.choose("cpu", tgt, None, None) == ("cpu", "")
    assert GP.choose("graph", tgt, None, None) == ("graph", "")
    path, why = GP.choose("auto", tgt, None, None)  # the CPU backend: the default stays
    assert path == "cpu" and "CPU backend" in why
    with pytest.raises(SpectuiError, match="--sampling must be one of"):
        GP.choose("gpu", tgt, None, None)
    with pytest.raises(SpectuiError, match="--sampling graph: the eagle3 head"):
        GP.choose("graph", tgt, None, "eagle3")
    assert GP.choose("auto", tgt, None, "mtp")[0] == "cpu"


@pytest.mark.timeout(1800)
@pytest.mark.slow  # a law checked over many samples
@pytest.mark.parametrize("path", ["cpu", "graph", "graph-p"])
def test_t_positive_emits_the_target_law_and_accepts_at_sum_min_p_q(runs, plain, path):
    by_t1 = laws(plain[0], plain[1], runs[path], TEMP)
    fig = check_runs(runs[path], by_t1)
    assert 0.05 < fig["accepted"] < 0.95  # the test has power: drafts are both accepted and rejected


@pytest.mark.timeout(1800)
@pytest.mark.slow  # a law checked over many samples
def test_acceptance_is_equal_between_the_paths_within_sampling_error(runs):
    assert abs(two_rates_z(runs["cpu"], runs["graph"])) < 4.0
    assert abs(two_rates_z(runs["cpu"], runs["graph-p"])) < 4.0
    # the draws are the paths' own: the same seeds give different runs (the draft's draw is the chain's)
    assert [r[:2] for r in runs["cpu"][:50]] != [r[:2] for r in runs["graph"][:50]]


def test_a_temperature_change_mid_run_changes_the_chains(engines):
    """T = 0 then T > 0 in one run: the chains are made again between passes, and the run goes on."""
    e = engines["graph"]
    control = RunControl(Settings(draft_max=3, drafter="model", seed=5))
    n = 0
    for ev in e.run("the hash map handles collisions", control, 40):
        n += 1
        if getattr(ev, "index", None) == 3:
            control.update(temperature=0.8)
    assert ev.reason == "n_predict" and ev.n_emitted == 40 and n > 6
    assert e.parts().graph.target.key is None and e.target.chain_rows is False


def test_on_the_cpu_backend_only_the_draft_has_a_chain_at_t_positive(engines, graph_p_engine):
    """graph_path.target_p_for: on the CPU backend the target's p at T > 0 comes from its raw rows (no chain: the
    chain would softmax every verify row inside llama_decode); at T = 0 the target's greedy chain stays, and the
    draft's chain is on at both temperatures. A forced ``graph`` puts the target's temp + dist chain back."""
    e = engines["graph"]
    assert GP.target_p_for(e.target) == "rows" and e.parts().graph.target_p == "rows"
    for eng, temp, want in ((e, 0.0, True), (e, 0.8, False), (graph_p_engine, 0.8, True)):
        seen = []
        for ev in eng.run("the hash map", RunControl(Settings(draft_max=2, drafter="model", temperature=temp,
                                                             seed=3)), 6):
            if getattr(ev, "index", None) is not None:
                seen.append((eng.target.chain_rows, eng.draft.chain_rows))
        during = [s for s in seen if s != (False, False)]  # (the last passes may reach us after the run's end)
        assert len(during) >= 2 and all(s == (want, True) for s in during), (temp, seen)
        assert eng.target.chain_rows is False and eng.draft.chain_rows is False  # off with the run
    with pytest.raises(ValueError, match="target_p must be one of"):
        GP.GraphRun(e.target, e.draft, target_p="gpu")
