"""``spectui probe``: real llama.cpp on the tiny models (figures positive, batch 16 dearer than batch 1, JSON
shape, the cache's hit / miss / refresh / corruption), the verdict on hand-made figures, and the Qwen pair
when present (sanity only: no timing assertions)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from qwen_pair import QWEN_DRAFT, QWEN_TARGET, needs_qwen
from synthetic_events import make_start

from spectui.analysis.cost import draft_policy as autok
from spectui.analysis.cost.costmodel import break_even_acceptance
from spectui.analysis.measured.machine import cache_key, cache_path
from spectui.analysis.measured.probe import (
    ProbeResult,
    analyse,
    cached_or_measure,
    chart,
    load_cached,
    measure,
    render,
)
from spectui.commands.probe import probe_cmd
from spectui.contract.events import ModelInfo


@pytest.fixture(scope="module")
def engine(make_engine, tiny_target, tiny_draft_noisy):
    return make_engine(tiny_target, tiny_draft_noisy)


@pytest.fixture(scope="module")
def measured(engine):
    return measure(engine, max_batch=16, repeats=3)


def _check_figures(r: ProbeResult, max_batch: int = 16) -> None:
    assert r.max_batch == max_batch
    assert r.decode_ms > 0 and all(ms > 0 for ms in r.verify_ms_by_batch)
    assert r.decode_ms == r.verify_ms_by_batch[0]
    # (that 16 tokens cost more than 1 is a timing claim: benchmarks/bench_verify_batch.py measures it)
    assert r.bandwidth_gb_s > 0 and r.per_token_ms > 0
    assert r.curve == {b - 1: ms for b, ms in enumerate(r.verify_ms_by_batch, 1)}
    assert r.context_tokens > 0  # measured with a prompt in the KV cache
    assert len(r.loadavg) == 3 and r.machine.get("cpu") is not None


def test_figures_on_the_tiny_models(measured):
    r = measured
    _check_figures(r)
    assert r.draft is not None and r.draft_decode_ms > 0 and r.cost_ratio == r.draft_decode_ms / r.decode_ms
    assert r.target.size_bytes == os.path.getsize(r.target.path)
    assert r.bandwidth_gb_s == pytest.approx(r.target.size_bytes / r.decode_ms * 1000 / 1e9)
    v = r.verdict()
    assert v.limit in ("memory", "kernels", "compute", "mixed")
    assert v.sentence and v.sentence.endswith(".")
    text = render(r)
    assert "verify cost by batch size" in text and "|" in text and "\x1b[" not in text
    assert text.count(" ms ") >= 16


def test_measure_leaves_the_engine_usable(engine, measured):
    from spectui.contract.control import RunControl
    from spectui.contract.events import RunEnded, Settings

    evs = list(engine.run("the cat", RunControl(Settings(draft_max=2)), 8))
    assert isinstance(evs[-1], RunEnded) and evs[-1].reason in ("n_predict", "eog"), evs[-1]


def test_cache_hit_miss_refresh_and_corruption(engine, tmp_path):
    warnings = []
    first = cached_or_measure(engine, repeats=1, directory=tmp_path, warn=warnings.append)
    assert not first.cached and first.cache_file and Path(first.cache_file).is_file()
    _check_figures(first)
    # hit: the same figures, read back (not measured again)
    hit = cached_or_measure(engine, repeats=1, directory=tmp_path, warn=warnings.append,
                            now_quiet=lambda t: False)
    assert hit.cached and hit.measured_at == first.measured_at and hit.verify_ms_by_batch == first.verify_ms_by_batch
    # refresh: measured again, stored again
    again = cached_or_measure(engine, repeats=1, directory=tmp_path, refresh=True,
                              warn=warnings.append)
    assert not again.cached and again.measured_at > first.measured_at
    assert cached_or_measure(engine, directory=tmp_path,
                             now_quiet=lambda t: False).measured_at == again.measured_at
    assert warnings == []
    # corrupt: one line, measured again, and the file is good afterwards
    path = Path(again.cache_file)
    for bad in ("{not json", json.dumps({"key": "x"}), "[1, 2]"):
        path.write_text(bad, encoding="utf-8")
        r = cached_or_measure(engine, repeats=1, directory=tmp_path, warn=warnings.append)
        assert not r.cached
        assert len(warnings) == 1 and "corrupt" in warnings[0] and str(path) in warnings[0]
        assert "\n" not in warnings[0]
        warnings.clear()
        key, _ = cache_key(engine)
        assert load_cached(path, key).cached
    # a result whose figures are malformed is corrupt too
    data = json.loads(path.read_text())
    data["result"]["verify_ms_by_batch"] = [1.0, -2.0]
    path.write_text(json.dumps(data))
    cached_or_measure(engine, repeats=1, directory=tmp_path, warn=warnings.append)
    assert len(warnings) == 1 and "corrupt" in warnings[0]


def test_a_cached_result_measured_under_load_is_measured_again_when_quiet(engine, tmp_path):
    first = cached_or_measure(engine, repeats=1, directory=tmp_path, now_quiet=lambda t: False)
    path = Path(first.cache_file)
    data = json.loads(path.read_text())
    data["result"]["others_cpu"] = 1.8  # as if measured while others kept 1.8 cores busy
    path.write_text(json.dumps(data))
    warnings = []
    busy = cached_or_measure(engine, directory=tmp_path, warn=warnings.append,
                             now_quiet=lambda t: False)
    assert busy.cached and not busy.quiet and warnings == []  # still busy: keep what we have
    again = cached_or_measure(engine, repeats=1, directory=tmp_path, warn=warnings.append,
                              now_quiet=lambda t: True)
    assert not again.cached and again.measured_at > first.measured_at
    assert len(warnings) == 1 and "measuring again" in warnings[0]


def test_cache_key_names_the_model_file_threads_and_machine(make_engine, engine, tiny_target, tiny_draft_noisy,
                                                            tmp_path):
    key, digest = cache_key(engine)
    assert key["threads"] == 1 and key["target"]["size"] == os.path.getsize(tiny_target)
    assert key["machine"]["cpu"] is not None and key["machine"]["system_info_sha256"]
    assert cache_key(engine, max_batch=8)[1] != digest
    other = make_engine(tiny_target, tiny_draft_noisy, threads=2)
    assert cache_key(other)[1] != digest
    # a copy of the file elsewhere, then the same file modified: each is another model
    copy = tmp_path / "copy.gguf"
    shutil.copyfile(tiny_target, copy)
    with make_engine(copy) as e:
        d1 = cache_key(e)[1]
        os.utime(copy, ns=(1_000_000_000, 1_000_000_000))
        assert cache_key(e)[1] != d1


def test_json_and_text_commands(tiny_target, tiny_draft_noisy, tmp_path):
    runner = CliRunner()
    env = {"XDG_CACHE_HOME": str(tmp_path), "NO_COLOR": "1"}
    args = ["--target", str(tiny_target), "--draft", str(tiny_draft_noisy), "-t", "1", "-c", "512",
            "--repeats", "1", "--max-batch", "8"]
    res = runner.invoke(probe_cmd, args + ["--json"], env=env)
    assert res.exit_code == 0, res.output
    line = next(x for x in res.output.splitlines() if x.startswith("{"))
    d = json.loads(line)
    for k in ("decode_ms", "bandwidth_gb_s", "bandwidth_note", "verify", "per_token_ms_at_max_batch",
              "draft_decode_ms", "cost_ratio", "sentence", "verdict", "loadavg", "others_cpu", "quiet", "threads",
              "machine", "target", "draft", "cache_file", "cached"):
        assert k in d, k
    assert [v["batch"] for v in d["verify"]] == list(range(1, 9))
    assert all(v["ms"] > 0 and v["decodes"] > 0 for v in d["verify"])
    assert d["verify"][0]["decodes"] == pytest.approx(1.0)
    assert d["cached"] is False and Path(d["cache_file"]).parent == tmp_path / "spectui" / "probe"
    cache = Path(d["cache_file"])
    data = json.loads(cache.read_text())
    data["result"]["others_cpu"] = 0.0  # quiet, so the cache is kept whatever the load is now
    cache.write_text(json.dumps(data))
    res2 = runner.invoke(probe_cmd, args, env=env)  # text, from the cache
    assert res2.exit_code == 0, res2.output
    assert "cached, measured" in res2.output and "verify cost by batch size" in res2.output
    assert "\x1b[" not in res2.output
    bad = runner.invoke(probe_cmd, args + ["--max-batch", "1"], env=env)
    assert bad.exit_code == 2 and "--max-batch" in bad.output
    missing = runner.invoke(probe_cmd, ["--target", str(tmp_path / "nope.gguf")], env=env)
    assert missing.exit_code == 2 and "nope.gguf" in missing.output


# ---------------------------------------------------------------- the verdict, on hand-made figures


def _hand(decode, ratios, draft_ms=None, others=0.0) -> ProbeResult:
    return ProbeResult(
        target=ModelInfo(path="/m/t.gguf", name="t", size_bytes=1_100_000_000), threads=2, machine={"cpu": "x"},
        draft=ModelInfo(path="/m/d.gguf") if draft_ms is not None else None, decode_ms=decode,
        verify_ms_by_batch=tuple(decode * r for r in ratios), draft_decode_ms=draft_ms or 0.0, repeats=3,
        loadavg=(0.5, 0.5, 0.5), others_cpu=others,
    )


# the issue's figures for the Qwen 1.5B target on 2 cores: 26 ms, then 1.70x, 2.15x, 2.54x ... 5.2x at 16
QWEN_RATIOS = (1.0, 1.70, 2.15, 2.54, 2.9, 3.3, 3.7, 4.36, 4.5, 4.6, 4.7, 4.8, 4.9, 5.0, 5.1, 5.27)


def test_verdict_the_issue_figures_kernels_and_no_pay():
    r = _hand(26.0, QWEN_RATIOS, draft_ms=15.6)  # c = 0.6
    assert r.bandwidth_gb_s == pytest.approx(1.1e9 / 0.026 / 1e9)
    v = analyse(r)
    assert v.limit == "kernels"
    assert v.example_k == 2 and v.break_even_tokens == pytest.approx(2.15 + 2 * 0.6)
    assert v.acceptance_needed is None  # 3.35 tokens needed, 3 possible
    # only k = 15 breaks even (16 tokens for 5.27 + 15 x 0.6 = 14.27 decodes), at ~98.5% per draft
    assert v.min_acceptance_k == 15 and 0.98 < v.min_acceptance < 0.99 and not v.pays_in_practice
    assert v.best_case_k == 15 and v.best_case_speedup == pytest.approx(16 / 14.27, rel=1e-3)
    assert "cannot pay" in v.sentence and "kernels" in v.sentence
    assert "3 tokens costs 2.15 decodes" in v.sentence
    assert r.summary_line() == ("this machine: decode 26.0 ms (weights <= 42 GB/s), verify 2/3/4/8/16 tokens = "
                                "1.70/2.15/2.54/4.36/5.27 decodes, draft c = 0.60")
    # without a draft model (prompt lookup: free drafts) the same curve pays when acceptance is high
    v0 = analyse(_hand(26.0, QWEN_RATIOS))
    needs = {k: break_even_acceptance(QWEN_RATIOS[k], k) for k in range(1, 16)}
    assert needs[1] == pytest.approx(0.70) and needs[2] < needs[1]  # a + a^2 = 1.15: a = 0.68
    k_best = min(needs, key=lambda k: needs[k])
    assert v0.pays_in_practice and v0.min_acceptance_k == k_best and v0.min_acceptance == pytest.approx(needs[k_best])
    assert f"pays here once more than {needs[k_best]:.0%}" in v0.sentence


def test_verdict_memory_bound_flat_curve_pays():
    r = _hand(26.0, [1.0 + 0.02 * (b - 1) for b in range(1, 17)], draft_ms=2.6)
    v = analyse(r)
    assert v.limit == "memory" and "flat" in v.limit_sentence
    assert v.best_case_k > 2 and v.best_case_speedup > 3
    # break even at k: (1 + 0.02k + 0.1k) decodes; the acceptance needed solves Leviathan's formula
    k = v.example_k
    assert k == v.min_acceptance_k == 1 and v.pays_in_practice
    assert v.break_even_tokens == pytest.approx(1 + 0.02 * k + 0.1 * k)
    a = v.acceptance_needed
    assert (1 - a ** (k + 1)) / (1 - a) == pytest.approx(v.break_even_tokens, rel=1e-6)


def test_verdict_compute_bound_and_acceptance_needed():
    v = analyse(_hand(10.0, [float(b) for b in range(1, 17)], draft_ms=1.0))
    assert v.limit == "compute" and v.best_case_k == 0 and v.min_acceptance is None
    assert "no k breaks even" in v.sentence
    assert break_even_acceptance(1.0, 2) == 0.0
    assert break_even_acceptance(3.01, 2) is None
    assert break_even_acceptance(3.0, 2) == pytest.approx(1.0)
    assert break_even_acceptance(1.5, 1) == pytest.approx(0.5)


def test_chart_plain_text_against_the_flat_line():
    r = _hand(10.0, [1.0, 2.0, 4.0])
    lines = chart(r, width=40)
    assert len(lines) == 4 and "flat line" in lines[0]
    bars = [ln.split("x ", 1)[1] for ln in lines[1:]]
    assert [b.count("#") + b.count("|") for b in bars] == [10, 20, 40]
    assert all(b.index("|") == 9 for b in bars)  # one decode's time, on every row


def test_quiet_and_warning():
    assert _hand(10.0, [1.0, 2.0]).quiet and _hand(10.0, [1.0, 2.0]).warning() == ""
    busy = _hand(10.0, [1.0, 2.0], others=1.6)
    assert not busy.quiet and "not quiet" in busy.warning() and "1.6 cores" in busy.warning()
    unknown = replace(busy, others_cpu=-1.0, loadavg=(8.0, 8.0, 8.0))
    assert not unknown.quiet


def test_round_trip_and_the_run_carries_the_curve():
    r = _hand(26.0, QWEN_RATIOS, draft_ms=15.6)
    assert ProbeResult.from_dict(json.loads(json.dumps(r.to_dict()))) == r
    machine = r.machine_probe()  # what a run hands the engine (RunStarted.probe)
    assert machine.summary == r.summary_line()
    assert json.loads(machine.report_json) == json.loads(json.dumps(r.report()))
    pol = autok.make_policy("cost")
    pol.observe(replace(make_start(target_decode_ms=26.0, draft_decode_ms=15.6), probe=machine))
    assert pol.curve == r.curve
    pol = autok.make_policy("cost")
    pol.observe(make_start(target_decode_ms=26.0))
    assert pol.curve is None


# ---------------------------------------------------------------- the Qwen pair


@pytest.mark.qwen
@needs_qwen
def test_probe_on_the_qwen_pair(make_engine, tmp_path):
    e = make_engine(QWEN_TARGET, QWEN_DRAFT, n_ctx=1024, threads=min(os.cpu_count() or 2, 8))
    r = cached_or_measure(e, repeats=1, directory=tmp_path)
    _check_figures(r)
    assert r.draft is not None and 0 < r.cost_ratio < 2
    assert r.weight_bytes > 500_000_000 and r.bandwidth_gb_s > 0
    assert analyse(r).sentence
    assert cache_path(r.key, tmp_path).is_file()


def test_probe_module_does_not_import_textual():
    import subprocess
    import sys

    code = ("import sys, spectui.analysis.measured.probe, spectui.analysis.cost.draft_policy, "
            "spectui.analysis.cost.costmodel; "
            "print('textual' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "False"


def test_python_dash_m_help():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "spectui.commands.probe", "--help"], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2], check=False)
    assert out.returncode == 0, out.stderr
    for opt in ("--target", "--draft", "--json", "--max-batch", "--repeats", "--refresh", "-t, --threads"):
        assert opt in out.stdout, opt


def test_the_header_shows_a_cached_probes_words_escaped_and_names_models_by_their_file_type():
    """A probe read back from its cache carries words from outside (the CPU's name, the GGUF's name and file
    type): the header shows them through the one escaping rule, and names a model as the screens do
    (general.name without a format word the file does not have, then its file type)."""
    r = dataclasses.replace(
        _hand(26.0, QWEN_RATIOS, draft_ms=15.6), machine={"cpu": "EPYC\x1b[2J"},
        target=ModelInfo(path="/m/t.gguf", name="Qwen2.5 Coder 1.5B Instruct AWQ", size_bytes=1_100_000_000,
                         quantization="Q4_K_M\x07"),
        draft=ModelInfo(path="/m/d.gguf", name="Qwen2.5 Coder 0.5B Instruct GGUF", quantization="Q8_0"))
    head = render(r).splitlines()
    assert head[0].startswith("spectui probe: Qwen2.5 Coder 1.5B Instruct (Q4_K_M\\x07, 1.10 GB) on EPYC\\x1b[2J")
    assert "\x1b" not in "\n".join(head) and "\x07" not in "\n".join(head)
    assert any("(Qwen2.5 Coder 0.5B Instruct Q8_0)" in ln for ln in head)
