"""Where the tests find the real Qwen2.5-Coder pair (1.5B target, 0.5B draft, Q4_K_M; fetched by
../shared/models/fetch-qwen-coder-pair.sh into ~/.cache/spectui/models, or SPECTUI_MODELS) and the mark that
skips a test, saying why, when it is absent. A test on the pair is also marked ``qwen``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

MODELS = Path(os.environ.get("SPECTUI_MODELS", Path.home() / ".cache" / "spectui" / "models"))
QWEN_TARGET = MODELS / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
QWEN_DRAFT = MODELS / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
HAVE_QWEN = QWEN_TARGET.is_file() and QWEN_DRAFT.is_file()
needs_qwen = pytest.mark.skipif(not HAVE_QWEN, reason=f"Qwen GGUF pair not found in {MODELS}")
PROMPT = "Write a step-by-step explanation of how a hash map handles collisions."  # the acceptance checks' prompt
# llama.cpp is not batch-invariant: a (k+1)-token verify batch and a one-token decode round differently.
# Seen on this pair: a split at a step whose top-two logits were 0.06 apart. Below this margin a split
# is numerics; at or above it, a split is a bug.
NEAR_TIE = 0.1


def qwen_marks(timeout_s: int) -> list:
    """A module's ``pytestmark`` when all of it runs on the pair: ``qwen``, skipped when absent, its timeout."""
    return [pytest.mark.qwen, needs_qwen, pytest.mark.timeout(timeout_s)]
