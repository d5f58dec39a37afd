"""The knee written as each engine's own configuration (``spectui probe --batched --emit vllm|trtllm|llama-server``):
the best draft length at each batch size, from this machine's measured step costs and an acceptance
(``batch_knee.KneePrediction``: the measured B_i covers B_i .. B_(i+1) - 1, the last one itself; k = 0 where even
the best k does not pay).

- ``vllm``: the JSON object for ``--speculative-config`` with vLLM's dynamic speculative decoding table,
  ``num_speculative_tokens_per_batch_size``: ``[start_bs, end_bs, K]`` entries, inclusive ranges starting at 1, K =
  0 switching speculation off (vllm/config/speculative.py and vllm/v1/spec_decode/dynamic/utils.py of vLLM
  0.32.0: the scheduler looks K up by the requests it schedules in a step and carries the last K on past the last
  range). ``num_speculative_tokens`` is the largest K (the lookup takes ``min(K, num_speculative_tokens)``).
- ``trtllm``: TensorRT-LLM's ``speculative_config`` with ``draft_len_schedule`` in a YAML file for
  ``--extra_llm_api_options``: keys are the largest batch size of each range, values its draft length, batch sizes
  past the last key draft 0, and the first key's value must equal ``max_draft_len``
  (tensorrt_llm/_torch/speculative/utils.py ``get_draft_len_for_batch_size`` and the config's validator).
- ``llama-server``: llama-server has no per-batch-size draft length (every slot drafts up to
  ``--spec-draft-n-max`` at any load), so one flag line for each ``-np`` measured: the best k at that many busy
  slots, or no speculation flags where none pays.

Pure text from the prediction: written by the command through the output gate (``contract.outputs``).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

from ...contract.errors import SpectuiError
from ...contract.outputs import Kind
from ..measured.batch_knee import DRAFTER_LOOKUP, DRAFTER_MODEL, KneePrediction

FORMATS = ("vllm", "trtllm", "llama-server")
VLLM_MAX_BS = 512  # the table's last range runs to here (vLLM carries the last K on anyway)
NGRAM_MAX, NGRAM_MIN = 4, 2  # vLLM's prompt_lookup_max / _min, as tests/vllm_server.py serves it
MARK = "spectui probe --emit"


@dataclass(frozen=True)
class Emitted:
    text: str
    kind: Kind
    note: str = ""  # one line for stderr (e.g. speculation never pays)


def _vllm_recognise(head: bytes) -> bool:
    return head.lstrip().startswith(b"{") and b'"num_speculative_tokens_per_batch_size"' in head


VLLM_KIND = Kind("vLLM speculative config", _vllm_recognise)
TRTLLM_KIND = Kind("TensorRT-LLM options", lambda head: head.startswith(f"# {MARK} trtllm".encode()))
LLAMA_KIND = Kind("llama-server flags", lambda head: head.startswith(f"# {MARK} llama-server".encode()))


def vllm_table(pred: KneePrediction) -> list[list[int]]:
    """vLLM's ``num_speculative_tokens_per_batch_size``: the prediction's schedule, the last range open to
    VLLM_MAX_BS."""
    table = [list(e) for e in pred.k_schedule()]
    table[-1][1] = max(table[-1][1], VLLM_MAX_BS)
    return table


def vllm_config(pred: KneePrediction, draft_path: str = "") -> Emitted:
    table = vllm_table(pred)
    k_max = max(e[2] for e in table)
    note = ""
    if k_max == 0:
        k_max = min(pred.ks)  # vLLM needs num_speculative_tokens > 0; the table keeps it off everywhere
        note = "speculation does not pay at any batch size measured: every entry of the table is K = 0 (off)"
    cfg: dict = {"method": "draft_model" if pred.drafter == DRAFTER_MODEL else "ngram"}
    if pred.drafter == DRAFTER_MODEL:
        cfg["model"] = draft_path or "DRAFT"
    else:
        cfg.update(prompt_lookup_max=NGRAM_MAX, prompt_lookup_min=NGRAM_MIN)
    cfg["num_speculative_tokens"] = k_max
    cfg["num_speculative_tokens_per_batch_size"] = table
    body = ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}" for k, v in cfg.items())  # the table on one line
    return Emitted("{\n" + body + "\n}\n", VLLM_KIND, note)


def trtllm_schedule(pred: KneePrediction) -> dict[int, int]:
    """TensorRT-LLM's ``draft_len_schedule`` ({largest batch size of a range: draft length}), the ranges that draft
    0 at the end dropped (past the last key it drafts 0)."""
    out: dict[int, int] = {}
    for _start, end, k in pred.k_schedule():
        out[end] = k
    while out and list(out.values())[-1] == 0:
        out.pop(list(out)[-1])
    return out


def _yaml_str(s: str) -> str:
    return json.dumps(s)  # a JSON string is a YAML scalar (quoted, escaped)


def trtllm_config(pred: KneePrediction, draft_path: str = "") -> Emitted:
    sched = trtllm_schedule(pred)
    head = [f"# {MARK} trtllm: TensorRT-LLM's draft_len_schedule from this machine's measured step costs",
            f"# (acceptance {pred.acceptance:.3f}); give it to trtllm-serve --extra_llm_api_options FILE"]
    if not sched:
        return Emitted("\n".join(head + ["# speculation does not pay at any batch size measured: no speculative_config",
                                         "{}"]) + "\n", TRTLLM_KIND,
                       "speculation does not pay at any batch size measured: no speculative_config to write")
    first = sched[min(sched)]
    if first < max(sched.values()):  # TensorRT-LLM: the first key's draft length is max_draft_len, the largest
        grows = ", ".join(f"k = {k} up to B = {b}" for b, k in sched.items())
        raise SpectuiError(f"--emit trtllm: TensorRT-LLM's draft_len_schedule starts at its largest draft length "
                           f"(max_draft_len), but this prediction's best k grows with the batch size ({grows}): "
                           "a noisy measurement; measure again on a quiet machine (--refresh)")
    lines = head + ["speculative_config:"]
    if pred.drafter == DRAFTER_MODEL:
        lines += ["  decoding_type: DraftTarget", f"  speculative_model: {_yaml_str(draft_path or 'DRAFT')}"]
    else:
        lines += ["  decoding_type: NGram", "  max_matching_ngram_size: 3"]
    lines += [f"  max_draft_len: {first}", "  draft_len_schedule:"]
    lines += [f"    {b}: {k}" for b, k in sched.items()]
    return Emitted("\n".join(lines) + "\n", TRTLLM_KIND)


def llama_server_flags(pred: KneePrediction, draft_path: str = "") -> Emitted:
    """One line of llama-server flags for each -np measured (its best k at that many busy slots)."""
    lines = [f"# {MARK} llama-server: the best --spec-draft-n-max at each -np (every slot drafts at any load),",
             f"# from this machine's measured step costs at acceptance {pred.acceptance:.3f}; one line a -np"]
    for i, b in enumerate(pred.seqs):
        k, s = pred.best_k[i], pred.best_speedup(i)
        if s > 1.0:
            spec = ("--spec-type ngram-simple --spec-ngram-simple-size-n 3" if pred.drafter != DRAFTER_MODEL
                    else f"-md {_shell(draft_path or 'DRAFT.gguf')} --spec-type draft-simple")
            lines.append(f"-np {b} {spec} --spec-draft-n-max {k} --spec-draft-n-min 0   # {s:.2f}x predicted")
        else:
            lines.append(f"-np {b}   # no speculation: {s:.2f}x at the best k ({k})")
    return Emitted("\n".join(lines) + "\n", LLAMA_KIND)


def _shell(path: str) -> str:
    return path if re.fullmatch(r"[\w./@%+=:,-]+", path) else "'" + path.replace("'", "'\\''") + "'"


def emit(fmt: str, pred: KneePrediction, draft_path: str = "") -> Emitted:
    if fmt not in FORMATS:
        raise ValueError(fmt)
    if pred.drafter == DRAFTER_LOOKUP:
        draft_path = ""
    draft_path = os.fspath(draft_path) if draft_path else ""
    return {"vllm": vllm_config, "trtllm": trtllm_config, "llama-server": llama_server_flags}[fmt](pred, draft_path)
