"""llama-server's speculative decoding metrics (``--metrics``), as the llama.cpp vendored in llama-cpp-python
0.3.36 writes them (tools/server/server-task.cpp, ``server_task_result_metrics::to_metrics``; the counters are
summed over slots in server-context.cpp when a slot is released):

- ``llamacpp:spec_decode_num_draft_tokens_total`` ("Speculative: Total draft tokens generated"), counter;
- ``llamacpp:spec_decode_num_accepted_tokens_total`` ("... accepted by the target model"), counter;
- ``llamacpp:spec_decode_num_drafts_total`` ("... verification steps"), counter;
- ``llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="i"}``, counter, one series per draft
  position 0..n-1, published once a draft was verified;
- ``llamacpp:tokens_predicted_total``: tokens generated. No TTFT / ITL histograms, no gauges about speculation.

They are named after vLLM's. The counters are printed with 6 significant digits (C++ ``<<`` of a double).
Per request: the response's ``timings.draft_n`` and ``timings.draft_n_accepted`` (server-common.cpp
``server_slot_stats::to_json``), in every streamed chunk with ``timings_per_token``.
"""

from __future__ import annotations

from ..contract.events import KIND_LLAMA_SERVER
from .dialect import SPEC_DECODE_COUNTERS, Dialect

DIALECT = Dialect(
    kind=KIND_LLAMA_SERVER,
    prefix="llamacpp:",
    **SPEC_DECODE_COUNTERS,
    generated=("tokens_predicted",),
    per_request="timings.draft_n / draft_n_accepted in the response",
    words="llama-server: drafts, drafted and accepted counters, accepted per position (when a request ends)",
)
