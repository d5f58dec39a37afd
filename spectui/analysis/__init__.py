"""Statistics and what they mean, without Textual: run statistics, the cost model, the draft-length policies,
what ``spectui probe`` measures and what it means (the verify curve, a head's cost, the kernels' noise, the
batch knee on llama-server's own steps and as each engine's configuration), the lossless check's rule, a
watched server's statistics and the words for a change. The measuring parts drive spectui.engine's probes
on a loaded engine and keep their results in one on-disk cache format; the rest compute from events and
numbers alone."""
