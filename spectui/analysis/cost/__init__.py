"""What speculation costs and pays, from numbers alone: the cost model (``costmodel``: the Leviathan expectation
and the tokens/s it predicts), the verify time of k + 1 tokens (``verify_time``), the draft-length policies that
auto k runs (``draft_policy``, ``schedule_policy``), the pipelined pass's cost (``pipeline_cost``) and the words for
a change (``wording``)."""
