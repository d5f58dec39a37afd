"""Real pairs on real hardware (issue 9), on the tiny models and the real llama.cpp:

- vocabularies judged as llama.cpp judges them (sizes within 128, BOS/EOS rules, texts from id 5);
- drafted ids always inside the target's vocabulary; sampling over the shared ids;
- GPU offload flags on this CPU-only build (defaults, the one-line warning, where each model runs);
- threads chosen as llama.cpp does, and other processes' CPU use recorded per pass.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tinymodels
from in_process import both_ways

from spectui.analysis.stats import compute
from spectui.contract.control import RunControl
from spectui.contract.errors import SpectuiError
from spectui.contract.events import PassEvent, RunEnded, RunStarted, Settings

REPO = Path(__file__).resolve().parents[2]


def spectui(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spectui", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=120)


cli = both_ways(spectui)  # exit status and lines: in this process in the fast lane (tests/in_process.py)
NV = len(tinymodels.default_vocab())  # the tiny models' vocabulary size


def run_events(engine, k=3, temp=0.0, n=40, seed=0, drafter="model"):
    control = RunControl(Settings(draft_max=k, temperature=temp, drafter=drafter, seed=seed))
    return list(engine.run("the hash map", control, n))


def text_of(events) -> str:
    return "".join(t.text for e in events if isinstance(e, PassEvent) for t in e.emitted)


def ids_of(events) -> list[int]:
    return [t.id for e in events if isinstance(e, PassEvent) for t in e.emitted]


@pytest.fixture(scope="module")
def padded(tiny_model):
    """Copies of the tiny target with 1, 128 and 129 padding tokens (zero rows), built once per run."""
    return {n: tiny_model(f"pad{n}.gguf", seed=0, pad=n, name=f"tiny-pad{n}") for n in (1, 128, 129)}


@pytest.mark.parametrize("pad", [0, 1, 128])
@pytest.mark.parametrize("bigger", ["draft", "target"])
def test_vocab_size_difference_up_to_128_is_accepted(make_engine, tiny_target, padded, pad, bigger):
    """Same weights, vocabularies NV vs NV + pad: accepted, every draft accepted at T = 0, and the text
    is the unpadded target's own greedy text; no emitted or drafted id lies outside the shared ids."""
    other = padded[pad] if pad else tiny_target
    target, draft = (tiny_target, other) if bigger == "draft" else (other, tiny_target)
    e = make_engine(target, draft)
    assert e.target.n_use == e.draft.n_use == NV
    assert e.target.n_vocab == (NV + pad if bigger == "target" else NV)
    events = run_events(e, k=3)
    drafts = [d for ev in events if isinstance(ev, PassEvent) for d in ev.drafts]
    assert drafts and all(d.verdict == "accepted" for d in drafts)
    assert max(ids_of(events)) < NV and max(d.id for d in drafts) < NV
    alone = make_engine(tiny_target)
    ref = run_events(alone, k=0, drafter="none")
    assert ids_of(events) == ids_of(ref)


def test_vocab_size_difference_129_is_refused_in_one_line(make_engine, tiny_target, padded):
    with pytest.raises(SpectuiError) as e:
        make_engine(tiny_target, padded[129])
    msg = str(e.value)
    assert "\n" not in msg and str(NV) in msg and str(NV + 129) in msg and "129" in msg and "128" in msg


def test_vocab_size_difference_129_cli_exit_2(tiny_target, padded, cli):
    r = cli("--target", str(tiny_target), "--draft", str(padded[129]), "--headless", "-n", "4", "-t", "1")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "vocabulary mismatch" in lines[0] and "129" in lines[0]


def test_first_differing_text_from_id_5_is_named(make_engine, tiny_target, tiny_model):
    v = tinymodels.default_vocab()
    v[5] = "\u2581zebra"
    other = tiny_model("other5.gguf", vocab=v, pad=2)
    with pytest.raises(SpectuiError) as e:
        make_engine(tiny_target, other)
    assert "token id 5" in str(e.value) and "'\u2581zebra'" in str(e.value)


def test_texts_below_id_5_are_not_compared_as_in_llama_cpp(make_engine, tiny_target, tiny_model):
    """llama.cpp compares token texts from id 5: special tokens' texts may differ between family members."""
    v = tinymodels.default_vocab()
    v[0] = "<UNK>"
    other = tiny_model("unk.gguf", vocab=v)
    e = make_engine(tiny_target, other)
    assert e.target.n_use == NV


def test_bos_rule_must_match(make_engine, tiny_target, tiny_model):
    other = tiny_model("nobos.gguf", add_bos=False)
    with pytest.raises(SpectuiError) as e:
        make_engine(tiny_target, other)
    assert "BOS" in str(e.value) and "\n" not in str(e.value)


