"""Models by name (-hf / -hfd), offline: a Hugging Face hub cache laid out with huggingface_hub's own
functions (repo folder name, refs, snapshot pointers and blobs), checked by its own scan_cache_dir and
try_to_load_from_cache, then resolved by spectui as llama.cpp would choose (no network here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import tinymodels
from hub_cache import hf_env, lay_out

from spectui.contract.errors import SpectuiError
from spectui.engine.files import hub

pytestmark = pytest.mark.slow  # subprocesses with a local hub server

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def hub_cache(tmp_path_factory, tiny_target, tiny_draft_same, tiny_other_vocab):
    cache = tmp_path_factory.mktemp("hf") / "hub"
    lay_out(cache, "tiny/target-GGUF", {
        "target-Q8_0.gguf": tiny_target,
        "target-Q4_K_M.gguf": tiny_target,
        "mmproj-target-Q4_K_M.gguf": b"not a model",
        "README.md": b"# tiny",
    })
    lay_out(cache, "tiny/draft-GGUF", {"draft-q4_k_m.gguf": tiny_draft_same, "draft-f16.gguf": tiny_draft_same})
    lay_out(cache, "tiny/other-GGUF", {"other-Q4_K_M.gguf": tiny_other_vocab})
    lay_out(cache, "tiny/split-GGUF", {
        "big-Q4_K_M-00002-of-00002.gguf": b"part two",
        "big-Q4_K_M-00001-of-00002.gguf": tiny_target,
    })
    return cache


def spectui(*args, env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spectui", *args], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=180)


def test_layout_is_a_real_hub_cache(hub_cache):
    """huggingface_hub itself reads the cache the test laid out."""
    code = ("from huggingface_hub import scan_cache_dir, try_to_load_from_cache as t;"
            "info = scan_cache_dir();"
            "print(sorted(r.repo_id for r in info.repos));"
            "print(t('tiny/target-GGUF', 'target-Q4_K_M.gguf'))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=hf_env(hub_cache), check=True)
    repos, path = r.stdout.strip().splitlines()
    assert "tiny/target-GGUF" in repos and "tiny/split-GGUF" in repos
    assert path.endswith("target-Q4_K_M.gguf") and Path(path).is_file()


# ------------------------------------------------------------------ llama.cpp's file choice rules


FILES = ["README.md", "m-F16.gguf", "m-Q8_0.gguf", "m-q4_k_m.gguf", "mmproj-m-Q4_K_M.gguf",
         "m-Q5_K_S-00002-of-00002.gguf",
         "m-Q5_K_S-00001-of-00002.gguf", "imatrix-Q4_K_M.gguf"]


@pytest.mark.parametrize("quant, chosen", [
    ("", "m-q4_k_m.gguf"),  # default Q4_K_M, case-insensitive, side-cars skipped
    ("Q8_0", "m-Q8_0.gguf"),
    ("q8_0", "m-Q8_0.gguf"),
    ("F16", "m-F16.gguf"),
    ("Q5_K_S", "m-Q5_K_S-00001-of-00002.gguf"),  # first part of a split model
    ("Q3_K_L", None),
])
def test_choose_file(quant, chosen):
    assert hub.choose_file(FILES, quant) == chosen


def test_default_falls_back_to_q8_then_first_model():
    assert hub.choose_file(["x-F16.gguf", "x-Q8_0.gguf"], "") == "x-Q8_0.gguf"
    assert hub.choose_file(["mmproj-x.gguf", "x-F16.gguf"], "") == "x-F16.gguf"
    assert hub.choose_file(["notes.txt"], "") is None


def test_split_parts_in_order():
    assert hub.split_parts(FILES, "m-Q5_K_S-00001-of-00002.gguf") == [
        "m-Q5_K_S-00001-of-00002.gguf", "m-Q5_K_S-00002-of-00002.gguf"]


@pytest.mark.parametrize("bad", ["justarepo", "a/b/c", "/repo", "user/"])
def test_bad_reference_is_one_line(bad):
    with pytest.raises(SpectuiError) as e:
        hub.parse_ref(bad)
    assert "user/repo[:quant]" in str(e.value)


def test_ref_with_quant():
    assert hub.parse_ref("Qwen/Qwen2.5-7B-Instruct-GGUF:q4_k_m") == hub.HfRef("Qwen/Qwen2.5-7B-Instruct-GGUF", "q4_k_m")


# ------------------------------------------------------------------ the CLI against the cache, offline


def test_run_by_name_offline(hub_cache, tiny_target):
    r = spectui("-hf", "tiny/target-GGUF", "-hfd", "tiny/draft-GGUF:Q4_K_M", "--headless", "--json", "-n", "5",
                "-t", "1", env=hf_env(hub_cache))
    assert r.returncode == 0, r.stderr
    import json

    out = json.loads(r.stdout)
    target, draft = out["start"]["target"]["path"], out["start"]["draft"]["path"]
    assert "models--tiny--target-GGUF" in target and target.endswith("target-Q4_K_M.gguf")
    assert "models--tiny--draft-GGUF" in draft and draft.endswith("draft-q4_k_m.gguf")
    assert out["n_predict"] == 5


def test_hub_unreachable_falls_back_to_cache(hub_cache):
    """Without HF_HUB_OFFLINE the Hub cannot be reached from here: the cache answers, as in llama.cpp."""
    env = hf_env(hub_cache, offline=False)
    env.update(HF_ENDPOINT="http://127.0.0.1:9", HF_HUB_ETAG_TIMEOUT="2", HF_HUB_DOWNLOAD_TIMEOUT="2")
    r = spectui("-hf", "tiny/target-GGUF:Q8_0", "--headless", "-n", "3", "-t", "1", "--drafter", "none", env=env)
    assert r.returncode == 0, r.stderr


def test_split_model_fetches_every_part(hub_cache):
    env = hf_env(hub_cache)
    code = "from spectui.engine.files import hub; print(hub.resolve('tiny/split-GGUF'))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, check=True)
    assert r.stdout.strip().endswith("big-Q4_K_M-00001-of-00002.gguf")


@pytest.mark.parametrize("args, words", [
    (["-hf", "nobody/missing-GGUF"], ["nobody/missing-GGUF", "not in the local cache", "HF_HUB_OFFLINE"]),
    (["-hf", "tiny/target-GGUF:Q5_K_S"], ["no Q5_K_S file", "Q8_0", "Q4_K_M"]),
    (["-hf", "tiny/target-GGUF", "--hf-file", "nope.gguf"], ["nope.gguf not found", "target-Q8_0.gguf"]),
    (["-hf", "not-a-repo"], ["user/repo[:quant]"]),
    (["-hf", "tiny/target-GGUF", "--target", "x.gguf"], ["either --target", "-hf"]),
    (["--hf-file", "x.gguf", "--target", "x.gguf"], ["--hf-file needs -hf"]),
])
def test_errors_are_one_line_exit_2(hub_cache, args, words):
    r = spectui(*args, "--headless", "-n", "2", env=hf_env(hub_cache))
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("spectui: error:"), r.stderr
    for w in words:
        assert w in lines[0]


def test_vocabulary_checked_before_weights_load(hub_cache):
    """A pair by name whose vocabularies differ is refused by the vocabulary check, in one line."""
    r = spectui("-hf", "tiny/target-GGUF", "-hfd", "tiny/other-GGUF", "--headless", "-n", "2", env=hf_env(hub_cache))
    assert r.returncode == 2 and "vocabulary mismatch at token id 300" in r.stderr
    assert tinymodels.default_vocab()[300] != "\u2581zebra"
