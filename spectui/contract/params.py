"""Number options every command shares the rule of: finite, in range, refused at the option.

click's ``FloatRange`` lets ``nan`` and ``inf`` through (every comparison with NaN is false), so
``--interval nan`` scraped hundreds of times a second and ``--timeout inf`` raised in a thread. A
:class:`Finite` option refuses them as click refuses any bad value: one line naming the option, exit 2.
"""

from __future__ import annotations

import math

import click


class Finite(click.FloatRange):
    """A float option that must be a finite number (no nan, inf), within ``min``..``max`` when given."""

    name = "number"

    def convert(self, value, param, ctx):
        if isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                self.fail(f"{value!r} is not a number", param, ctx)
        else:
            number = value
        if isinstance(number, float) and not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return super().convert(number, param, ctx)


SECONDS = Finite(min=0.05, max=86400.0)  # a wait: an interval, a timeout
DURATION = Finite(min=0.0, max=366 * 86400.0)  # 0: no deadline
TEMPERATURE = Finite()  # the range (0..2) is the run's own check, with its own message
PROBABILITY = Finite()  # likewise 0..1

__all__ = ["DURATION", "Finite", "PROBABILITY", "SECONDS", "TEMPERATURE"]