def test_sampling_over_shared_ids_is_exact(make_engine, tiny_target, tiny_draft_noisy, padded, tmp_path):
    """A padded target at T = 0.8: the run ends with exact counts (RunEnded == statistics of its events),
    drafts and emitted ids stay in the shared vocabulary, and the target logits the engine verified with
    cover exactly the shared ids (the padding rows never enter p)."""
    e = make_engine(padded[128], tiny_draft_noisy)
    rows = []
    e.debug_hook = rows.append
    events = run_events(e, k=4, temp=0.8, n=60, seed=7)
    end = events[-1]
    assert isinstance(end, RunEnded) and end.reason in ("n_predict", "eog")
    snap = compute(events)
    assert (end.n_emitted, end.n_drafted, end.n_accepted, end.n_passes) == (
        snap.n_emitted, snap.n_drafted, snap.n_accepted, snap.n_passes)
    assert max(ids_of(events)) < NV
    assert rows and all(r["target_logits"].shape[1] == NV for r in rows)


# ------------------------------------------------------------------ GPU flags on a CPU-only build


def test_cpu_build_places_every_layer_on_the_cpu(make_engine, tiny_target, tiny_draft_same):
    from spectui.engine.llama.devices import supports_gpu_offload

    assert not supports_gpu_offload()  # this machine's build: the tests below rely on it
    warnings = []
    e = make_engine(tiny_target, tiny_draft_same, warn=warnings.append)
    assert not [w for w in warnings if "GPU" in w]
    start = run_events(e, k=1, n=3)[0]
    assert isinstance(start, RunStarted)
    for info in (start.target, start.draft):
        assert info.backend == "CPU" and info.n_gpu_layers == 0 and info.n_layer == tinymodels.N_LAYER


@pytest.mark.parametrize("flags", [{"n_gpu_layers": "all"}, {"n_gpu_layers": 99}, {"n_gpu_layers_draft": "5"}])
def test_gpu_layers_asked_on_cpu_build_one_warning(make_engine, tiny_target, tiny_draft_same, flags):
    warnings = []
    e = make_engine(tiny_target, tiny_draft_same, warn=warnings.append, **flags)
    gpu = [w for w in warnings if "GPU" in w]  # (the same-size draft also warns that it is not smaller)
    assert len(gpu) == 1 and "ignored" in gpu[0] and "\n" not in gpu[0]
    assert e.target.n_gpu_layers == 0 and e.draft.n_gpu_layers == 0


def test_gpu_layers_zero_is_silent(make_engine, tiny_target):
    warnings = []
    make_engine(tiny_target, warn=warnings.append, n_gpu_layers="0")
    assert warnings == []


def test_gpu_layers_bad_value(make_engine, tiny_target):
    with pytest.raises(SpectuiError) as e:
        make_engine(tiny_target, n_gpu_layers="lots")
    assert "-ngl" in str(e.value) and "'all'" in str(e.value)


def test_cli_ngl_warning_and_json_placement(tiny_target, tiny_draft_same, tmp_path, cli):
    trace = tmp_path / "run.jsonl"
    r = cli("-m", str(tiny_target), "-md", str(tiny_draft_same), "-ngl", "all", "-ngld", "all", "--headless", "--json",
            "-n", "6", "-t", "1", "--record", str(trace))
    assert r.returncode == 0, r.stderr
    warn = [ln for ln in r.stderr.splitlines() if "GPU" in ln]
    assert len(warn) == 1 and warn[0].startswith("spectui: warning:")
    out = json.loads(r.stdout)
    assert out["placement"]["target"] == {"backend": "CPU", "device": out["start"]["target"]["device"],
                                          "n_layer": tinymodels.N_LAYER, "n_gpu_layers": 0}
    header = json.loads(trace.read_text().splitlines()[0])
    assert header["models"]["target"]["backend"] == "CPU" and header["models"]["draft"]["n_gpu_layers"] == 0


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_text_summary_says_where_models_run(tiny_target, tiny_draft_same):
    r = subprocess.run(
        [sys.executable, "-m", "spectui", "-m", str(tiny_target), "-md", str(tiny_draft_same), "--headless",
         "-n", "4", "-t", "1"],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith(("target tiny", "draft  tiny"))]
    assert len(lines) == 2 and all("CPU" in ln and "-t 1" in ln for ln in lines)


# ------------------------------------------------------------------ threads and contention


@pytest.mark.slow  # a run with the default threads
def test_default_threads_recorded(make_engine, tiny_target):
    from spectui.engine.cpu import default_threads

    e = make_engine(tiny_target, threads=None)
    assert e.threads == default_threads().threads >= 1
    start = run_events(e, k=0, n=2, drafter="none")[0]
    assert start.threads == e.threads


def test_others_cpu_recorded_per_pass(make_engine, tiny_target, tiny_draft_same):
    e = make_engine(tiny_target, tiny_draft_same)
    passes = [ev for ev in run_events(e, k=2, n=20) if isinstance(ev, PassEvent)]
    assert passes and all(0.0 <= p.others_cpu <= len(os.sched_getaffinity(0)) for p in passes)
