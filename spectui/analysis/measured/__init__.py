"""What this machine measured, and its cache: the one measurement cache (``cachefile.Measurement``) in the cache
folder (``machine``), and what it holds: the probe's verify curve and its verdict (``probe``, ``probe_verdict``),
the batched curve (``batch_knee``), a served step's costs (``step_costs``), a head's cost (``head_cost``) and the
noise floor (``noise``)."""
