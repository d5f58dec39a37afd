"""Models by name: ``-hf user/repo[:quant]`` resolved to a GGUF file through huggingface_hub's cache.

(First step: local paths only; Hugging Face resolution follows.)
"""

from __future__ import annotations


def resolve_models(models, use_draft: bool = True, quiet: bool = False) -> tuple[str | None, str | None]:
    """(target path, draft path or None) for ``run.ModelOptions``."""
    return models.target, (models.draft if use_draft else None)
