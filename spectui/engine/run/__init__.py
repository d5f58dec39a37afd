"""One run, pass by pass: what a run is made of (``parts``), the pass loop (``passes``; pipelined:
``pipelined`` and ``pipeline``), the prompt's prefill (``prefill``), generation limits (``generation``), the
draft-length policy hook (``policy``), the graph sampling path (``graph_path``), and a decided pass made into
its event (``eventmaker``) and finished in order (``finisher``)."""
