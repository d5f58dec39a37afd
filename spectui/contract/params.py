"""The one rule for number options: every one is checked at the option, before any work (before any model
loads): finite, in range, one line naming the option (click's usage error), exit 2.

click's ``FloatRange`` lets ``nan`` and ``inf`` through (every comparison with NaN is false), so
``--interval nan`` scraped hundreds of times a second and ``--timeout inf`` raised in a thread. A
:class:`Finite` option refuses them as click refuses any bad value. Whole numbers go through :func:`whole`
(click's ``IntRange``: ``1.5``, ``nan`` and ``1e400`` are not integers): ``-s -1`` loaded both models before
a bare ValueError, ``-t 0`` ran silently on two threads, and ``--repeat 10**23`` planned 10**23 runs in
memory before a model file was looked at. Every number option of every command takes one of the types
below (``tests/hostile/test_round2.py`` runs each with bad values).
"""

from __future__ import annotations

import math

import click

from .control import P_MIN_LIMIT, TEMPERATURE_LIMIT
from .draft_length import DRAFT_MAX_LIMIT
from .errors import SpectuiError, echo_error


class OptionError(click.BadParameter):
    """A bad number option: ``spectui: error: Invalid value for '-t' / '--threads': 0 is not in the range
    1<=x<=512.``, one line as every bad input's (click's own usage error adds a usage line and a hint), exit 2."""

    def show(self, file=None) -> None:
        echo_error(self.format_message())  # the value through the one escaping rule too


class _OneLine:
    """A parameter type whose refusals are :class:`OptionError` (one line)."""

    def fail(self, message, param=None, ctx=None):
        raise OptionError(message, ctx=ctx, param=param)


class Finite(_OneLine, click.FloatRange):
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

    def _describe_range(self) -> str:
        """The range --help shows ("" without bounds: click's own said ``x<=None``)."""
        if self.min is None and self.max is None:
            return ""
        return super()._describe_range()


class Whole(_OneLine, click.IntRange):
    """An integer option within ``min``..``max`` (either open when None)."""

    name = "integer"  # click's IntRange says "'nan' is not a valid integer range"


def whole(min: int | None = None, max: int | None = None) -> Whole:  # noqa: A002 - click's names
    """An integer option within ``min``..``max`` (either open when None)."""
    return Whole(min=min, max=max)


SPEED_MIN, SPEED_MAX = 0.25, 8.0  # a replay's speed; 'max' (no waits) is infinite


def speed_value(text: str | float) -> float:
    """'max' (or 'inf'), '2', '2x', 0.5 -> the speed, SPEED_MIN..SPEED_MAX or infinite for 'max'; ValueError
    (its message the reason) otherwise: a number that is no finite float (``nan``, ``1e400``) is not 'max'."""
    if isinstance(text, str):
        word = text.strip().lower()
        if word in ("max", "inf"):
            return float("inf")
        try:
            value = float(word.removesuffix("x"))
        except ValueError:
            raise ValueError(f"{text!r} is not a speed: use {SPEED_MIN:g}..{SPEED_MAX:g} or 'max'") from None
    else:
        value = float(text)
        if value == float("inf"):
            return value
    if not SPEED_MIN <= value <= SPEED_MAX:  # nan fails this too
        raise ValueError(f"{text!r} is not a speed: use {SPEED_MIN:g}..{SPEED_MAX:g} or 'max'")
    return value


