"""What a model file says and where it comes from: GGUF headers and speculative kinds (``spec_kinds``), chat
templates (``chat``), models by name through the Hugging Face cache (``hub``) and the draft/target pair's checks
(``pair``)."""
