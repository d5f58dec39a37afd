"""The command line on the tiny models: headless output, --json, bad input, signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the command in subprocesses on the engine

ROOT = Path(__file__).resolve().parents[2]


def spectui(*args, timeout=120, **kw):
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-m", "spectui", *map(str, args)], capture_output=True, text=True, timeout=timeout,
        env=env, **kw,
    )


def assert_one_line_error(r, *needles):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("spectui: error: "), lines[0]
    assert "Traceback" not in r.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])


def test_missing_target_file(tmp_path):
    assert_one_line_error(spectui("--target", tmp_path / "nope.gguf", "--headless"), "nope.gguf")


def test_target_is_a_directory(tmp_path):
    assert_one_line_error(spectui("--target", tmp_path, "--headless"), str(tmp_path))


def test_not_gguf(tmp_path):
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"this is not a model at all" * 10)
    assert_one_line_error(spectui("--target", bad, "--headless"), "GGUF")


def test_vocab_mismatch_names_token(tiny_target, tiny_other_vocab):
    r = spectui("--target", tiny_target, "--draft", tiny_other_vocab, "--headless", "-n", "4")
    assert_one_line_error(r, "300")


def test_no_target_points_to_demo():
    assert_one_line_error(spectui("--headless"), "--target")


@pytest.mark.parametrize(
    "args,needle",
    [(["--draft-max", "40"], "--draft-max"), (["--draft-max", "x"], "--draft-max"), (["--temp", "3"], "--temp"),
     (["-n", "0"], "-n"), (["--draft-p-min", "2"], "--draft-p-min"), (["--draft-p-min", "-0.1"], "--draft-p-min"),
     (["--draft-min", "40"], "--draft-min"), (["--inspect-top", "51"], "--inspect-top"),
     (["--inspect-top", "-1"], "--inspect-top")],
)
def test_bad_settings(tiny_target, args, needle):
    assert_one_line_error(spectui("--target", tiny_target, "--headless", "--drafter", "ngram", *args), needle)


def test_headless_prints_llama_cpp_lines_and_ours(tiny_target, tiny_draft_noisy):
    r = spectui("--target", tiny_target, "--draft", tiny_draft_noisy, "--headless", "-p", "the cat", "-n", "40",
                "--draft-max", "3")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for key in ("n_draft   = 3", "n_predict = ", "n_drafted = ", "n_accept  = ", "accept    = ",
                "mean acceptance length", "acceptance by position", "TTFT", "ITL p50 / p95"):
        assert key in out, key
    fields = {ln.split("=")[0].strip(): ln.split("=")[1].strip() for ln in out.splitlines()
              if ln.startswith(("n_predict", "n_drafted", "n_accept"))}
    assert int(fields["n_predict"]) == 40


def test_headless_json_is_consistent_with_passes(tiny_target, tiny_draft_noisy):
    r = spectui("--target", tiny_target, "--draft", tiny_draft_noisy, "--headless", "--json", "-p", "the cat",
                "-n", "48", "--draft-max", "4", "--temp", "0")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    for key in ("tokens", "text", "n_predict", "n_drafted", "n_accept", "acceptance_rate", "mean_acceptance_length",
                "acceptance_by_position", "tokens_per_second", "ttft_ms", "itl_ms_p50", "itl_ms_p95", "stop_reason",
                "passes"):
        assert key in d, key
    passes = d["passes"]
    assert passes[0]["prefill"] is True
    assert d["n_predict"] == len(d["tokens"]) == sum(len(p["emitted"]) for p in passes) == 48
    assert d["tokens"] == [t["id"] for p in passes for t in p["emitted"]]
    assert d["text"] == "".join(t["text"] for p in passes for t in p["emitted"])
    drafted = sum(len(p["drafts"]) for p in passes)
    accepted = sum(1 for p in passes for x in p["drafts"] if x["verdict"] == "accepted")
    assert (d["n_drafted"], d["n_accept"]) == (drafted, accepted)
    assert d["acceptance_rate"] == pytest.approx(accepted / drafted)
    with_drafts = sum(1 for p in passes if p["drafts"])
    assert d["mean_acceptance_length"] == pytest.approx(1 + accepted / with_drafts)
    for pos in d["acceptance_by_position"]:
        i = pos["position"] - 1
        n = sum(1 for p in passes if len(p["drafts"]) > i)
        a = sum(1 for p in passes if len(p["drafts"]) > i and p["drafts"][i]["verdict"] == "accepted")
        assert (pos["drafted"], pos["accepted"]) == (n, a)
    assert d["ttft_ms"] == pytest.approx(passes[0]["timing"]["wall_ms"])
    assert d["stop_reason"] == "n_predict"


def test_sigterm_stops_cleanly_with_summary_and_trace(tiny_target, tmp_path):
    trace = tmp_path / "run.jsonl"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen(
        [sys.executable, "-m", "spectui", "--target", str(tiny_target), "--headless", "--drafter", "none",
         "-n", "1000000", "-c", "65536", "--record", str(trace)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    deadline = time.time() + 60
    while time.time() < deadline and (not trace.exists() or trace.stat().st_size < 2000):
        time.sleep(0.1)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 143, err  # a clean stop, then 128 + SIGTERM (issue 17)
    assert "stopped by the user" in out
    lines = trace.read_text().splitlines()
    assert json.loads(lines[-1])["type"] == "end"
    assert json.loads(lines[-1])["reason"] == "stopped"