class Speed(_OneLine, click.ParamType):
    """``--speed``: ``SPEED_MIN..SPEED_MAX`` (``2`` or ``2x``) or ``max``, checked at the option; passed on as
    its text (``spectui.recording.player.parse_speed`` reads it)."""

    name = "speed"

    def convert(self, value, param, ctx):
        if value is None:
            return None
        try:
            speed_value(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
        return value


class GpuLayers(_OneLine, click.ParamType):
    """``-ngl N`` / ``-ngl all``: a number of layers (a negative one is every layer, as llama.cpp reads it) or
    ``all``; passed on as its text. Checked at the option (``-ngl nan`` waited for the model file)."""

    name = "N|all"
    LIMIT = 1_000_000  # more layers than any model has: 'all' says it

    def get_metavar(self, param, ctx=None) -> str:  # click writes a type's name in capitals
        return "N|all"

    def convert(self, value, param, ctx):
        if value is None:
            return None
        text = str(value).strip().lower()
        if text == "all":
            return "all"
        try:
            n = int(text)
        except ValueError:
            self.fail(f"{value!r} is not a number of layers or 'all'", param, ctx)
        if abs(n) > self.LIMIT:
            self.fail(f"{value!r} is more layers than any model has (use 'all')", param, ctx)
        return str(n)


def temperature(text: str | float) -> float:
    """One temperature as a user wrote it (``0.8``, ``"0.8"``): a finite number 0..TEMPERATURE_LIMIT; ValueError
    otherwise. The one range of every command's temperature: ``--temp`` (:data:`TEMPERATURE`, and each value of
    :func:`parse_temps`) and a race spec's ``temp=``."""
    t = float(text)
    if not 0.0 <= t <= TEMPERATURE_LIMIT:  # nan and inf fail this too
        raise ValueError(f"{text!r} is not a temperature 0..{TEMPERATURE_LIMIT:g}")
    return t


def parse_temps(value: str, flag: str = "--temp") -> list[float]:
    """Comma-separated temperatures (sweep, bench): "0,0.8" -> [0.0, 0.8], duplicates dropped, order kept; each
    through :func:`temperature`. One line naming ``flag`` (SpectuiError, exit 2) for a bad one."""
    out: list[float] = []
    for part in str(value).split(","):
        part = part.strip()
        if not part:
            continue
        try:
            float(part)
        except ValueError:
            raise SpectuiError(
                f"{flag} takes comma-separated numbers 0..{TEMPERATURE_LIMIT:g} (e.g. 0,0.8), not {value!r}"
            ) from None
        try:
            t = temperature(part)
        except ValueError:
            raise SpectuiError(f"{flag} values must be between 0 and {TEMPERATURE_LIMIT:g}, not {part}") from None
        if t not in out:
            out.append(t)
    if not out:
        raise SpectuiError(f"{flag} needs at least one temperature (e.g. 0,0.8)")
    return out


SECONDS = Finite(min=0.05, max=86400.0)  # a wait: an interval, a timeout
DURATION = Finite(min=0.0, max=366 * 86400.0)  # 0: no deadline
TEMPERATURE = Finite(min=0.0, max=TEMPERATURE_LIMIT)
PROBABILITY = Finite(min=0.0, max=P_MIN_LIMIT)  # --draft-p-min, --acceptance

CTX_SIZE = whole(1, 1 << 24)  # -c: tokens of context (more than any GGUF's trained context)
THREADS = whole(1, 512)  # -t: llama.cpp's GGML_MAX_N_THREADS
N_PREDICT = whole(min=1)  # -n: tokens to generate (the context ends a run that asks for more)
SEED = whole(min=0)  # -s
DRAFT_MIN = whole(0, DRAFT_MAX_LIMIT)  # --draft-min
INSPECT_TOP_LIMIT = 50  # --inspect-top: candidates recorded per position at most
INSPECT_TOP = whole(0, INSPECT_TOP_LIMIT)
REPEAT = whole(1, 1000)  # --repeat, --repeats: runs (or measured rounds) per setting
AT_LEAST_ONE = whole(min=1)  # --limit, --per-category: a count of prompts
TERMINAL_CELLS = whole(1, 1000)  # cast --cols / --rows
GPU_LAYERS = GpuLayers()
SPEED = Speed()

__all__ = ["OptionError", "AT_LEAST_ONE", "CTX_SIZE", "DRAFT_MIN", "DURATION", "Finite", "GPU_LAYERS", "GpuLayers",
           "INSPECT_TOP", "INSPECT_TOP_LIMIT", "N_PREDICT", "PROBABILITY", "REPEAT", "SECONDS", "SEED", "SPEED",
           "SPEED_MAX", "SPEED_MIN", "Speed", "TEMPERATURE", "TERMINAL_CELLS", "THREADS", "Whole", "parse_temps",
           "speed_value", "temperature", "whole"]
