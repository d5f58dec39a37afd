"""llama.cpp's n-gram types in spectui's loop against llama.cpp's own: ``llama-speculative-simple --spec-type
NAME`` (built beside llama-server by scripts/build-llama-server.sh, from the same vendored llama.cpp) on the same
tiny model, prompt and options, at T = 0. Every pass's (accepted, drafted) is the same, in order, up to the pass
that crosses -n (llama.cpp finishes it, spectui cuts at -n). llama.cpp's first pass verifies the first token; it
drafts nothing on this prompt (checked), which is spectui's prefill pass (docs/running.md, the conventions)."""

from __future__ import annotations

import re
import subprocess

import pytest
from qwen_pair import NEAR_TIE, QWEN_TARGET, needs_qwen
from servers import llama_server_binary

from spectui.contract.control import RunControl
from spectui.contract.events import PassEvent, Settings

PROMPT = "the hash map handles collisions"
N = 64
OPTIONS = {
    "ngram-simple": ("--spec-ngram-simple-size-n", 2, "--spec-ngram-simple-size-m", 4),
    "ngram-map-k": ("--spec-ngram-map-k-size-n", 2, "--spec-ngram-map-k-size-m", 4),
    "ngram-map-k4v": ("--spec-ngram-map-k4v-size-n", 2, "--spec-ngram-map-k4v-size-m", 4),
    "ngram-mod": ("--spec-ngram-mod-n-match", 2, "--spec-ngram-mod-n-min", 1, "--spec-ngram-mod-n-max", 4),
    "ngram-cache": (),
}
ACCEPTED = re.compile(r"accepted (\d+)/(\d+) draft tokens")
LAST_TOKEN = re.compile(r"accepted (\d+)/(\d+) draft tokens, the last target token is: \((\d+)\)")


def speculative_simple():
    server = llama_server_binary()
    binary = server.parent / "llama-speculative-simple" if server is not None else None
    if binary is None or not binary.is_file():
        pytest.skip("llama-speculative-simple not built: run scripts/build-llama-server.sh")
    return binary


def llama_passes(binary, model, spec_type: str) -> list[tuple[int, int]]:
    argv = [str(binary), "-m", str(model), "--spec-type", spec_type, *map(str, OPTIONS[spec_type]), "-p", PROMPT,
            "-n", str(N), "--temp", "0", "-t", "1", "-c", "512", "-lv", "5"]
    return [(int(a), int(d)) for a, d in ACCEPTED.findall(logged(argv))]


def logged(argv: list[str]) -> str:
    """The program's log, whole: llama.cpp logs from a thread that the program's exit may cut short (its last lines
    lost), so the run is made again until the log reaches its final ``n_accept`` line (the log is in order)."""
    for _ in range(8):
        r = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
        if "n_accept  =" in r.stdout + r.stderr:
            return r.stdout + r.stderr
    raise AssertionError("llama-speculative-simple's log never reached its end in 8 runs")


@pytest.mark.alone  # the reference program's whole log: tests/run_alone.py
@pytest.mark.slow
@pytest.mark.parametrize("spec_type", list(OPTIONS))
def test_counts_equal_llama_speculative_simple(make_engine, tiny_target, spec_type):
    binary = speculative_simple()
    theirs = llama_passes(binary, tiny_target, spec_type)
    assert theirs and theirs[0] == (0, 0), theirs[:3]  # its first pass: the first token, nothing drafted
    flags, values = OPTIONS[spec_type][::2], OPTIONS[spec_type][1::2]
    spec = tuple((f.lstrip("-").replace("-", "_"), v) for f, v in zip(flags, values))
    with make_engine(tiny_target, spec_options=spec) as e:
        events = list(e.run(PROMPT, RunControl(Settings(draft_max=8, drafter=spec_type)), N))
    ours = [(p.n_accepted, len(p.drafts)) for p in events if isinstance(p, PassEvent) and not p.prefill]
    common = min(len(ours), len(theirs) - 1) - 1  # the pass that crosses -n is each one's own
    assert common > 10
    assert ours[:common] == theirs[1:common + 1], spec_type
    if spec_type not in ("ngram-cache", "ngram-map-k4v"):  # their thresholds want more text; equal at zero drafts
        assert sum(d for _, d in ours[:common]) > 0, spec_type  # the comparison covers drafted passes


QWEN_PROMPT = ("Repeat this Python function exactly, then write it again with the name renamed to total:\n\n"
               "def add_all(values):\n    result = 0\n    for value in values:\n        result += value\n"
               "    return result\n")


@pytest.mark.alone  # the reference program's whole log: tests/run_alone.py
@needs_qwen
@pytest.mark.qwen
@pytest.mark.slow
def test_counts_equal_llama_speculative_simple_on_the_qwen_pair(make_engine):
    target = QWEN_TARGET
    binary = speculative_simple()
    argv = [str(binary), "-m", str(target), "--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "3",
            "--spec-ngram-simple-size-m", "8", "-p", QWEN_PROMPT, "-n", "64", "--temp", "0", "-t", "2", "-c", "1024",
            "-lv", "5"]
    theirs = [(int(a), int(d), int(t)) for a, d, t in LAST_TOKEN.findall(logged(argv))]
    assert theirs and theirs[0][:2] == (0, 0), theirs[:3]
    spec = (("spec_ngram_simple_size_n", 3), ("spec_ngram_simple_size_m", 8))
    with make_engine(target, n_ctx=1024, threads=2, spec_options=spec) as e:
        events = list(e.run(QWEN_PROMPT, RunControl(Settings(draft_max=8, drafter="ngram-simple")), 64))
    passes = [p for p in events if isinstance(p, PassEvent) and not p.prefill and p.emitted]
    ours = [(p.n_accepted, len(p.drafts), p.emitted[-1].id) for p in passes]
    theirs = theirs[1:]
    # llama.cpp is not batch-invariant: the two runs may part at a near tie (tests/qwen_pair.py NEAR_TIE); they
    # must agree on every pass before the first whose verify met one, and the pass that crosses -n is each one's
    tie = next((i for i, p in enumerate(passes) if any(x.margin < NEAR_TIE for x in p.inspect)), len(passes))
    same = min(tie, len(ours) - 1, len(theirs) - 1)
    assert same >= 5 and sum(d for _, d, _ in ours[:same]) > 0, (same, ours[:8])
    assert ours[:same] == theirs[:same]
