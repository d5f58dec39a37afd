"""Statistics and what they mean, without Textual or llama.cpp state. A run's statistics (``stats``), greedy
losslessness (``lossless``) and a watched server's statistics (``attach_stats``) at the bottom; on them the cost
model and the draft-length policies (``cost/``); on those what this machine measured and its cache
(``measured/``); on top the batch knee (``knee/``)."""
