"""The prompt every command decodes when none is given (``-p`` / ``-f``): the live run, sweep, a recorded
race, and what the probes measure behind (``spectui probe``'s context, the kernels' noise). Written by us."""

from __future__ import annotations

DEFAULT_PROMPT = "Write a step-by-step explanation of how a hash map handles collisions."
