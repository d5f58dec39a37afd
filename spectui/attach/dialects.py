"""Every engine dialect attach knows (llamacpp.py, vllm.py, sglang.py), and which one a /metrics page speaks.
Each dialect module builds on dialect.py; this module sits above them, so no module of the package imports one
that imports it back."""

from __future__ import annotations

from . import llamacpp, sglang, vllm
from .dialect import Dialect


def all_dialects() -> tuple[Dialect, ...]:
    return (llamacpp.DIALECT, vllm.DIALECT, sglang.DIALECT)


def detect(sample_names) -> Dialect | None:
    """The dialect whose prefix the page's samples carry (llama-server, then vLLM, then SGLang when a page
    mixes them), or None (another exporter)."""
    names = list(sample_names)
    return next((d for d in all_dialects() if any(n.startswith(d.prefix) for n in names)), None)
