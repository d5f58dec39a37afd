"""View models without Textual: screen state, one frozen view per paint, the inspector, placement."""
