"""The settings a recorded race compares (``--a "k=0" --b "k=4 temp=0.8 drafter=ngram"``). No Textual.

A spec is ``key=value`` pairs separated by spaces or commas; keys (llama.cpp's names where it has them):
``k`` / ``draft-max`` (0..32, ``auto``, ``schedule``), ``temp`` / ``temperature`` (0..2), ``drafter``
(model, ngram, none, eagle3, mtp), ``seed``, ``p-min`` / ``draft-p-min`` (0..1), ``draft-min``. ``k=0`` is the target
alone. Unset keys take the command's own options (``--temp``, ``--seed``; drafter: model with --draft, else
ngram). A bad spec is a one-line error (exit 2)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..contract.control import DRAFT_MAX_LIMIT, TEMPERATURE_LIMIT
from ..contract.draft_length import k_setting, parse_k
from ..contract.errors import SpectuiError
from ..contract.events import Settings
from ..contract.options import ModelOptions
from ..contract.params import temperature
from ..engine.drafters import names as drafter_names


@dataclass(frozen=True, kw_only=True)
class RaceClock:
    """How recorded runs race (``spectui race``, ``spectui cast --race``): the clock from each run's start or
    its first token (``from_start``), traces of different prompts allowed (``any_prompt``), the speed and the
    TUI theme."""

    from_start: bool = False
    any_prompt: bool = False
    speed: str = "1"
    theme: str | None = None

    def load(self, traces, *, keep_events: bool = True):
        """The traces as lanes on this clock (``views.race_timeline.load_race``)."""
        from ..views.race_timeline import load_race  # noqa: PLC0415

        return load_race(list(traces), from_start=self.from_start, any_prompt=self.any_prompt,
                         keep_events=keep_events)


@dataclass(frozen=True)
class RaceOptions(RaceClock):
    """``spectui race``'s options as the command line gave them (``contract.options.options_from``), handed whole
    from the command on: the traces to race, or the models, the prompt and the two settings to record (``spec_a``
    / ``spec_b``, else -k, --drafter, --temp, --seed); the face (``headless``, ``as_json``) and the clock."""

    traces: tuple[str, ...] = ()
    headless: bool = False
    as_json: bool = False
    models: ModelOptions = ModelOptions()
    prompt: str | None = None
    prompt_file: str | None = None
    n_predict: int = 128
    draft_max: str | None = None
    drafter: str | None = None
    temp: float = 0.0
    seed: int = 0
    spec_a: str | None = None
    spec_b: str | None = None
    record_dir: str | None = None


KEYS = {
    "k": "k", "draft-max": "k", "draft_max": "k",
    "temp": "temp", "temperature": "temp", "t": "temp",
    "drafter": "drafter",
    "seed": "seed",
    "p-min": "p_min", "draft-p-min": "p_min", "p_min": "p_min",
    "draft-min": "draft_min", "draft_min": "draft_min",
    "pipeline": "pipeline",
}
USE_KEYS = "k, temp, drafter, seed, p-min, draft-min, pipeline"  # what an unknown key's error offers
# Pairs are split at spaces, and at commas before the next key: "k=2,4" is one value (a list, which the k parser
# refuses in its own words), "k=4,temp=0.8" two pairs.
ITEM_SEPARATOR = re.compile(r"\s+|,(?=[\s,]*[A-Za-z][\w-]*=)")
RACE_DRAFT_MAX = 4  # B's k when neither -k nor --b gives one: a race shows speculation plainly on
__all__ = ["KEYS", "RACE_DRAFT_MAX", "parse_spec", "slug", "spec_settings"]


def parse_spec(text: str, name: str = "--b") -> dict:
    """Parse a race's setting.

    Args:
        text: ``key=value`` pairs (``"k=4 temp=0.8"``), separated by spaces or commas (``"k=2,4"`` is one k:
            a list, refused in the k parser's words).
        name: the option the messages name (``--a``, ``--b``).

    Returns:
        The values by field: ``{"k": 4, "temp": 0.8}``; k as ``contract.draft_length.parse_k`` gives it (an
        int, or a mode's name: ``"cost"`` for auto, ``"schedule"``).

    Raises:
        SpectuiError: one line naming the option and the spec (a bad k: the k parser's own message).
    """
    out: dict = {}
    for item in [x.strip(",") for x in ITEM_SEPARATOR.split(text.strip()) if x.strip(",")]:
        key, sep, value = item.partition("=")
        key = key.strip().lower()
        if not sep or not value:
            raise SpectuiError(f"{name} {text!r}: {item!r} is not key=value (e.g. \"k=4 temp=0.8 drafter=ngram\")")
        field = KEYS.get(key)
        if field is None:
            raise SpectuiError(f"{name} {text!r}: unknown key {key!r}; use {USE_KEYS}")
        if field in out:
            raise SpectuiError(f"{name} {text!r}: {key} is given twice")
        try:
            if field == "k":
                try:
                    out[field] = parse_k(value, key)  # the one k parser: 0..32, auto, schedule; its message
                except SpectuiError as exc:
                    raise SpectuiError(f"{name} {text!r}: {exc}") from None
            elif field == "pipeline":
                out[field] = {"on": True, "off": False}[value.lower()]
            elif field == "temp":
                out[field] = temperature(value)  # the one range of every command's temperature
            elif field == "p_min":
                out[field] = float(value)
                if not 0.0 <= out[field] <= 1.0:
                    raise ValueError
            elif field in ("seed", "draft_min"):
                out[field] = int(value)
                if out[field] < 0 or (field == "draft_min" and out[field] > DRAFT_MAX_LIMIT):
                    raise ValueError
            else:
                if value.lower() not in drafter_names():
                    raise ValueError
                out[field] = value.lower()
        except (ValueError, KeyError):
            ranges = {"temp": f"0..{TEMPERATURE_LIMIT:g}",
                      "p_min": "0..1", "seed": "an integer >= 0", "draft_min": f"0..{DRAFT_MAX_LIMIT}",
                      "drafter": ", ".join(drafter_names()), "pipeline": "on or off"}
            raise SpectuiError(f"{name} {text!r}: bad {key} {value!r} (use {ranges[field]})") from None
    if not out:
        raise SpectuiError(f"{name} is empty; give e.g. \"k=0\" or \"k=4 temp=0.8\"")
    return out


def spec_settings(spec: dict, *, temp: float = 0.0, seed: int = 0, have_draft: bool = False) -> Settings:
    """The engine's Settings for a spec; ``temp``, ``seed`` and the drafter default from the command."""
    draft_max, auto = k_setting(spec.get("k", RACE_DRAFT_MAX))
    drafter = spec.get("drafter") or ("model" if have_draft else "ngram")
    if draft_max == 0 and auto is None:
        drafter = "none"
    if drafter in ("model", "tree") and not have_draft:
        raise SpectuiError(f"drafter={drafter} needs --draft PATH (or drafter=ngram)")
    pipeline = bool(spec.get("pipeline", False))
    if pipeline and drafter != "model":
        raise SpectuiError("pipeline=on overlaps the draft model's drafting: it needs drafter=model (and --draft)")
    return Settings(draft_max=draft_max, temperature=spec.get("temp", temp), drafter=drafter,
                    seed=spec.get("seed", seed), auto=auto, draft_p_min=spec.get("p_min", 0.0),
                    draft_min=spec.get("draft_min", 0), pipeline=pipeline)


def slug(settings: Settings) -> str:
    """A file-name part for a setting: "k0", "k4-T0.8-ngram"."""
    if settings.drafter == "none":
        base = "target-alone"
    else:
        base = f"{settings.auto or 'k' + str(settings.draft_max)}-{settings.drafter}"
    if settings.temperature:
        base += f"-T{settings.temperature:g}"
    if settings.pipeline:
        base += "-pipelined"
    return base
