"""The batched probe on real llama.cpp with the tiny models: its shape (B = 1, 2, 4, ... 32 of k + 1 tokens, at
least 32 x 5 tokens in one batch), what must be monotone, the engine left usable, the cache (hit, miss on other
sizes, corrupt file, an old probe cache still read) and ``spectui probe --batched`` printing the table and chart;
the Qwen pair when present (sanity only: no timing assertions)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from spectui.analysis.measured import batch_knee as bk
from spectui.analysis.measured.machine import cache_key, cache_path
from spectui.analysis.measured.probe import cached_or_measure as probe_cached
from spectui.commands.probe import probe_cmd
from spectui.engine.probes.batch_probe import MAX_BATCH_TOKENS, fit_max_seqs, measure_batched, seq_sizes

MODELS = Path(os.environ.get("SPECTUI_MODELS", Path.home() / ".cache" / "spectui" / "models"))
SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "models"
QWEN = [d for d in (MODELS, SHARED) if (d / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf").exists()]


@pytest.fixture(scope="module")
def engine(make_engine, tiny_target, tiny_draft_noisy):
    return make_engine(tiny_target, tiny_draft_noisy)


@pytest.fixture(scope="module")
def points(engine):
    # the median of 3 rounds: one round's single-token decode preempted on a loaded machine (4 workers beside two
    # busy loops) took longer than 32 x 5 tokens, twice in a row
    return measure_batched(engine, max_seqs=32, ks=(1, 2, 4), repeats=3, prompt="the hash map key")


def test_sizes():
    assert seq_sizes(32) == (1, 2, 4, 8, 16, 32)
    assert seq_sizes(12) == (1, 2, 4, 8, 12)
    assert seq_sizes(1) == (1,)
    assert fit_max_seqs(32, (1, 2, 4)) == 32  # 32 x 5 = 160 tokens fit
    assert fit_max_seqs(256, (15,)) == MAX_BATCH_TOKENS // 16


def test_shape_on_the_tiny_models(points):
    p = points
    assert p.seqs == (1, 2, 4, 8, 16, 32) and p.ks == (1, 2, 4)
    assert set(p.target_ms) == {(b, n) for b in p.seqs for n in (1, 2, 3, 5)}
    assert all(ms > 0 for ms in p.target_ms.values())
    assert set(p.draft_ms) == set(p.seqs) and all(ms > 0 for ms in p.draft_ms.values())
    assert p.context_tokens > 1 and p.repeats == 3


def test_monotone_where_it_must_be(points):
    # 32 sequences of 5 tokens (160 rows of logits) against one token: that much more work must cost more,
    # even on a loaded machine (a claim about work, not about speed: the ratio is far from 1)
    t = points.target_ms
    assert t[(32, 5)] > t[(1, 1)]
    assert t[(32, 5)] > t[(1, 5)]


def test_the_engine_is_left_usable(engine, points):
    from spectui.contract.control import RunControl
    from spectui.contract.events import RunEnded, Settings

    evs = list(engine.run("the cat", RunControl(Settings(draft_max=2)), 8))
    assert isinstance(evs[-1], RunEnded) and evs[-1].reason in ("n_predict", "eog"), evs[-1]


def test_curve_cache_and_old_cache(engine, tmp_path):
    # an old (single-sequence) probe cache in the directory is read as before, untouched by the batched one
    old = probe_cached(engine, max_batch=4, repeats=1, directory=tmp_path)
    c1 = bk.cached_or_measure(engine, max_seqs=4, ks=(2,), repeats=1, directory=tmp_path)
    assert not c1.cached and c1.cache_file and Path(c1.cache_file).parent == tmp_path
    assert c1.seqs == (1, 2, 4) and c1.ks == (2,) and c1.has_draft
    c2 = bk.cached_or_measure(engine, max_seqs=4, ks=(2,), repeats=1, directory=tmp_path,
                              now_quiet=lambda threads: False)  # read back whatever the load
    assert c2.cached and c2.plain_ms == c1.plain_ms and c2.verify_ms == c1.verify_ms
    again = probe_cached(engine, max_batch=4, repeats=1, directory=tmp_path,
                         now_quiet=lambda threads: False)  # read back whatever the load (a busy-then-quiet
    assert again.cached and again.verify_ms_by_batch == old.verify_ms_by_batch  # machine measures again)
    _, digest = cache_key(engine)  # the probe's key at its default size names the batched file
    assert Path(c1.cache_file).name.startswith(digest + "-batched-")
    assert cache_path(cache_key(engine, 4)[1], tmp_path).exists()  # the old cache file stays
    # other sizes: another key, measured
    c3 = bk.cached_or_measure(engine, max_seqs=2, ks=(2,), repeats=1, directory=tmp_path)
    assert not c3.cached and c3.seqs == (1, 2)
    # a corrupt file: one warning, measured again
    Path(c1.cache_file).write_text("{not json")
    warned = []
    c4 = bk.cached_or_measure(engine, max_seqs=4, ks=(2,), repeats=1, directory=tmp_path, warn=warned.append)
    assert not c4.cached and len(warned) == 1 and "corrupt" in warned[0]
    # --refresh measures again
    c5 = bk.cached_or_measure(engine, max_seqs=4, ks=(2,), repeats=1, directory=tmp_path, refresh=True)
    assert not c5.cached


def test_a_runs_probe_carries_the_batched_curve_cached_beside_it(engine, tmp_path):
    res = probe_cached(engine, repeats=1, directory=tmp_path)  # the run's probe (default sizes)
    assert "batched" not in json.loads(res.machine_probe().report_json)  # none cached yet
    c = bk.cached_or_measure(engine, max_seqs=2, ks=(1,), repeats=1, directory=tmp_path)
    rep = json.loads(probe_cached(engine, repeats=1, directory=tmp_path).machine_probe().report_json)
    assert bk.BatchCurve.from_dict(rep["batched"]["curve"]).plain_ms == c.plain_ms


def test_probe_command_prints_the_table_and_chart(tiny_target, tiny_draft_noisy, tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    args = ["--target", str(tiny_target), "--draft", str(tiny_draft_noisy), "-c", "512", "-t", "1",
            "--max-batch", "4", "--repeats", "1", "--batched", "--batch-seqs", "8", "--batch-ks", "1,2",
            "--acceptance", "0.6"]
    r = CliRunner().invoke(probe_cmd, args, env=env)
    assert r.exit_code == 0, r.output
    out = r.output
    assert "batched step cost" in out and "predicted speedup over plain batched decode at acceptance 0.60" in out
    assert "speedup against B" in out and " 1.00x |" in out and "best k at each B:" in out
    assert "\x1b[" not in out
    # a curve measured busy is measured again once the machine is quiet: mark it quiet, so the cache is read
    # back whatever the load is now (tests/analysis/test_probe.py does the same for the probe's own file)
    (curve_file,) = (tmp_path / "spectui" / "probe").glob("*-batched-*.json")
    data = json.loads(curve_file.read_text())
    data["result"]["others_cpu"] = 0.0
    curve_file.write_text(json.dumps(data))
    r = CliRunner().invoke(probe_cmd, args + ["--json"], env=env)
    assert r.exit_code == 0, r.output
    doc = json.loads(next(ln for ln in r.output.splitlines() if ln.startswith("{")))
    b = doc["batched"]
    assert b["curve"]["seqs"] == [1, 2, 4, 8] and b["curve"]["cached"] is True
    assert set(b["prediction"]["knees"]) == {"1", "2"} and b["prediction"]["acceptance"] == 0.6
    # bad input: one line, exit status 2, before any model loads
    r = CliRunner().invoke(probe_cmd, args[:-1] + ["1.5"], env=env)
    assert r.exit_code == 2 and "Invalid value for '--acceptance': 1.5 is not in the range 0.0<=x<=1.0" in r.output
    for bad, msg in ((["--batch-ks", "0"], "--batch-ks values must be between 1 and 16, not 0"),
                     (["--batch-ks", "a"], "--batch-ks takes comma-separated integers 1..16 (e.g. 2,5,10), not 'a'"),
                     (["--acceptance-from", str(tmp_path / "none.json")], "no such file"),
                     (["--acceptance-from", str(tiny_target)], "trace")):
        r = CliRunner().invoke(probe_cmd, ["--target", str(tiny_target), "--batched", *bad], env=env)
        assert r.exit_code == 2 and msg in r.output, (bad, r.output)
    r = CliRunner().invoke(probe_cmd, ["--target", str(tiny_target), "--acceptance", "0.5"], env=env)
    assert r.exit_code == 2 and "are for --batched" in r.output


@pytest.mark.qwen
@pytest.mark.skipif(not QWEN, reason="the Qwen pair is not fetched")
def test_qwen_pair_32_by_5(make_engine):
    d = QWEN[0]
    eng = make_engine(d / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", d / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
                      n_ctx=1024, threads=2)
    p = measure_batched(eng, max_seqs=32, ks=(4,), repeats=1, prompt="def f(x):")
    assert p.seqs[-1] == 32 and (32, 5) in p.target_ms and all(ms > 0 for ms in p.target_ms.values())


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_the_knee_act_records_an_asciicast(tiny_target, tiny_draft_noisy, tmp_path):
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "knee.cast"
    r = subprocess.run([sys.executable, str(root / "demos" / "record_knee.py"), "--target", str(tiny_target),
                        "--draft", str(tiny_draft_noisy), "--batch-seqs", "4", "--ks", "2", "--repeats", "1", "-t", "1",
                        "-o", str(out)], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    lines = out.read_text().splitlines()
    assert json.loads(lines[0])["version"] == 2
    text = "".join(json.loads(ln)[2] for ln in lines[1:])
    assert "draft model" in text and "prompt lookup" in text and "best k at each B:" in text
    assert "speedup against B" in text and text.count("At B = 1 a pass of k = 2") == 2  # the reason, once an act
