"""Statistics and what they mean, without Textual or llama.cpp state: run statistics, the cost model,
the draft-length policies, the probe's analysis, a watched server's statistics."""
