"""Measurements on the loaded models: the verify cost by batch size (``batch_probe``), a server-like step
(``step_probe``), a head's draft cost (``head_probe``), the pipelined split (``pipeline_probe``) and the timing
noise floor (``noise``). What they measure is analysed and cached in ``spectui.analysis``."""
